// After a kill -9 of a mount process, every mount point of its FUSE connection must go, not only the
// first: fusermount3's auto_unmount knows only the mount point it made, and a bind of it (a second
// mount of the store, cli/store-bind.ts) was left answering ENOTCONN ("Transport endpoint is not
// connected") until someone ran umount -l on it. The watchdog is a shell (bash) in a session of its own
// (a terminal's Ctrl-C does not reach it) that holds the read end of a pipe whose only writer is the
// mount process. When the mount process ends without saying "done" on it (killed, crashed), the
// read sees end of file and the watchdog unmounts, lazily, every mount point of that connection
// that no longer answers. On a clean stop the mount process unmounts its binds itself and says
// "done" first.
//
// Why "no longer answers" and not the device number alone: once auto_unmount has taken the dead
// connection's first mount point, the kernel may give its device number to the next FUSE mount, and
// on a loaded machine that happened before the watchdog read the table (a CI run lost another test's
// live mount this way). A mount point is unmounted only if its device number, type and source (the
// store) match and a stat of it fails: a live mount, even a new one of the same store, answers.
import { ChildProcess, spawn } from 'node:child_process';
import { escapeMountField } from './mounts';

/** How long the watchdog waits for a stat of a mount point: one that hangs is left alone. */
const STAT_TIMEOUT_S = 10;

/**
 * The shell script; $1 is the connection's device number as /proc/self/mountinfo writes it (0:N),
 * $2 the store directory as mountinfo writes the source (octal escapes).
 */
export const WATCHDOG_SCRIPT = [
  // First let go of whatever the mount process left inheritable (fuse-native's /dev/fuse descriptor
  // among them): while the watchdog held it, the dead mount's connection stayed up, and a stat of its
  // mount point hung instead of failing (bash: dash cannot close descriptors above 9).
  'for f in /proc/$$/fd/*; do n=${f##*/}; if [ "$n" -gt 2 ]; then exec {n}>&- 2>/dev/null; fi; done',
  'if IFS= read -r word && [ "$word" = done ]; then exit 0; fi',
  // Field 3 is the device, field 5 the mount point (spaces and the like as octal escapes, undone by %b).
  // The source through the environment: awk -v would undo its octal escapes.
  'SRC="$2" awk -v dev="$1" \'$3 == dev { src = ENVIRON["SRC"]; for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "fuse.chunkfs" && $(i + 2) == src) print $5; break } }\' /proc/self/mountinfo |',
  'while IFS= read -r m; do',
  '  p="$(printf \'%b\' "$m")"',
  // 124: the stat timed out (a live but busy mount): not ours to take.
  `  timeout ${STAT_TIMEOUT_S} stat -- "$p" >/dev/null 2>&1; rc=$?`,
  '  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then umount -l "$p" 2>/dev/null; fi',
  'done',
].join('\n');

export interface BindWatchdog {
  /** A clean stop: the mount process unmounted everything itself; the watchdog exits. */
  standDown(): void;
}

/**
 * Start the watchdog for the connection with device number dev. Only root makes binds (they need
 * mount(2)), so only a root mount needs it; null otherwise, or when the shell cannot start.
 */
export function startBindWatchdog(
  dev: string | null,
  storeDir: string,
  log: (line: string) => void,
): BindWatchdog | null {
  if (dev === null || !/^\d+:\d+$/.test(dev) || process.getuid?.() !== 0) return null;
  let child: ChildProcess;
  try {
    child = spawn('/bin/bash', ['-c', WATCHDOG_SCRIPT, 'chunkfs-bind-watchdog', dev, escapeMountField(storeDir)], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
    });
  } catch (err) {
    log(`no bind watchdog (binds of this mount would stay after a crash): ${(err as Error).message}`);
    return null;
  }
  child.on('error', (err) => log(`no bind watchdog (binds of this mount would stay after a crash): ${err.message}`));
  child.stdin!.on('error', () => undefined); // the watchdog gone first: nothing to tell it
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.(); // the mount's exit does not wait for the pipe
  return {
    standDown: () => {
      if (child.stdin!.writable) child.stdin!.end('done\n');
    },
  };
}
