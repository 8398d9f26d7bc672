"""float16 sums and products across ranks, accumulated in float32 (review 22).

NumPy's half-precision add/multiply loops accumulate in float32 and round
to float16 once, at the end of the loop: ``np.sum`` of ``[6e4, 6e4, -6e4,
-6e4]`` (float16) is 0.0, ``np.prod`` of ``[300, 300, 1/256, 1/256]`` is
1.373.  A reduction over distributed axes that combined each rank's
float16 partial rounded every partial first: ``inf - inf = nan`` and
``inf`` on 2 ranks, with warnings NumPy does not give.  Here such a
reduction computes each rank's partial in float32 (its float16 cells are
exact there; ``initial=`` rounded to float16 first, as NumPy casts it to
the result dtype), combines the float32 partials in rank order, and rounds
once at the end; the rounding's floating-point flags (overflow past 65504,
underflow) are reported as NumPy's half loop reports its own: "... in
reduce", once, on every rank (ORed with the rest of the reduction's flags).

Only where the reduced axes are distributed over more than one rank
(elsewhere a rank runs NumPy's own loop on all the cells: NumPy's bits),
for float16 operands with a float16 result (no ``dtype=`` other than
float16), and for bool, integer and other float cells with
``dtype=float16``: NumPy casts those cells to float16 and runs the same
half loop, so each rank casts its cells to float16 first (the cast's
flags, overflow past 65504, reported as NumPy's "... in reduce"), then
accumulates in float32 (review 24: ``np.sum(uint8 cells, dtype=float16)``
rounded each rank's partial, one float16 unit off in 46 of 300 arrays).  NumPy's loop accumulates in float32 only within one run of
cells: along the last axes (``axis=None``, the last axis) one run per
result cell; along another axis (``axis=0`` of an ``(n, 2)`` array) it
adds row after row, rounding to float16 at every step, and with
``where=`` it rounds at the end of every run of True cells.  There nclx
still rounds once: a sum finite in NumPy is finite here too (float32
cannot overflow on float16 cells), but may differ from NumPy's by more
than one float16 unit -- NumPy's own roundings (nclx is within one unit of
the float32 sum rounded once).
"""
import numpy as np

from nclx._fpflags import recorded_flags

__all__ = ["HALF", "WIDE", "wide_spec", "narrowed", "with_flags", "half_initial", "half_cells"]

HALF = np.dtype(np.float16)
WIDE = np.dtype(np.float32)


def wide_spec(ufunc, block, dist, comm, axes, dtype, spec):
    """``(spec the ranks combine, dtype to round to at the end or None)``:
    the same on every rank called alike (the ufunc, the dtypes, the agreed
    layout)."""
    half_cells = block.dtype == HALF and (dtype is None or np.dtype(dtype) == HALF)
    cast_cells = dtype is not None and np.dtype(dtype) == HALF and block.dtype.kind in "biuf"
    if ((ufunc is np.add or ufunc is np.multiply) and np.dtype(spec[1]) == HALF
            and (half_cells or cast_cells)
            and comm.Get_size() > 1 and any(dist.grid_shape[d] > 1 for d in axes)):
        return (spec[0], WIDE), HALF
    return spec, None


def half_cells(cells, narrow):
    """``(cells as NumPy's half loop reads them, the cast's flags)``: cast
    to float16 where the reduction narrows and they are not float16."""
    if narrow is None or cells.dtype == HALF:
        return cells, 0
    return narrowed(cells, HALF)


def half_initial(initial):
    """``initial`` as NumPy's half reduction starts from it: rounded to
    float16 (then exact in float32)."""
    return initial if initial is np._NoValue else np.asarray(initial).astype(HALF)[()]


def narrowed(value, narrow):
    """``(value rounded once to narrow, the rounding's floating-point flags)``."""
    return recorded_flags(lambda: np.asarray(value).astype(narrow))


def with_flags(verdict, flags):
    """``verdict`` (:func:`nclx.dap.fold.allreduce_agreed`'s, of a success)
    with ``flags`` ORed into its floating-point flags."""
    if not flags:
        return verdict
    if verdict is None:
        return [], -1, None, None, flags
    return (*verdict[:4], verdict[4] | flags)
