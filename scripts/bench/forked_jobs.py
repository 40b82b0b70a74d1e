"""Timed runs of JOBS worker processes for the benchmark phases (meta-ops.py, dispatch-ops.py):
each worker is forked first and waits on a pipe, so fork time is not counted; the parent closes the
pipe to start them all at once and times until the last one exits. A worker that raises is reported
on stderr and fails the phase."""
import os
import sys
import time


def run_forked(name, jobs, work):
    """Run work(job) in jobs forked processes started together; the wall-clock seconds they took."""
    go_r, go_w = os.pipe()
    pids = []
    for job in range(jobs):
        pid = os.fork()
        if pid == 0:
            code = 0
            os.close(go_w)
            os.read(go_r, 1)
            try:
                work(job)
            except Exception as e:  # noqa: BLE001 (reported, then the exit code says it failed)
                sys.stderr.write('%s worker %d: %s\n' % (name, job, e))
                code = 1
            os._exit(code)
        pids.append(pid)
    os.close(go_r)
    start = time.monotonic()
    os.close(go_w)
    failed = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        failed += status != 0
    elapsed = time.monotonic() - start
    if failed:
        sys.exit('%s: %d worker(s) failed' % (name, failed))
    return elapsed
