"""Threading of large loop calls (the funnel's default "threader" node).

After ``nclx.install()``, a loop call of at least :func:`get_threshold`
elements (65,536 by default) is split across :func:`get_num_threads` threads
where the split is exact (see nclx._ncl.threader): elementwise calls into
aligned chunks, integer/boolean reductions into per-thread partials, float
sums on NumPy's pairwise split points.  Float products/max/min reductions
stay whole unless ``nclx.config(reassociate=True)``.  Calls NumPy hands over
in chunks (casting, ``where=``, broadcasting) are smaller than the threshold
and run whole.
"""
import operator

from nclx._ncl import calibrate as _calibrate
from nclx._ncl import policy as _policy
from nclx._ncl import team as _team

__all__ = ["set_num_threads", "get_num_threads", "set_threshold", "get_threshold",
           "reset_thresholds", "calibrate"]


def _count(n, what):
    """``n`` as an int: an integer (NumPy's integers too), never a float,
    str or bool (``int(n)`` made 1.5 one thread and a threshold of 1.5 split
    every call)."""
    if isinstance(n, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(n).__name__}") from None


def set_num_threads(n):
    """Use ``n`` threads for large loop calls.

    nclx's own setting: OpenMP's process-wide count, which other libraries
    use, is left alone.  ``threadpoolctl.threadpool_limits(k, "openmp")``
    caps nclx at ``k`` inside its block.  Without a call,
    ``NCLX_NUM_THREADS`` or the number of cores available to the process
    decides.  A split call uses at most 64 threads: a larger ``n`` is 64.
    """
    n = _count(n, "the number of threads")
    if n < 1:
        raise ValueError(f"number of threads must be >= 1, not {n}")
    # one split call uses at most 64 threads: larger counts are that many
    # (before, 2**31 and up raised a bare OverflowError; review 20)
    _team.set_num_threads(min(n, 64))


def get_num_threads():
    """Threads a large loop call uses now (capped by threadpoolctl's limit;
    1 in a forked child of a threaded parent)."""
    return _team.get_num_threads()


def set_threshold(n, op=None, kind=None, dtype=None):
    """Split loop calls of at least ``n`` elements: for ``op`` (or every op),
    ``kind`` ("elementwise", "reduce" or both) and input ``dtype`` (or all)."""
    n = _count(n, "the threshold")
    if n < 1:
        raise ValueError(f"threshold must be >= 1 element, not {n}")
    _names("set_threshold", op, kind)
    # a threshold past any array's length never splits: held at 2**62
    # (before, 2**63 raised a bare OverflowError; review 20)
    _policy.set_threshold(min(n, 2 ** 62), op, kind, dtype)


def get_threshold(op="add", kind="elementwise", dtype=None):
    """The split threshold of ``op`` in elements."""
    _names("get_threshold", op, kind)
    return _policy.get_threshold(op, kind, dtype)


def _names(what, op, kind):
    """``op`` and ``kind`` are None or str (before, a list raised "unhashable
    type: 'list'" and an array NumPy's "truth value ... is ambiguous", a
    number the ValueError listing every op; review 23)."""
    for value, name in ((op, "op"), (kind, "kind")):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{what}({name}=...) takes a name (str) or None, not "
                            f"{type(value).__name__}")


def reset_thresholds():
    """Back to the shipped per-op thresholds."""
    _policy.reset_thresholds()


def calibrate(small=4096, chunk=131072, reps=7, thresholds=False):
    """Measure nclx's kernels against NumPy's original loops on this machine
    and use the faster one per signature, for elementwise calls and
    reductions, whole calls and per-thread chunks.  Returns the nclx/NumPy
    time ratios (> 1.05: NumPy's loop is used).  Takes a second or two.

    With ``thresholds=True`` also measure, per signature and kind of call,
    the smallest size at which splitting over the current thread count is
    at least 5% faster than one thread and from which it is nowhere slower,
    and use it as the split threshold; returns ``{"loops": ...,
    "thresholds": {(op, chars): (elementwise, reduce)}}``.  About half a
    minute on two cores."""
    # (before, reps=0 or a negative size timed empty calls and switched 251
    # signatures to NumPy's loops on those "ratios"; review 23)
    small, chunk, reps = (_count(v, f"calibrate({name}=...)")
                          for v, name in ((small, "small"), (chunk, "chunk"), (reps, "reps")))
    for v, name, low, high in ((small, "small", 1, 1 << 30), (chunk, "chunk", 1, 1 << 30),
                               (reps, "reps", 1, 1000)):
        if not low <= v <= high:
            raise ValueError(f"calibrate({name}=...) must be in [{low}, {high}], not {v}")
    if not isinstance(thresholds, bool):
        raise TypeError(f"calibrate(thresholds=...) takes True or False, not {thresholds!r}")
    ratios = _calibrate.calibrate(small, chunk, reps)
    if not thresholds:
        return ratios
    return {"loops": ratios, "thresholds": _calibrate.calibrate_thresholds(reps=reps)}
