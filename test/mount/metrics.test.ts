// -o metrics=HOST:PORT (DESIGN §7): the mount serves Prometheus text; a scrape is parsed and shows the
// store's counters moving with injected damage, bytes read and written, FUSE op and device flush
// histograms, queue gauges, per-disk state and injected faults.
import test from 'ava';
import * as http from 'node:http';
import { sharedMount, CLI_JS, isMounted, mkfs, run, shOk, TRANSPORT } from '../helpers/mount';

const shared = sharedMount(test, 'metrics', { mountArgs: ['-o', 'metrics=127.0.0.1:0'] });
let port = 0;
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 });

function get(urlPath: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: urlPath, timeout: 30_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      })
      .on('error', reject);
  });
}

/** Prometheus text format -> "name{labels}" -> value (comments dropped). */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}
const scrape = async (): Promise<Map<string, number>> => parse((await get('/metrics')).body);

test.serial.before(() => {
  port = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(shared.mount.readyLine)![1]);
});

test.serial('reads answered from read grants count in the bytes read, and have counters of their own', async (t) => {
  const f = `${shared.dir}/mnt/granted`;
  const sizeBytes = (2 << 20) + 8192;
  await shOk(
    `head -c ${sizeBytes} /dev/urandom > ${shared.dir}/granted.ref && dd if=${shared.dir}/granted.ref of=${f} bs=1M conv=fsync status=none`,
  );
  const before = await scrape();
  // O_DIRECT: every read reaches the mount. The first pass is read in JavaScript and grants each
  // chunk after its first read; the rest of it and the whole second pass are answered from grants.
  for (let pass = 0; pass < 2; pass++) await shOk(`dd if=${f} of=/dev/null bs=4k iflag=direct status=none`);
  const after = await scrape();
  const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0);
  t.is(delta('chunkfs_read_bytes_total'), 2 * sizeBytes, 'every byte read is counted once, however it was answered');
  t.is(delta('chunkfs_read_grant_handed_back_total'), 0);
  if (TRANSPORT === 'fuse-native') {
    // no read grants on libfuse 2: every read is in the op histogram
    t.is(delta('chunkfs_read_grant_reads_total'), 0);
    t.is(delta('chunkfs_fuse_op_duration_seconds_count{op="read"}'), (2 * sizeBytes) / 4096);
    return;
  }
  t.true(
    delta('chunkfs_read_grant_reads_total') > sizeBytes / 4096,
    `grants answered ${delta('chunkfs_read_grant_reads_total')} reads`,
  );
  t.true(after.get('chunkfs_read_grant_chunks')! >= 1);
  t.true(
    delta('chunkfs_fuse_op_duration_seconds_count{op="read"}') < (2 * sizeBytes) / 4096,
    'granted reads are not in the op histogram',
  );
});

test.serial('a scrape parses and moves with what the mount does', async (t) => {
  const first = await get('/metrics');
  t.is(first.status, 200);
  t.regex(first.type, /^text\/plain; version=0\.0\.4/);
  t.regex(first.body, /# TYPE chunkfs_bitrot_errors_total counter/);
  t.regex(first.body, /# TYPE chunkfs_fuse_op_duration_seconds histogram/);
  t.is((await get('/nothing')).status, 404);

  await shOk(
    `head -c 3000000 /dev/urandom > ${shared.dir}/ref && dd if=${shared.dir}/ref of=${shared.dir}/mnt/f bs=1M conv=fsync status=none`,
  );
  const d = JSON.parse((await cli(['inject', 'corrupt', `${shared.dir}/mnt/f`, '--json'])).stdout);
  t.is((await run('cmp', [`${shared.dir}/ref`, `${shared.dir}/mnt/f`])).code, 0);
  await cli(['inject', 'offline', String(d.damage.diskIds[2]), shared.mount.mountpoint]);

  const s = await scrape();
  t.true(s.get('chunkfs_written_bytes_total')! >= 3000000);
  t.true(s.get('chunkfs_read_bytes_total')! >= 3000000);
  t.true(s.get('chunkfs_bitrot_errors_total')! >= 1);
  t.true(s.get('chunkfs_failovers_total')! >= 1);
  t.true(s.get('chunkfs_fuse_op_duration_seconds_count{op="read"}')! >= 1);
  t.true(s.get('chunkfs_fuse_op_duration_seconds_count{op="write"}')! >= 1);
  t.true(s.get('chunkfs_device_flush_duration_seconds_count')! >= 3, 'shard fdatasyncs were timed');
  t.true(s.has('chunkfs_heal_queue_length'));
  t.true(s.has('chunkfs_reclaim_backlog'));
  t.is(s.get('chunkfs_compaction_errors_total'), 0, 'no background compaction round failed');
  t.is(s.get(`chunkfs_disk_state{disk="${d.damage.diskIds[2]}",state="offline"}`), 1);
  t.is(s.get(`chunkfs_disk_state{disk="${d.damage.diskIds[0]}",state="ok"}`), 1);
  t.is(s.get('chunkfs_injected_faults'), 1);
  await cli(['inject', '--clear', shared.mount.mountpoint]);
  t.is((await scrape()).get('chunkfs_injected_faults'), 0);
});

test.serial('a bad metrics address is refused before anything is mounted', async (t) => {
  const r = await cli(['mount', shared.dir + '/store', shared.dir + '/other', '-o', 'metrics=nowhere']);
  t.is(r.code, 2);
  t.regex(r.stderr, /metrics=nowhere: give HOST:PORT/);
  await mkfs(shared.dir + '/store2');
  const busy = await cli(['mount', shared.dir + '/store2', shared.dir + '/other', '-o', `metrics=127.0.0.1:${port}`]);
  t.is(busy.code, 1);
  t.regex(
    busy.stderr,
    new RegExp(
      `cannot mount ${shared.dir}/store2 on ${shared.dir}/other: cannot serve metrics on 127\\.0\\.0\\.1:${port}: EADDRINUSE`,
    ),
  );
  t.false(isMounted(shared.dir + '/other'));
  t.is((await cli(['status', shared.dir + '/store2', '--json'])).code, 0, 'the store was closed again (no lock left)');
  t.is((await cli(['scrub', shared.dir + '/store2'])).code, 0);
});
