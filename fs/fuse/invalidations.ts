// The kernel's cached pages and attributes of inodes, dropped through one FUSE session
// (notify_inval_inode, on a worker thread of the binding): one call at a time, since the session
// is destroyed only after the last one ends. A read-only follower's stream of the writer's changes
// (DESIGN §9) is merged: inodes asked for while a call runs go together in the next one.
import { ROOT_INO } from '../../store/meta/meta';
import type { LookupCounts } from '../lookups';
import type { NameInDir } from '../recent-names';

export class Invalidations {
  private running: Promise<unknown> = Promise.resolve();
  /** Inodes for the next merged call; at most the inodes the kernel knows (the caller's filter). */
  private readonly waiting = new Set<number>();
  private scheduled = false;
  private stopped = false;

  constructor(
    private readonly invalidate: (inos: Float64Array) => Promise<number>,
    private readonly lookups: LookupCounts,
    private readonly invalidateEntries: (parents: Float64Array, names: string[]) => Promise<number>,
  ) {}

  /** Make the kernel forget these names soon (after the call running): a crash of the metadata may have lost them. */
  forgetNames(names: readonly NameInDir[]): void {
    if (names.length === 0) return;
    const parents = Float64Array.from(names, (n) => n.parent);
    const list = names.map((n) => n.name);
    this.running = this.running
      .then(() => (this.stopped ? 0 : this.invalidateEntries(parents, list)))
      .catch(() => undefined);
  }

  /** Drop these now (after the call running); resolves when the kernel has. */
  now(inos: Iterable<number>): Promise<void> {
    const batch = Float64Array.from(inos);
    const p = this.running.then(() => (this.stopped ? 0 : this.invalidate(batch)));
    this.running = p.catch(() => undefined);
    return p.then(() => undefined);
  }

  /** Drop what the kernel knows of these inodes soon, merged with others ('all': every inode it knows). */
  soon(changed: readonly number[] | 'all'): void {
    const known =
      changed === 'all'
        ? [ROOT_INO, ...this.lookups.inos()]
        : changed.filter((i) => i === ROOT_INO || this.lookups.known(i));
    for (const ino of known) this.waiting.add(ino);
    if (this.scheduled || this.waiting.size === 0) return;
    this.scheduled = true;
    this.running = this.running
      .then(() => {
        this.scheduled = false;
        const batch = Float64Array.from(this.waiting);
        this.waiting.clear();
        return this.stopped ? 0 : this.invalidate(batch);
      })
      .catch(() => undefined);
  }

  /** No call after this; resolves when the last one has ended (its worker thread uses the session). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
