# xfstests generic/615: a file with data never shows st_blocks 0, also while it is
# overwritten. A child stats FILE in a loop while this process overwrites all of it ROUNDS times per
# mode (buffered, O_SYNC, O_DIRECT), each through a new descriptor as xfs_io runs do.
# usage: blocks-overwrite.py FILE SIZE_BYTES ROUNDS; prints JSON {"stats": n, "zero": n, "rounds": n}
import json, mmap, os, sys

path, size, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stop = path + '.stop'
buf = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT wants
buf.write(b'\xab' * size)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_SYNC, 0o644)
os.pwrite(fd, buf, 0)
os.close(fd)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    stats = zero = 0
    while not os.path.exists(stop):
        stats += 1
        if os.stat(path).st_blocks == 0:
            zero += 1
    os.write(w, json.dumps({'stats': stats, 'zero': zero}).encode())
    os._exit(0)
os.close(w)
done = 0
try:
    for flags in (0, os.O_SYNC, os.O_DIRECT):
        for _ in range(rounds):
            fd = os.open(path, os.O_WRONLY | flags)
            os.pwrite(fd, buf, 0)
            os.close(fd)
            done += 1
finally:
    open(stop, 'w').close()
    out = json.loads(os.read(r, 1000))
    os.waitpid(pid, 0)
    os.unlink(stop)
print(json.dumps({**out, 'rounds': done}))
