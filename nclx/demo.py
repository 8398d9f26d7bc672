"""What ``python -m nclx demo`` shows: nclx kernels at work on real arrays."""
import os
import re
import shutil
import signal
import subprocess
import sys
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
    x = np.random.default_rng(3).standard_normal(2_000_003) * 1e6
    stock = x.sum()
    with nclx.installed():
        t_nclx = _median_time(lambda: x.sum(), repeat=9)
        threaded = x.sum()
    t_stock = _median_time(lambda: x.sum(), repeat=9)
    print(f"\nx.sum() of 2e6 float64 on {nclx.get_num_threads()} thread(s): stock {t_stock * 1e3:.3f} ms, "
          f"installed {t_nclx * 1e3:.3f} ms; same bits: {threaded.tobytes() == stock.tobytes()} "
          f"(split on NumPy's pairwise points)")

    _section("5. nclx.checked(): integer overflow raises instead of wrapping")
    prices = np.array([3_000_000_000, 2], dtype=np.int64)
    print(f"stock NumPy: {prices} * 4_000_000_000 = {prices * 4_000_000_000}  (wrapped silently)")
    try:
        with nclx.checked():
            prices * 4_000_000_000
    except OverflowError as exc:
        print(f"with nclx.checked(): OverflowError: {exc}")
    print(f"NumPy restored: nclx.is_installed() = {nclx.is_installed()}")

    _elementwise_section(nclx, nu)
    rc = _dap_section()
    from nclx import demo_ipc, demo_storage, demo_types
    rc = demo_storage.run(_section) or rc
    rc = demo_types.run(_section) or rc
    return demo_ipc.run(_section) or rc


def _elementwise_section(nclx, nu):
    _section("5b. Unary math, IsUnary, Ternary, Convert: NumPy's own loops, threaded, same bits")
    x = np.random.default_rng(4).random(1_000_000) * 3 + 0.1
    print(f"{'call':<26}{'stock ms':>10}{'installed ms':>14}{'ratio':>8}  same bits")
    for label, fn in [("np.exp(x)", lambda: np.exp(x)), ("np.sin(x)", lambda: np.sin(x)),
                      ("np.isnan(x)", lambda: np.isnan(x)), ("np.clip(x, 1, 2)", lambda: np.clip(x, 1, 2)),
                      ("np.arctan2(x, x)", lambda: np.arctan2(x, x))]:
        want = fn()
        ts = _median_time(fn, repeat=9)
        with nclx.installed():
            got = fn()
            ti = _median_time(fn, repeat=9)
        print(f"{label:<26}{ts * 1e3:>10.3f}{ti * 1e3:>14.3f}{ts / ti:>8.2f}  "
              f"{want.tobytes() == got.tobytes()}")
    print(f"(on {nclx.get_num_threads()} thread(s); each thread runs NumPy's SIMD loop on its slice)")
    with nclx.ledger.recording() as led:
        nclx.convert(x, np.float32)
        nu.fma(x[:4], 10.0, -1.0)
        nu.multiply(x[:4], 2.0)
    print("nclx.convert, nclx.ufuncs.fma and nclx.ufuncs.multiply in the ledger: "
          f"{sorted({r.op for r in led.records()})}")
    print(f"fma(0.1, 10, -1) = {nu.fma(0.1, 10.0, -1.0)!r} (one rounding); 0.1 * 10 - 1 = {0.1 * 10.0 - 1.0!r}")


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


# ------------------------------------------------------- 6. nclx.dap on MPI
DAP_RANKS = 4
DAP_TIMEOUT = 120  # seconds for mpiexec and its 4 ranks (a few on 2 cores)
_RANK_LINE = re.compile(r"^rank (\d+)/(\d+): local block ", re.M)


def _find_mpiexec():
    """mpiexec beside this Python (the mpich wheel puts it in the venv's
    bin/), else the first one on PATH; None if there is none."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec")


def _dap_section():
    """Run :func:`run_dap_rank` on DAP_RANKS ranks under mpiexec, print what
    they printed and check that every rank reported its block."""
    import importlib.util

    _section(f"6. nclx.dap: a distributed array on {DAP_RANKS} MPI ranks")
    mpiexec = _find_mpiexec()
    missing = [name for name, absent in (("mpi4py", importlib.util.find_spec("mpi4py") is None),
                                         ("mpiexec", mpiexec is None)) if absent]
    if missing:
        print(f"{' and '.join(missing)} not found: pip install 'nclx[mpi]' (mpi4py and the mpich "
              f"wheel, which brings mpiexec) to see this part; tools/demo installs it")
        return 0
    print(f"mpiexec -n {DAP_RANKS} python -m nclx demo-dap: a = DistArray.from_global("
          f"np.arange(12.0), dist='b', padding=[1], periodic=[True]); b = a * 2 + 1; "
          f"b's padding set to -1, then b.exchange_halos()")
    rc, out = _run_mpiexec(mpiexec, ["-m", "nclx", "demo-dap"])
    print(out.rstrip())
    ranks = {int(m.group(1)) for m in _RANK_LINE.finditer(out) if int(m.group(2)) == DAP_RANKS}
    if rc != 0 or ranks != set(range(DAP_RANKS)):
        print(f"mpiexec exited with {rc}; ranks heard from: {sorted(ranks)}")
        return 1
    _section(f"7. Halo exchange at work: the heat example on {DAP_RANKS} MPI ranks")
    args = ["-m", "nclx.examples.heat", "--n", "400", "--steps", "50", "--quiet"]
    print(f"mpiexec -n {DAP_RANKS} python {' '.join(args)}   (2-D Jacobi, block-block, "
          "padding 1 refreshed by exchange_halos each step)")
    rc, out = _run_mpiexec(mpiexec, args)
    print(out.rstrip())
    from nclx.examples.heat import serial
    if rc != 0 or "checksum " not in out:
        print(f"mpiexec exited with {rc}")
        return 1
    print(f"serial NumPy run of the same definition: checksum {float(serial(400, 50).sum())!r} "
          "(the same field to 1e-12; the sums add in another order)")
    return 0


def _run_mpiexec(mpiexec, args):
    """(exit status, stdout) of ``mpiexec -n DAP_RANKS python ARGS`` within DAP_TIMEOUT."""
    # A session of its own, so that on a timeout the whole group (mpiexec,
    # its process manager and the ranks) is killed; stdin from /dev/null, as
    # mpiexec would otherwise forward the terminal to rank 0.
    proc = subprocess.Popen([mpiexec, "-n", str(DAP_RANKS), sys.executable] + list(args),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=DAP_TIMEOUT)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group ended meanwhile
            pass
        out, _ = proc.communicate()
        return 1, out + f"\nmpiexec did not finish within {DAP_TIMEOUT} s: killed"
    return proc.returncode, out


def run_dap_rank():
    """One rank of section 6 (``python -m nclx demo-dap``, started by
    mpiexec): each rank describes its block; rank 0 gathers the descriptions
    and prints them in rank order (lines printed by several ranks at once
    can interleave mid-line in mpiexec's output), then the reduction and the
    gathered global array."""
    from mpi4py import MPI

    import nclx.dap as dap

    comm = MPI.COMM_WORLD
    a = dap.DistArray.from_global(np.arange(12.0), dist="b", padding=[1], periodic=[True],
                                  comm=comm)
    dd = a.__distarray__()["dim_data"][0]
    mine = (f"rank {comm.rank}/{comm.size}: local block {np.asarray(a.local)} (a storage, halo "
            f"{a.local.halo[0]}), start/stop {dd['start']}/{dd['stop']}")
    lines = comm.gather(mine, root=0)
    b = a * 2 + 1
    block = np.asarray(b.local)
    owned = b.distribution.owned_slices(comm.rank)
    keep = block[owned].copy()
    block[...] = -1.0
    block[owned] = keep
    before = block.copy()
    b.exchange_halos()
    after = comm.gather(f"rank {comm.rank}: b's block {before} -> exchange_halos() -> {block}",
                        root=0)
    total, full = b.sum(), b.gather(root=0)
    if comm.rank == 0:
        print("\n".join(lines))
        print("\n".join(after))
        print(f"rank 0/{comm.size}: b.sum() = {total} (Allreduce over the owned cells); "
              f"b.gather() = {full}")
    return 0
