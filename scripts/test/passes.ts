// The passes of `npm test` (scripts/test/run-tests.ts): which test files run in which setting. The
// suite covers both FUSE transports and both metadata engines without running every file four
// times: the first pass runs every file (libfuse3 transport, SQLite), the others run again only the
// files whose result can differ in their setting.

export interface TestPass {
  /** Its name on the command line (`node dist/scripts/test/run-tests.js fuse-native`) and in the summary. */
  name: string;
  /** What the pass sets (on top of the caller's environment). */
  env: Record<string, string>;
  /**
   * Test files, or directories meaning every *.test.js under them (relative to the repository
   * root); empty: every test file (package.json's "ava.files").
   */
  files: string[];
  /** Files of `files` left out. */
  skip: string[];
}

/**
 * Mount files whose result does not depend on the transport, so the fuse-native pass leaves them out.
 * The rule: a file runs on both transports unless what it checks is the store's or the CLI's (the
 * mount only carries bytes in: scrub, heal, inject, inspect, status, metadata engines, transforms,
 * the store's crash and space rules), or it picks its transport itself whatever the pass (fuse3,
 * fuse-patch's own fuse-native mount, the mount(8) helper's default), or it tests a libfuse3 feature
 * and skips or passes with no check on fuse-native (dispatch, read grants, FOPEN_NOFLUSH,
 * KILLPRIV_V2). A file that checks what the kernel and the FUSE binding carry (operations, errnos,
 * attributes, times, xattrs and ACLs, caches, kernel mount flags, fsync and close through the
 * transport, kill -9 and remount on its mount point, real tools) runs on both; so does any file not
 * listed here, new ones included, until someone reads it and lists it. Within a file that runs on
 * both, repeats of a check on other layouts and transforms (the store's) skip themselves on
 * fuse-native (copy-tools, tools). pg-answered needs libfuse3 too: the kernel told to forget names
 * after a crash of the metadata (fuse-native cannot), and operations answered while the server is
 * locked (on fuse-native one of them waited for the server and the file timed out, 7 Dec).
 */
export const TRANSPORT_INDEPENDENT_MOUNT_FILES = [
  'cli',
  'close-requests',
  'commit',
  'control',
  'dispatch',
  'fuse-patch',
  'fuse3',
  'heal',
  'identity',
  'inject-ec',
  'inject',
  'inspect-fsck',
  'intent-log',
  'kill-priv',
  'memory',
  'meta-copy',
  'mount-helper',
  'pg-answered',
  'pg-cache',
  'pg-failover',
  'pg-fence',
  'pg-follow',
  'pg-meta',
  'pg-reconnect',
  'privacy',
  'read-grants-ec',
  'read-grants',
  'reclaim-order',
  'scrub-heal',
  'segmented-cipher',
  'small-files-tools',
  'small-files',
  'space-bound',
  'stdio-gone',
  'transforms',
  'write-back-crash',
].map((name) => `dist/test/mount/${name}.test.js`);

/**
 * On PostgreSQL: the store files (model-based, fault and crash tests of everything the metadata
 * holds; SQLite-only ones skip themselves), the mounted namespace files (the operations, their
 * errnos and the kernel's caches over the engine's answers and row cache, a kill -9 of the mount)
 * and the mount files whose tools read the metadata offline (inspect, fsck, scrub). Mount files of
 * the engine itself (pg-*) pick PostgreSQL themselves.
 */
const POSTGRES_FILES = [
  'dist/test/store',
  // Namespace operations through the mount against the kernel's rules, from several processes, with
  // attributes and names cached by the kernel, and kill -9 of the mount after an fsync (DESIGN §5, §9).
  'dist/test/mount/posix.test.js',
  'dist/test/mount/model.test.js',
  'dist/test/mount/namespace-model.test.js',
  'dist/test/mount/rename-replace.test.js',
  'dist/test/mount/attr-cache.test.js',
  'dist/test/mount/inspect-fsck.test.js',
  'dist/test/mount/scrub-heal.test.js',
  'dist/test/mount/small-files-tools.test.js',
  // A store on metadata that is not its own, and no plaintext in the database (DESIGN §4, §10).
  'dist/test/mount/identity.test.js',
  'dist/test/mount/cipher-log.test.js',
  // meta copy from PostgreSQL: pending intents move as rows, to SQLite and back (DESIGN §9).
  'dist/test/mount/meta-copy.test.js',
];

/**
 * Files that make the kernel drop every unused dentry and inode of the machine (drop_caches): run
 * alone, after the others, so no other file's cached names vanish under it (a test that counts
 * LOOKUPs, or operations answered while the metadata server is locked, failed beside it, 7 Dec).
 */
const MACHINE_CACHE_FILES = ['dist/test/mount/name-entries.test.js'];

export const PASSES: readonly TestPass[] = [
  { name: 'all', env: {}, files: ['dist/test'], skip: MACHINE_CACHE_FILES },
  {
    name: 'fuse-native',
    env: { CHUNKFS_TRANSPORT: 'fuse-native' },
    files: ['dist/test/mount'],
    skip: [...TRANSPORT_INDEPENDENT_MOUNT_FILES, ...MACHINE_CACHE_FILES],
  },
  { name: 'postgres', env: { CHUNKFS_TEST_META: 'postgres' }, files: POSTGRES_FILES, skip: [] },
  { name: 'drop-caches', env: {}, files: MACHINE_CACHE_FILES, skip: [] },
  { name: 'drop-caches-fuse-native', env: { CHUNKFS_TRANSPORT: 'fuse-native' }, files: MACHINE_CACHE_FILES, skip: [] },
];
