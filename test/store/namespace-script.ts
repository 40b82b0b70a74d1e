// The scripted namespace operations of namespace-crash.test.ts, each run on a store as the mount
// runs it (fs/: the namespace call, then store.deleteFile once an unlinked file's last name and
// handle are gone; fsync of a file or directory and syncfs are store.sync; whole chunks wait in a
// transaction group, DESIGN §5) and on a TreeModel.
// Steps that fail (EEXIST, ENOTEMPTY) change nothing; "durable" steps make every operation before
// them durable (DESIGN §5); "committed" steps are the metadata group's timer firing (DESIGN §5
// "Group commit": a process kill keeps every operation before it).
import type { Store } from '../../store/store';
import type { Unlinked } from '../../store/meta/ops';
import { TreeModel, inoOf, placeOf } from './tree-model';
import { SMALL, prng, randomBytes } from './helpers';

export interface ScriptContext {
  s: Store;
  /** The inode the last unlink or replacing rename took a name from. */
  unlinked: Unlinked | null;
  /** The metadata group's commit, as its timer runs it (nothing on an engine without groups). */
  commitGroup(): void;
}

export interface Step {
  what: string;
  run(c: ScriptContext): unknown;
  model?(m: TreeModel): void;
  /** The operation fails with this code and changes nothing. */
  fails?: string;
  /** Once it returns, every operation before it is durable: fsync of a file or directory, syncfs. */
  durable?: boolean;
  /** Once it returns, every operation before it is committed (a process kill keeps it). */
  committed?: boolean;
  /**
   * Its whole chunks wait in the open transaction group: a kill or power loss may lose them (the
   * file then ends before them, DESIGN §5) until a durable step or a step that closes the group.
   */
  chunksWait?: boolean;
  /** It closes the open transaction group first (its rows committed). */
  closesGroup?: boolean;
}

/** Times utimens sets (before 2001: tree-model.ts tells them from times stamped "now"). */
const TIME_A_NS = 946_684_800_123_456_789n;
const TIME_B_NS = 951_782_400_000_000_007n;

function bytes(seed: number, length: number): Buffer {
  return randomBytes(prng(seed), length);
}

const mkdir = (p: string, mode: number): Step => ({
  what: `mkdir ${p}`,
  run: ({ s }) => s.ns.mkdir(...placeOf(s, p), mode, 0, 0),
  model: (m) => m.mkdir(p, mode),
});
const create = (p: string, mode: number): Step => ({
  what: `create ${p}`,
  run: ({ s }) => s.ns.create(...placeOf(s, p), mode, 0, 0),
  model: (m) => m.create(p, mode),
});
const write = (p: string, data: Buffer): Step => ({
  what: `write ${data.length} bytes to ${p}`,
  run: ({ s }) => s.write(inoOf(s, p), 0, data),
  model: (m) => m.write(p, data),
  chunksWait: data.length >= SMALL.chunkSizeBytes,
});
const symlink = (p: string, target: string): Step => ({
  what: `symlink ${p} -> ${target}`,
  run: ({ s }) => s.ns.symlink(...placeOf(s, p), target, 0, 0),
  model: (m) => m.symlink(p, target),
});
const link = (from: string, to: string): Step => ({
  what: `link ${from} ${to}`,
  run: ({ s }) => s.ns.link(inoOf(s, from), ...placeOf(s, to)),
  model: (m) => m.link(from, to),
});
const rename = (from: string, to: string, noReplace = false): Step => ({
  what: `rename${noReplace ? ' (RENAME_NOREPLACE)' : ''} ${from} ${to}`,
  run: (c) => (c.unlinked = c.s.ns.rename(...placeOf(c.s, from), ...placeOf(c.s, to), { noReplace })),
  model: (m) => m.rename(from, to),
});
const exchange = (a: string, b: string): Step => ({
  what: `rename (RENAME_EXCHANGE) ${a} ${b}`,
  run: ({ s }) => s.ns.exchange(...placeOf(s, a), ...placeOf(s, b)),
  model: (m) => m.exchange(a, b),
});
const unlink = (p: string): Step => ({
  what: `unlink ${p}`,
  run: (c) => (c.unlinked = c.s.ns.unlink(...placeOf(c.s, p))),
  model: (m) => m.unlink(p),
});
/** The kernel forgets the inode that lost its last name: its rows and chunks go (fs/core.ts). */
const release: Step = {
  what: 'release of the inode that lost its last name',
  run: async (c) => {
    if (c.unlinked !== null && c.unlinked.nlink === 0) await c.s.deleteFile(c.unlinked.ino);
  },
};
const rmdir = (p: string): Step => ({
  what: `rmdir ${p}`,
  run: ({ s }) => s.ns.rmdir(...placeOf(s, p)),
  model: (m) => m.rmdir(p),
});
const chmod = (p: string, mode: number): Step => ({
  what: `chmod ${mode.toString(8)} ${p}`,
  run: ({ s }) => s.ns.setattr(inoOf(s, p), { mode }),
  model: (m) => m.chmod(p, mode),
});
const utimens = (p: string, ns: bigint): Step => ({
  what: `utimens ${p}`,
  run: ({ s }) => s.ns.setattr(inoOf(s, p), { atimeNs: ns, mtimeNs: ns }),
  model: (m) => m.utimens(p, ns),
});
const setxattr = (p: string, name: string, value: string): Step => ({
  what: `setxattr ${p} ${name}`,
  run: ({ s }) => s.ns.setxattr(inoOf(s, p), name, Buffer.from(value)),
  model: (m) => m.setxattr(p, name, value),
});
const truncate = (p: string, sizeBytes: number): Step => ({
  what: `truncate ${p} to ${sizeBytes}`,
  run: ({ s }) => s.truncate(inoOf(s, p), sizeBytes),
  model: (m) => m.truncate(p, sizeBytes),
});
/**
 * A rename over an existing file, as fs/ops-names.ts runs it: the renamed file's chunks waiting in
 * the open transaction group are committed first (DESIGN §5, ext4's auto_da_alloc).
 */
const replace = (from: string, to: string): Step => ({
  what: `rename ${from} over ${to} (its stored chunks committed first)`,
  run: async (c) => {
    await c.s.commitStored(inoOf(c.s, from));
    c.unlinked = c.s.ns.rename(...placeOf(c.s, from), ...placeOf(c.s, to));
  },
  model: (m) => m.rename(from, to),
  closesGroup: true,
});
const fails = (step: Step, code: string): Step => ({
  what: `${step.what} (fails ${code})`,
  run: step.run,
  fails: code,
});
const fsyncFile = (p: string): Step => ({
  what: `fsync ${p}`,
  run: ({ s }) => s.sync(inoOf(s, p)),
  durable: true,
});
const fsyncDir = (p: string): Step => ({ what: `fsync of directory /${p}`, run: ({ s }) => s.sync(), durable: true });
const syncfs: Step = { what: 'syncfs', run: ({ s }) => s.sync(), durable: true };
/** The background jobs of a live mount, run where the script says (the store under test starts none). */
const applier: Step = { what: 'the applier (container tail patches)', run: ({ s }) => s.applyNow() };
const reclaimer: Step = { what: 'the reclaimer (freed shards deleted)', run: ({ s }) => s.reclaimNow() };
const groupTimer: Step = { what: "the metadata group's timer", run: (c) => c.commitGroup(), committed: true };

/** Made before the crash runs, fsync'd: small files (needles), a file of three chunks (shards), a symlink. */
export const SETUP: Step[] = [
  mkdir('a', 0o755),
  create('a/f1', 0o644),
  write('a/f1', bytes(1, 3000)),
  create('a/f2', 0o644),
  write('a/f2', bytes(2, 5000)),
  create('a/keep', 0o644),
  write('a/keep', bytes(3, 1000)),
  create('big', 0o644),
  write('big', bytes(4, 600_000)),
  symlink('s', 'a/f1'),
];

/** The operations a crash cuts: every kind, with a durable point early, in the middle and none at the end. */
export const SCRIPT: Step[] = [
  mkdir('d', 0o755),
  create('d/n1', 0o644),
  write('d/n1', bytes(5, 2000)),
  link('a/f1', 'd/h1'),
  rename('a/f2', 'd/f2'),
  groupTimer,
  chmod('d/h1', 0o600),
  utimens('a/f1', TIME_A_NS),
  setxattr('d/f2', 'user.k', 'v1'),
  fails(rename('d/n1', 'a/f1', true), 'EEXIST'), // rolls back its own savepoint, not the open group's
  rename('d/n1', 'a/n1', true),
  fsyncDir('d'),
  exchange('a/f1', 'd/f2'),
  unlink('a/n1'),
  release,
  rename('d/h1', 'big'),
  release,
  reclaimer,
  truncate('a/f1', 1000),
  mkdir('d/e', 0o700),
  setxattr('d/e', 'user.x', '1'),
  rename('d/e', 'a/e'),
  rmdir('a/e'),
  fails(rmdir('a'), 'ENOTEMPTY'),
  chmod('d', 0o700),
  create('t', 0o600),
  write('t', bytes(6, 100)),
  fsyncFile('t'),
  applier,
  unlink('s'),
  symlink('d/s2', 'f2'),
  setxattr('', 'user.root', 'r'),
  groupTimer,
  rename('d/f2', 'a/f3'),
  utimens('t', TIME_B_NS),
  create('u', 0o644),
  write('u', bytes(7, 3000)),
  unlink('a/keep'), // not released: as if still open when the crash comes (an orphan)
  applier,
  syncfs,
  chmod('u', 0o640),
  link('u', 'd/u2'),
  unlink('u'),
  // An editor's save: a new file of a whole chunk and a tail (in a transaction group), renamed over the old.
  create('w.tmp', 0o644),
  write('w.tmp', bytes(8, SMALL.chunkSizeBytes + 5000)),
  replace('w.tmp', 'd/u2'),
  groupTimer, // commits the rename: never before the chunks it names
  release,
];
