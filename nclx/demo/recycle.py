"""A section of ``python -m nclx demo``: the recycling allocator,
``nclx.install(recycle=True)`` -- big temporaries reused instead of faulted
in again, NumPy's code unchanged."""
import hashlib
import resource

import numpy as np
from numpy._core.multiarray import get_handler_name

import nclx
from nclx._ncl import recycle
from nclx.demo._common import median_time, section


def _faults_per_call(fn, calls=10):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / calls


def run():
    section("Recycle: install(recycle=True) keeps freed blocks >= 1 MiB for the next array")
    rng = np.random.default_rng(0)
    n = 1_000_000
    a, b = rng.random(n), rng.random(n) + 1.0
    exprs = [("2*a+b*b", lambda: 2 * a + b * b), ("(a-b)/(a+b)", lambda: (a - b) / (a + b)),
             ("np.sqrt(a*a+b*b)", lambda: np.sqrt(a * a + b * b))]
    digest = lambda f: hashlib.sha256(f().tobytes()).hexdigest()   # noqa: E731
    stock = [digest(f) for _, f in exprs]
    threads = nclx.get_num_threads()
    nclx.set_num_threads(1)        # one thread: only the allocator differs
    rows = {}
    try:
        for mode in ("numpy", "recycle"):
            nclx.uninstall()
            if mode == "recycle":
                nclx.install(recycle=True)
            for label, f in exprs:
                f()
                rows.setdefault(label, []).append((median_time(f, repeat=9),
                                                   _faults_per_call(f)))
    finally:
        nclx.set_num_threads(threads)
    same = stock == [digest(f) for _, f in exprs]
    print(f"{'1e6 float64, 1 thread':<30}{'numpy ms':>9}{'faults':>8}"
          f"{'recycle ms':>12}{'faults':>8}")
    for label, ((t0, f0), (t1, f1)) in rows.items():
        print(f"{label:<30}{t0 * 1e3:>9.2f}{f0:>8.0f}{t1 * 1e3:>12.2f}{f1:>8.0f}")
    print(f"same bits as stock NumPy: {same}; new arrays' handler: {get_handler_name()!r}")
    s = recycle.stats()
    print(f"cache: {s['cached_blocks']} blocks, {s['cached_bytes'] / 2**20:.0f} MiB "
          f"(cap {s['cap'] / 2**30:.0f} GiB), {s['hits']} hits, {s['misses']} misses")
    z = np.zeros(n)
    print(f"np.zeros({n}) takes fresh zero pages, never a cached block: all zero {not z.any()}")
    print(f"nclx.release_memory() gave back {nclx.release_memory() / 2**20:.0f} MiB")
    nclx.uninstall()
    print(f"after uninstall(): new arrays' handler {get_handler_name()!r}; "
          f"the array made before still frees through {get_handler_name(z)!r}")
