#!/usr/bin/env python3
# A randomized model test of what users do to files on a mount (DESIGN §5 "One view"), run as a CHILD process of
# the test (never the process serving the mount):
#   run DIR STATE WORKERS STEPS SEED PUNCH   WORKERS processes, each in DIR/wN, take STEPS random
#       steps (write, pwrite at random offsets with descriptors kept open, truncate, punch hole,
#       fallocate, fsync, close, cp, mv, unlink) against an in-memory model. Every cp's copy is
#       compared with the model at once (a copy of bytes still in the mount's memory must not read
#       zeros). Every fsync must leave what the file shows unchanged (DESIGN §5 "One view": size,
#       st_blocks, st_blksize, SEEK_DATA / SEEK_HOLE at a few offsets). At the
#       end every file is compared with the model, unless the state file (STATE.wN.json) is kept for
#       a crash check: then the files are left as they are.
#   crashcheck DIR STATE WORKERS   after a kill -9 of the mount and a remount: a file fsync'd since its
#       last change (and not renamed or unlinked since the last fsync) holds exactly its bytes; every
#       other file's full 4 KiB blocks each hold zeros or a content that block had at some point
#       (no bytes nobody wrote there). The model is then rebuilt from the files as they are.
# Prints one JSON object: {"ok": bool, "failures": [...], "steps": n, "copies": n}.
import ctypes
import hashlib
import json
import os
import random
import subprocess
import sys
from multiprocessing import Process

BLOCK = 4096
FILES_MAX = 8
FILE_BYTES_MAX = 3 << 20
FAILURES_MAX = 20
ZERO_HASH = hashlib.sha256(bytes(BLOCK)).hexdigest()
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
PUNCH_KEEP = 0x02 | 0x01
KEEP_SIZE = 0x01
SEEK_DATA, SEEK_HOLE = 3, 4


class Model:
    def __init__(self, d, rng):
        self.d = d
        self.rng = rng
        self.files = {}     # name -> bytearray
        self.synced = {}    # name -> content fsync'd since its last change
        self.fds = {}       # name -> open descriptor
        self.allowed = {}   # name -> {block index: set of hashes} (history, kept across unlink/rename)
        self.ns_since_sync = set()  # names a namespace op touched since the last fsync
        self.failures = []
        self.copies = 0
        self.next_name = 0

    def path(self, n):
        return os.path.join(self.d, n)

    def fail(self, msg):
        if len(self.failures) < FAILURES_MAX:
            self.failures.append(msg)

    def note(self, name, lo, hi):
        """Record the contents of the full blocks of name touching [lo, hi)."""
        data = self.files[name]
        hist = self.allowed.setdefault(name, {})
        for b in range(lo // BLOCK, (min(hi, len(data)) + BLOCK - 1) // BLOCK):
            if (b + 1) * BLOCK <= len(data):
                hist.setdefault(b, set()).add(hashlib.sha256(data[b * BLOCK:(b + 1) * BLOCK]).hexdigest())

    def changed(self, name, lo, hi):
        self.synced[name] = False
        self.note(name, lo, hi)

    def fd(self, name):
        if name not in self.fds:
            self.fds[name] = os.open(self.path(name), os.O_RDWR)
        return self.fds[name]

    def close(self, name):
        fd = self.fds.pop(name, None)
        if fd is not None:
            os.close(fd)

    def new_name(self):
        self.next_name += 1
        return 'f%d' % self.next_name

    # ---- steps ----
    def write_whole(self, name):
        self.close(name)
        data = bytearray(self.rng.randbytes(self.rng.choice([1, 100, 4096, 70000, 128000, 1 << 20, (4 << 20) + 1])))
        with open(self.path(name), 'wb') as f:
            f.write(data)
        self.ns_since_sync.add(name)
        old = len(self.files.get(name, b''))
        self.files[name] = data
        self.changed(name, 0, max(old, len(data)))

    def pwrite(self, name):
        data = self.files[name]
        off = self.rng.randrange(0, min(FILE_BYTES_MAX, len(data) + (64 << 10)))
        n = min(self.rng.choice([1, 10, 4096, 5000, 65536]), FILE_BYTES_MAX - off)
        if n <= 0:
            return
        b = self.rng.randbytes(n)
        os.pwrite(self.fd(name), b, off)
        old = len(data)
        if off > old:
            data.extend(bytes(off - old))
        data[off:off + n] = b
        self.changed(name, min(off, old), off + n)  # the block of the old end is full now

    def truncate(self, name):
        data = self.files[name]
        size = self.rng.randrange(0, min(FILE_BYTES_MAX, len(data) * 2 + 4096))
        os.ftruncate(self.fd(name), size)
        old = len(data)
        if size < old:
            del data[size:]
        else:
            data.extend(bytes(size - old))
        self.changed(name, min(old, size), max(old, size))

    def punch(self, name):
        data = self.files[name]
        if len(data) == 0:
            return
        off = self.rng.randrange(0, len(data))
        n = self.rng.randrange(1, len(data) - off + 1)
        if libc.fallocate(self.fd(name), PUNCH_KEEP, off, n) != 0:
            raise OSError(ctypes.get_errno(), 'fallocate punch')
        data[off:off + n] = bytes(n)
        self.changed(name, off, off + n)

    def falloc(self, name):
        """fallocate mode 0 (zeros past the end become the file's) or KEEP_SIZE (the bytes stay)."""
        data = self.files[name]
        off = self.rng.randrange(0, min(FILE_BYTES_MAX, len(data) + (64 << 10)))
        n = min(self.rng.choice([1, 4096, 65536, 1 << 20]), FILE_BYTES_MAX - off)
        if n <= 0:
            return
        keep = self.rng.random() < 0.5
        if libc.fallocate(self.fd(name), KEEP_SIZE if keep else 0, off, n) != 0:
            raise OSError(ctypes.get_errno(), 'fallocate')
        if not keep and off + n > len(data):
            old = len(data)
            data.extend(bytes(off + n - old))
            self.changed(name, old, off + n)

    def view(self, name):
        """What the file shows besides its bytes: size, st_blocks, st_blksize and SEEK answers."""
        fd = self.fd(name)
        st = os.fstat(fd)
        seeks = []
        for at in sorted({0, st.st_size // 3, st.st_size // 2, st.st_size - 1}):
            for whence in (SEEK_DATA, SEEK_HOLE):
                try:
                    seeks.append(os.lseek(fd, at, whence) if 0 <= at < st.st_size else None)
                except OSError as e:
                    seeks.append(e.errno)
        return (st.st_size, st.st_blocks, st.st_blksize, seeks)

    def fsync(self, name):
        before = self.view(name)
        os.fsync(self.fd(name))
        after = self.view(name)
        if after != before:
            self.fail('%s: fsync changed what the file shows: %s before, %s after' % (name, before, after))
        self.synced[name] = True
        self.ns_since_sync = set()  # an fsync makes every earlier namespace change durable (DESIGN §5)

    def cp(self, name):
        self.copies += 1
        dst = self.rng.choice([n for n in self.files if n != name]) if len(self.files) >= FILES_MAX else self.new_name()
        self.close(dst)
        subprocess.run(['cp', self.path(name), self.path(dst)], check=True)
        with open(self.path(dst), 'rb') as f:
            got = f.read()
        want = bytes(self.files[name])
        if got != want:
            zeros = sum(1 for i in range(0, len(got), BLOCK) if got[i:i + BLOCK] == bytes(len(got[i:i + BLOCK])))
            self.fail('cp %s %s: the copy differs (%d bytes, want %d; %d all-zero 4 KiB blocks)' % (name, dst, len(got), len(want), zeros))
        old = len(self.files.get(dst, b''))
        self.files[dst] = bytearray(want)
        self.ns_since_sync.add(dst)
        self.changed(dst, 0, max(old, len(want)))

    def mv(self, name):
        dst = self.new_name()
        self.close(name)
        os.rename(self.path(name), self.path(dst))
        self.files[dst] = self.files.pop(name)
        self.synced[dst] = self.synced.pop(name, False)
        hist = self.allowed.setdefault(dst, {})
        for b, hs in self.allowed.get(name, {}).items():
            hist.setdefault(b, set()).update(hs)
        self.ns_since_sync.update([name, dst])

    def unlink(self, name):
        self.close(name)
        os.unlink(self.path(name))
        del self.files[name]
        self.synced.pop(name, None)
        self.ns_since_sync.add(name)

    def step(self, punch):
        if not self.files:
            self.write_whole(self.new_name())
            return
        name = self.rng.choice(sorted(self.files))
        ops = [(self.write_whole, 2), (self.pwrite, 8), (self.truncate, 2), (self.fsync, 2), (self.close, 3), (self.cp, 4), (self.mv, 1), (self.unlink, 1)]
        if punch:
            ops += [(self.punch, 2), (self.falloc, 2)]
        if len(self.files) < 3:
            ops.append((lambda n: self.write_whole(self.new_name()), 4))
        fns, weights = zip(*ops)
        self.rng.choices(fns, weights)[0](name)

    def check_all(self):
        for name in list(self.fds):
            self.close(name)
        on_disk = sorted(os.listdir(self.d))
        if on_disk != sorted(self.files):
            self.fail('names: %s on disk, %s in the model' % (on_disk, sorted(self.files)))
        for name, data in self.files.items():
            with open(self.path(name), 'rb') as f:
                if f.read() != bytes(data):
                    self.fail('%s differs from the model at the end' % name)

    # ---- the crash check ----
    def state(self):
        return {'files': {n: {'sha': hashlib.sha256(bytes(d)).hexdigest(), 'size': len(d),
                              'exact': self.synced.get(n, False) and n not in self.ns_since_sync} for n, d in self.files.items()},
                'allowed': {n: {str(b): sorted(hs) for b, hs in h.items()} for n, h in self.allowed.items()},
                'next_name': self.next_name}

    def load_after_crash(self, st):
        self.next_name = st['next_name']
        self.allowed = {n: {int(b): set(hs) for b, hs in h.items()} for n, h in st['allowed'].items()}
        on_disk = sorted(os.listdir(self.d))
        for name, f in st['files'].items():
            if f['exact']:
                if name not in on_disk:
                    self.fail('%s was fsync\'d (and its name durable) but is gone after the crash' % name)
                    continue
                with open(self.path(name), 'rb') as fh:
                    got = fh.read()
                if hashlib.sha256(got).hexdigest() != f['sha']:
                    self.fail('%s was fsync\'d since its last change but reads other bytes after the crash (%d bytes, want %d)' % (name, len(got), f['size']))
        for name in on_disk:
            with open(self.path(name), 'rb') as fh:
                got = fh.read()
            hist = self.allowed.get(name, {})
            for b in range(len(got) // BLOCK):
                h = hashlib.sha256(got[b * BLOCK:(b + 1) * BLOCK]).hexdigest()
                if h != ZERO_HASH and h not in hist.get(b, set()):
                    self.fail('%s block %d holds bytes nobody wrote there after the crash' % (name, b))
                    break
            self.files[name] = bytearray(got)
            self.synced[name] = False
            self.note(name, 0, len(got))


def worker(d, state_path, steps, seed, punch, crash):
    m = Model(d, random.Random(seed))
    os.makedirs(d, exist_ok=True)
    if crash == 'after':
        with open(state_path) as f:
            m.load_after_crash(json.load(f))
    for _ in range(steps):
        m.step(punch)
    if crash == 'before':
        with open(state_path, 'w') as f:
            json.dump(m.state(), f)
    else:
        m.check_all()
    with open(state_path + '.result', 'w') as f:
        json.dump({'failures': m.failures, 'steps': steps, 'copies': m.copies}, f)


def main():
    cmd, d, state, workers, steps, seed, punch = sys.argv[1:8]
    crash = {'run': 'none', 'run-before-crash': 'before', 'run-after-crash': 'after'}[cmd]
    procs = []
    for w in range(int(workers)):
        p = Process(target=worker, args=(os.path.join(d, 'w%d' % w), '%s.w%d.json' % (state, w), int(steps), int(seed) * 100 + w, punch == '1', crash))
        p.start()
        procs.append(p)
    failures, copies = [], 0
    for w, p in enumerate(procs):
        p.join()
        try:
            with open('%s.w%d.json.result' % (state, w)) as f:
                r = json.load(f)
            failures += ['w%d: %s' % (w, x) for x in r['failures']]
            copies += r['copies']
        except OSError:
            failures.append('w%d: the worker died (exit code %s)' % (w, p.exitcode))
    print(json.dumps({'ok': not failures, 'failures': failures, 'steps': int(workers) * int(steps), 'copies': copies}))


if __name__ == '__main__':
    main()
