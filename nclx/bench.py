"""``python -m nclx bench``: stock NumPy against ``nclx.install()``.

For each op, dtype and size the same call is timed alternately with nclx
uninstalled and installed, in one process; the table shows the medians, the
speedup (stock / installed) and, as the memory-bandwidth limit, how the
installed time compares with a threaded memcpy of the bytes the op moves.
"""
import argparse

import numpy as np

import nclx
from nclx._cliargs import non_negative_int, positive_float, positive_int
from nclx._ncl import team as _team
from nclx._timing import budget_time, interleaved, pyplot, save

OPS = ["add", "subtract", "multiply", "true_divide", "greater", "equal", "maximum",
       "sum", "sqrt", "exp", "log", "sin", "cos", "tanh", "cbrt", "arctan2", "power",
       "isnan", "isfinite", "clip", "square", "floor", "astype"]
#: ops of one operand (the others take two; clip three: the array and two bounds)
_UNARY = ("sqrt", "exp", "log", "sin", "cos", "tanh", "cbrt", "isnan", "isfinite", "square",
          "floor")
_FLOAT_ONLY = ("exp", "log", "sin", "cos", "tanh", "cbrt", "arctan2")
DTYPES = ["int32", "int64", "float32", "float64"]
SIZES = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]


def _operands(op, dtype, n):
    rng = np.random.default_rng(n)
    a = (rng.random(n) * 100 + 1).astype(dtype)
    b = (rng.random(n) * 100 + 1).astype(dtype)
    if op == "sum":
        return (lambda: a.sum()), a.nbytes
    if op == "astype":
        # nclx.convert through the Convert chain against ndarray.astype
        to = np.float32 if np.dtype(dtype) == np.float64 else np.float64
        return (lambda: nclx.convert(a, to) if nclx.is_installed() else a.astype(to)), \
            a.nbytes + n * np.dtype(to).itemsize
    if op in _FLOAT_ONLY and np.dtype(dtype).kind != "f":
        return None, 0
    if op == "clip":
        out = np.clip(a, 10, 90)
        return (lambda: np.clip(a, 10, 90, out=out)), a.nbytes + out.nbytes
    func = getattr(np, op)
    if op in _UNARY:
        out = func(a)
        return (lambda: func(a, out=out)), a.nbytes + out.nbytes
    out = func(a, b)
    return (lambda: func(a, b, out=out)), a.nbytes + b.nbytes + out.nbytes


def _copy_time(nbytes, budget):
    # a copy of k bytes reads k and writes k: move the same traffic as the op
    half = max(nbytes // 2, 8)
    src = np.ones(half, dtype=np.uint8)
    dst = np.empty_like(src)
    return budget_time(lambda: _team.threaded_copy(dst, src), budget)


def _progress(total):
    try:
        from rich.progress import Progress
    except ImportError:
        return None
    prog = Progress(transient=True)
    prog.start()
    task = prog.add_task("benchmarking", total=total)
    return prog, task


def run(ops=OPS, dtypes=DTYPES, sizes=SIZES, repeats=5, budget=0.02, plot=None):
    """Measure; return rows (op, dtype, n, stock_s, nclx_s, copy_s)."""
    was = nclx.is_installed()
    nclx.uninstall()
    configs = [(op, dt, n) for op in ops for dt in dtypes for n in sizes]
    bar = _progress(len(configs))
    rows = []
    try:
        for i, (op, dt, n) in enumerate(configs):
            fn, nbytes = _operands(op, dt, n)
            if fn is None:       # e.g. exp of int32: NumPy computes it in float64
                continue
            # alternate stock and installed: machine noise hits both
            stock, mine = interleaved(fn, (nclx.uninstall, nclx.install), repeats,
                                      lambda f: budget_time(f, budget))
            nclx.uninstall()
            copy = _copy_time(nbytes, budget)
            rows.append((op, dt, n, stock, mine, copy))
            if bar:
                bar[0].update(bar[1], advance=1, description=f"{op} {dt} {n:.0e}")
            else:
                print(f"\r{i + 1}/{len(configs)} {op} {dt} {n}", end="", flush=True)
    finally:
        if bar:
            bar[0].stop()
        else:
            print()
        if was:
            nclx.install()
        else:
            nclx.uninstall()
    if plot:
        _plot(rows, plot)
    return rows


def table(rows):
    """Markdown table of rows from :func:`run`."""
    lines = ["| op | dtype | n | stock | nclx.install() | speedup | copy / nclx |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for op, dt, n, s, m, c in rows:
        lines.append(f"| {op} | {dt} | {n:.0e} | {_fmt(s)} | {_fmt(m)} | {s / m:.2f}x | {c / m:.2f} |")
    return "\n".join(lines)


def _fmt(sec):
    if sec >= 1e-3:
        return f"{sec * 1e3:.3f} ms"
    return f"{sec * 1e6:.2f} us"


def _plot(rows, path):
    plt = pyplot()
    ops = sorted({r[0] for r in rows}, key=[r[0] for r in rows].index)
    dtypes = sorted({r[1] for r in rows}, key=[r[1] for r in rows].index)
    fig, axes = plt.subplots(1, len(dtypes), figsize=(4.2 * len(dtypes), 4), sharey=True,
                             squeeze=False)
    for ax, dt in zip(axes[0], dtypes):
        for op in ops:
            pts = [(n, s / m) for o, d, n, s, m, _c in rows if o == op and d == dt]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=op)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_title(dt)
        ax.set_xlabel("elements")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("speedup over stock NumPy")
    axes[0][-1].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"nclx.install() vs stock NumPy, {nclx.get_num_threads()} threads")
    save(fig, path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m nclx bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", nargs="+", default=OPS, choices=OPS)
    p.add_argument("--dtypes", nargs="+", default=DTYPES, choices=DTYPES)
    p.add_argument("--sizes", nargs="+", type=non_negative_int, default=SIZES)
    p.add_argument("--repeats", type=positive_int, default=5, help="alternations per case (median)")
    p.add_argument("--budget", type=positive_float, default=0.02,
                   help="seconds per timing sample set")
    p.add_argument("--plot", metavar="FILE.png", help="draw speedup against size per op")
    p.add_argument("--quick", action="store_true", help="add, sum, sqrt on float64 only")
    args = p.parse_args(argv)
    if args.plot:
        try:                   # before the run, not after it
            import matplotlib  # noqa: F401
        except ImportError:
            p.error("--plot needs matplotlib (pip install matplotlib)")
    if args.quick:
        args.ops, args.dtypes = ["add", "sum", "sqrt"], ["float64"]
    print(f"nclx {nclx.__version__}, NumPy {np.__version__}, {nclx.get_num_threads()} threads, "
          f"split thresholds per op, kind and dtype (e.g. add float64: "
          f"{nclx.get_threshold('add', 'elementwise', 'float64')} elements; "
          f"nclx.calibrate(thresholds=True) measures this machine)")
    rows = run(args.ops, args.dtypes, args.sizes, args.repeats, args.budget, args.plot)
    print(table(rows))
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0
