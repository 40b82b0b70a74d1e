#!/usr/bin/env python3
"""One phase of the dispatch benchmark (scripts/bench/bench-dispatch.sh): operations that each cost
one FUSE request, spread over JOBS worker processes. Prints the phase's operations per second (all
workers, wall clock).

Usage: dispatch-ops.py PHASE DIR OPS JOBS
Phases: setup (FILES_PER_JOB empty files and a DATA_BYTES file per worker, written and fsync'd),
chmod (one setattr each), stat (a lookup each: the caller drops caches first, and each worker stats
its files round robin, so the kernel's attribute cache holds none of them at the first pass),
read (4 KiB O_DIRECT preads at random 4 KiB-aligned offsets: no page cache, one read request
each), write (4 KiB O_DIRECT pwrites likewise, no fsync)."""
import mmap
import os
import random
import sys

from forked_jobs import run_forked

FILES_PER_JOB = 2000
DATA_BYTES = 16 << 20
IO_BYTES = 4096


def worker_dir(root, job):
    return os.path.join(root, 'w%d' % job)


def names(root, job):
    d = worker_dir(root, job)
    return [os.path.join(d, 'f%05d' % i) for i in range(FILES_PER_JOB)]


def setup(root, job, _ops, rng):
    os.makedirs(worker_dir(root, job), exist_ok=True)
    for p in names(root, job):
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
    fd = os.open(os.path.join(worker_dir(root, job), 'data'), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        chunk = rng.randbytes(1 << 20)
        for at in range(0, DATA_BYTES, len(chunk)):
            os.pwrite(fd, chunk, at)
        os.fsync(fd)
    finally:
        os.close(fd)


def chmod(root, job, ops, _rng):
    ps = names(root, job)
    for i in range(ops):
        os.chmod(ps[i % len(ps)], 0o600 if i & 1 else 0o644)


def stat(root, job, ops, _rng):
    ps = names(root, job)
    for i in range(ops):
        os.stat(ps[i % len(ps)])


def direct_io(root, job, ops, rng, write):
    buf = mmap.mmap(-1, IO_BYTES)  # page aligned, as O_DIRECT wants
    buf.write(rng.randbytes(IO_BYTES))
    fd = os.open(os.path.join(worker_dir(root, job), 'data'), (os.O_RDWR if write else os.O_RDONLY) | os.O_DIRECT)
    try:
        for _ in range(ops):
            at = rng.randrange(DATA_BYTES // IO_BYTES) * IO_BYTES
            n = os.pwritev(fd, [buf], at) if write else os.preadv(fd, [buf], at)
            if n != IO_BYTES:
                raise OSError('short %s at %d: %d bytes' % ('write' if write else 'read', at, n))
    finally:
        os.close(fd)


PHASES = {
    'setup': setup,
    'chmod': chmod,
    'stat': stat,
    'read': lambda root, job, ops, rng: direct_io(root, job, ops, rng, False),
    'write': lambda root, job, ops, rng: direct_io(root, job, ops, rng, True),
}


def main():
    phase, root, ops, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    run = PHASES[phase]  # an unknown phase fails here, before any timing
    elapsed = run_forked('dispatch-ops %s' % phase, jobs, lambda job: run(root, job, ops // jobs, random.Random(job)))
    print('%.0f' % ((ops // jobs) * jobs / elapsed))


if __name__ == '__main__':
    main()
