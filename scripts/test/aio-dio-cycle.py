# Asynchronous (AIO) O_DIRECT writes of a whole file with a new byte each round, each followed by a
# buffered read through a new descriptor that must see the new byte, while readers re-read the file
# buffered (as xfstests generic/451 and its aio-dio-cycle-write). Raw syscalls through ctypes: no
# libaio needed. Prints JSON: rounds run, and the first stale read (round, offset, byte) or null.
# Reproducer of the AIO direct-I/O cycle of docs/xfstests.md: python3 scripts/test/aio-dio-cycle.py MNT/file 655360 500 2
# usage: aio-dio-cycle.py FILE SIZE_BYTES ROUNDS READERS
import ctypes, json, mmap, os, platform, signal, struct, sys

path, size, rounds_max, readers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
NR = {'x86_64': (206, 207, 208, 209), 'aarch64': (0, 1, 4, 2)}[platform.machine()]
NR_SETUP, NR_DESTROY, NR_GETEVENTS, NR_SUBMIT = NR
IOCB_CMD_PWRITE = 1
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def sys_call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r

buf = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT wants
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
ctx = ctypes.c_ulong(0)
sys_call(NR_SETUP, ctypes.c_long(1), ctypes.byref(ctx))

fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
buf.write(b'\x00' * size)
os.pwrite(fd, buf, 0)

children = []
for _ in range(readers):
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            r = os.open(path, os.O_RDONLY)
            os.pread(r, size, 0)
            os.close(r)
    children.append(pid)

def aio_write():
    iocb = ctypes.create_string_buffer(struct.pack('<QIiHhIQQqQII', 0, 0, 0, IOCB_CMD_PWRITE, 0, fd, addr, size, 0, 0, 0, 0), 64)
    ptrs = (ctypes.c_void_p * 1)(ctypes.addressof(iocb))
    sys_call(NR_SUBMIT, ctx, ctypes.c_long(1), ptrs)
    events = ctypes.create_string_buffer(32)
    sys_call(NR_GETEVENTS, ctx, ctypes.c_long(1), ctypes.c_long(1), events, None)
    res = struct.unpack('<QQqq', events.raw)[2]
    if res != size:
        raise OSError(-res if res < 0 else 0, 'aio write returned %d' % res)

stale = None
rounds = 0
try:
    for rounds in range(1, rounds_max + 1):
        byte = 1 + rounds % 250
        buf.seek(0)
        buf.write(bytes([byte]) * size)
        aio_write()
        r = os.open(path, os.O_RDONLY)
        got = os.pread(r, size, 0)
        os.close(r)
        bad = next((i for i, b in enumerate(got) if b != byte), None) if got.count(byte) != size else None
        if len(got) != size or bad is not None:
            stale = {'round': rounds, 'offset': bad, 'byte': got[bad] if bad is not None else None, 'want': byte, 'length': len(got)}
            break
finally:
    for pid in children:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    sys_call(NR_DESTROY, ctx)
print(json.dumps({'rounds': rounds, 'stale': stale}))
