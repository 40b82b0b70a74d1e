// store/chunks/intent-backlog.ts: the durable intents not yet in the shards (DESIGN §5). A read
// overlays exactly the intents overlapping its range, in log order; the marks that pace the applier
// leave out the chunks being rewritten.
import test from 'ava';
import {
  BACKLOG_BYTES_MAX,
  BACKLOG_INTENTS_MAX,
  IntentBacklog,
  PendingIntent,
  overlaySpans,
  uncoveredParts,
} from '../../../store/chunks/intent-backlog';
import { SMALL, prng } from '../helpers';

const BB = SMALL.bitrotBlockBytes;

test('a read overlays only the intents overlapping its range, in log order: the same bytes as overlaying them all', (t) => {
  const b = new IntentBacklog();
  const rnd = prng(21);
  const blocks = 32;
  for (let id = 1; id <= 300; id++) {
    const firstBlock = Math.floor(rnd() * blocks);
    const n = 1 + Math.floor(rnd() * Math.min(3, blocks - firstBlock));
    b.add(
      { id, ino: 7, chunkIndex: 2, version: 1n, firstBlock, span: Buffer.alloc(n * BB, id % 251), inPlace: true },
      BB,
    );
  }
  const view = (
    pending: readonly PendingIntent[],
    offsetBytes: number,
    lengthBytes: number,
  ): { parts: Array<[number, number]>; bytes: Buffer } => {
    const bytes = Buffer.alloc(lengthBytes, 0xee); // what "the shards" hold where no span is
    overlaySpans(pending, 1n, offsetBytes, lengthBytes, bytes, 0);
    return { parts: uncoveredParts(pending, 1n, offsetBytes, lengthBytes), bytes };
  };
  for (let r = 0; r < 200; r++) {
    const offsetBytes = Math.floor(rnd() * blocks * BB);
    const lengthBytes = 1 + Math.floor(rnd() * Math.min(3 * BB, blocks * BB - offsetBytes));
    const some = b.overlapping(7, 2, offsetBytes, lengthBytes);
    t.true(
      some.every((i) => i.offsetBytes < offsetBytes + lengthBytes && i.offsetBytes + i.span.length > offsetBytes),
      'only overlapping intents',
    );
    t.deepEqual(
      some.map((i) => i.id),
      [...some.map((i) => i.id)].sort((x, y) => x - y),
      'in log order',
    );
    t.deepEqual(view(some, offsetBytes, lengthBytes), view(b.of(7, 2), offsetBytes, lengthBytes));
  }
  t.deepEqual(b.overlapping(7, 3, 0, BB), [], 'a chunk without intents');
});

test('backlog marks: the intents of rewrites running count as gone; pending in-place chunks and applies are counted', (t) => {
  const b = new IntentBacklog();
  const spanBytes = 1 << 20; // large spans: the bytes bound is the one reached
  const span = Buffer.alloc(spanBytes);
  for (let c = 0; c < 3; c++)
    b.add({ id: c + 1, ino: 1, chunkIndex: c, version: 1n, firstBlock: 0, span, inPlace: c === 0 }, BB);
  t.is(b.inPlaceChunks, 1);
  const mark = (3 * spanBytes) / BACKLOG_BYTES_MAX; // exactly the bytes pending
  t.true(3 < BACKLOG_INTENTS_MAX * mark, 'the intents bound is not the one at its mark');
  t.false(b.belowMark(mark, 0, 0), 'at the mark');
  t.true(b.belowMark(mark, spanBytes, 1), 'below it once one chunk being rewritten is left out');
  b.remove(1, 0, new Set([1]), true);
  b.remove(1, 1, new Set([2]), false);
  t.is(b.inPlaceChunks, 0);
  t.is(b.appliedChunks, 1, 'a drop is no apply');
  t.true(b.belowMark(mark, 0, 0));
});
