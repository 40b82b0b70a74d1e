// strace attached to a running mount process, for tests that count what the mount did (system
// calls, FUSE answers). strace is installed by scripts/setup.sh and .ci/run.
import * as fs from 'node:fs'
import { ChildProcess, spawn } from 'node:child_process'

const ATTACH_WAIT_MS = 30_000

/** strace -f -ttt -y of every thread of pid, tracing syscalls (strace's -e trace= list), into out; resolves once attached. */
export function straceAttach (pid: number, out: string, syscalls: string): Promise<ChildProcess> {
  const child = spawn('strace', ['-f', '-ttt', '-y', '-e', `trace=${syscalls}`, '-o', out, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGINT'); reject(new Error(`strace did not attach: ${err}`)) }, ATTACH_WAIT_MS)
    child.stderr!.on('data', (b: Buffer) => {
      err += b.toString()
      if (/attached/.test(err)) { clearTimeout(timer); resolve(child) }
    })
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`strace exited (${code}): ${err}`)) })
  })
}

/** Detaches (SIGINT) and waits for strace to exit; the traced process goes on. */
export async function straceDetach (tracer: ChildProcess): Promise<void> {
  if (tracer.exitCode !== null || tracer.signalCode !== null) return
  const stopped = new Promise((resolve) => tracer.on('exit', resolve))
  tracer.kill('SIGINT')
  await stopped
}

/** "<epoch seconds> syscall(args) = ret" lines of an strace -ttt log (with -f: "<pid> " first). */
export function straceEvents (file: string): Array<{ t: number, line: string }> {
  return fs.readFileSync(file, 'utf8').split('\n').flatMap((line) => {
    const mm = /^(?:\d+\s+)?(\d+\.\d+)\s+(.*)$/.exec(line)
    return mm === null ? [] : [{ t: Number(mm[1]), line: mm[2] }]
  })
}

/** Answers the mount process pid wrote to /dev/fuse while fn ran (strace of its writev/write into trace). */
export async function fuseAnswersDuring (pid: number, trace: string, fn: () => Promise<void>): Promise<number> {
  const tracer = await straceAttach(pid, trace, 'writev,write')
  try {
    await fn()
  } finally {
    await straceDetach(tracer)
  }
  return straceEvents(trace).filter((e) => /^writev?\(\d+<\/dev\/fuse>/.test(e.line)).length
}
