// Versions reserved by writes still in flight in this process (DESIGN §5): queued for reclaim in the
// commit that reserved them (store/meta/reclaim-queue.ts), but not to be reclaimed until the write
// commits or fails.
/** Versions reserved by writes in flight in this process: queued, but not to be reclaimed yet. */
export class InflightVersions {
  private readonly keys = new Set<string>();
  private static key(ino: number, chunkIndex: number, version: bigint): string {
    return `${ino}/${chunkIndex}/${version}`;
  }
  add(ino: number, chunkIndex: number, version: bigint): void {
    this.keys.add(InflightVersions.key(ino, chunkIndex, version));
  }
  delete(ino: number, chunkIndex: number, version: bigint): void {
    this.keys.delete(InflightVersions.key(ino, chunkIndex, version));
  }
  has(ino: number, chunkIndex: number, version: bigint): boolean {
    return this.keys.has(InflightVersions.key(ino, chunkIndex, version));
  }
}
