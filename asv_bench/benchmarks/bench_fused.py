"""nclx.evaluate and @nclx.fuse (issue 24) against eager NumPy and numexpr:
time of the peer / time of nclx, alternating in one process (> 1: nclx
faster).  Threads: nclx's and numexpr's set alike."""
import numpy as np

import nclx

from ._ratio import alternating_ratio

try:
    import numexpr
except ImportError:             # the numexpr column is skipped, saying why
    numexpr = None

EXPRESSIONS = {
    "2*a+b*b": lambda a, b, c: 2 * a + b * b,
    "a*b+c": lambda a, b, c: a * b + c,
    "(a-b)/(a+b)": lambda a, b, c: (a - b) / (a + b),
    "sqrt(a*a+b*b)": lambda a, b, c: np.sqrt(a * a + b * b),
    "where(a>b,a,b)*2": lambda a, b, c: np.where(a > b, a, b) * 2,
    "exp(-a*a)": lambda a, b, c: np.exp(-a * a),
    "sum(a*b)": lambda a, b, c: np.sum(a * b),
}


class _Base:
    unit = "speedup"
    timeout = 300

    def setup(self, expr, n, threads):
        rng = np.random.default_rng(0)
        self.vars = {"a": rng.random(n), "b": rng.random(n) + 0.5, "c": rng.random(n)}
        self.threads = threads
        self.before = nclx.get_num_threads()
        nclx.set_num_threads(threads)
        if numexpr is not None:
            numexpr.set_num_threads(threads)

    def teardown(self, *args):
        nclx.set_num_threads(self.before)

    def _nclx(self, expr):
        v = self.vars
        return lambda: nclx.evaluate(expr, local_dict=v)


class Evaluate(_Base):
    params = [list(EXPRESSIONS), [1000, 1_000_000, 10_000_000], [1, 2]]
    param_names = ["expr", "n", "threads"]

    def track_vs_numpy(self, expr, n, threads):
        v, fn = self.vars, EXPRESSIONS[expr]
        return alternating_ratio(lambda: fn(v["a"], v["b"], v["c"]), self._nclx(expr),
                                 rounds=7 if n >= 10**6 else 15)

    def track_vs_numexpr(self, expr, n, threads):
        if numexpr is None:
            raise NotImplementedError("numexpr is not installed: no numexpr column")
        v = self.vars
        return alternating_ratio(lambda: numexpr.evaluate(expr, local_dict=v), self._nclx(expr),
                                 rounds=7 if n >= 10**6 else 15)


class Fuse(_Base):
    """A @nclx.fuse function / the plain function (> 1: fused faster)."""
    params = [["2*a+b*b", "sqrt(a*a+b*b)"], [1000, 1_000_000, 10_000_000], [2]]
    param_names = ["expr", "n", "threads"]

    def track_vs_plain(self, expr, n, threads):
        v, fn = self.vars, EXPRESSIONS[expr]
        fused = nclx.fuse(fn)
        return alternating_ratio(lambda: fn(v["a"], v["b"], v["c"]),
                                 lambda: fused(v["a"], v["b"], v["c"]),
                                 rounds=7 if n >= 10**6 else 15)
