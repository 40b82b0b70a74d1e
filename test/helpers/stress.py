#!/usr/bin/env python3
# A multi-process namespace and data stress for mounted tests and benchmarks, run
# as a CHILD process of the test (never the process serving the mount).
#   stress.py DIR WORKERS SECONDS BYTES_MAX SEED
# forks WORKERS processes; each does random creates, writes (appends and overwrites), truncates,
# renames and unlinks on files under DIR (shared by all workers, so renames replace other workers'
# files) until SECONDS pass or it wrote BYTES_MAX / WORKERS bytes. Files stay below FILE_BYTES_MAX,
# so the live data stays small while the bytes written are many times more. Prints one JSON line:
# {"ops": {...}, "writtenBytes": N, "errors": {...}}. Races between workers (ENOENT on a file another
# worker unlinked or renamed meanwhile) are counted, not failures.
import errno
import json
import os
import random
import sys
import time

FILES_PER_DIR = 24          # names the workers share: small enough that they collide often
FILE_BYTES_MAX = 6 << 20    # up to two 4 MiB chunks per file, so whole and partial chunk writes mix
WRITE_BYTES_MAX = 1 << 20
SMALL_BYTES_MAX = 60 << 10  # below the store's 64 KiB small-file threshold


def worker(root, seconds, bytes_max, seed, out_fd):
    rnd = random.Random(seed)
    ops = {}
    errors = {}
    written = 0
    deadline = time.monotonic() + seconds
    payload = rnd.randbytes(WRITE_BYTES_MAX)
    while time.monotonic() < deadline and written < bytes_max:
        name = os.path.join(root, 'f%02d' % rnd.randrange(FILES_PER_DIR))
        other = os.path.join(root, 'f%02d' % rnd.randrange(FILES_PER_DIR))
        op = rnd.choices(['create', 'small', 'write', 'append', 'truncate', 'rename', 'unlink'], [3, 6, 5, 3, 2, 2, 2])[0]
        ops[op] = ops.get(op, 0) + 1
        try:
            if op == 'create':
                n = rnd.choice([rnd.randrange(1, 64 << 10), rnd.randrange(1, FILE_BYTES_MAX)])
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    at = 0
                    while at < n:
                        k = min(n - at, WRITE_BYTES_MAX)
                        os.write(fd, payload[:k])
                        at += k
                    written += n
                finally:
                    os.close(fd)
            elif op == 'small':
                # small files are packed as needles: rewriting one leaves a dead needle behind
                n = rnd.randrange(1, SMALL_BYTES_MAX)
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    os.write(fd, payload[:n])
                    written += n
                finally:
                    os.close(fd)
            elif op in ('write', 'append'):
                fd = os.open(name, os.O_WRONLY)
                try:
                    size = os.fstat(fd).st_size
                    n = rnd.randrange(1, WRITE_BYTES_MAX)
                    at = size if op == 'append' else rnd.randrange(0, max(1, size))
                    n = max(0, min(n, FILE_BYTES_MAX - at))
                    os.pwrite(fd, payload[:n], at)
                    written += n
                    if rnd.random() < 0.2:
                        os.fsync(fd)
                finally:
                    os.close(fd)
            elif op == 'truncate':
                os.truncate(name, rnd.randrange(0, FILE_BYTES_MAX))
            elif op == 'rename':
                os.rename(name, other)
            elif op == 'unlink':
                os.unlink(name)
        except OSError as e:
            key = errno.errorcode.get(e.errno, str(e.errno))
            errors[key] = errors.get(key, 0) + 1
    os.write(out_fd, (json.dumps({'ops': ops, 'writtenBytes': written, 'errors': errors}) + '\n').encode())


def main():
    root, workers, seconds, bytes_max, seed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    r, w = os.pipe()
    pids = []
    for i in range(workers):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                worker(root, seconds, bytes_max // workers, seed * 1000 + i, w)
            except BaseException as e:  # report, never leave the parent waiting
                os.write(w, (json.dumps({'fatal': repr(e)}) + '\n').encode())
                code = 1
            os._exit(code)
        pids.append(pid)
    os.close(w)
    for pid in pids:
        os.waitpid(pid, 0)
    total = {'ops': {}, 'writtenBytes': 0, 'errors': {}, 'workers': workers}
    with os.fdopen(r) as f:
        for line in f:
            rep = json.loads(line)
            if 'fatal' in rep:
                total.setdefault('fatal', []).append(rep['fatal'])
                continue
            total['writtenBytes'] += rep['writtenBytes']
            for k in ('ops', 'errors'):
                for name, n in rep[k].items():
                    total[k][name] = total[k].get(name, 0) + n
    print(json.dumps(total))
    sys.exit(1 if 'fatal' in total else 0)


if __name__ == '__main__':
    main()
