// Standard output and error whose reader went away (a closed pipe: `chunkfs inspect ... | head`, a
// terminal or test harness gone while a mount runs). A write then fails with EPIPE, reported as an
// 'error' event; unhandled, it became an uncaught exception whose handler wrote to stderr again:
// a mount spun at 100% CPU after SIGTERM and never unmounted. Now a broken stream is silenced
// (later writes are dropped) and only a tool whose standard output is gone exits; a mount serves on
// and still flushes, unmounts and closes the store when told to.

let exitWhenStdoutGone = true;

/** A mount calls this: its standard output going away is no reason to stop serving. */
export function keepRunningWithoutStdout(): void {
  exitWhenStdoutGone = false;
}

function silence(stream: NodeJS.WriteStream): void {
  stream.write = (() => true) as typeof stream.write;
}

/** Once per process, before anything is written. */
export function guardStdio(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' && exitWhenStdoutGone) process.exit(0); // the reader has all it wanted
    silence(process.stdout);
  });
  process.stderr.on('error', () => silence(process.stderr));
}
