"""Arrow validity bitmaps: one bit per element, LSB first, 1 = valid."""
import numpy as np

__all__ = ["as_bitmap", "valid_mask", "pack", "realign", "nbytes_for"]


def nbytes_for(nbits):
    return (nbits + 7) // 8


def as_bitmap(validity, *, name="validity"):
    """A uint8 ndarray view of a bitmap given as an ndarray or a bytes-like object."""
    if isinstance(validity, np.ndarray):
        if validity.dtype != np.uint8 and validity.dtype != np.int8:
            raise TypeError(f"{name} must be a uint8 bitmap (one bit per list, LSB first), "
                            f"not an array of {validity.dtype}")
        if validity.ndim != 1:
            raise ValueError(f"{name} must be 1-dimensional, not {validity.ndim}-dimensional")
        return validity.view(np.uint8)
    try:
        return np.frombuffer(validity, dtype=np.uint8)
    except TypeError as exc:
        raise TypeError(f"{name} must be a uint8 ndarray or a bytes-like bitmap, "
                        f"not {type(validity).__name__}") from exc


def valid_mask(bitmap, offset, n):
    """bool[n]: bit ``offset + i`` of ``bitmap`` for i in range(n) (a copy)."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    first, last = offset // 8, nbytes_for(offset + n)
    bits = np.unpackbits(bitmap[first:last], bitorder="little")
    start = offset - first * 8
    return bits[start:start + n].view(bool)


def pack(mask):
    """The bitmap (uint8, LSB first) of a bool array: 1 where True."""
    return np.packbits(np.asarray(mask, dtype=bool), bitorder="little")


def realign(bitmap, offset, n):
    """A bitmap of ``n`` bits starting at bit 0: a view when ``offset`` is a
    multiple of 8, else the bits shifted into a new array (n/8 bytes)."""
    if offset % 8 == 0:
        return bitmap[offset // 8:offset // 8 + nbytes_for(n)]
    return pack(valid_mask(bitmap, offset, n))
