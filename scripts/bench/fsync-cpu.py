#!/usr/bin/env python3
"""CPU time of a mount process per fsync'd 4 KiB random write (pwrite + fsync, as fio's randwrite
bs=4k fsync=1): WRITERS processes, each on a 64 MiB file of its own (SAME=1: all on one file, whose
FSYNCs the kernel sends one at a time, DESIGN §5), N writes each, ROUNDS rounds with IDLE_S seconds
idle before each (a mount between two benchmark jobs: V8 shrinks its young generation when idle,
cli/mount-memory.ts). The CPU is the mount's from /proc/PID/task/*/schedstat (time on a CPU, in ns),
split into its JavaScript thread (the process's first task) and the rest (V8's workers, the libuv
pool). /proc/PID/io is not used: on this VM's kernel each fdatasync adds about 2 MiB to its
write_bytes. Device flushes per write: run it under `strace -f -c -e trace=fdatasync,fsync -p PID`.
With STATUS_CLI (a build's dist/cli/cli.js) it also prints the intent log's commits (one pwrite and
one fdatasync each, DESIGN §5) and bytes per write, from `chunkfs status MOUNT --json` (MOUNT: the
mount point, DIR by default): exact counts, unlike the times (with 4 writers, how many records share
a commit).
Usage: fsync-cpu.py PID DIR N WRITERS [ROUNDS] [IDLE_S]   (DIR inside the mount of process PID)"""
import json
import os
import random
import subprocess
import sys
import time

FILE_BYTES = 64 << 20
WRITE_BYTES = 4096


def cpu_ns(pid, main_only):
    total = 0
    for t in [str(pid)] if main_only else os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/schedstat' % (pid, t)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that ended
    return total


def log_counts():
    """(log commits, log bytes written) so far, or None without STATUS_CLI."""
    cli = os.environ.get('STATUS_CLI')
    if not cli:
        return None
    mount = os.environ.get('MOUNT') or sys.argv[2]
    out = subprocess.run(['node', cli, 'status', mount, '--json'], check=True, capture_output=True, text=True)
    b = json.loads(out.stdout)['intentBacklog']
    return b['logFlushes'], b['logBytesWritten']


def lay_out(path):
    if os.path.exists(path):
        return
    with open(path, 'wb') as f:
        for _ in range(FILE_BYTES >> 20):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())


def writer(path, seed, n):
    fd = os.open(path, os.O_WRONLY)
    r = random.Random(seed)
    buf = os.urandom(WRITE_BYTES)
    for _ in range(n):
        os.pwrite(fd, buf, r.randrange(FILE_BYTES // WRITE_BYTES) * WRITE_BYTES)
        os.fsync(fd)
    os.close(fd)


def main():
    pid, root, n, writers = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    idle_s = float(sys.argv[6]) if len(sys.argv) > 6 else 0
    same = os.environ.get('SAME') == '1'
    paths = [os.path.join(root, 'fsync-%d' % (0 if same else i)) for i in range(writers)]
    for p in set(paths):
        lay_out(p)
    for r in range(rounds):
        time.sleep(idle_s)
        l0 = log_counts()
        c0, m0, w0 = cpu_ns(pid, False), cpu_ns(pid, True), time.perf_counter()
        kids = []
        for i, p in enumerate(paths):
            k = os.fork()
            if k == 0:
                try:
                    writer(p, r * writers + i, n)
                finally:
                    os._exit(0)
            kids.append(k)
        for k in kids:
            os.waitpid(k, 0)
        c1, m1, w1 = cpu_ns(pid, False), cpu_ns(pid, True), time.perf_counter()
        l1 = log_counts()
        total = n * writers
        log = '' if l0 is None else '  log commits/write %.3f, log bytes/write %.0f' % (
            (l1[0] - l0[0]) / total, (l1[1] - l0[1]) / total)
        print('round %d: cpu us/write %.1f (JavaScript thread %.1f, other threads %.1f)  writes/s %.0f  load %s%s' % (
            r + 1, (c1 - c0) / total / 1000, (m1 - m0) / total / 1000, ((c1 - c0) - (m1 - m0)) / total / 1000,
            total / (w1 - w0), '%.1f' % os.getloadavg()[0], log))


main()
