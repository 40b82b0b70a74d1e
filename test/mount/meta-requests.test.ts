// What a chmod and a rename cost in FUSE requests on the libfuse3 transport (docs/benchmarks.md, 7
// Dec: the mount's CPU per operation is mostly per request and per wake-up, so the count is the
// floor to keep). A chmod is one SETATTR: the kernel keeps the attributes it answers. A rename
// within a directory is a LOOKUP of the new name (cached as a miss), the RENAME, and one GETATTR of
// the directory, whose attributes the kernel drops after any change to it and must have before the
// next permission check (default_permissions). Counted from the requests the mount reads from
// /dev/fuse (strace of the mount process); fuse-native (libfuse 2) reads them by splice, uncounted.
import test from 'ava';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { sharedMount, run, shOk, PYTHON, TRANSPORT } from '../helpers/mount';
import { FUSE_OPCODE, fuseRequestsDuring } from '../helpers/strace';
import { undisturbed } from '../helpers/dentry-reclaim';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'metareq');
const FILES = 60;
/** Notices the kernel sends when it evicts inodes (another process may drop caches): not asked by the client. */
const FORGETS = [FUSE_OPCODE.forget, FUSE_OPCODE.batchForget];

/** The rename pass's requests as the assertions below want them (a dropped cached name adds a LOOKUP). */
function renamesAsExpected(r: Map<number, number>): boolean {
  const kinds = [...r.keys()].sort((a, b) => a - b);
  return (
    r.get(FUSE_OPCODE.rename) === FILES &&
    r.get(FUSE_OPCODE.lookup) === FILES &&
    (r.get(FUSE_OPCODE.getattr) ?? 0) <= FILES &&
    JSON.stringify(kinds) === JSON.stringify([FUSE_OPCODE.lookup, FUSE_OPCODE.getattr, FUSE_OPCODE.rename])
  );
}

/** Runs a python statement on each of the files (p). */
async function runOver(code: string, files: string[]): Promise<void> {
  const r = await run(PYTHON, ['-c', `import os, sys\nfor p in sys.argv[1:]:\n    ${code}`, ...files]);
  if (r.code !== 0) throw new Error(`client failed: ${r.stderr}`);
}

/** runOver with the mount's requests counted by opcode (forget notices left out). */
async function requestsDuring(code: string, files: string[]): Promise<Map<number, number>> {
  const trace = path.join(shared.dir, `meta-requests-${Date.now()}.trace`);
  const counts = await fuseRequestsDuring(shared.mount.child.pid!, trace, async () => {
    await runOver(code, files);
  });
  for (const op of FORGETS) counts.delete(op);
  return counts;
}

test.serial(
  'a chmod is one SETATTR; a rename in one directory a LOOKUP, a RENAME, one GETATTR of the directory',
  async (t) => {
    if (FUSE3) t.is(spawnSync('strace', ['-V']).status, 0, 'strace is needed (scripts/setup-test.sh installs it)');
    // The stat: the creates changed the directory, so the kernel asks its attributes once more.
    const make = `for i in $(seq ${FILES}); do : > f$i; done && stat . >/dev/null`;
    await shOk(`mkdir ${shared.path('d')} && cd ${shared.path('d')} && ${make}`);
    const files = Array.from({ length: FILES }, (_, i) => shared.path(`d/f${i + 1}`));
    // fuse-native: libfuse 2 reads /dev/fuse by splice, which the trace cannot count; the client runs the same.
    const counted = FUSE3
      ? requestsDuring
      : async (code: string, f: string[]) => {
          await runOver(code, f);
          return null;
        };
    // Counted again if another process (or memory pressure) dropped cached names meanwhile: each
    // name dropped is asked again (a LOOKUP), as it must be. Each attempt first looks its files up
    // (not counted), so names dropped in an attempt before are cached again.
    const log = (line: string): void => t.log(line);
    const chmodsExpected = [[FUSE_OPCODE.setattr, FILES]];
    const chmods = await undisturbed(
      async () => {
        await runOver('os.stat(p)', files);
        return await counted('os.chmod(p, 0o600)', files);
      },
      (r) => r === null || JSON.stringify([...r]) === JSON.stringify(chmodsExpected),
      log,
    );
    if (chmods !== null) t.deepEqual([...chmods], chmodsExpected, 'nothing but one SETATTR per chmod');
    // Attempt k renames each file to f<i>.r<k> (a name never asked before), from the last attempt's name.
    const renames = await undisturbed(
      async (k) => {
        const from = k === 1 ? files : files.map((f) => `${f}.r${k - 1}`);
        await runOver('os.stat(p)', from);
        const to = k === 1 ? `p + '.r1'` : `p.rsplit('.r', 1)[0] + '.r${k}'`;
        return await counted(`os.rename(p, ${to})`, from);
      },
      (r) => r === null || renamesAsExpected(r),
      log,
    );
    if (renames !== null) {
      t.is(renames.get(FUSE_OPCODE.rename), FILES, `requests of the renames: ${JSON.stringify([...renames])}`);
      t.is(renames.get(FUSE_OPCODE.lookup), FILES, 'one LOOKUP of each new name');
      // The directory's, before each rename after the first (the first may find it still valid).
      t.true(
        (renames.get(FUSE_OPCODE.getattr) ?? 0) <= FILES,
        `at most one GETATTR per rename: ${JSON.stringify([...renames])}`,
      );
      const kinds = [...renames.keys()].sort((a, b) => a - b);
      t.deepEqual(kinds, [FUSE_OPCODE.lookup, FUSE_OPCODE.getattr, FUSE_OPCODE.rename], 'nothing else');
    }
    // What the requests did: every file has its new mode under its new name, here and after a remount.
    const check = `cd ${shared.path('d')} && stat -c '%a %n' f*.r* | sort | uniq -c -w 4 | awk '{print $1, $2}'`;
    t.is(await shOk(check), `${FILES} 600\n`);
    await shared.remount();
    t.is(await shOk(check), `${FILES} 600\n`);
  },
);
