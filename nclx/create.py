"""nclx.create: NCLib's Create subsystem -- NumPy's array constructors whose
memory comes from NumPy's allocator and whose first writes run on nclx's
thread team, through the Create chains.

>>> import numpy as np, nclx.create as nc
>>> a = nc.full((2, 3), 7.0, align=64)
>>> a.ctypes.data % 64, a.tobytes() == np.full((2, 3), 7.0).tobytes()
(0, True)

``empty``, ``zeros``, ``ones``, ``full`` and ``empty_like``, ``zeros_like``,
``ones_like``, ``full_like`` take NumPy's arguments and return what NumPy
returns (dtype, shape, strides, values, subclass, errors), plus two
keyword-only arguments:

``align``
    the data starts at a multiple of this many bytes (a power of two from
    the dtype's alignment to 1 GiB); None: wherever NumPy's allocator puts
    it.  An aligned array that NumPy's allocation did not already satisfy
    is a view of a larger uint8 buffer (its ``base``; ``flags.owndata`` is
    False, so ``ndarray.resize`` refuses it).  Dtypes holding Python objects
    cannot be aligned (ValueError).
``touch``
    write every page first from nclx's thread team, each thread its own
    contiguous page-aligned range, so that on a NUMA machine each page lands
    on the node of the thread that will compute on it.  Without it ``empty``
    and ``zeros`` write nothing (the OS maps a page where it is first
    written) and ``full`` is written by the team anyway.

For nclx's fixed-width dtypes (bool, int8..uint64, float32, float64, native
byte order) each call is one call of the Create subsystem's call op --
``empty``, ``zeros`` or ``full`` (``ones`` and ``*_like`` included) --
that the ledger records and funnel/kernel hooks see (``nclx.hooks.Call``:
op, dtypes, ``n``; its one operand ``out`` is the array's data).  Other
dtypes (complex, float16, strings, datetimes, object, structured) are made
by NumPy's own code: same results, no Create call.  Every call walks the
"python" chain of the "create" subsystem first (``hooks.register("python",
"create", hook)``: ``call.ufunc`` is the function, ``call.inputs`` its
positional arguments, ``call.kwargs`` the keyword ones).
"""
from nclx._ncl.creators import (empty, empty_like, full, full_like, ones, ones_like, zeros,
                                zeros_like)

__all__ = ["empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
           "full_like"]
