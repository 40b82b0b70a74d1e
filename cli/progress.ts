// Progress of a long verb on stderr: a bar with done/total, rate and ETA on a terminal
// (cli-progress), else a plain line now and then and one at the end, so logs and pipes stay readable.
import { SingleBar } from 'cli-progress';
import type { Progress } from './control/protocol';
import { progressText } from './progress-text';

/** Plain lines at most this often (the last one always). */
export const PLAIN_LINE_INTERVAL_MS = 2_000;

export interface ProgressView {
  update(p: Progress): void;
  stop(): void;
}

export function progressView(label: string, stream: NodeJS.WriteStream = process.stderr, quiet = false): ProgressView {
  if (quiet) return { update: () => undefined, stop: () => undefined };
  return stream.isTTY ? barView(label, stream) : plainView(label, stream);
}

function barView(label: string, stream: NodeJS.WriteStream): ProgressView {
  const startMs = Date.now();
  const bar = new SingleBar({
    stream,
    format: `${label} [{bar}] {text}`,
    barsize: 30,
    hideCursor: true,
    clearOnComplete: false,
  });
  let started = false;
  return {
    update(p) {
      const total = p.totalBytes > 0 ? p.totalBytes : p.totalItems;
      const done = p.totalBytes > 0 ? p.doneBytes : p.doneItems;
      const text = progressText(p, Date.now() - startMs);
      if (!started) {
        bar.start(Math.max(total, 1), done, { text });
        started = true;
      } else {
        bar.setTotal(Math.max(total, 1));
        bar.update(done, { text });
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

function plainView(label: string, stream: NodeJS.WriteStream): ProgressView {
  const startMs = Date.now();
  let lastMs = 0;
  let last: Progress | null = null;
  let printed: Progress | null = null;
  const print = (p: Progress): void => {
    stream.write(`${label}: ${progressText(p, Date.now() - startMs)}\n`);
    printed = p;
    lastMs = Date.now();
  };
  return {
    update(p) {
      last = p;
      if (Date.now() - lastMs >= PLAIN_LINE_INTERVAL_MS) print(p);
    },
    stop() {
      if (last !== null && last !== printed) print(last);
    },
  };
}
