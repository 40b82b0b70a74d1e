// mulberry32: a tiny seeded PRNG (32-bit state). The golden-vector generator,
// the crash model's torn writes and the seeded tests all use it, so a failing
// case or a vector byte can be reproduced from its seed alone.

/** Next u32 on each call. Per step: a += 0x6D2B79F5, then the mulberry32 mix. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Next float in [0, 1) on each call, from the same sequence. */
export function mulberry32Float(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 4294967296;
}
