// fs/dir-handles.ts: directory cookies a name keeps across re-reads of its handle (filesystem.md, POSIX details),
// so resuming after any cookie returns every name that stayed, exactly once.
import test from 'ava';
import { DirHandles, relist, resumeIndex } from '../../fs/dir-handles';
import type { DirEntry } from '../../fs/types';

function listing(names: string[]): DirEntry[] {
  return [
    { name: '.', ino: 1, mode: 0o040000, offset: 1 },
    { name: '..', ino: 1, mode: 0o040000, offset: 2 },
    ...names.map((name, i) => ({ name, ino: 10 + i, mode: 0o100000, offset: i + 3 })),
  ];
}

test('a re-read keeps cookies of known names; new names come after; resuming skips none that stayed', (t) => {
  const h = new DirHandles().open(1);
  const first = relist(h, listing(['a', 'b', 'c', 'd', 'e']));
  const cookieOf = (name: string): number => first.find((e) => e.name === name)!.offset;
  const afterB = cookieOf('b');
  const second = relist(h, listing(['a', 'aa', 'c', 'e', 'z'])); // b and d gone, aa and z new
  t.is(second.find((e) => e.name === 'c')!.offset, cookieOf('c'));
  const rest = second.slice(resumeIndex(second, afterB)).map((e) => e.name);
  t.deepEqual(
    rest.filter((n) => ['c', 'e'].includes(n)),
    ['c', 'e'],
  );
  t.is(new Set(rest).size, rest.length);
  t.deepEqual(
    second.slice(0, 2).map((e) => e.offset),
    [1, 2],
  );
  t.true(second.every((e, i) => i === 0 || e.offset > second[i - 1].offset));
});

test('resumeIndex: first entry after the cookie, also for a cookie no longer listed', (t) => {
  const e = [1, 2, 5, 9, 12].map((offset) => ({ name: String(offset), ino: 1, mode: 0, offset }));
  t.is(resumeIndex(e, 0), 0);
  t.is(resumeIndex(e, 5), 3);
  t.is(resumeIndex(e, 6), 3);
  t.is(resumeIndex(e, 12), 5);
});
