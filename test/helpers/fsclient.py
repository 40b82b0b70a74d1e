#!/usr/bin/env python3
# A filesystem client for mounted tests, run as a CHILD process (never the process serving the mount).
# Reads {"ops": [[name, args...], ...]} as JSON on stdin, runs each op with plain POSIX calls, and prints
# one JSON list: {"ok": value} or {"err": "ENOENT"} per op. Open descriptors are kept by name across ops
# of one run, so open-unlinked files and O_APPEND/O_EXCL can be exercised. Python's os module gives
# errno names, xattrs and nanosecond times directly; libc's getxattr/listxattr through ctypes where the
# caller's buffer size matters (os.getxattr/os.listxattr pick their own). With --serve: one op per line
# of stdin, its result as one line of stdout, until stdin ends (a client that takes turns with others).
import ctypes
import errno
import hashlib
import json
import os
import random
import sys

fds = {}
FLAGS = {
    'rdonly': os.O_RDONLY, 'wronly': os.O_WRONLY, 'rdwr': os.O_RDWR, 'creat': os.O_CREAT,
    'excl': os.O_EXCL, 'trunc': os.O_TRUNC, 'append': os.O_APPEND,
}


def data_of(spec):
    if isinstance(spec, str):
        return spec.encode()
    return random.Random(spec['seed']).randbytes(spec['len'])


def st_dict(st):
    return {'mode': st.st_mode, 'uid': st.st_uid, 'gid': st.st_gid, 'size': st.st_size, 'nlink': st.st_nlink,
            'ino': st.st_ino, 'atime_ns': st.st_atime_ns, 'mtime_ns': st.st_mtime_ns, 'ctime_ns': st.st_ctime_ns,
            'rdev': st.st_rdev, 'blocks': st.st_blocks, 'blksize': st.st_blksize}


def digest(b):
    return {'len': len(b), 'sha256': hashlib.sha256(b).hexdigest()}


def fd_of(ref):
    # An op on a descriptor whose open failed answers EBADF, as the kernel would.
    if ref not in fds:
        raise OSError(errno.EBADF, 'no such descriptor')
    return fds[ref]


libc = ctypes.CDLL(None, use_errno=True)
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
libc.renameat2.restype = ctypes.c_int
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
libc.fallocate.restype = ctypes.c_int
AT_FDCWD = -100
RENAME = {'noreplace': 1, 'exchange': 2, 'whiteout': 4}
FALLOC = {'keep_size': 0x01, 'punch_hole': 0x02, 'collapse_range': 0x08, 'zero_range': 0x10, 'insert_range': 0x20}


def checked(rc):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return rc
libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.getxattr.restype = ctypes.c_ssize_t
libc.listxattr.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.listxattr.restype = ctypes.c_ssize_t


def sized_call(call, size):
    # size 0 asks for the length needed; otherwise the bytes returned, in latin-1.
    buf = ctypes.create_string_buffer(size) if size > 0 else None
    n = call(buf, size)
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return n if size == 0 else buf.raw[:n].decode('latin-1')


def snapshot(root):
    # Every entry beneath root: kind, permission bits, size, nlink, content digest or link target,
    # user.* xattrs (but the chunkfs layout, which a plain directory lacks) and mtime.
    out = []
    todo = ['']
    while todo and len(out) < 100000:
        rel = todo.pop()
        for e in sorted(os.scandir(os.path.join(root, rel)), key=lambda e: e.name):
            r = os.path.join(rel, e.name)
            st = os.lstat(e.path)
            item = {'path': r, 'perm': st.st_mode & 0o7777, 'nlink': st.st_nlink, 'mtime_ns': st.st_mtime_ns}
            if e.is_symlink():
                item.update(kind='link', target=os.readlink(e.path))
            elif e.is_dir():
                item['kind'] = 'dir'
                todo.append(r)
            else:
                with open(e.path, 'rb') as f:
                    item.update(kind='file', size=st.st_size, sha256=hashlib.sha256(f.read()).hexdigest())
            if not e.is_symlink():
                item['xattrs'] = {k: os.getxattr(e.path, k).decode('latin-1') for k in sorted(os.listxattr(e.path))
                                  if k.startswith('user.') and k != 'user.chunkfs.layout'}
            out.append(item)
    return sorted(out, key=lambda i: i['path'])


TREE_DATA_BYTES_MAX = 4096


def tree(root):
    # Every entry beneath root with what a namespace model checks: kind, permission bits, link count,
    # inode number (names of one inode share it), mtime, and a file's size and bytes (a digest of them
    # past TREE_DATA_BYTES_MAX).
    out = []
    todo = ['']
    while todo:
        rel = todo.pop()
        for e in os.scandir(os.path.join(root, rel)):
            r = os.path.join(rel, e.name)
            st = os.lstat(e.path)
            item = {'path': r, 'perm': st.st_mode & 0o7777, 'nlink': st.st_nlink, 'ino': st.st_ino,
                    'mtime_ns': st.st_mtime_ns}
            if e.is_dir(follow_symlinks=False):
                item['kind'] = 'dir'
                todo.append(r)
            else:
                with open(e.path, 'rb') as f:
                    b = f.read()
                item.update(kind='file', size=st.st_size)
                if len(b) <= TREE_DATA_BYTES_MAX:
                    item['data'] = b.decode('latin-1')
                else:
                    item['sha256'] = hashlib.sha256(b).hexdigest()
            out.append(item)
    return sorted(out, key=lambda i: i['path'])


def run(op):
    name, a = op[0], op[1:]
    if name == 'mkdir': return os.mkdir(a[0], a[1] if len(a) > 1 else 0o777)
    if name == 'rmdir': return os.rmdir(a[0])
    if name == 'mknod': return os.mknod(a[0], a[1], os.makedev(a[2], a[3]) if len(a) > 3 else 0)
    if name == 'mkfifo': return os.mkfifo(a[0], a[1] if len(a) > 1 else 0o666)
    if name == 'fifo_roundtrip':
        # a reader and a writer on one FIFO, both in this process (non-blocking open of the reader first)
        r = os.open(a[0], os.O_RDONLY | os.O_NONBLOCK)
        w = os.open(a[0], os.O_WRONLY)
        os.write(w, a[1].encode())
        got = os.read(r, 4096).decode()
        os.close(w); os.close(r)
        return got
    if name == 'bind_socket':
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(a[0]); s.listen(1)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(a[0]); c.sendall(a[1].encode())
        conn, _ = s.accept()
        got = conn.recv(4096).decode()
        for x in (conn, c, s): x.close()
        return got
    if name == 'opath': fds[a[0]] = os.open(a[1], os.O_PATH); return None
    if name == 'renameat2':
        flags = 0
        for f in a[2]: flags |= RENAME[f]
        return checked(libc.renameat2(AT_FDCWD, a[0].encode(), AT_FDCWD, a[1].encode(), flags))
    if name == 'fallocate':
        mode = 0
        for f in a[1]: mode |= FALLOC[f]
        return checked(libc.fallocate(fd_of(a[0]), mode, a[2], a[3]))
    if name == 'open':
        flags = 0
        for f in a[2]: flags |= FLAGS[f]
        fds[a[0]] = os.open(a[1], flags, a[3] if len(a) > 3 else 0o644)
        return None
    if name == 'close': os.close(fd_of(a[0])); fds.pop(a[0]); return None
    if name == 'pwrite': return os.pwrite(fd_of(a[0]), data_of(a[2]), a[1])
    if name == 'write': return os.write(fd_of(a[0]), data_of(a[1]))
    if name == 'pread': return digest(os.pread(fd_of(a[0]), a[2], a[1]))
    if name == 'preadhex': return os.pread(fd_of(a[0]), a[2], a[1]).hex()
    if name == 'fsync': return os.fsync(fd_of(a[0]))
    if name == 'fdatasync': return os.fdatasync(fd_of(a[0]))
    if name == 'ftruncate': return os.ftruncate(fd_of(a[0]), a[1])
    if name == 'fstat': return st_dict(os.fstat(fd_of(a[0])))
    if name == 'writefile':
        with open(a[0], 'wb') as f: f.write(data_of(a[1]))
        return None
    if name == 'readfile':
        with open(a[0], 'rb') as f: return digest(f.read())
    if name == 'readtext':
        with open(a[0], 'rb') as f: return f.read().decode('latin-1')
    if name == 'truncate': return os.truncate(a[0], a[1])
    if name == 'unlink': return os.unlink(a[0])
    if name == 'rename': return os.rename(a[0], a[1])
    if name == 'link': return os.link(a[0], a[1])
    if name == 'symlink': return os.symlink(a[0], a[1])
    if name == 'readlink': return os.readlink(a[0])
    if name == 'chmod': return os.chmod(a[0], a[1])
    if name == 'chown': return os.chown(a[0], a[1], a[2])
    if name == 'utime': return os.utime(a[0], ns=(a[1], a[2]))
    if name == 'utime_now': return os.utime(a[0])
    if name == 'stat': return st_dict(os.stat(a[0]))
    if name == 'lstat': return st_dict(os.lstat(a[0]))
    if name == 'listdir': return sorted(os.listdir(a[0]))
    if name == 'setxattr':
        return os.setxattr(a[0], a[1], a[2].encode(), a[3] if len(a) > 3 else 0)
    if name == 'getxattr': return os.getxattr(a[0], a[1]).decode('latin-1')
    if name == 'listxattr': return sorted(os.listxattr(a[0]))
    if name == 'getxattr_sized':
        return sized_call(lambda buf, size: libc.getxattr(a[0].encode(), a[1].encode(), buf, size), a[2])
    if name == 'listxattr_sized':
        return sized_call(lambda buf, size: libc.listxattr(a[0].encode(), buf, size), a[1])
    if name == 'removexattr': return os.removexattr(a[0], a[1])
    if name == 'statvfs':
        s = os.statvfs(a[0])
        return {'bsize': s.f_bsize, 'blocks': s.f_blocks, 'bavail': s.f_bavail, 'bfree': s.f_bfree}
    if name == 'access': return os.access(a[0], a[1])
    if name == 'snapshot': return snapshot(a[0])
    if name == 'tree': return tree(a[0])
    if name == 'fsyncpath':
        fd = os.open(a[0], os.O_RDONLY)
        try:
            return os.fsync(fd)
        finally:
            os.close(fd)
    if name == 'lseek': return os.lseek(fd_of(a[0]), a[1], {'data': os.SEEK_DATA, 'hole': os.SEEK_HOLE, 'end': os.SEEK_END}[a[2]])
    if name == 'tmpfile': fds[a[0]] = os.open(a[1], os.O_TMPFILE | os.O_RDWR, 0o600); return None
    raise ValueError('unknown op ' + name)


def serve():
    # One op per line in, one result per line out: a client that lives across a test's steps.
    for line in sys.stdin:
        op = json.loads(line)
        try:
            res = {'ok': run(op)}
        except OSError as e:
            res = {'err': errno.errorcode.get(e.errno, str(e.errno))}
        sys.stdout.write(json.dumps(res) + '\n')
        sys.stdout.flush()


def main():
    if sys.argv[1:] == ['--serve']:
        return serve()
    req = json.load(sys.stdin)
    out = []
    for op in req['ops']:
        try:
            out.append({'ok': run(op)})
        except OSError as e:
            out.append({'err': errno.errorcode.get(e.errno, str(e.errno))})
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    json.dump(out, sys.stdout)


main()
