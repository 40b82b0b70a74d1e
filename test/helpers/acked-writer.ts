// A writer child that prints "ack i" after each fsync'd record, and a kill -9 of the mount once it has
// acknowledged enough: what crash tests then check is that every acknowledged record reads back.
import { spawn } from 'node:child_process'
import { PYTHON } from './mount'

/** How long the writer may run before it is taken for stuck. */
const WRITER_WAIT_MS = 120_000

/**
 * Runs python (which prints "ack i" after record i's fsync returned) on file, kills m (kill -9) once
 * ackedBeforeKill records were acknowledged, waits for the writer to stop; returns the last ack.
 */
export async function writeUntilKilled (m: { kill9: () => Promise<void> }, python: string, file: string, ackedBeforeKill: number): Promise<number> {
  const child = spawn(PYTHON, ['-c', python, file], { stdio: ['ignore', 'pipe', 'ignore'] })
  let acked = -1
  let killed: Promise<void> | null = null
  child.stdout.on('data', (b: Buffer) => {
    for (const mm of b.toString().matchAll(/ack (\d+)/g)) acked = Math.max(acked, Number(mm[1]))
    if (acked >= ackedBeforeKill && killed === null) killed = m.kill9()
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error('writer did not stop')) }, WRITER_WAIT_MS)
    child.on('exit', () => { clearTimeout(timer); resolve() })
  })
  await killed
  return acked
}
