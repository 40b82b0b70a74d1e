"""The rm -rf round of the power-loss campaign (DESIGN §5 free last): a tree of fsync'd files, then the check
after the cut. Usage: tree.py make ROOT COUNT | tree.py check ROOT COUNT
check prints "present missing bad" and the first bad files: a file that is there must read its whole
content (its unlink was lost with the metadata's page cache, so its shards must still be there)."""
import os
import sys

from content import append_bytes

FILES_PER_DIR = 50


def path_of(root, i):
    return os.path.join(root, 'd%02d' % (i // FILES_PER_DIR), 'f%04d' % i)


def size_of(i):
    # Mostly past small_file_max (64 KiB: shard files of their own), every fifth one a needle.
    return 1000 + i * 37 if i % 5 == 0 else 70_000 + (i * 7919) % 200_000


def make(root, count):
    for i in range(count):
        p = path_of(root, i)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'wb') as f:
            f.write(append_bytes(p[len(root):], 0, size_of(i)))
            f.flush()
            os.fsync(f.fileno())


def check(root, count):
    present, bad = 0, []
    for i in range(count):
        p = path_of(root, i)
        try:
            with open(p, 'rb') as f:
                data = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            present += 1
            bad.append('%s: %s' % (p, e))
            continue
        present += 1
        if data != append_bytes(p[len(root):], 0, size_of(i)):
            bad.append('%s: other bytes (%d read)' % (p, len(data)))
    print(present, count - present, len(bad))
    for b in bad[:10]:
        print(b)


if __name__ == '__main__':
    mode, root, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    make(root, count) if mode == 'make' else check(root, count)
