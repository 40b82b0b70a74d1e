// Drops of the kernel's cached pages of a file after a write through an O_DIRECT handle (issue 24
// item 2, generic/451). The kernel drops a file's cached pages before it sends a direct write and
// again after a synchronous one, but an asynchronous (AIO) direct write completes without the second
// drop: a buffered read that raced the write and read the old bytes keeps them cached after the
// write completed. So the write is answered only after its file's pages are dropped here, once its
// bytes are in the write-back buffer: later reads see them, and a read still in flight holds its page
// locked, so the kernel waits for our answer to it and drops that page too.
//
// A drop runs on a libuv pool thread and may wait there for reads only the JS thread answers, so one
// drop runs at a time, for every inode asked for meanwhile: more at once could hold every pool thread
// the store's disk reads need. The inodes waiting are bounded by the requests in flight (session.h).

/** Asks the kernel to drop the cached pages and attributes of these inodes (off the JS thread). */
export type Invalidate = (inos: Float64Array) => Promise<unknown>;

interface Round { inos: Set<number>; done: Promise<void>; resolve: () => void }

export class PageDrops {
  private next: Round | null = null;
  private loop: Promise<void> = Promise.resolve();
  private running = false;

  constructor(private readonly invalidate: Invalidate) {}

  /** Settles once the kernel has no cached page of ino that was read before this call (errors ignored). */
  drop(ino: number): Promise<void> {
    if (this.next === null) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => { resolve = r; });
      this.next = { inos: new Set(), done, resolve };
    }
    this.next.inos.add(ino);
    const done = this.next.done;
    if (!this.running) {
      this.running = true;
      this.loop = this.pump();
    }
    return done;
  }

  /** Settles when no drop runs: teardown waits for it, as the native work uses the session. */
  idle(): Promise<void> { return this.loop; }

  private async pump(): Promise<void> {
    // Each round takes every inode asked for so far; it ends when a round finds none waiting.
    while (this.next !== null) {
      const round = this.next;
      this.next = null;
      await this.invalidate(Float64Array.from(round.inos)).catch(() => undefined);
      round.resolve();
    }
    this.running = false;
  }
}
