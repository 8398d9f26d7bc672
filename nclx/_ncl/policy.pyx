# cython: wraparound=True, boundscheck=True
"""Per-signature policy of the loop entries, from Python: split thresholds
(elementwise and reduce), the loop nclx's kernel node runs (nclx's kernel or
NumPy's, for whole calls and per-thread chunks), and how reductions split.
The state lives in the entries' slots (nclx._ncl.entries); shipped values
come from spec.py and split_thresholds.py."""
import numpy as np

from nclx._ncl.ncl cimport npy_intp, NCL_NSLOTS
from nclx._ncl.entries cimport ncl_slot_policy
from nclx._ncl import entries, spec
from nclx._ncl.dtypes import fixed_width
from nclx._ncl.ufuncs import kernel_key

_KINDS = {"elementwise": (0,), "reduce": (1,), None: (0, 1)}


def _matching(op, dtype):
    if op is not None and op not in spec.OPS:
        raise ValueError(f"unknown op {op!r}; ops: {', '.join(spec.OPS)}")
    want = None
    if dtype is not None:
        want = fixed_width(np.dtype(dtype)) if dtype != "bool" else "bool"
        if want is None:
            raise ValueError(f"nclx has no kernels for dtype {dtype!r}")
    for k in range(NCL_NSLOTS):
        sop, chars, _ = entries.slot_info(k)
        if op is not None and sop != op:
            continue
        if want is not None and spec.key_dtype(kernel_key(sop, chars)[1]) != want:
            continue
        yield k


def set_threshold(npy_intp n, op=None, kind=None, dtype=None):
    """Split calls of at least ``n`` elements: for one op (or all), one
    kind ("elementwise", "reduce" or both) and one input dtype (or all)."""
    cdef int k
    if n < 1:
        raise ValueError(f"threshold must be >= 1 element, not {n}")
    if kind not in _KINDS:
        raise ValueError(f"kind must be 'elementwise', 'reduce' or None, not {kind!r}")
    for k in _matching(op, dtype):
        for r in _KINDS[kind]:
            ncl_slot_policy(k).threshold[r] = n


def get_threshold(op, kind="elementwise", dtype=None):
    """The split threshold (elements) of ``op`` for one kind of call (the
    first matching signature's when ``dtype`` is None)."""
    cdef int k
    if kind not in ("elementwise", "reduce"):
        raise ValueError(f"kind must be 'elementwise' or 'reduce', not {kind!r}")
    for k in _matching(op, dtype):
        return ncl_slot_policy(k).threshold[kind == "reduce"]
    raise ValueError(f"no nclx loop for op {op!r} and dtype {dtype!r}")


def reset_thresholds():
    """Back to the shipped thresholds (spec.split_threshold)."""
    cdef int k
    for k in range(NCL_NSLOTS):
        entries.apply_defaults(k, True, False)


def thresholds():
    """{(op, chars): (elementwise, reduce)} split thresholds in elements."""
    cdef int k
    return {(op, chars): (ncl_slot_policy(k).threshold[0], ncl_slot_policy(k).threshold[1])
            for k, (op, chars) in enumerate(entries.signatures())}


def reduce_split(op, chars):
    """How reductions of one signature may be split: 'none', 'exact',
    'pairwise' or 'reassociate' (only with nclx.config(reassociate=True))."""
    k = entries.signatures().index((op, chars))
    return ("none", "exact", "pairwise", "reassociate")[ncl_slot_policy(k).reduce_split]


def set_preference(op, chars, bint reduce, bint chunk, bint numpy):
    """Run NumPy's loop (True) or nclx's kernel (False) for one signature,
    for reductions or elementwise calls, whole calls or per-thread chunks."""
    cdef int k = entries.signatures().index((op, chars))
    if op in spec.NCLX_ONLY and numpy:
        raise ValueError(f"{op} is nclx's own op: NumPy has no loop for it")
    ncl_slot_policy(k).prefer[reduce][chunk] = numpy


def reset_preferences():
    """Back to the shipped choice (spec.default_preference)."""
    cdef int k
    for k in range(NCL_NSLOTS):
        entries.apply_defaults(k, False, True)


def prefer_everywhere(bint numpy):
    """Run NumPy's loop (True) or nclx's kernels (False) for every call:
    for tests and measurements."""
    cdef int k
    cdef bint own
    for k in range(NCL_NSLOTS):
        own = entries.slot_info(k)[2] is None       # nclx's own op: no NumPy loop
        ncl_slot_policy(k).prefer[0][0] = ncl_slot_policy(k).prefer[0][1] = numpy and not own
        ncl_slot_policy(k).prefer[1][0] = ncl_slot_policy(k).prefer[1][1] = numpy and not own


def preferences():
    """{(op, chars): ((elementwise whole, chunk), (reduce whole, chunk))}, True = NumPy's loop."""
    cdef int k
    return {(op, chars): ((bool(ncl_slot_policy(k).prefer[0][0]), bool(ncl_slot_policy(k).prefer[0][1])),
                          (bool(ncl_slot_policy(k).prefer[1][0]), bool(ncl_slot_policy(k).prefer[1][1])))
            for k, (op, chars) in enumerate(entries.signatures())}


