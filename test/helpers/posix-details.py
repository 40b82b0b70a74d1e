#!/usr/bin/env python3
# Client of test/mount/posix-details.test.ts (filesystem.md, POSIX details), run as a CHILD process of the
# test (never the process serving the mount). argv: a check name and its JSON arguments; prints
# one JSON value. Errors come back as {"err": "ENAME"}. libc calls that Python lacks
# (telldir/seekdir, name_to_handle_at/open_by_handle_at) go through ctypes.
import ctypes
import errno
import json
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)


def err_of(e):
    return {'err': errno.errorcode.get(e.errno, str(e.errno))}


def libc_err():
    e = ctypes.get_errno()
    return {'err': errno.errorcode.get(e, str(e))}


def times(path, ns_list):
    """utimensat each time (atime = mtime = t, decimal strings), reading back st_mtime_ns / st_atime_ns."""
    out = []
    for text in ns_list:
        ns = int(text)
        try:
            os.utime(path, ns=(ns, ns))
            st = os.stat(path)
            out.append({'mtime_ns': str(st.st_mtime_ns), 'atime_ns': str(st.st_atime_ns)})
        except OSError as e:
            out.append(err_of(e))
    return out


def mtime(path):
    return str(os.stat(path).st_mtime_ns)


def atime(path):
    return str(os.stat(path).st_atime_ns)


def scandir_inos(path):
    """Each entry's d_ino (os.scandir's inode()) next to lstat's st_ino."""
    return [[e.name, e.inode(), os.lstat(e.path).st_ino] for e in os.scandir(path)]


class Dirent(ctypes.Structure):
    _fields_ = [('d_ino', ctypes.c_uint64), ('d_off', ctypes.c_int64), ('d_reclen', ctypes.c_ushort),
                ('d_type', ctypes.c_ubyte), ('d_name', ctypes.c_char * 256)]


libc.opendir.restype = ctypes.c_void_p
libc.opendir.argtypes = [ctypes.c_char_p]
libc.readdir.restype = ctypes.POINTER(Dirent)
libc.readdir.argtypes = [ctypes.c_void_p]
libc.telldir.restype = ctypes.c_long
libc.telldir.argtypes = [ctypes.c_void_p]
libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
libc.closedir.argtypes = [ctypes.c_void_p]


def read_rest(dp):
    names = []
    for _ in range(100000):
        e = libc.readdir(dp)
        if not e:
            return names
        names.append(e.contents.d_name.decode())
    raise RuntimeError('directory does not end')


def seekdir_stable(path, count, seeks):
    """
    count files f0000..; reads the whole directory recording telldir before each entry, then while
    the stream stays open creates new names and unlinks every third original one, and for each
    position k in seeks: seekdir to it, read to the end. Reports, per seek, the names that existed
    throughout and were missed, and the names read twice.
    """
    os.makedirs(path, exist_ok=True)
    for i in range(count):
        open(os.path.join(path, 'f%04d' % i), 'w').close()
    dp = libc.opendir(path.encode())
    if not dp:
        return libc_err()
    pos, names = [], []
    for _ in range(count + 3):
        pos.append(libc.telldir(dp))
        e = libc.readdir(dp)
        if not e:
            break
        names.append(e.contents.d_name.decode())
    removed = set()
    for i in range(0, count, 3):
        os.unlink(os.path.join(path, 'f%04d' % i))
        removed.add('f%04d' % i)
    for i in range(count // 2):
        open(os.path.join(path, 'new%04d' % i), 'w').close()
    report = []
    for k in seeks:
        libc.seekdir(dp, pos[k])
        rest = read_rest(dp)
        throughout = [n for n in names[k:] if n not in removed]
        missed = [n for n in throughout if n not in rest]
        twice = sorted({n for n in rest if rest.count(n) > 1})
        report.append({'k': k, 'first': rest[0] if rest else None, 'expected_first': names[k], 'missed': missed, 'twice': twice})
    libc.closedir(dp)
    return {'read': len(names), 'report': report}


def renamed_dir_fd(path, new_path):
    """Opens a directory, renames it, then uses only the descriptor: fstat, fchmod, listing."""
    os.makedirs(path, exist_ok=True)
    open(os.path.join(path, 'inside'), 'w').close()
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    ino = os.fstat(fd).st_ino
    os.rename(path, new_path)
    out = {}
    try:
        st = os.fstat(fd)
        out['fstat_ino_same'] = st.st_ino == ino
        os.fchmod(fd, 0o711)
        out['mode'] = os.fstat(fd).st_mode & 0o7777
        out['listing'] = sorted(os.listdir(fd))
    except OSError as e:
        out.update(err_of(e))
    os.close(fd)
    return out


class FileHandle(ctypes.Structure):
    _fields_ = [('handle_bytes', ctypes.c_uint), ('handle_type', ctypes.c_int), ('f_handle', ctypes.c_ubyte * 128)]


def handle_of(path):
    fh = FileHandle()
    fh.handle_bytes = 128
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(fh), ctypes.byref(mount_id), 0) != 0:
        return libc_err()
    return {'type': fh.handle_type, 'bytes': bytes(fh.f_handle[:fh.handle_bytes]).hex()}


def open_handle(mountpoint, handle):
    """open_by_handle_at on a handle from handle_of (maybe from an earlier mount); reads the file or lists the directory."""
    fh = FileHandle()
    raw = bytes.fromhex(handle['bytes'])
    fh.handle_bytes = len(raw)
    fh.handle_type = handle['type']
    ctypes.memmove(fh.f_handle, raw, len(raw))
    mfd = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = libc.open_by_handle_at(mfd, ctypes.byref(fh), os.O_RDONLY)
        if fd < 0:
            return libc_err()
        try:
            if os.path.stat.S_ISDIR(os.fstat(fd).st_mode):
                return {'ok': sorted(os.listdir(fd))}
            return {'ok': os.read(fd, 100).decode()}
        finally:
            os.close(fd)
    finally:
        os.close(mfd)


def uncache(path):
    """Drops this file's cached pages, so the next read reaches the file system."""
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def atime_steps(path, drop=True):
    """
    atime after an access when atime is before mtime (a1), then after a second access right after
    (a2). With drop, each read first drops the file's cached pages, so it reaches the file system;
    without, the reads are as cat's (open, read, close: xfstests generic/003). (relatime's 24 h
    rule needs a ctime a day back, which utime cannot set: fs/atime's unit test covers it.)
    """
    with open(path, 'w') as f:
        f.write('hello')
    hour_ns = 3600 * 10**9
    st = os.stat(path)
    old = st.st_mtime_ns - hour_ns
    os.utime(path, ns=(old, st.st_mtime_ns - hour_ns // 2))  # atime before mtime, both in the past

    def read_then_atime():
        if drop:
            uncache(path)
        with open(path) as f:
            f.read()
        return os.stat(path).st_atime_ns
    a1 = read_then_atime()
    a2 = read_then_atime()
    return {'old': str(old), 'a1': str(a1), 'a2': str(a2)}


def dir_atime(path):
    os.makedirs(path, exist_ok=True)
    os.utime(path, ns=(10**18, 15 * 10**17))
    os.listdir(path)
    return str(os.stat(path).st_atime_ns)


def setid_modes(path, nobody):
    """chown by root of 02644 (S_ISGID without group-exec), 06755; write by another user to 06777."""
    out = {}
    for name, mode in [('sgid-noexec', 0o2644), ('both-exec', 0o6755)]:
        p = os.path.join(path, name)
        open(p, 'w').close()
        os.chmod(p, mode)
        os.chown(p, nobody, nobody)
        out[name] = os.stat(p).st_mode & 0o7777
    p = os.path.join(path, 'written')
    open(p, 'w').close()
    os.chmod(p, 0o6777)
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(nobody)
            os.setuid(nobody)
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)
            os.write(fd, b'x')
            os.close(fd)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    out['written_ok'] = status == 0
    out['written'] = os.stat(p).st_mode & 0o7777
    return out


def layout_xattr(dir_path):
    os.makedirs(dir_path, exist_ok=True)
    f = os.path.join(dir_path, 'plain')
    open(f, 'w').close()
    g = os.path.join(dir_path, 'explicit')
    open(g, 'w').close()
    os.setxattr(g, 'user.chunkfs.layout', b'replica:2')
    return {
        'plain_list': os.listxattr(f), 'plain_get': os.getxattr(f, 'user.chunkfs.layout').decode(),
        'explicit_list': os.listxattr(g), 'explicit_get': os.getxattr(g, 'user.chunkfs.layout').decode(),
        'dir_list': os.listxattr(dir_path),
    }


CHECKS = {
    'times': times, 'mtime': mtime, 'atime': atime, 'scandir_inos': scandir_inos, 'seekdir_stable': seekdir_stable,
    'renamed_dir_fd': renamed_dir_fd, 'handle_of': handle_of, 'open_handle': open_handle,
    'atime_steps': atime_steps, 'dir_atime': dir_atime, 'setid_modes': setid_modes, 'layout_xattr': layout_xattr,
}

if __name__ == '__main__':
    try:
        result = CHECKS[sys.argv[1]](*json.loads(sys.argv[2]))
    except OSError as e:
        result = err_of(e)
    print(json.dumps(result))
