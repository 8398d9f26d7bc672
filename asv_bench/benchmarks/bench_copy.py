"""NumPy's copies of a dtype to itself under nclx.install() (the ``copy``
call op, nclx._ncl.copying): stock time / installed time, alternating in one
process (> 1: nclx faster)."""
import numpy as np

import nclx

from ._ratio import alternating_ratio


def _ops(a):
    out = np.empty_like(a)
    m = a.reshape(-1, 10) if a.size % 10 == 0 else a.reshape(-1, 1)

    def setitem():
        out[...] = a

    return {
        "copy": a.copy,                          # fresh memory: page faults included
        "copyto": lambda: np.copyto(out, a),     # into memory already mapped
        "setitem": setitem,
        "reversed": lambda: a[::-1].copy(),
        "transpose": lambda: np.ascontiguousarray(m.T),
        # many short calls (one per row of 4): what the wrapper costs
        "rows4_reversed": lambda: a.reshape(-1, 4)[:, ::-1].copy(),
        # ... and one per row of 4 filled from its first element (source stride 0)
        "rows4_broadcast": lambda: np.broadcast_to(a.reshape(-1, 4)[:, :1], (a.size // 4, 4)).copy(),
    }


class Copy:
    """a.copy(), np.copyto, out[...] = a, a[::-1].copy(), a transposed copy
    and copies of rows of 4 reversed and broadcast, of float64 data, stock /
    installed."""
    params = [["copy", "copyto", "setitem", "reversed", "transpose", "rows4_reversed",
               "rows4_broadcast"],
              [1000, 100_000, 1_000_000, 10_000_000]]
    param_names = ["op", "n"]
    unit = "speedup"
    timeout = 600

    def setup(self, op, n):
        nclx.uninstall()
        self.fn = _ops(np.random.default_rng(0).standard_normal(n))[op]

    def teardown(self, *args):
        nclx.uninstall()

    def track_speedup(self, op, n):
        try:
            return alternating_ratio(self.fn, self.fn, nclx.uninstall, nclx.install,
                                     rounds=5 if n >= 10**6 else 15,
                                     budget=0.02 if n >= 10**6 else 0.004)
        finally:
            nclx.uninstall()
