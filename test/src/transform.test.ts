import test from 'ava';
import * as crypto from 'node:crypto';
import { FormatError } from '../../src/errors';
import { TransformSpec, applyTransform, transformFlags, undoTransform } from '../../src/transform';

const both = {
  compression: { algo: 'deflate-raw' as const, level: 6 },
  encryption: { algo: 'aes-256-ctr' as const, key: '11'.repeat(32), iv: '22'.repeat(16) },
};
const raw = Buffer.from('the quick brown fox jumps over the lazy dog. '.repeat(500));

test('stored = encrypt(compress(raw)) and undo restores raw (spec §3.1)', (t) => {
  const stored = applyTransform(both, raw);
  t.true(stored.length < raw.length / 5, 'compressed');
  const compressedOnly = applyTransform({ compression: both.compression }, raw);
  const decipher = crypto.createDecipheriv('aes-256-ctr', Buffer.alloc(32, 0x11), Buffer.alloc(16, 0x22));
  t.true(
    Buffer.concat([decipher.update(stored), decipher.final()]).equals(compressedOnly),
    'encryption is the outer layer',
  );
  t.true(undoTransform(both, stored).equals(raw));
  t.is(transformFlags(both), 6);
  t.is(transformFlags('none'), 0);
  t.true(applyTransform('none', raw).equals(raw));
});

test('bad specs and corrupt stored bytes are FormatErrors', (t) => {
  const bad = { compression: { algo: 'zstd', level: 3 } } as unknown as TransformSpec;
  t.is(t.throws(() => applyTransform(bad, raw), { instanceOf: FormatError }).field, 'transform.compression.algo');
  const badKey = { encryption: { algo: 'aes-256-ctr', key: 'ab', iv: '22'.repeat(16) } } as TransformSpec;
  t.is(t.throws(() => transformFlags(badKey), { instanceOf: FormatError }).field, 'transform.encryption.key');
  const stored = applyTransform({ compression: { algo: 'deflate-raw', level: 6 } }, raw);
  const corrupt = Buffer.from(stored);
  corrupt[0] = 0xff;
  corrupt[1] = 0xff;
  t.is(
    t.throws(() => undoTransform({ compression: { algo: 'deflate-raw', level: 6 } }, corrupt), {
      instanceOf: FormatError,
    }).field,
    'transform.compression',
  );
});
