"""What ``python -m nclx demo`` shows: nclx kernels at work on real arrays."""
import time
import warnings

import numpy as np


def _median_time(fn, repeat=15):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def _section(title):
    print()
    print(title)
    print("-" * len(title))


def run():
    import nclx
    import nclx.ufuncs as nu

    cfg = nclx.config()
    print(f"nclx {cfg['nclx']} on NumPy {cfg['numpy']}: kernels built for "
          f"{', '.join(cfg['isa_builds'])}; running the {cfg['isa_selected']} build; "
          f"OpenMP {'on' if cfg['openmp'] else 'off'}")

    _section("1. nclx.ufuncs are real NumPy ufuncs")
    a = np.arange(-4, 5, dtype=np.int8)
    b = np.int8(3)
    print(f"a                     = {a}")
    print(f"nu.floor_divide(a, 3) = {nu.floor_divide(a, b)}   (floors like Python)")
    print(f"nu.remainder(a, 3)    = {nu.remainder(a, b)}   (sign of the divisor)")
    print(f"type(nu.add)          = {type(nu.add).__name__}; nu.add.types[:4] = {nu.add.types[:4]}")
    m = np.arange(12.0).reshape(3, 4)
    print(f"nu.add.reduce(m, axis=0)   = {nu.add.reduce(m, axis=0)}")
    print(f"nu.maximum.accumulate(row) = {nu.maximum.accumulate(np.array([3, 1, 4, 1, 5, 9, 2, 6]))}")
    out = np.zeros(4)
    nu.multiply(m[1], 10.0, out=out, where=m[1] > 4)
    print(f"multiply with where=       = {out}")

    _section("2. Bit-identical to NumPy, edge cases included")
    i8 = np.array([127, -128, -128, 7], dtype=np.int8)
    d8 = np.array([1, -1, 0, 0], dtype=np.int8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = nu.add(i8, d8), nu.floor_divide(i8, d8)
    print(f"int8 {i8} + {d8} = {got[0]}  (wraps)")
    print(f"int8 {i8} // {d8} = {got[1]}  warnings: {sorted({str(w.message) for w in caught})}")
    x = np.array([np.nan, -0.0, 1.0, -np.inf])
    y = np.array([1.0, 0.0, np.nan, 2.0])
    print(f"maximum({x}, {y}) = {nu.maximum(x, y)}  (NaN propagates, like np.maximum)")
    big = np.random.default_rng(0).random(1_000_003)
    print(f"float64 sum of 1e6 values: nclx {nu.add.reduce(big)!r} numpy {np.add.reduce(big)!r} "
          f"(same pairwise summation: equal={nu.add.reduce(big) == np.add.reduce(big)})")

    _section("3. Speed against stock NumPy (single thread, medians of 15)")
    rng = np.random.default_rng(1)
    print(f"{'op':<10}{'dtype':<9}{'n':>10}{'numpy ms':>11}{'nclx ms':>10}{'ratio':>8}")
    for name, dt in [("add", np.int64), ("multiply", np.float64), ("greater", np.int32),
                     ("sqrt", np.float64)]:
        n = 1_000_000
        p = (rng.random(n) * 100 + 1).astype(dt)
        q = (rng.random(n) * 100 + 1).astype(dt)
        args = (p,) if name == "sqrt" else (p, q)
        npf, ncf = getattr(np, name), getattr(nu, name)
        o = npf(*args)
        tn = _median_time(lambda: npf(*args, out=o))
        tc = _median_time(lambda: ncf(*args, out=o))
        print(f"{name:<10}{np.dtype(dt).name:<9}{n:>10}{tn * 1e3:>11.3f}{tc * 1e3:>10.3f}{tn / tc:>8.2f}")
    print("\n(ratio > 1: nclx faster. Reproducible figures: docs/benchmarks.md)")

    _section("4. nclx.install(): ordinary NumPy code through nclx's hooks")
    with nclx.ledger.recording() as led:
        _small_program()
    print("with nclx.ledger.recording() as led:  # a small NumPy program, unchanged")
    print(led.table())

    _section("5. nclx.checked(): integer overflow raises instead of wrapping")
    prices = np.array([3_000_000_000, 2], dtype=np.int64)
    print(f"stock NumPy: {prices} * 4_000_000_000 = {prices * 4_000_000_000}  (wrapped silently)")
    try:
        with nclx.checked():
            prices * 4_000_000_000
    except OverflowError as exc:
        print(f"with nclx.checked(): OverflowError: {exc}")
    print(f"NumPy restored: nclx.is_installed() = {nclx.is_installed()}")

    _section("6. nclx.dap: a distributed array (run under mpiexec -n 4 for 4 ranks)")
    try:
        from mpi4py import MPI
    except ImportError:
        print("mpi4py is not installed: pip install 'nclx[mpi]' to see this part")
        return 0
    import nclx.dap as dap
    comm = MPI.COMM_WORLD
    a = dap.DistArray.from_global(np.arange(12.0), dist="b", padding=[1], comm=comm)
    dd = a.__distarray__()["dim_data"][0]
    print(f"rank {comm.rank}/{comm.size}: local block {a.local}, start/stop {dd['start']}/{dd['stop']}, "
          f"padding {dd['padding']}")
    b = a * 2 + 1
    total, full = b.sum(), b.gather()
    if comm.rank == 0:
        print(f"(a * 2 + 1).sum() = {total}; gathered: {full}")
    return 0


def _small_program():
    """What the ledger watches: a few lines of everyday NumPy."""
    rng = np.random.default_rng(2)
    temps = rng.normal(15.0, 8.0, size=(365, 24))
    daily_max = temps.max(axis=1)
    hot = daily_max > 25.0
    mean = temps.mean()
    anomalies = np.abs(temps - mean)
    counts = np.arange(1_000_000) % 7
    return hot.sum(), anomalies.sum(), np.sqrt(anomalies).sum(), (counts == 3).sum()
