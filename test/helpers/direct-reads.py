#!/usr/bin/env python3
"""O_DIRECT reads of FILE at the given (offset, length) pairs (4 KiB aligned) compared with REF, in a
child process (a synchronous read of the mount from its own test process could deadlock).
Usage: direct-reads.py FILE REF '[[offset, length], ...]'. Prints the mismatches as JSON: [offset,
length, bytes read] for wrong bytes, [offset, length, error] for a failed read."""
import json
import mmap
import os
import sys

file, ref, reads = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
fd = os.open(file, os.O_RDONLY | os.O_DIRECT)
bad = []
with open(ref, 'rb') as r:
    for off, n in reads:
        buf = mmap.mmap(-1, n)
        try:
            got = os.preadv(fd, [buf], off)
        except OSError as e:
            bad.append([off, n, str(e)])
            continue
        r.seek(off)
        if buf[:got] != r.read(n):
            bad.append([off, n, got])
print(json.dumps(bad))
