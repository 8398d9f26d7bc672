"""Split calls while other processes keep the cores busy: nclx's libgomp
spin count (``GOMP_SPINCOUNT=10000``, set by ``import nclx``:
nclx/_ompenv.py) against libgomp's default (300,000) and its passive
policy (docs/benchmarks.md, "Workers that spin").

libgomp reads its environment once, when it loads, so each setting runs
in a fresh interpreter (:func:`time_setting`), beside ``busy`` processes
that spin (:func:`busy_processes`).  Used by ``tools/bench_spin.py`` (a
table) and ``asv_bench/benchmarks/bench_spin.py`` (ratios).
"""
import ast
import contextlib
import os
import subprocess
import sys

__all__ = ["SETTINGS", "busy_processes", "time_setting"]

#: (name, environment added) of each setting; nclx's own adds nothing.
SETTINGS = [("nclx", {}), ("default", {"GOMP_SPINCOUNT": "300000"}),
            ("passive", {"OMP_WAIT_POLICY": "passive"})]

_CHILD = r"""
import sys, time, numpy as np, nclx
n, calls = int(sys.argv[1]), int(sys.argv[2])
a = np.random.default_rng(0).random(n); b = np.random.default_rng(1).random(n)
nclx.set_num_threads(2)
def t(f):
    for _ in range(5): f()
    t0 = time.perf_counter()
    for _ in range(calls): f()
    return (time.perf_counter() - t0) / calls * 1e3
ms = {"evaluate": t(lambda: nclx.evaluate("2*a+b*b"))}
try:
    import numexpr
    numexpr.set_num_threads(2)
    ms["numexpr"] = t(lambda: numexpr.evaluate("2*a+b*b"))
except ImportError:
    pass
ms["stock"] = t(lambda: 2*a+b*b)
print(repr(ms))
"""


@contextlib.contextmanager
def busy_processes(count):
    """``count`` processes running a Python loop while the block runs."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield busy
    finally:
        for p in busy:
            p.kill()
            p.wait()


def time_setting(name, n=1_000_000, calls=100, timeout=600):
    """Milliseconds a call, as ``{"evaluate": .., "numexpr": .. (when
    installed), "stock": ..}``, of ``2*a+b*b`` of ``n`` float64 on 2
    threads in a fresh interpreter under the setting ``name``."""
    extra = dict(SETTINGS)[name]
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n), str(calls)], env=env,
                         capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the {name} child failed: {out.stderr[-500:]}")
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])
