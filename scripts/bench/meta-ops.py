#!/usr/bin/env python3
"""One phase of the metadata benchmark (scripts/bench/bench-meta.sh): FILES files spread over
JOBS worker processes, each in its own subdirectory (w0, w1, ...) so the kernel's per-directory lock
does not serialize them. Prints the phase's operations per second (all workers, wall clock).

Usage: meta-ops.py PHASE DIR FILES JOBS
Phases, run in this order on one DIR: create (empty files), stat, chmod, write (100 bytes into each),
read (the 100 bytes back), rename (f -> f.r), unlink (f.r). The caller drops caches before the
cold ones (stat, read)."""
import os
import sys

from forked_jobs import run_forked

WRITE_BYTES = 100
PAYLOAD = b'm' * WRITE_BYTES


def paths(root, job, jobs, files):
    d = os.path.join(root, 'w%d' % job)
    return d, [os.path.join(d, 'f%05d' % i) for i in range(job, files, jobs)]


def op(phase):
    def create(p):
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))

    def write(p):
        fd = os.open(p, os.O_WRONLY)
        try:
            if os.write(fd, PAYLOAD) != WRITE_BYTES:
                raise OSError('short write on %s' % p)
        finally:
            os.close(fd)

    def read(p):
        fd = os.open(p, os.O_RDONLY)
        try:
            if len(os.read(fd, WRITE_BYTES * 2)) != WRITE_BYTES:
                raise OSError('%s does not hold %d bytes' % (p, WRITE_BYTES))
        finally:
            os.close(fd)

    return {
        'create': create,
        'stat': os.stat,
        'chmod': lambda p: os.chmod(p, 0o600),
        'write': write,
        'read': read,
        'rename': lambda p: os.rename(p, p + '.r'),
        'unlink': lambda p: os.unlink(p + '.r'),
    }[phase]


def worker(phase, root, job, jobs, files):
    d, ps = paths(root, job, jobs, files)
    if phase == 'create':
        os.makedirs(d, exist_ok=True)
    f = op(phase)
    for p in ps:
        f(p)


def main():
    phase, root, files, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    op(phase)  # an unknown phase fails here, before any timing
    elapsed = run_forked('meta-ops %s' % phase, jobs, lambda job: worker(phase, root, job, jobs, files))
    if phase == 'unlink':
        for job in range(jobs):
            os.rmdir(os.path.join(root, 'w%d' % job))
    print('%.0f' % (files / elapsed))


if __name__ == '__main__':
    main()
