// xfstests generic/375, 683, 684, 685: set-id bits go as on ext4 when a user who
// is not root (no CAP_FSETID) writes, fallocates, punches a hole, zeroes a range or truncates:
// set-user-ID always, set-group-ID with group-execute or when the writer is outside the file's
// group (fs/set-id.ts); root keeps them. setfacl by a user outside the file's group drops
// set-group-ID too. fuse-native (libfuse 2 high-level) has no fallocate and no POSIX ACLs, and
// gets no call at all for the kernel's empty setattr, so there only the kill that comes with a
// mode (set-user-ID was set) or a truncate is carried: a lone set-group-ID without group-execute
// survives a write there.
import test from 'ava';
import { sharedMount, run, shOk, NOBODY_UID, TRANSPORT } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'setidkill');
const P = shared.path;

const OPS: Record<string, string> = {
  write: 'printf x >> "$1"',
  fallocate: 'fallocate -l 16384 "$1"',
  punch: 'fallocate -p -o 0 -l 4096 "$1"',
  zero: 'fallocate -z -o 0 -l 4096 "$1"',
  truncate: 'truncate -s 100 "$1"',
};

/** Make a file of 8 KiB with mode and group (as root), run op on it as uid, return its mode. */
async function modeAfter(name: string, mode: string, gid: number, op: string, uid: number): Promise<string> {
  const f = P(name);
  await shOk(
    `chmod 0777 ${shared.mount.mountpoint} && head -c 8192 /dev/zero > ${f} && chgrp ${gid} ${f} && chmod ${mode} ${f}`,
  );
  const r = await run('sh', ['-c', OPS[op], 'op', f], uid === 0 ? {} : { asUid: uid });
  if (r.code !== 0) throw new Error(`${op} of ${name} as ${uid}: ${r.stderr}`);
  return (await shOk(`stat -c %a ${f}`)).trim();
}

for (const op of FUSE3 ? Object.keys(OPS) : ['write', 'truncate']) {
  test.serial(`${op} by a user without CAP_FSETID drops set-id bits as ext4 does; root keeps them`, async (t) => {
    const cases: Array<[string, number, number, string]> = [
      ['6666', 0, NOBODY_UID, '666'], // set-user-ID always; set-group-ID: the writer is outside group 0
      ['2676', 0, NOBODY_UID, '676'], // set-group-ID with group-execute
      ['6666', NOBODY_UID, NOBODY_UID, '2666'], // the writer is in the group: set-group-ID without group-exec stays
      ['6666', 0, 0, '6666'], // root (CAP_FSETID) keeps both
    ];
    if (FUSE3 || op === 'truncate') cases.push(['2666', 0, NOBODY_UID, '666']); // only set-group-ID, outside the group
    for (const [mode, gid, uid, expected] of cases) {
      t.is(
        await modeAfter(`${op}-${mode}-${gid}-${uid}`, mode, gid, op, uid),
        expected,
        `${op} of a ${mode} file of group ${gid} by uid ${uid}`,
      );
    }
  });
}

test.serial(
  "setfacl by a user outside the file's group drops set-group-ID; inside the group it stays (generic/375)",
  async (t) => {
    if (!FUSE3) {
      t.pass('fuse-native: POSIX ACLs need the libfuse3 transport');
      return;
    }
    const f = P('acl');
    await shOk(`touch ${f} && chown ${NOBODY_UID}:0 ${f} && chmod 2755 ${f}`);
    const setfacl = async (gid: number): Promise<string> => {
      const r = await run('setfacl', ['-m', 'u::rwx,g::rwx,o::rwx', f], { asUid: NOBODY_UID, asGid: gid });
      if (r.code !== 0) throw new Error(`setfacl: ${r.stderr}`);
      return (await shOk(`stat -c %a ${f}`)).trim();
    };
    t.is(await setfacl(NOBODY_UID), '777', 'the owner outside group 0');
    await shOk(`chmod 2755 ${f} && chgrp ${NOBODY_UID} ${f} && chmod 2755 ${f}`);
    t.is(await setfacl(NOBODY_UID), '2777', "the owner in the file's group");
  },
);
