// What the lease holder knows of directory entries (round trips; DESIGN §9: while it holds
// the store's lease the mount is the only writer, so an entry it read or wrote stays as it knows it).
// Per directory: names known to hold an inode number, names known to be absent, and whether the
// whole directory is known (a directory this mount made, whose inode number is new: empty), so that
// any other name is absent without asking the server. Kept by row-cache.ts from the
// rows its lookups read and the entries this connection inserts and deletes; dropped with it.

/** Names known at most, over all directories (the least recently used directory goes first). */
export const NAMES_MAX = 262_144;
/** A directory is read whole (PgDb: with the lookup that missed) when it has at most this many entries. */
export const LISTED_ENTRIES_MAX = 4096;
/** Directories remembered as too large to read whole, at most. */
const LARGE_DIRS_MAX = 4096;

interface DirNames {
  /** name -> inode number (as the server's text), or null: known absent. */
  names: Map<string, string | null>;
  /** Every entry of the directory is in names: a name not there is absent. */
  complete: boolean;
}

/** What is known of one name: its inode number (the server's text), null when absent, undefined when unknown. */
export type NameKnown = string | null | undefined;

export class PgNameCache {
  private readonly dirs = new Map<string, DirNames>();
  /** Directories found to hold more than LISTED_ENTRIES_MAX entries: not read whole again. */
  private readonly large = new Set<string>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  clear(): void {
    this.dirs.clear();
    this.large.clear();
    this.count = 0;
  }

  /** A lookup in parent missed: is the directory worth reading whole (not known whole, not large)? */
  wantsListing(parent: string): boolean {
    return this.dirs.get(parent)?.complete !== true && !this.large.has(parent);
  }

  /**
   * parent's entries as the server listed them, at most LISTED_ENTRIES_MAX + 1 of them (more: the
   * directory is large, and only its names asked for are known).
   */
  listed(parent: string, entries: Array<[string, string]>): void {
    if (entries.length > LISTED_ENTRIES_MAX) {
      if (this.large.size < LARGE_DIRS_MAX) this.large.add(parent);
      return;
    }
    this.forgetDirectory(parent);
    const d = this.dir(parent);
    for (const [name, ino] of entries) d.names.set(name, ino);
    d.complete = true;
    this.count += d.names.size;
    this.bound();
  }

  get(parent: string, name: string): NameKnown {
    const d = this.dirs.get(parent);
    if (d === undefined) return undefined;
    const v = d.names.get(name);
    if (v !== undefined) return v;
    return d.complete ? null : undefined;
  }

  /** Whether parent has entries, when known (a directory known whole), else undefined. */
  hasEntries(parent: string): boolean | undefined {
    const d = this.dirs.get(parent);
    if (d === undefined || !d.complete) return undefined;
    for (const ino of d.names.values()) if (ino !== null) return true;
    return false;
  }

  /** A new directory inode (a number never used before): it has no entries yet. */
  newDirectory(parent: string): void {
    const d = this.dir(parent);
    if (d.names.size === 0) d.complete = true;
  }

  /** name in parent holds ino (null: absent), as read or written by this connection. */
  set(parent: string, name: string, ino: string | null): void {
    const d = this.dir(parent);
    const before = d.names.size;
    // An absent name of a complete directory needs no entry of its own.
    if (ino === null && d.complete) d.names.delete(name);
    else d.names.set(name, ino);
    this.count += d.names.size - before;
    this.bound();
  }

  /** Forget what is known of parent's entries (a write to them that cannot be followed). */
  forgetDirectory(parent: string): void {
    const d = this.dirs.get(parent);
    if (d === undefined) return;
    this.count -= d.names.size;
    this.dirs.delete(parent);
  }

  private dir(parent: string): DirNames {
    let d = this.dirs.get(parent);
    if (d === undefined) d = { names: new Map(), complete: false };
    else this.dirs.delete(parent); // re-inserted last: the most recently used
    this.dirs.set(parent, d);
    return d;
  }

  private bound(): void {
    for (const [parent] of this.dirs) {
      if (this.count <= NAMES_MAX) return;
      this.forgetDirectory(parent); // what is forgotten is asked of the server again
    }
  }
}
