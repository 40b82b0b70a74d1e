// PostgreSQL's spelling of the prealloc statements that take max/min of two values (store/meta/sql/prealloc-rows.ts).
import type { PreallocSql } from '../sql/prealloc-rows';

export const PREALLOC_SQL: PreallocSql = {
  grow:
    'INSERT INTO prealloc AS p(ino, chunk_index, length) VALUES (?, ?, ?) ' +
    'ON CONFLICT(ino, chunk_index) DO UPDATE SET length = GREATEST(p.length, excluded.length)',
  clip: 'UPDATE prealloc SET length = LEAST(length, ?) WHERE ino = ? AND chunk_index = ?',
  extra: `SELECT
      coalesce(sum(GREATEST(0, LEAST(p.length, GREATEST(0, @size - p.chunk_index * @cs))
        - coalesce(c.logical_len, CASE p.chunk_index WHEN 0 THEN @needle ELSE 0 END))), 0) AS inside,
      coalesce(sum(GREATEST(0, p.length - GREATEST(0, @size - p.chunk_index * @cs))), 0) AS beyond
    FROM prealloc p LEFT JOIN chunks c ON c.ino = p.ino AND c.chunk_index = p.chunk_index AND c.version > 0
    WHERE p.ino = @ino`,
};
