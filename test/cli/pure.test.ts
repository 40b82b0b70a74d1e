// The pure parts of the operating tools (DESIGN §7): verb arguments, mount options, the mount table,
// progress text and the per-chunk log limit.
import test from 'ava';
import { UsageError, parseArgs, parseMountOptions } from '../../cli/cli-args';
import { parseHelperArgs } from '../../cli/mount-helper';
import { remountFlags } from '../../cli/remount';
import { escapeMountField, parseMountTable, unescapeMountField } from '../../cli/mounts';
import { connectionMounts, parseMountInfo } from '../../cli/mount-info';
import { bindConflicts, bindFlags, optionTexts } from '../../cli/bind-options';
import { progressText } from '../../cli/progress-text';
import { LOG_WINDOW_MS, LogLimiter } from '../../fs/log-limiter';

test('inject arguments: actions, flags, durations and the trailing target', (t) => {
  t.deepEqual(parseArgs(['inject', 'eio', '3', '--count', '10', '--for', '30s', '/mnt/x']), {
    verb: 'inject',
    target: '/mnt/x',
    json: false,
    file: undefined,
    args: { action: 'eio', disk: 3, ops: 'all', count: 10, durationMs: 30_000, latencyMs: undefined },
  });
  t.deepEqual(parseArgs(['inject', 'corrupt', '/mnt/x/f', '--what=hash', '--block', '2', '--json']), {
    verb: 'inject',
    target: undefined,
    json: true,
    file: '/mnt/x/f',
    args: { action: 'corrupt', file: '/mnt/x/f', chunk: 0, shard: undefined, block: 2, what: 'hash' },
  });
  t.deepEqual(parseArgs(['inject', '--clear', '--id', '4']), {
    verb: 'inject',
    target: undefined,
    json: false,
    file: undefined,
    args: { action: 'clear', id: 4 },
  });
  t.deepEqual((parseArgs(['inject', 'latency', '0', '--ms', '250', '--for', '2m']) as { args: unknown }).args, {
    action: 'latency',
    disk: 0,
    ops: 'all',
    count: undefined,
    durationMs: 120_000,
    latencyMs: 250,
  });
  const bad: Array<[string[], RegExp]> = [
    [['inject', 'eio'], /eio needs a DISK id/],
    [['inject', 'eio', '1', '--for', '1w'], /is not a duration/],
    [['inject', 'eio', '1', '--for', '200h'], /out of range/],
    [['inject', 'enospc', '1', '--ops', 'read'], /unknown option '--ops'/],
    [['inject', 'drop', 'f', '--block', '1'], /unknown option '--block'/],
    [['inject', 'eio', '1', '--count', '5', '--count', '6'], /--count given twice/],
    [['scrub', '--rate', 'fast'], /--rate: 'fast' is not a size/],
    [['heal', 'a', 'b'], /unexpected argument 'b'/],
  ];
  for (const [args, msg] of bad)
    t.throws(() => parseArgs(args), { instanceOf: UsageError, message: msg }, args.join(' '));
  t.deepEqual(parseArgs(['scrub', '--rate', '50M/s', '--repair']), {
    verb: 'scrub',
    target: undefined,
    repair: true,
    force: false,
    json: false,
    rateBytesPerSec: 50 << 20,
  });
  t.deepEqual(parseArgs(['scrub', '/s', '--repair', '--force']), {
    verb: 'scrub',
    target: '/s',
    repair: true,
    force: true,
    json: false,
    rateBytesPerSec: undefined,
  });
  t.deepEqual(parseArgs(['fsck', '--repair', '--force']), {
    verb: 'fsck',
    target: undefined,
    repair: true,
    force: true,
    json: false,
  });
});

test('mount options of the tools: ro, debug, metrics', (t) => {
  t.deepEqual(parseMountOptions('ro,debug,metrics=127.0.0.1:9464'), {
    readOnly: true,
    debug: true,
    metrics: { host: '127.0.0.1', port: 9464 },
  });
  t.deepEqual(parseMountOptions('metrics=[::1]:0').metrics, { host: '::1', port: 0 });
  // atime: relatime is the default, strictatime and noatime change it; values are refused.
  t.deepEqual(parseMountOptions('noatime'), { atime: 'noatime' });
  t.deepEqual(parseMountOptions('strictatime,relatime'), { atime: 'relatime' });
  t.throws(() => parseMountOptions('noatime=1'), { message: /unknown mount option/ });
  t.throws(() => parseMountOptions('lazytime'), { message: /unknown mount option/ });
  t.throws(() => parseMountOptions('dispatch=threads'), { message: /'dispatch' was removed.*drop it/ });
  // spin_us (fs/fuse/transport.ts): 0 turns the spin off; a bound on the time timers wait.
  t.deepEqual(parseMountOptions('spin_us=0'), { spinUs: 0 });
  t.deepEqual(parseMountOptions('spin_us=200'), { spinUs: 200 });
  t.throws(() => parseMountOptions('spin_us=5000'), { message: /spin_us: 5000 is out of range 0\.\.1000/ });
  t.throws(() => parseMountOptions('spin_us=-1'), { message: /spin_us: '-1' is not a whole number/ });
  t.throws(() => parseMountOptions('spin_us'), { message: /spin_us: '' is not a whole number/ });
  // The mount(8) helper passes them on instead of dropping them as mount(8)'s own.
  t.deepEqual(parseHelperArgs(['/s', '/m', '-o', 'defaults,noatime,_netdev']).options, ['noatime']);
  t.deepEqual(parseHelperArgs(['/s', '/m', '-s', '-o', 'strictatime,nodiratime']).options, ['strictatime']);
  t.throws(() => parseMountOptions('metrics=host'), { message: /give HOST:PORT/ });
  t.throws(() => parseMountOptions('metrics=h:70000'), { message: /give HOST:PORT/ });
  t.throws(() => parseMountOptions('ro=1'), { message: /unknown mount option 'ro=1'/ });
});

test('mount options suid, nosuid, dev, nodev; unset: the mount decides by who mounts', (t) => {
  t.deepEqual(parseMountOptions('nosuid,nodev'), { suid: false, dev: false });
  t.deepEqual(parseMountOptions('suid,dev'), { suid: true, dev: true });
  t.deepEqual(parseMountOptions('nosuid,suid'), { suid: true });
  t.deepEqual(parseMountOptions('ro'), { readOnly: true });
  t.throws(() => parseMountOptions('suid=1'), { message: /unknown mount option 'suid=1'/ });
});

test("mount option lease_ms=N: the PostgreSQL lease's length, bounded, named when refused", (t) => {
  t.deepEqual(parseMountOptions('lease_ms=2000'), { leaseMs: 2000 });
  t.throws(() => parseMountOptions('lease_ms=10'), { message: /lease_ms: 10 is below 1000/ });
  t.throws(() => parseMountOptions('lease_ms=9999999'), { message: /lease_ms/ });
  t.throws(() => parseMountOptions('lease_ms'), { message: /lease_ms/ });
});

test('the mount table: octal escapes in sources and mount points', (t) => {
  const [e] = parseMountTable('/srv/my\\040store /mnt/a\\134b fuse.chunkfs rw,nosuid 0 0\n');
  t.deepEqual(e, {
    source: '/srv/my store',
    mountpoint: '/mnt/a\\b',
    fstype: 'fuse.chunkfs',
    options: ['rw', 'nosuid'],
  });
  // The bind watchdog compares the kernel's escaped text (cli/bind-watchdog.ts).
  t.is(escapeMountField('/srv/my store\ta\\b\nc'), '/srv/my\\040store\\011a\\134b\\012c');
  t.is(unescapeMountField(escapeMountField('/x y\\z')), '/x y\\z');
});

test('progress text: by bytes with rate and ETA, by items without a size', (t) => {
  const p = { phase: 'verify', doneBytes: 50 << 20, totalBytes: 200 << 20, doneItems: 5, totalItems: 20 };
  t.is(progressText(p, 1000), '25% 50.0 MiB of 200.0 MiB, 50.0 MiB/s, ETA 3 s');
  t.is(progressText({ ...p, doneBytes: 200 << 20 }, 2000), '100% 200.0 MiB of 200.0 MiB, 100.0 MiB/s, done');
  t.is(
    progressText({ phase: 'heal', doneBytes: 0, totalBytes: 0, doneItems: 3, totalItems: 12 }, 1000),
    '25% 3 of 12, 3.0/s, ETA 3 s',
  );
});

test('log limiter: one line per key per window; the next line counts what was held back', (t) => {
  const l = new LogLimiter();
  t.is(l.line('chunk a', 'x', 0), 'x');
  t.is(l.line('chunk a', 'x', 10), null);
  t.is(l.line('chunk a', 'x', 20), null);
  t.is(l.line('chunk b', 'y', 30), 'y');
  t.is(l.line('chunk a', 'x', LOG_WINDOW_MS), 'x (and 2 more like it since the last line)');
});

// mount(8) options other FUSE file systems take; a remount hands the kernel the
// generic flags alone (mount(8) merges in the mount's own and FUSE's options).
test('acl/noacl are mount options; the helper takes a remount and picks its generic flags', (t) => {
  t.deepEqual(parseMountOptions('noacl'), { acl: false });
  t.deepEqual(parseMountOptions('acl,rw'), { acl: true, readOnly: false });
  const plain = parseHelperArgs([
    's',
    'm',
    '-o',
    'rw,defaults,_netdev,nofail,user,users,noauto,auto,nouser,relatime,noatime,noacl',
  ]);
  t.deepEqual(plain.options, ['rw', 'relatime', 'noatime', 'noacl']);
  t.false(plain.remount);
  const r = parseHelperArgs([
    's',
    'm',
    '-o',
    'ro,nosuid,relatime,remount,user_id=0,group_id=0,default_permissions,allow_other,buffer_mb=64',
  ]);
  t.true(r.remount);
  t.deepEqual(remountFlags(r.rawOptions), ['ro', 'nosuid', 'relatime']);
});

// xfstests generic/732: a second mount of a mounted store is a bind of its mount.
test('mountinfo: a mount and its binds share a device number; a bind of a subdirectory and another store are not the connection', (t) => {
  const table = parseMountInfo(
    [
      '45 26 0:40 / /mnt/a rw,relatime - fuse.chunkfs /srv/s rw,user_id=0,group_id=0,default_permissions,allow_other',
      '46 26 0:40 / /mnt/my\\040b ro,nosuid,relatime shared:7 - fuse.chunkfs /srv/s rw,user_id=0',
      '47 26 0:40 /sub /mnt/c rw - fuse.chunkfs /srv/s rw',
      '48 26 0:41 / /mnt/d rw - fuse.chunkfs /srv/other rw',
      '49 26 0:40 / /mnt/e rw - ext4 /srv/s rw',
      'torn line',
    ].join('\n'),
  );
  t.is(table.length, 5);
  t.deepEqual(table[1], {
    dev: '0:40',
    root: '/',
    mountpoint: '/mnt/my b',
    mountOptions: ['ro', 'nosuid', 'relatime'],
    fstype: 'fuse.chunkfs',
    source: '/srv/s',
  });
  t.deepEqual(
    connectionMounts('0:40', '/srv/s', table).map((m) => m.mountpoint),
    ['/mnt/a', '/mnt/my b'],
  );
  t.deepEqual(
    connectionMounts('0:41', '/srv/s', table),
    [],
    'a reused device number with another source is not the connection',
  );
});

test('a bind takes the served options, refuses differing ones by name, and sets ro/suid/dev per mount point', (t) => {
  const served = optionTexts({
    transport: 'fuse3',
    bufferBytesMax: 64 << 20,
    flushDelayMs: 5000,
    allowOther: true,
    writebackCache: false,
    atime: 'relatime',
    acl: true,
    readOnly: false,
    suid: true,
    dev: true,
  });
  t.deepEqual(bindConflicts({}, served), []);
  t.deepEqual(
    bindConflicts(optionTexts(parseMountOptions('transport=fuse3,buffer_mb=64,ro,nosuid,nodev,relatime')), served),
    [],
  );
  t.deepEqual(bindConflicts(optionTexts(parseMountOptions('transport=fuse-native,noatime,debug,rw')), served), [
    'transport=fuse-native (the live mount runs transport=fuse3)',
    'noatime (the live mount runs relatime)',
    'debug (the live mount runs without it)',
  ]);
  t.deepEqual(bindConflicts(optionTexts(parseMountOptions('rw')), { ...served, readOnly: 'ro' }), [
    'rw (the live mount is served read-only: -o ro)',
  ]);
  t.deepEqual(bindFlags({}, served), ['rw', 'suid', 'dev']);
  t.deepEqual(bindFlags(optionTexts(parseMountOptions('ro,nosuid')), served), ['ro', 'nosuid', 'dev']);
  t.deepEqual(
    bindFlags({}, { ...served, readOnly: 'ro', suid: 'nosuid', dev: 'nodev' }),
    ['ro', 'nosuid', 'nodev'],
    'a read-only server binds read-only',
  );
});
