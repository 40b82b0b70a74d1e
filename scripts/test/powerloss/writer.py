#!/usr/bin/env python3
"""Writers for scripts/test/powerloss.sh. Each logs, line-buffered to a file outside the store, what it
is about to write ("w ...") and what the filesystem acknowledged ("s ..." after fsync, "r ..." after
rename, "d ..." after a directory fsync). The checker (check.py) regenerates the expected bytes.

  writer.py append DIR NAME fsync|nofsync LOG   sequential appends, new file every 16 MiB
  writer.py overwrite DIR NAME LOG               16 KiB blocks overwritten in place, fsync every 8
  writer.py rename DIR NAME LOG                  write tmp, fsync, rename over one of 8 names
"""
import os, sys, random
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from content import append_bytes, block16k, version_bytes

ROTATE = 16 << 20


def main():
    mode = sys.argv[1]
    rng = random.Random()
    if mode == 'append':
        d, name, sync, logp = sys.argv[2:6]
        log = open(logp, 'a', buffering=1)
        n = 0
        while True:
            fname = '%s.%d' % (name, n)
            fd = os.open(os.path.join(d, fname), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            log.write('f %s\n' % fname)
            off = 0
            while off < ROTATE:
                size = rng.choice([rng.randint(1, 4096), rng.randint(4096, 256 << 10), 1 << 20])
                data = append_bytes(fname, off, size)
                log.write('w %s %d\n' % (fname, off + size))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                off += size
                if sync == 'fsync':
                    os.fsync(fd)
                    log.write('s %s %d\n' % (fname, off))
            os.close(fd)
            n += 1
    elif mode == 'overwrite':
        d, name, logp = sys.argv[2:5]
        log = open(logp, 'a', buffering=1)
        nblk = 256
        path = os.path.join(d, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for b in range(nblk):
            os.pwrite(fd, block16k(name, b, 0), b << 14)
        os.fsync(fd)
        log.write('ready %d\n' % nblk)
        gen = 0
        while True:
            gen += 1
            b = rng.randrange(nblk)
            log.write('w %d %d\n' % (b, gen))
            os.pwrite(fd, block16k(name, b, gen), b << 14)
            if gen % 8 == 0:
                os.fsync(fd)
                log.write('s %d\n' % gen)
    elif mode == 'rename':
        d, name, logp = sys.argv[2:5]
        log = open(logp, 'a', buffering=1)
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        i = 0
        while True:
            i += 1
            slot = i % 8
            size = rng.choice([rng.randint(1, 60 << 10), rng.randint(64 << 10, 3 << 20)])
            tmp = os.path.join(d, '.tmp.%s.%d' % (name, i))
            log.write('t %d %d %d\n' % (slot, i, size))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            view = memoryview(version_bytes(name, i, size))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            os.close(fd)
            log.write('w %d %d\n' % (slot, i))
            os.rename(tmp, os.path.join(d, '%s.%d' % (name, slot)))
            log.write('r %d %d\n' % (slot, i))
            if i % 4 == 0:
                os.fsync(dfd)
                log.write('d %d\n' % i)
    else:
        sys.exit('unknown mode ' + mode)


if __name__ == '__main__':
    main()
