"""Threading of large loop calls (the funnel's default "threader" node).

After ``nclx.install()``, a loop call of at least :func:`get_threshold`
elements (65,536 by default) is split across :func:`get_num_threads` threads:
elementwise calls into aligned chunks (results bit-identical to one thread),
reductions of reorderable ops into per-thread partials combined in a fixed
order.  Calls NumPy hands over in chunks (casting, ``where=``,
broadcasting) are smaller than the threshold and run whole.
"""
from nclx._ncl import funnel as _funnel

__all__ = ["set_num_threads", "get_num_threads", "set_threshold", "get_threshold",
           "calibrate"]


def set_num_threads(n):
    """Use ``n`` threads for large loop calls.

    Also sets OpenMP's thread count, which is what threadpoolctl reports and
    limits (``threadpool_limits(1, "openmp")`` makes nclx single-threaded
    inside its block).  Without a call, ``NCLX_NUM_THREADS`` or the number of
    cores available to the process decides.
    """
    _funnel.set_num_threads(int(n))


def get_num_threads():
    """Threads a large loop call uses now (capped by OpenMP's / threadpoolctl's limit)."""
    return _funnel.get_num_threads()


def set_threshold(n, op=None):
    """Split loop calls of at least ``n`` elements, for ``op`` or for every op."""
    _funnel.set_threshold(int(n), op)


def get_threshold(op="add"):
    """The split threshold of ``op`` in elements."""
    return _funnel.get_threshold(op)


def calibrate(small=4096, chunk=131072, reps=7):
    """Measure nclx's kernels against NumPy's original loops on this machine
    and use the faster one per signature, for elementwise calls and
    reductions, whole calls and per-thread chunks.  Returns the nclx/NumPy
    time ratios (> 1.05: NumPy's loop is used).  Takes a second or two."""
    return _funnel.calibrate(small, chunk, reps)
