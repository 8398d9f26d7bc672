"""Aligned allocation with gt4py's padding and strides.

gt4py 1.1's CPU allocator (``allocate_cpu(shape, layout_map, dtype,
alignment_bytes, aligned_index)``) pads the innermost dimension (the one
with the largest layout entry) up to a multiple of ``alignment_bytes /
itemsize`` elements, lays the other dimensions out in layout order, and
allocates ``itemsize * prod(padded_shape) + alignment_bytes - 1`` bytes so
that the element at ``aligned_index`` can be moved onto an alignment
boundary.
:func:`plan` reproduces that arithmetic (tests compare it with a table
recorded from gt4py); :func:`place` then picks the byte offset in a real
buffer (nclx/storage/_fastalloc.pyx does both for host memory).  Unlike gt4py, a zero extent gives an empty storage, as NumPy does,
and the alignment must be a power of two.
"""
from dataclasses import dataclass

import numpy as np

from nclx.storage.params import StorageError

__all__ = ["Plan", "plan", "place"]

_INTP_MAX = int(np.iinfo(np.intp).max)


@dataclass(frozen=True)
class Plan:
    shape: tuple            # the storage's shape
    padded_shape: tuple     # shape with the innermost extent padded
    strides: tuple          # bytes
    itemsize: int
    alignment: int          # bytes
    inner_offset: int       # bytes from the span start to aligned_index, mod alignment

    @property
    def span_bytes(self):
        """Bytes the padded field covers."""
        n = 1
        for s in self.padded_shape:
            n *= s
        return n * self.itemsize

    @property
    def contiguous_order(self):
        """1 (C) or 2 (F) when the field is contiguous without padding (NumPy
        can allocate it as np.empty would), else 0."""
        if self.padded_shape != self.shape or 0 in self.shape:
            return 0
        for code, dims in ((1, reversed(range(len(self.shape)))), (2, range(len(self.shape)))):
            step, ok = self.itemsize, True
            for d in dims:
                ok = ok and self.strides[d] == step
                step *= self.shape[d]
            if ok:
                return code
        return 0

    @property
    def alloc_bytes(self):
        """gt4py's raw buffer length: the span plus room to move it onto a boundary."""
        return self.span_bytes + self.alignment - 1


def plan(shape, layout, dtype, alignment, aligned_index):
    """Padded shape, strides and raw length for one allocation (gt4py's rules)."""
    itemsize = np.dtype(dtype).itemsize
    ndim = len(shape)
    per_align = max(1, alignment // itemsize) if itemsize else 1
    order = sorted(range(ndim), key=lambda d: layout[d])   # outermost first
    padded = list(shape)
    if ndim:
        inner = order[-1]
        padded[inner] = -(-padded[inner] // per_align) * per_align
    strides = [0] * ndim
    step = itemsize
    for d in reversed(order):
        strides[d] = step
        step *= padded[d]
    # the strides (and a view's reach) cover every extent, zero or not: an
    # empty field whose other extents overflow them is refused, as NumPy does
    reach = itemsize
    for n in padded:
        reach *= max(n, 1)
    if reach + alignment - 1 > _INTP_MAX:
        raise StorageError(f"shape={tuple(shape)}: the field needs {reach} bytes of strides "
                           f"(and {reach + alignment - 1} to align it), more than this "
                           f"machine can address ({_INTP_MAX})")
    offset = 0
    if ndim:
        ai = aligned_index[order[-1]]
        offset = (-(-ai // per_align) * per_align - ai) * itemsize
    return Plan(tuple(shape), tuple(padded), tuple(strides), itemsize, alignment, offset)


def place(p, address):
    """Byte offset of the field in a buffer at ``address`` so that the
    element at aligned_index lands on an ``alignment`` boundary.

    Outer strides are multiples of the alignment (the innermost extent is
    padded), so only the innermost index matters: the aligned element sits
    ``inner_offset`` bytes (mod alignment) past a boundary-aligned start.
    """
    return (p.inner_offset - address) % p.alignment
