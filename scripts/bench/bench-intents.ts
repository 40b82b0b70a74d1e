// Intent-log recovery benchmark (DESIGN §5): how long Store.open takes when the
// log holds a full backlog of unapplied intents (the bound of store/chunks/intent-backlog.ts), as after a
// crash under an fsync-heavy load. A child process fills the backlog with random 4 KiB writes while
// its applier is held, then exits without closing (like kill -9); the parent opens the store
// (recovery applies every intent) and reports the open time and what recovery did.
// Usage: npm run build:bench && node dist/scripts/bench/bench-intents.js [--layout replica:3] [--rounds 3] [--file-mib 64]
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Store } from '../../store/store';
import { ROOT_INO } from '../../store/meta/meta';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

/** The file the writes land in: --file-mib (default 64: 16 chunks of 4 MiB). */
const FILE_BYTES = Number(arg('file-mib', '64')) * 2 ** 20; // not << 20: that wraps to negative at 2 GiB
/** The file is first written in pieces of this size (randomBytes takes at most 2 GiB, and memory stays small). */
const FILL_PIECE_BYTES = 64 << 20;
/** Bound on the pieces written (a 64 TiB file). */
const FILL_PIECES_MAX = 1 << 20;
const WRITE_BYTES = 4096;
/** Bound on the fill loop (the backlog's own bound stops it first). */
const WRITES_MAX = 1_000_000;

async function fill(dir: string): Promise<void> {
  const s = await Store.open(dir, { applier: false });
  const ino = s.ns.lookup(ROOT_INO, 'f')!.ino;
  let n = 0;
  for (; n < WRITES_MAX; n++) {
    const st = await s.status();
    if (st.intentBacklog.bytes >= st.intentBacklog.bytesMax || st.intentBacklog.intents >= st.intentBacklog.intentsMax)
      break;
    const at = crypto.randomInt(0, FILE_BYTES / WRITE_BYTES) * WRITE_BYTES;
    await s.write(ino, at, crypto.randomBytes(WRITE_BYTES));
  }
  await s.sync();
  const st = await s.status();
  process.stdout.write(JSON.stringify({ writes: n, intents: st.intentBacklog.intents, bytes: st.intentBacklog.bytes }));
  process.exit(0); // no close: the backlog stays in the log, as after kill -9
}

async function round(layout: string): Promise<void> {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-intents-')), 'store');
  const s = await Store.create(dir, { disks: 6, layout });
  const f = s.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  for (let at = 0, i = 0; at < FILE_BYTES && i < FILL_PIECES_MAX; at += FILL_PIECE_BYTES, i++) {
    await s.write(f.ino, at, crypto.randomBytes(Math.min(FILL_PIECE_BYTES, FILE_BYTES - at)));
  }
  await s.close();
  const child = spawnSync(process.execPath, [__filename, '--fill', dir], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`fill failed: ${child.stderr}`);
  const filled = JSON.parse(child.stdout) as { writes: number; intents: number; bytes: number };
  const t0 = process.hrtime.bigint();
  const r = await Store.open(dir);
  const openMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const rep = r.recoveryReport;
  const left = (await r.status()).openIntents;
  await r.close();
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  console.log(
    `${layout}\tintents ${filled.intents}\tspan bytes ${filled.bytes}\topen ${openMs.toFixed(0)} ms\tresolved ${rep.intentsResolved}\tleft ${left}\terrors ${rep.errors.length}`,
  );
}

async function main(): Promise<void> {
  if (process.argv.includes('--fill')) return fill(arg('fill', ''));
  const rounds = Math.max(1, Number(arg('rounds', '3')));
  for (const layout of arg('layout', 'replica:3,ec:4+2').split(','))
    for (let i = 0; i < rounds; i++) await round(layout);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
