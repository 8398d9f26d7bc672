"""nclx.mask: NCLib's Mask subsystem -- boolean selection and assignment.

``extract``, ``compress``, ``place`` and ``putmask`` take NumPy's arguments
and return (or write) what ``numpy.extract``, ``numpy.compress``,
``numpy.place`` and ``numpy.putmask`` do, bit for bit, with NumPy's
exceptions; ``count(mask)`` equals ``numpy.count_nonzero(mask)``.

Fixed-width dtypes (bool, int8..int64, uint8..uint64, float32, float64) run
nclx's kernels: each call walks the "mask" chains (python, funnel, kernel
``<op>_<dtype>``; the ledger records it as a "call" row) and splits across
nclx's threads -- per-piece counts, a prefix sum, then every piece copies
its own elements.  Other inputs go to NumPy's own function (docs/mask.md).
``nclx.install()`` does not reach ``a[m]``, ``a[m] = v`` or NumPy's
functions: NumPy offers no slot for them (docs/mask.md says what was
measured).
"""
import numpy as np

from nclx._ncl.maskfuncs import compress, count, extract, place, putmask

__all__ = ["compress", "count", "extract", "place", "putmask", "NUMPY_TWINS"]

#: NumPy's functions and their nclx.mask twins (same arguments and results),
#: for an ``__array_function__`` that routes them
NUMPY_TWINS = {np.extract: extract, np.compress: compress, np.place: place,
               np.putmask: putmask}
