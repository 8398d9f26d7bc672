# cython: wraparound=True, boundscheck=True
"""The loop lists of nclx.ufuncs (and the cast ufunc, the block executor's
plans): NumPy's loops of a ufunc with nclx's entries in the places nclx
serves (nclx._ncl.entries holds the entries themselves)."""
from nclx._ncl.entries cimport ncl_slot_proto
from nclx._ncl.looptable cimport PyUFuncObject
from nclx._ncl import spec
from nclx._ncl import entries

__all__ = ["twin_loops", "entry_loops"]


cdef dict _served(str op):
    """type characters -> entry address of every slot of ``op`` with a loop
    to run here (the first slot of each signature)."""
    cdef int k
    mine = {}
    for k, (kop, chars) in enumerate(entries.signatures()):
        if kop == op and ncl_slot_proto(k).nclx_loop != NULL and chars not in mine:
            mine[chars] = entries.entry_address(k)
    return mine


def twin_loops(str op):
    """The loops of nclx.ufuncs' ``op``: NumPy's loop list for its ufunc, in
    NumPy's order, with nclx's entry wherever nclx serves the signature and
    NumPy's own loop (function and data as read at import) elsewhere
    (float16, complex, object, datetime...), so that type resolution --
    NumPy's resolver on the same list -- picks the very loop NumPy picks.
    nclx's own ops (no NumPy ufunc): their entries."""
    cdef PyUFuncObject *uf
    cdef int i
    ufunc = spec.numpy_ufunc(op)
    if ufunc is None:
        return entry_loops(op)
    mine = _served(op)
    uf = <PyUFuncObject *>ufunc
    out = []
    for i, t in enumerate(ufunc.types):
        chars = t.replace("->", "")
        if chars in mine:
            out.append((chars, mine.pop(chars), <size_t>uf.data[i]))
        else:
            out.append((chars, <size_t>uf.functions[i], <size_t>uf.data[i]))
    return out


def entry_loops(str op):
    """(type characters, entry address, NumPy's data address) of every entry of
    ``op`` that has a loop to run here, in NumPy's loop order: the loops of
    nclx.ufuncs' ``op`` (one entry path with install())."""
    cdef int k
    out = []
    for k, (kop, chars) in enumerate(entries.signatures()):
        if kop != op or ncl_slot_proto(k).nclx_loop == NULL:
            continue
        found = entries.import_loop(k)
        out.append((chars, entries.entry_address(k), found[1] if found is not None else 0))
    return out
