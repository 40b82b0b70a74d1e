// store/chunks/fold-runs.ts: the blocks of the pending intents of a chunk as contiguous runs (what
// the applier patches into each replica, DESIGN §5).
import test from 'ava';
import { blockRuns } from '../../../store/chunks/fold-runs';

test('blockRuns: consecutive blocks make one run, in block order; a short last block stays short', (t) => {
  const runs = blockRuns(
    new Map([
      [5, Buffer.from('zz')],
      [1, Buffer.from('BBBB')],
      [0, Buffer.from('aaaa')],
      [2, Buffer.from('cc')],
    ]),
  );
  t.deepEqual(
    runs.map((r) => [r.firstBlock, r.span.toString()]),
    [
      [0, 'aaaaBBBBcc'],
      [5, 'zz'],
    ],
  );
});
