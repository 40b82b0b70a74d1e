"""Deterministic contents for the power-loss writers, so the checker needs no copy of what was written."""
import hashlib

UNIT = 4096


def _unit(tag):
    return hashlib.blake2b(tag.encode(), digest_size=64).digest() * (UNIT // 64)


def append_bytes(fname, off, size):
    """Bytes [off, off+size) of append file fname: byte o is unit(o // 4096)[o % 4096]."""
    out = bytearray()
    k, end = off // UNIT, off + size
    while k * UNIT < end:
        u = _unit('%s/%d' % (fname, k))
        lo, hi = max(off, k * UNIT) - k * UNIT, min(end, (k + 1) * UNIT) - k * UNIT
        out += u[lo:hi]
        k += 1
    return bytes(out)


def block16k(name, blk, gen):
    return _unit('%s/%d/%d' % (name, blk, gen)) * 4


def version_bytes(name, i, size):
    return append_bytes('%s#%d' % (name, i), 0, size)
