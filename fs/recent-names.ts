// Names this mount's operations changed lately (DESIGN §9 "PostgreSQL round trips"). On PostgreSQL an
// operation is answered once its statements are sent; a crash of the metadata may then lose it, and
// the kernel would go on trusting the name it was given (a created, linked or renamed name, for up to
// the entry timeout: fs/fuse/fuse3.ts CACHE_TIMEOUT_S). So after a crash (the store's 'all' change)
// the kernel is told to forget each of these names (fs/fuse/fuse3.ts), not only the inodes it knows.
// A change is lost only if no full commit point followed it (one comes at most FLUSH_DELAY_MS later,
// or the crash is found by it), so names older than the window are kept by the database.

/** How long a changed name is kept: the kernel's entry timeout and the full commit's delay, with room. */
export const RECENT_NAMES_WINDOW_MS = 60_000;
/** Names kept at most (a bound on memory); past it the oldest go first. */
export const RECENT_NAMES_MAX = 1 << 16;

export interface NameInDir {
  parent: number;
  name: string;
}

export class RecentNames {
  private readonly names = new Map<string, NameInDir & { atMs: number }>();
  /**
   * Told each change too, synchronously, before the namespace makes it: a transport's table of names
   * revokes the name before anything replies (fs/fuse/entry-table.ts, DESIGN §6 "Answers in C").
   */
  onChange: (parent: number, name: string) => void = () => undefined;

  /** The name `name` in directory parent was created, removed or replaced. */
  changed(parent: number, name: string): void {
    this.onChange(parent, name);
    const key = `${parent}/${name}`;
    this.names.delete(key); // to the end: the map stays in the order of the changes
    this.names.set(key, { parent, name, atMs: Date.now() });
    this.prune();
  }

  /** The names changed within the window, oldest first; forgotten here. */
  take(): NameInDir[] {
    this.prune();
    const out = [...this.names.values()].map(({ parent, name }) => ({ parent, name }));
    this.names.clear();
    return out;
  }

  get size(): number {
    return this.names.size;
  }

  private prune(): void {
    const oldMs = Date.now() - RECENT_NAMES_WINDOW_MS;
    for (const [key, v] of this.names) {
      if (v.atMs >= oldMs && this.names.size <= RECENT_NAMES_MAX) break;
      this.names.delete(key);
    }
  }
}
