// A writer of fsync'd records that goes on through failures (a metadata server restarted, killed
// or failed over under the mount): python, through the mount, record i at i × RECORD_BYTES; each
// pwrite + fsync that returned is an ack, each that failed an error (its errno name), and the next
// record is tried. checkAcked then says which acknowledged records do not read back.
import { spawn, ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { PYTHON, run } from './mount';
import { RECORD_BYTES } from './acked-writer';

/** Records one writer writes at most (it is stopped long before). */
const RECORDS_MAX = 100_000;
/** How long waitAcks waits for the writer's next acks before the test fails. */
const ACKS_WAIT_MS = 120_000;

const WRITER_PY = `
import errno, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(${RECORDS_MAX}):
    if os.path.exists(sys.argv[2]):
        break
    try:
        os.pwrite(fd, (b'%08d' % i) * ${RECORD_BYTES / 8}, i * ${RECORD_BYTES})
        os.fsync(fd)
        print('ack', i, flush=True)
    except OSError as e:
        print('err', i, errno.errorcode.get(e.errno, str(e.errno)), flush=True)
`;

export class RecordWriter {
  readonly acked: number[] = [];
  readonly errors: string[] = [];
  private readonly child: ChildProcess;
  private readonly ended: Promise<void>;
  private waiters: Array<() => void> = [];

  /** Starts writing to file; it stops once stopFile exists (stop()). */
  constructor(
    file: string,
    private readonly stopFile: string,
  ) {
    this.child = spawn(PYTHON, ['-c', WRITER_PY, file, stopFile], { stdio: ['ignore', 'pipe', 'inherit'] });
    let rest = '';
    this.child.stdout!.on('data', (b: Buffer) => {
      const lines = (rest + b.toString()).split('\n');
      rest = lines.pop()!;
      for (const l of lines) {
        const [kind, i, why] = l.split(' ');
        if (kind === 'ack') this.acked.push(Number(i));
        else if (kind === 'err') this.errors.push(`${i} ${why}`);
      }
      for (const w of this.waiters.splice(0)) w();
    });
    this.ended = new Promise((resolve) => this.child.on('exit', () => resolve()));
  }

  /** Resolves once n more records than now were acknowledged (the writer goes on through errors). */
  waitAcks(n: number): Promise<void> {
    const target = this.acked.length + n;
    return this.until(() => this.acked.length >= target, `${target} acks`);
  }

  /** What waitRecovered counts from: the failures so far. */
  mark(): number {
    return this.errors.length;
  }

  /** Resolves once a record failed after mark() gave before and a later one was acknowledged: the mount recovered. */
  waitRecovered(before: number): Promise<void> {
    const failedAt = (): number => Number(this.errors[before].split(' ')[0]);
    return this.until(
      () => this.errors.length > before && this.acked.length > 0 && this.acked[this.acked.length - 1] > failedAt(),
      'a failure, then an ack',
    );
  }

  private async until(done: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + ACKS_WAIT_MS;
    while (!done()) {
      if (Date.now() > deadline || this.child.exitCode !== null)
        throw new Error(`writer: waited for ${what}; ${this.acked.length} acks, errors ${this.errors.join(', ')}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 1000);
      });
    }
  }

  /** Ends the writer (after its current record). */
  async stop(): Promise<void> {
    if (!existsSync(this.stopFile)) writeFileSync(this.stopFile, '');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ACKS_WAIT_MS);
    await this.ended;
    clearTimeout(timer);
  }
}

/** "count [first few]" of the acknowledged records that do not read back from file. */
export async function badAcked(file: string, acked: readonly number[]): Promise<string> {
  const py = `
import sys
data = open(sys.argv[1], 'rb').read()
acked = [int(x) for x in sys.stdin.read().split()]
bad = [i for i in acked if data[i * ${RECORD_BYTES}:(i + 1) * ${RECORD_BYTES}] != (b'%08d' % i) * ${RECORD_BYTES / 8}]
print(len(bad), bad[:5])
`;
  const r = await run(PYTHON, ['-c', py, file], { input: acked.join(' '), timeoutMs: 60_000 });
  return r.stdout.trim() + r.stderr;
}
