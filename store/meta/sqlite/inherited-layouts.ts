// The layout each directory's new files inherit (DESIGN §9 "Operations": the nearest
// user.chunkfs.layout above), kept per directory on SQLite: its walk up the tree is one recursive
// statement per create, the costliest of a create's reads (measured 8.6 us of 57 us of statements).
// The walk's answer changes only when a directory moves (its parent column), a layout xattr is set
// or removed, or a directory goes; each drops what is kept. So does any rollback: a walk read inside
// a transaction that was rolled back may have seen a change that is gone. Only this process writes
// the database (store/store-lock.ts), so nothing else can change what a walk would find.
import { LAYOUT_XATTR } from '../attr';

/** Directories whose inherited layout is kept, at most (the oldest kept goes first). */
export const INHERITED_LAYOUTS_MAX = 4096;

export class InheritedLayouts {
  /** Directory -> its inherited layout (null: none set above it, the store's default applies). */
  private readonly kept = new Map<number, string | null>();
  private rollbacksSeen: number;

  /** rollbacks: the database's count of rolled back transactions (store/meta/sqlite/engine.ts). */
  constructor(private readonly rollbacks: () => number) {
    this.rollbacksSeen = rollbacks();
  }

  /** The kept layout of dir (null: none above it), or undefined when not kept. */
  get(dir: number): string | null | undefined {
    this.dropAfterRollback();
    return this.kept.get(dir);
  }

  keep(dir: number, layout: string | null): void {
    this.dropAfterRollback();
    this.kept.set(dir, layout);
    if (this.kept.size > INHERITED_LAYOUTS_MAX) this.kept.delete(this.kept.keys().next().value as number);
  }

  /** A new directory has no xattrs: it inherits what its parent does, when that is kept. */
  madeDir(dir: number, parent: number): void {
    const inherited = this.get(parent);
    if (inherited !== undefined) this.keep(dir, inherited);
  }

  /** An xattr of ino was set or removed. */
  xattrChanged(name: string): void {
    if (name === LAYOUT_XATTR) this.kept.clear(); // every directory beneath it may inherit another now
  }

  /** A directory moved: every directory beneath it inherits from elsewhere now. */
  moved(): void {
    this.kept.clear();
  }

  /** An inode went (only an empty directory goes: no other directory's walk passed it). */
  gone(ino: number): void {
    this.kept.delete(ino);
  }

  private dropAfterRollback(): void {
    const n = this.rollbacks();
    if (n === this.rollbacksSeen) return;
    this.rollbacksSeen = n;
    this.kept.clear();
  }
}
