// The ACL xattr form and the mode rules of fs/acl.ts (filesystem.md, Features): parse/encode round trip,
// refusal of malformed values, the mode an access ACL implies (the mask is the group class).
import test from 'ava';
import { encodeAcl, parseAcl, permBitsOf } from '../../fs/acl';

const USER_OBJ = 0x01;
const USER = 0x02;
const GROUP_OBJ = 0x04;
const MASK = 0x10;
const OTHER = 0x20;

test('an ACL round-trips; its mode takes the mask as the group class', (t) => {
  const acl = [
    { tag: USER_OBJ, perm: 6, id: 0xffffffff },
    { tag: USER, perm: 4, id: 65534 },
    { tag: GROUP_OBJ, perm: 0, id: 0xffffffff },
    { tag: MASK, perm: 4, id: 0xffffffff },
    { tag: OTHER, perm: 0, id: 0xffffffff },
  ];
  const bytes = encodeAcl(acl);
  t.is(bytes.length, 4 + 5 * 8);
  t.deepEqual(parseAcl(bytes), acl);
  t.is(permBitsOf(acl), 0o640);
  t.is(permBitsOf(acl.filter((e) => e.tag !== MASK && e.tag !== USER)), 0o600);
});

test('malformed ACL values are EINVAL', (t) => {
  const good = encodeAcl([
    { tag: USER_OBJ, perm: 7, id: 0 },
    { tag: GROUP_OBJ, perm: 5, id: 0 },
    { tag: OTHER, perm: 5, id: 0 },
  ]);
  const bad = [
    Buffer.alloc(3), // shorter than the header
    good.subarray(0, good.length - 1), // a torn entry
    Buffer.concat([Buffer.from([1, 0, 0, 0]), good.subarray(4)]), // version 1
    encodeAcl([
      { tag: USER_OBJ, perm: 7, id: 0 },
      { tag: OTHER, perm: 5, id: 0 },
    ]), // no owning group entry
    encodeAcl([
      { tag: USER_OBJ, perm: 8, id: 0 },
      { tag: GROUP_OBJ, perm: 5, id: 0 },
      { tag: OTHER, perm: 5, id: 0 },
    ]), // perm bits
    encodeAcl([
      { tag: 0x40, perm: 7, id: 0 },
      { tag: USER_OBJ, perm: 7, id: 0 },
      { tag: GROUP_OBJ, perm: 5, id: 0 },
      { tag: OTHER, perm: 5, id: 0 },
    ]), // tag
  ];
  for (const [i, b] of bad.entries()) t.throws(() => parseAcl(b), { message: /^EINVAL/ }, `case ${i}`);
});
