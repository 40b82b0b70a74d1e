// strace attached to a running mount process, for tests that count what the mount did (system
// calls, FUSE answers). strace is installed by scripts/setup-test.sh (npm test, .ci/run).
import * as fs from 'node:fs';
import { ChildProcess, spawn } from 'node:child_process';

const ATTACH_WAIT_MS = 30_000;

/** strace -f -ttt -y of every thread of pid, tracing syscalls (strace's -e trace= list), into out; resolves once attached. */
export function straceAttach(
  pid: number,
  out: string,
  syscalls: string,
  extraArgs: string[] = [],
): Promise<ChildProcess> {
  const child = spawn(
    'strace',
    ['-f', '-ttt', '-y', ...extraArgs, '-e', `trace=${syscalls}`, '-o', out, '-p', String(pid)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new Error(`strace did not attach: ${err}`));
    }, ATTACH_WAIT_MS);
    child.stderr!.on('data', (b: Buffer) => {
      err += b.toString();
      if (/attached/.test(err)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`strace exited (${code}): ${err}`));
    });
  });
}

/** Detaches (SIGINT) and waits for strace to exit; the traced process goes on. */
export async function straceDetach(tracer: ChildProcess): Promise<void> {
  if (tracer.exitCode !== null || tracer.signalCode !== null) return;
  const stopped = new Promise((resolve) => tracer.on('exit', resolve));
  tracer.kill('SIGINT');
  await stopped;
}

/** "<epoch seconds> syscall(args) = ret" lines of an strace -ttt log (with -f: "<pid> " first). */
export function straceEvents(file: string): Array<{ t: number; line: string }> {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line) => {
      const mm = /^(?:\d+\s+)?(\d+\.\d+)\s+(.*)$/.exec(line);
      return mm === null ? [] : [{ t: Number(mm[1]), line: mm[2] }];
    });
}

/** Answers the mount process pid wrote to /dev/fuse while fn ran (strace of its writev/write into trace). */
export async function fuseAnswersDuring(pid: number, trace: string, fn: () => Promise<void>): Promise<number> {
  const tracer = await straceAttach(pid, trace, 'writev,write');
  try {
    await fn();
  } finally {
    await straceDetach(tracer);
  }
  return straceEvents(trace).filter((e) => /^writev?\(\d+<\/dev\/fuse>/.test(e.line)).length;
}

/** A read of /dev/fuse under -xx, which prints the descriptor's path in hex too; its bytes as printed (-s). */
const DEV_FUSE_READ = new RegExp(
  `^read\\(\\d+<${[...'/dev/fuse'].map((c) => '\\\\x' + c.charCodeAt(0).toString(16)).join('')}>, "((?:\\\\x[0-9a-f]{2}){8,})`,
);
/** linux/fuse.h: the fuse_in_header before each request's arguments (a LOOKUP's is the name, NUL-ended). */
const FUSE_IN_HEADER_BYTES = 40;
/** Bytes of a LOOKUP request strace prints: the header, a name of up to NAME_MAX bytes and its NUL. */
const LOOKUP_PRINT_BYTES = FUSE_IN_HEADER_BYTES + 255 + 1;

/** linux/fuse.h opcodes the tests count. */
export const FUSE_OPCODE = {
  lookup: 1,
  forget: 2,
  getattr: 3,
  setattr: 4,
  rename: 12,
  open: 14,
  read: 15,
  release: 18,
  flush: 25,
  batchForget: 42,
} as const;

/** The requests the mount process pid read from /dev/fuse while fn ran: each's first printBytes bytes (-xx -s). */
async function fuseRequestBytesDuring(
  pid: number,
  trace: string,
  printBytes: number,
  fn: () => Promise<void>,
): Promise<Buffer[]> {
  const tracer = await straceAttach(pid, trace, 'read', ['-xx', '-s', String(printBytes)]);
  try {
    await fn();
  } finally {
    await straceDetach(tracer);
  }
  return straceEvents(trace).flatMap((e) => {
    const mm = DEV_FUSE_READ.exec(e.line);
    return mm === null ? [] : [Buffer.from(mm[1].replace(/\\x/g, ''), 'hex')];
  });
}

/**
 * Requests the mount process pid read from /dev/fuse while fn ran, counted by opcode: strace prints
 * each read's first 8 bytes in hex (-xx -s 8), the fuse_in_header's len and opcode.
 */
export async function fuseRequestsDuring(
  pid: number,
  trace: string,
  fn: () => Promise<void>,
): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const bytes of await fuseRequestBytesDuring(pid, trace, 8, fn)) {
    const opcode = bytes.readUInt32LE(4);
    counts.set(opcode, (counts.get(opcode) ?? 0) + 1);
  }
  return counts;
}

/** The names the mount process pid was asked to look up (FUSE LOOKUP requests) while fn ran, in order. */
export async function fuseLookupsDuring(pid: number, trace: string, fn: () => Promise<void>): Promise<string[]> {
  return (await fuseRequestBytesDuring(pid, trace, LOOKUP_PRINT_BYTES, fn))
    .filter((bytes) => bytes.readUInt32LE(4) === FUSE_OPCODE.lookup)
    .map((bytes) => {
      const end = bytes.indexOf(0, FUSE_IN_HEADER_BYTES);
      return bytes.toString('utf8', FUSE_IN_HEADER_BYTES, end < 0 ? bytes.length : end);
    });
}
