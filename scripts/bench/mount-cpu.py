#!/usr/bin/env python3
"""CPU time of a mount process per metadata operation: create (open O_CREAT|O_EXCL + close), chmod,
rename (f -> f.r), unlink; FILES files per round, ROUNDS rounds, JOBS client processes (env, default
1), each in its own directory. The CPU is the mount's, all threads (/proc/PID/task/*/schedstat: time
on a CPU, in ns), which a shared machine's load moves far less than wall-clock rates; the first
round pays V8's compilation of the paths. Prints per phase each round's CPU us/op and ops/s.
Usage: mount-cpu.py PID DIR FILES ROUNDS   (DIR inside the mount of process PID)"""
import os
import sys
import time

def cpu_ns(pid):
    total = 0
    for t in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/schedstat' % (pid, t)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total

JOBS = int(os.environ.get('JOBS', '1'))

def in_jobs(fn, ps):
    # JOBS processes, each on its share of the files (each job has its own directory)
    kids = []
    for j in range(JOBS):
        pid = os.fork()
        if pid == 0:
            try:
                for p in ps[j::JOBS]:
                    fn(p)
            finally:
                os._exit(0)
        kids.append(pid)
    for k in kids:
        os.waitpid(k, 0)

def main():
    pid, root, files, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    res = {}
    for r in range(rounds):
        d = os.path.join(root, 'r%d' % r)
        os.mkdir(d)
        for j in range(JOBS):
            os.mkdir(os.path.join(d, 'w%d' % j))
        ps = [os.path.join(d, 'w%d' % (i % JOBS), 'f%05d' % i) for i in range(files)]
        phases = [
            ('create', lambda p: os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))),
            ('chmod', lambda p: os.chmod(p, 0o600)),
            ('rename', lambda p: os.rename(p, p + '.r')),
            ('unlink', lambda p: os.unlink(p + '.r')),
        ]
        for name, fn in phases:
            c0, w0 = cpu_ns(pid), time.perf_counter()
            in_jobs(fn, ps)
            c1, w1 = cpu_ns(pid), time.perf_counter()
            res.setdefault(name, []).append(((c1 - c0) / files / 1000, files / (w1 - w0)))
        for j in range(JOBS):
            os.rmdir(os.path.join(d, 'w%d' % j))
        os.rmdir(d)
    for name, v in res.items():
        cpus = ' '.join('%.1f' % c for c, _ in v)
        print('%-7s cpu us/op: %s   ops/s: %s' % (name, cpus, ' '.join('%.0f' % o for _, o in v)))

main()
