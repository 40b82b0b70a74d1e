// store/small/pack-class.ts: the layout an open container of a pack class is stored in (spec §11.1,
// DESIGN §5 "Small files"): replica with its target's fault tolerance, no compression (appends patch
// it in place), encryption kept (a needle never reaches a disk in the clear).
import test from 'ava';
import { parseLayout, shardCount } from '../../../src/layout';
import { openLayoutOf } from '../../../store/small/pack-class';

test('an open container is replica with the fault tolerance of its pack class', (t) => {
  t.is(openLayoutOf('ec:4+2'), 'replica:3');
  t.is(openLayoutOf('ec:2+1'), 'replica:2');
  t.is(openLayoutOf('replica:2'), 'replica:2');
  for (const pack of ['ec:4+2', 'ec:3+2', 'ec:2+1', 'replica:3']) {
    const target = parseLayout(pack);
    const open = parseLayout(openLayoutOf(pack));
    const tolerates = target.kind === 'ec' ? target.m : shardCount(target) - 1;
    t.is(shardCount(open) - 1, tolerates, `${pack}: as many losses survived while open`);
  }
});

test('compression waits for the seal; encryption never does', (t) => {
  t.is(openLayoutOf('ec:4+2,zstd'), 'replica:3');
  t.is(openLayoutOf('replica:3,lz4'), 'replica:3');
  t.is(openLayoutOf('ec:2+1,lz4,aes256gcm'), 'replica:2,aes256gcm');
  t.is(openLayoutOf('replica:3,zstd,aes256gcm'), 'replica:3,aes256gcm');
});
