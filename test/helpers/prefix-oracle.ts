// What a file may read as after a crash cut its writer off (DESIGN §5 prefix rule): a size no larger
// than the writer reached, and inside it, block by block (bitrot blocks: the unit an overwrite
// replaces), contents the block held at some moment when the file was at least that long. So a
// block may be old (an overwrite not yet stored) or new, or zeros where the writer left a hole, but
// never zeros where the writer had put data before the file grew over it.
// Writers here only grow files (no truncate-down): a block's entry keeps the largest size seen.

interface Entry {
  data: Buffer;
  /** The largest file size while the block held data. */
  sizeBytes: number;
}

export class PrefixOracle {
  private content: Buffer;
  private sizeBytes: number;
  /** Per block, every content it held (the last one is current). */
  private readonly blocks: Entry[][] = [];
  maxSizeBytes: number;

  constructor(
    private readonly blockBytes: number,
    old: Buffer,
  ) {
    this.content = Buffer.from(old);
    this.sizeBytes = old.length;
    this.maxSizeBytes = old.length;
    this.grow();
  }

  /** A write the file system accepted (buffered or stored). */
  write(offsetBytes: number, data: Buffer): void {
    const end = offsetBytes + data.length;
    if (end > this.content.length) {
      const bigger = Buffer.alloc(end);
      this.content.copy(bigger);
      this.content = bigger;
    }
    data.copy(this.content, offsetBytes);
    this.sizeBytes = Math.max(this.sizeBytes, end);
    this.maxSizeBytes = Math.max(this.maxSizeBytes, this.sizeBytes);
    const bb = this.blockBytes;
    for (let b = Math.floor(offsetBytes / bb); b * bb < end; b++) {
      if (b < this.blocks.length) this.blocks[b].push({ data: this.block(b), sizeBytes: this.sizeBytes });
    }
    this.grow();
  }

  /** Every block inside the size exists; current entries learn the new size. */
  private grow(): void {
    const bb = this.blockBytes;
    for (let b = 0; b * bb < this.sizeBytes; b++) {
      if (b === this.blocks.length) this.blocks.push([{ data: this.block(b), sizeBytes: this.sizeBytes }]);
      const list = this.blocks[b];
      list[list.length - 1].sizeBytes = this.sizeBytes;
    }
  }

  private block(b: number): Buffer {
    const out = Buffer.alloc(this.blockBytes);
    this.content.copy(out, 0, b * this.blockBytes, Math.min((b + 1) * this.blockBytes, this.content.length));
    return out;
  }

  /** The file as written so far. */
  get current(): Buffer {
    return this.content.subarray(0, this.sizeBytes);
  }

  /** Offsets of the blocks of `got` (the file read after the crash) that no moment explains. */
  unexplained(got: Buffer): number[] {
    const bad: number[] = [];
    const bb = this.blockBytes;
    for (let b = 0; b * bb < got.length; b++) {
      const end = Math.min((b + 1) * bb, got.length);
      const part = got.subarray(b * bb, end);
      const ok = (this.blocks[b] ?? []).some((e) => e.sizeBytes >= end && e.data.subarray(0, part.length).equals(part));
      if (!ok) bad.push(b * bb);
    }
    return bad;
  }
}
