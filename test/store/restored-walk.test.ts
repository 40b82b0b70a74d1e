// The restored-metadata walk (store/restored-walk.ts, DESIGN §4 "Restored metadata"): which chunk
// versions it finds on the disks and the highest file id, from spec §7 paths only. A version with only
// a temp shard counts (it was handed out); an empty chunk directory and names that are not spec §7
// paths (a wrong fan-out, stray files) do not.
import test from 'ava';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chunkDirRelPath, shardRelPath, tempName } from '../../src/path';
import { nodeSyncIo } from '../../store/io/sync-io';
import { versionKey, walkDisks } from '../../store/restored-walk';

function put(root: string, rel: string): void {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), 'x');
}

test('finds every chunk version with a shard or temp shard, and the highest file id; nothing else', (t) => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-walk-test-'));
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }));
  const [a, b] = [path.join(base, 'a'), path.join(base, 'b')];
  put(a, shardRelPath(5n, 2n, 0n, 0));
  put(b, shardRelPath(5n, 2n, 0n, 1)); // the same version on another disk: once
  put(b, shardRelPath(9n, 1n, 3n, 2));
  put(a, tempName(shardRelPath(7n, 4n, 1n, 0), 0xabcdefn)); // a write cut short
  fs.mkdirSync(path.join(a, chunkDirRelPath(40n, 1n, 0n)), { recursive: true }); // empty: no shard
  put(a, path.join(path.dirname(chunkDirRelPath(6n, 1n, 0n)), 'stray.txt'));
  put(b, chunkDirRelPath(6n, 3n, 0n) + '/notes'); // no shard name
  const wrongFanout = shardRelPath(50n, 1n, 0n, 0).replace(/^\.chunks\/([0-9a-f]{2})/, (_m, p0: string) =>
    p0 === '00' ? '.chunks/01' : '.chunks/00',
  );
  put(a, wrongFanout); // a spec §7 name under another file's fan-out: not ours to judge
  const held = walkDisks(nodeSyncIo, [a, b, path.join(base, 'missing')]);
  const keys = held.versions.map((v) => versionKey(v.ino, v.chunkIndex, v.version)).sort();
  t.deepEqual(keys, ['5/0/2', '7/1/4', '9/3/1']);
  t.is(held.highestId, 9);
});
