#!/usr/bin/env python3
"""Checker for scripts/test/powerloss.sh, after the remount. Arguments: a list of KIND:DIR:NAME:LOG.
Prints one line: fsync_lost_bytes nonprefix_files files_checked acked_bytes dropped_bytes (appended
but not read back), then one line per problem.

append:    size <= bytes written (last "w"); bytes [0,size) are what was written; size >= last "s".
overwrite: each 16 KiB block is one generation written to it (old or new, never torn or zero), and
           not older than the newest one written before the last acknowledged fsync.
rename:    each name holds one complete version renamed to it; not older than the last rename that a
           later fsync (file or directory) acknowledged (DESIGN 5: fsync makes earlier namespace
           changes durable). Leftover temp files are prefixes of their version, whole if fsync'd.
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from content import append_bytes, block16k, version_bytes

lost = 0
bad = 0
checked = 0
acked = 0
dropped = 0  # bytes written but not read back (not fsync'd): shows that the cut dropped something
problems = []


def read(path):
    try:
        with open(path, 'rb') as f:
            return f.read()
    except FileNotFoundError:
        return None


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            for j in range(i, min(i + 4096, n)):
                if a[j] != b[j]:
                    return j
    return n if len(a) != len(b) else -1


def check_append(d, name, logp):
    global lost, bad, checked, acked, dropped
    written, synced = {}, {}
    for line in open(logp):
        p = line.split()
        if len(p) < 2:
            continue
        if p[0] == 'f':
            written.setdefault(p[1], 0); synced.setdefault(p[1], 0)
        elif p[0] == 'w' and len(p) == 3:
            written[p[1]] = int(p[2])
        elif p[0] == 's' and len(p) == 3:
            synced[p[1]] = int(p[2])
    for fname, w in written.items():
        checked += 1
        s = synced.get(fname, 0)
        acked += s
        data = read(os.path.join(d, fname))
        dropped += max(0, w - (len(data) if data is not None else 0))
        if data is None:
            if s:
                lost += s; problems.append('%s/%s: missing, %d B fsync\'d' % (d, fname, s))
            continue
        size = len(data)
        exp = append_bytes(fname, 0, min(size, w))
        diff = first_diff(data[:len(exp)], exp)
        if size > w or diff >= 0:
            bad += 1
            zeros = data[diff:diff + 4096].count(0) if diff >= 0 else 0
            problems.append('%s/%s: NOT A PREFIX: size %d, written %d, first differing byte %s (%d of the next 4096 are zero)'
                            % (d, fname, size, w, diff, zeros))
        good = diff if diff >= 0 else min(size, w)
        if good < s:
            lost += s - good
            problems.append('%s/%s: FSYNC LOST: %d B good of %d fsync\'d (size %d)' % (d, fname, good, s, size))


def check_overwrite(d, name, logp):
    global lost, bad, checked, acked
    nblk, gens, synced = 0, {}, 0
    order = []
    for line in open(logp):
        p = line.split()
        if not p:
            continue
        if p[0] == 'ready':
            nblk = int(p[1])
        elif p[0] == 'w' and len(p) == 3:
            b, g = int(p[1]), int(p[2]); gens.setdefault(b, []).append(g); order.append((g, b))
        elif p[0] == 's' and len(p) == 2:
            synced = int(p[1])
    if not nblk:
        return
    checked += 1
    acked += nblk << 14
    data = read(os.path.join(d, name))
    if data is None or len(data) != nblk << 14:
        lost += nblk << 14
        problems.append('%s/%s: FSYNC LOST: file %s' % (d, name, 'missing' if data is None else 'size %d' % len(data)))
        return
    badblocks = []
    for b in range(nblk):
        got = data[b << 14:(b + 1) << 14]
        cands = [0] + gens.get(b, [])
        match = [g for g in cands if block16k(name, b, g) == got]
        if not match:
            badblocks.append(b)
            continue
        floor = max([g for g in cands if g <= synced])
        if max(match) < floor:
            lost += 1 << 14
            problems.append('%s/%s: FSYNC LOST: block %d reads gen %d, gen %d was fsync\'d' % (d, name, b, max(match), floor))
    if badblocks:
        bad += 1
        problems.append('%s/%s: TORN: blocks %s are no generation written there' % (d, name, badblocks[:10]))


def check_rename(d, name, logp):
    global lost, bad, checked, acked
    sizes, renamed, durable_to = {}, [], 0
    fsynced_tmp = set()
    for line in open(logp):
        p = line.split()
        if not p:
            continue
        if p[0] == 't' and len(p) == 4:
            sizes[int(p[2])] = int(p[3])
        elif p[0] == 'w' and len(p) == 3:
            fsynced_tmp.add(int(p[2]))
            if renamed:
                durable_to = len(renamed)
        elif p[0] == 'r' and len(p) == 3:
            renamed.append((int(p[1]), int(p[2])))
        elif p[0] == 'd':
            durable_to = len(renamed)
    floor = {}
    for slot, i in renamed[:durable_to]:
        floor[slot] = i
    ever = {}
    for slot, i in renamed:
        ever.setdefault(slot, []).append(i)
    for slot in range(8):
        vers = ever.get(slot, [])
        if not vers:
            continue
        checked += 1
        data = read(os.path.join(d, '%s.%d' % (name, slot)))
        f = floor.get(slot, 0)
        if f:
            acked += sizes[f]
        if data is None:
            if f:
                lost += sizes[f]; problems.append('%s/%s.%d: FSYNC LOST: missing, version %d was durable' % (d, name, slot, f))
            continue
        match = [i for i in vers if len(data) == sizes[i] and data == version_bytes(name, i, sizes[i])]
        if not match:
            bad += 1
            problems.append('%s/%s.%d: NOT A VERSION: size %d, versions renamed there %s' % (d, name, slot, len(data), vers[-5:]))
        elif max(match) < f:
            lost += sizes[f]
            problems.append('%s/%s.%d: FSYNC LOST: reads version %d, version %d was durable' % (d, name, slot, max(match), f))
    for ent in os.listdir(d):
        pre = '.tmp.%s.' % name
        if not ent.startswith(pre):
            continue
        i = int(ent[len(pre):])
        checked += 1
        data = read(os.path.join(d, ent)) or b''
        exp = version_bytes(name, i, sizes.get(i, 0))
        if len(data) > len(exp) or data != exp[:len(data)]:
            bad += 1
            problems.append('%s/%s: NOT A PREFIX (temp file): size %d of %d' % (d, ent, len(data), len(exp)))
        elif i in fsynced_tmp and len(data) != len(exp):
            lost += len(exp) - len(data)
            problems.append('%s/%s: FSYNC LOST (temp file): size %d of %d fsync\'d' % (d, ent, len(data), len(exp)))


for arg in sys.argv[1:]:
    kind, d, name, logp = arg.split(':', 3)
    if not os.path.exists(logp):  # the writer had not started yet: nothing was acknowledged
        continue
    {'append': check_append, 'overwrite': check_overwrite, 'rename': check_rename}[kind](d, name, logp)
print(lost, bad, checked, acked, dropped)
for p in problems:
    print(p)
