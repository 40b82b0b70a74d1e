#!/usr/bin/env python3
# Writer for the write-back kill -9 test, run as a child: writes a seeded random stream to PATH in
# 1 MiB writes, FIRST_BYTES of it, then fsync (which stores part of a chunk, as the flush timer
# would), then the rest up to TOTAL_BYTES without fsync. It prints "written" and keeps the file open
# (no close, so nothing more is flushed) until it is killed.
# Usage: paced-writer.py PATH SEED FIRST_BYTES TOTAL_BYTES
import os
import random
import sys
import time

WRITE_BYTES = 1 << 20
HOLD_S = 600


def main():
    path, seed, first, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    data = random.Random(seed).randbytes(total)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    at = 0
    while at < first:
        at += os.pwrite(fd, data[at:min(first, at + WRITE_BYTES)], at)
    os.fsync(fd)
    while at < total:
        at += os.pwrite(fd, data[at:min(total, at + WRITE_BYTES)], at)
    print('written', flush=True)
    time.sleep(HOLD_S)


main()
