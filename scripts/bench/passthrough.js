#!/usr/bin/env node
// A minimal fuse-native passthrough of a plain directory: every op is one Node fs call on the source
// directory, file handles are real descriptors. It is the ceiling of the binding itself for
// scripts/bench/bench-fio.sh (what any fuse-native filesystem can reach on this machine), not a product.
// Usage: node scripts/bench/passthrough.js <source-dir> <mountpoint>   (prints one ready line; SIGINT/SIGTERM unmounts)
'use strict';
// Same libuv thread pool as the chunkfs mount (cli/cli.ts), so the comparison is fair.
if (process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = '16';
const fs = require('fs');
const path = require('path');
const Fuse = require('fuse-native');

const [src, mnt] = process.argv.slice(2);
if (!src || !mnt) {
  console.error('usage: passthrough.js <source-dir> <mountpoint>');
  process.exit(2);
}
const root = path.resolve(src);
const real = (p) => path.join(root, p);
// Node errors carry errno as a negative number already (e.g. -2 for ENOENT).
const code = (err) => (err ? (typeof err.errno === 'number' ? err.errno : Fuse.EIO) : 0);
const done = (cb) => (err) => cb(code(err));
const toStat = (st) => ({
  mode: st.mode,
  uid: st.uid,
  gid: st.gid,
  size: st.size,
  dev: st.dev,
  nlink: st.nlink,
  ino: st.ino,
  rdev: st.rdev,
  blksize: st.blksize,
  blocks: st.blocks,
  atime: st.atimeNs,
  mtime: st.mtimeNs,
  ctime: st.ctimeNs,
});

const ops = {
  getattr: (p, cb) => fs.lstat(real(p), { bigint: true }, (err, st) => (err ? cb(code(err)) : cb(0, bigStat(st)))),
  fgetattr: (p, fd, cb) => fs.fstat(fd, { bigint: true }, (err, st) => (err ? cb(code(err)) : cb(0, bigStat(st)))),
  readdir: (p, cb) => fs.readdir(real(p), (err, names) => (err ? cb(code(err)) : cb(0, names))),
  open: (p, flags, cb) => fs.open(real(p), flags, (err, fd) => (err ? cb(code(err)) : cb(0, fd))),
  create: (p, mode, cb) =>
    fs.open(real(p), fs.constants.O_CREAT | fs.constants.O_RDWR, mode, (err, fd) => (err ? cb(code(err)) : cb(0, fd))),
  release: (p, fd, cb) => fs.close(fd, done(cb)),
  read: (p, fd, buf, len, pos, cb) => fs.read(fd, buf, 0, len, pos, (err, n) => cb(err ? code(err) : n)),
  // The write buffer is only valid until cb: fs.write has finished with it by then.
  write: (p, fd, buf, len, pos, cb) => fs.write(fd, buf, 0, len, pos, (err, n) => cb(err ? code(err) : n)),
  flush: (p, fd, cb) => cb(0),
  fsync: (p, datasync, fd, cb) => (datasync ? fs.fdatasync : fs.fsync)(fd, done(cb)),
  truncate: (p, size, cb) => fs.truncate(real(p), size, done(cb)),
  ftruncate: (p, fd, size, cb) => fs.ftruncate(fd, size, done(cb)),
  unlink: (p, cb) => fs.unlink(real(p), done(cb)),
  mkdir: (p, mode, cb) => fs.mkdir(real(p), mode, done(cb)),
  rmdir: (p, cb) => fs.rmdir(real(p), done(cb)),
  rename: (a, b, cb) => fs.rename(real(a), real(b), done(cb)),
  link: (a, b, cb) => fs.link(real(a), real(b), done(cb)),
  symlink: (target, p, cb) => fs.symlink(target, real(p), done(cb)),
  readlink: (p, cb) => fs.readlink(real(p), (err, t) => (err ? cb(code(err)) : cb(0, t))),
  chmod: (p, mode, cb) => fs.chmod(real(p), mode, done(cb)),
  chown: (p, uid, gid, cb) => fs.chown(real(p), uid, gid, done(cb)),
  utimens: (p, atime, mtime, cb) => {
    const now = Date.now() / 1000;
    fs.lstat(real(p), (err, st) => {
      if (err) return cb(code(err));
      const pick = (t, old) => (t === Fuse.UTIME_NOW ? now : t === Fuse.UTIME_OMIT ? old : Number(t) / 1e9);
      fs.utimes(real(p), pick(atime, st.atimeMs / 1000), pick(mtime, st.mtimeMs / 1000), done(cb));
    });
  },
  statfs: (p, cb) =>
    fs.statfs(root, (err, s) =>
      err
        ? cb(code(err))
        : cb(0, {
            bsize: s.bsize,
            frsize: s.bsize,
            blocks: s.blocks,
            bfree: s.bfree,
            bavail: s.bavail,
            files: s.files,
            ffree: s.ffree,
            favail: s.ffree,
            fsid: 0,
            flag: 0,
            namemax: 255,
          }),
    ),
};

function bigStat(st) {
  const s = toStat(st);
  for (const k of ['mode', 'uid', 'gid', 'size', 'dev', 'nlink', 'ino', 'rdev', 'blksize', 'blocks'])
    s[k] = Number(s[k]);
  return s;
}

const fuse = new Fuse(mnt, ops, {
  allowOther: process.getuid() === 0,
  autoUnmount: true,
  bigWrites: true,
  useIno: true,
  hardRemove: true,
  fsname: 'passthrough',
  timeout: false,
});
fuse.mount((err) => {
  if (err) {
    console.error('passthrough: mount failed:', err.message);
    process.exit(1);
  }
  console.log(`passthrough: mounted ${root} on ${path.resolve(mnt)}`);
});
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  fuse.unmount(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
