"""Cost of nclx.install() per ufunc call: stock NumPy, installed with no user
hook (one indirect call added per loop call), and with the ledger recording.

Small sizes show the fixed per-call cost; the kernels are the same speed as
NumPy's (bench_ufuncs.py), so the ratio measures the dispatch.
"""
import numpy as np

import nclx
import nclx.ledger

from ._ratio import alternating_ratio

MODES = ["stock", "installed", "ledger"]
SIZES = [1, 100, 10_000]


class _Mode:
    params = [MODES, SIZES]
    param_names = ["mode", "n"]

    def setup(self, mode, n):
        nclx.uninstall()
        self._ctx = None
        if mode == "installed":
            nclx.install()
        elif mode == "ledger":
            self._ctx = nclx.ledger.recording()
            self._ctx.__enter__()

    def teardown(self, mode, n):
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
        nclx.uninstall()


class AddFloat64(_Mode):
    def setup(self, mode, n):
        self.a = np.linspace(0, 1, n)
        self.b = np.linspace(1, 2, n)
        self.out = np.empty(n)
        super().setup(mode, n)

    def time_add(self, mode, n):
        np.add(self.a, self.b, out=self.out)


class GreaterInt64(_Mode):
    def setup(self, mode, n):
        self.a = np.arange(n, dtype=np.int64)
        self.b = np.arange(n, dtype=np.int64)[::-1].copy()
        self.out = np.empty(n, dtype=bool)
        super().setup(mode, n)

    def time_greater(self, mode, n):
        np.greater(self.a, self.b, out=self.out)


class SumFloat64(_Mode):
    def setup(self, mode, n):
        self.a = np.linspace(0, 1, n)
        super().setup(mode, n)

    def time_sum(self, mode, n):
        self.a.sum()


class Overhead:
    """stock time / time with nclx installed (no user hook) or with the
    ledger recording, alternating in one process: 1.0 = no overhead,
    0.95 = 5% slower.  "control" times stock against stock (both sides
    uninstalled): the method's own noise."""
    params = [["installed", "ledger", "control"], ["add_float64", "greater_int64", "sum_float64"],
              SIZES]
    param_names = ["mode", "case", "n"]
    unit = "stock/nclx"
    timeout = 300

    def setup(self, mode, case, n):
        a = np.linspace(0, 1, n)
        b = np.linspace(1, 2, n)
        ia = np.arange(n, dtype=np.int64)
        ib = ia[::-1].copy()
        out, bout = np.empty(n), np.empty(n, dtype=bool)
        self.fn = {"add_float64": lambda: np.add(a, b, out=out),
                   "greater_int64": lambda: np.greater(ia, ib, out=bout),
                   "sum_float64": lambda: a.sum()}[case]

    def track_ratio(self, mode, case, n):
        ctx = []

        def stock():
            if ctx:
                ctx.pop().__exit__(None, None, None)
            nclx.uninstall()

        def mine():
            if mode == "installed":
                nclx.install()
            elif mode == "control":
                nclx.uninstall()
            elif not ctx:
                c = nclx.ledger.recording()
                c.__enter__()
                ctx.append(c)

        try:
            return alternating_ratio(self.fn, self.fn, stock, mine, rounds=21)
        finally:
            stock()


class CheckedBlock:
    """Cost of entering and leaving ``nclx.checked()``: an empty block, and
    a block around one small int64 add (the kernel hooks are added at entry
    and removed at exit).  Absolute times; the add alone is the reference."""
    params = [["empty", "add_int64_100", "plain_add_int64_100"]]
    param_names = ["case"]

    def setup(self, case):
        nclx.uninstall()
        self.a = np.arange(100, dtype=np.int64)
        with nclx.checked():       # the first block resolves the chains once
            pass

    def time_block(self, case):
        if case == "empty":
            with nclx.checked():
                pass
        elif case == "add_int64_100":
            with nclx.checked():
                self.a + self.a
        else:
            self.a + self.a
