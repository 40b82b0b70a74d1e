#!/usr/bin/env python3
# Writer for the crash test, run as a child: appends numbered 4 KiB records to SEQ and overwrites
# 5000-byte slots (unaligned: partial bitrot blocks) of each pre-filled RANDOM file, fsync after every
# write, and prints "ack N" only after the fsyncs of record N returned. It stops at the first error
# (the mount was killed). Usage: crash-writer.py SEQ COUNT RANDOM...
import os
import random
import sys

SLOT_BYTES = 16384
SLOT_SHIFT = 1000
PIECE_BYTES = 5000


def record(i):
    return (b'%08d' % i) * 512


def piece(path_index, slot):
    return random.Random(path_index * 1_000_003 + slot).randbytes(PIECE_BYTES)


def main():
    seq_path, count, rnd_paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    seq = os.open(seq_path, os.O_CREAT | os.O_WRONLY, 0o644)
    rnds = [os.open(p, os.O_RDWR) for p in rnd_paths]
    slots_total = os.fstat(rnds[0]).st_size // SLOT_BYTES if rnds else 0
    order = list(range(slots_total))
    random.Random(7).shuffle(order)
    try:
        for i in range(count):
            os.pwrite(seq, record(i), i * 4096)
            os.fsync(seq)
            for k, fd in enumerate(rnds):
                slot = order[i % slots_total]
                os.pwrite(fd, piece(k, slot), slot * SLOT_BYTES + SLOT_SHIFT)
                os.fsync(fd)
            print('ack %d' % i, flush=True)
    except OSError as e:
        print('stopped: %s' % e, flush=True)


main()
