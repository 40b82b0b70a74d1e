#!/usr/bin/env python3
# Copy tools against a just-written file (DESIGN §5 "One view"), run as a CHILD process of the test (never the
# process serving the mount). Subcommands print one JSON object:
#   chain DIR SIZE SEED SETTLE
#                         write DIR/h (SIZE random bytes), then copy it through a chain of real
#                         tools, each copy made from the one before: whether each copy is h. SETTLE 0:
#                         at once (its bytes still in the mount's memory); 1: after sync and a pause
#                         (stored, and the kernel's cached attributes expired).
#   seekmap FILE          the data ranges SEEK_DATA / SEEK_HOLE report, and whether every non-zero
#                         byte of the file lies inside one (a "hole" must read back as zeros).
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time

CHAIN = [
    ('cp', ['cp', '{src}', '{dst}']),
    ('cp --sparse=always', ['cp', '--sparse=always', '{src}', '{dst}']),
    ('cp --reflink=auto', ['cp', '--reflink=auto', '{src}', '{dst}']),
    ('rsync -S', ['rsync', '-S', '{src}', '{dst}']),
    ('tar -S', ['sh', '-c', 'tar -cSf - -C "$(dirname {src})" "$(basename {src})" | tar -xOf - > {dst}']),
    ('shutil.copyfile', None),
    ('cp (again)', ['cp', '{src}', '{dst}']),
]


def sha(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def chain(d, size, seed, settle):
    data = random.Random(seed).randbytes(size)
    src = os.path.join(d, 'h')
    with open(src, 'wb') as f:
        f.write(data)
    want = hashlib.sha256(data).hexdigest()
    if settle:
        os.sync()
        time.sleep(1.5)
    out = []
    for i, (name, argv) in enumerate(CHAIN):
        dst = os.path.join(d, 'z.%d' % i)
        if argv is None:
            shutil.copyfile(src, dst)
        else:
            subprocess.run([a.replace('{src}', src).replace('{dst}', dst) for a in argv], check=True)
        out.append({'tool': name, 'ok': sha(dst) == want})
        src = dst
    return {'copies': out}


def seekmap(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        ranges = []
        pos = 0
        for _ in range(1 << 16):  # a bound: no test file has this many extents
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break  # ENXIO: no data after pos
            end = os.lseek(fd, start, os.SEEK_HOLE)
            ranges.append([start, end])
            if end >= size:
                break
            pos = end
        data = os.pread(fd, size, 0)
    finally:
        os.close(fd)
    covered = bytearray(size)
    for s, e in ranges:
        covered[s:e] = b'\x01' * (e - s)
    bad = next((i for i, b in enumerate(data) if b != 0 and not covered[i]), None)
    return {'size': size, 'ranges': ranges, 'zerosOutsideData': bad is None, 'firstBadByte': bad}


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'chain':
        print(json.dumps(chain(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == '1')))
    elif cmd == 'seekmap':
        print(json.dumps(seekmap(sys.argv[2])))
    else:
        sys.exit('copy-check: unknown subcommand %r' % cmd)
