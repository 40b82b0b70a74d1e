// A writer child that prints "ack i" after each fsync'd record, and a kill -9 of the mount once it has
// acknowledged enough: what crash tests then check is that every acknowledged record reads back.
import { spawn } from 'node:child_process';
import { PYTHON, run } from './mount';

/** How long the writer may run before it is taken for stuck. */
const WRITER_WAIT_MS = 120_000;

/**
 * Runs python (which prints "ack i" after record i's fsync returned) on file, kills m (kill -9) once
 * ackedBeforeKill records were acknowledged, waits for the writer to stop; returns the last ack.
 */
export async function writeUntilKilled(
  m: { kill9: () => Promise<void> },
  python: string,
  file: string,
  ackedBeforeKill: number,
): Promise<number> {
  const child = spawn(PYTHON, ['-c', python, file], { stdio: ['ignore', 'pipe', 'ignore'] });
  let acked = -1;
  let killed: Promise<void> | null = null;
  child.stdout.on('data', (b: Buffer) => {
    for (const mm of b.toString().matchAll(/ack (\d+)/g)) acked = Math.max(acked, Number(mm[1]));
    if (acked >= ackedBeforeKill && killed === null) killed = m.kill9();
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('writer did not stop'));
    }, WRITER_WAIT_MS);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  await killed;
  return acked;
}

/** Record i: (%08d % i) repeated to 4 KiB. */
export const RECORD_BYTES = 4096;
/** Records one writer writes at most (it is killed long before). */
const RECORDS_MAX = 100_000;

/**
 * Where record i goes (a python expression of i): appended (at i × 4 KiB), or over a file stored
 * before (fsync'd first), 100 bytes off the block grid, at 800 places in turn: on an EC file its
 * intents gather 5 s before they are applied (store/chunks/applier.ts), so the last ones are still in
 * the log when the mount dies.
 */
const PLACEMENTS = { append: `i * ${RECORD_BYTES}`, overwrite: `(i * 7 % 800) * ${RECORD_BYTES} + 100` };
export type RecordPlacement = keyof typeof PLACEMENTS;

/** Writes fsync'd records to file (python, through the mount) and kills m after ackedBeforeKill acks; the last ack. */
export function writeRecordsUntilKilled(
  m: { kill9: () => Promise<void> },
  file: string,
  ackedBeforeKill: number,
  placement: RecordPlacement = 'append',
): Promise<number> {
  return writeUntilKilled(
    m,
    `
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
os.fsync(fd)
for i in range(${RECORDS_MAX}):
    os.pwrite(fd, (b'%08d' % i) * ${RECORD_BYTES / 8}, ${PLACEMENTS[placement]})
    os.fsync(fd)
    print('ack', i, flush=True)
`,
    file,
    ackedBeforeKill,
  );
}

/** A python program: argv file, last ack; prints "count [first few]" of the records 0..ack that do not read back. */
export function badRecordsPy(placement: RecordPlacement = 'append'): string {
  return `
import sys
data = open(sys.argv[1], 'rb').read()
at = lambda i: ${PLACEMENTS[placement]}
bad = [i for i in range(int(sys.argv[2]) + 1) if data[at(i):at(i) + ${RECORD_BYTES}] != (b'%08d' % i) * ${RECORD_BYTES / 8}]
print(len(bad), bad[:5])
`;
}

/** "count [first few]" of the records 0..acked that do not read back from file. */
export async function badRecords(file: string, acked: number, placement: RecordPlacement = 'append'): Promise<string> {
  const r = await run(PYTHON, ['-c', badRecordsPy(placement), file, String(acked)], { timeoutMs: 60_000 });
  return r.stdout.trim() + r.stderr;
}
