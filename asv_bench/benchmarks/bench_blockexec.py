"""The block executor (nclx._ncl.blockexec) against eager NumPy and numexpr
on compound float64 expressions (issue 24): stock time / executor time,
alternating in one process (> 1: the executor is faster)."""
import numpy as np

from nclx._fused_program import Program, Step
from nclx._ncl import blockexec

from ._ratio import alternating_ratio

try:
    import numexpr
except ImportError:             # the numexpr column is skipped, saying why
    numexpr = None

D = "ddd"
PROGRAMS = {
    # operands: a, b, then 0-d constants
    "2*a+b*b": (Program([Step(np.multiply, D, (0, 2), 3), Step(np.multiply, D, (1, 1), 4),
                         Step(np.add, D, (3, 4), 5)], 6, 3, 5),
                lambda a, b: 2.0 * a + b * b, [np.array(2.0)]),
    "(a-b)/(a+b)": (Program([Step(np.subtract, D, (0, 1), 2), Step(np.add, D, (0, 1), 3),
                             Step(np.true_divide, D, (2, 3), 4)], 5, 2, 4),
                    lambda a, b: (a - b) / (a + b), []),
    "sqrt(a*a+b*b)": (Program([Step(np.multiply, D, (0, 0), 2), Step(np.multiply, D, (1, 1), 3),
                               Step(np.add, D, (2, 3), 4), Step(np.sqrt, "dd", (4,), 5)], 6, 2, 5),
                      lambda a, b: np.sqrt(a * a + b * b), []),
    "sum(a*b)": (Program([Step(np.multiply, D, (0, 1), 2)], 3, 2, 2, "sum", D),
                 lambda a, b: np.add.reduce(a * b), []),
}
NUMEXPR = {"2*a+b*b": "2*a+b*b", "(a-b)/(a+b)": "(a-b)/(a+b)",
           "sqrt(a*a+b*b)": "sqrt(a*a+b*b)", "sum(a*b)": "sum(a*b)"}


class Executor:
    params = [list(PROGRAMS), [1_000_000, 10_000_000], [1, 2]]
    param_names = ["expr", "n", "threads"]
    unit = "speedup"
    timeout = 300

    def setup(self, expr, n, threads):
        rng = np.random.default_rng(0)
        self.a = rng.random(n) + 1.0
        self.b = rng.random(n) + 1.0
        self.program, self.eager, consts = PROGRAMS[expr]
        self.ops = [self.a, self.b] + consts

    def track_vs_numpy(self, expr, n, threads):
        a, b, ops, program = self.a, self.b, self.ops, self.program
        return alternating_ratio(lambda: self.eager(a, b),
                                 lambda: blockexec.execute(program, ops, threads=threads), rounds=7)

    def track_vs_numexpr(self, expr, n, threads):
        if numexpr is None:
            raise NotImplementedError("numexpr is not installed: no numexpr column")
        a, b, ops, program = self.a, self.b, self.ops, self.program
        ex = NUMEXPR[expr]

        def ne():
            numexpr.set_num_threads(threads)
            return numexpr.evaluate(ex, local_dict={"a": a, "b": b})
        return alternating_ratio(ne, lambda: blockexec.execute(program, ops, threads=threads),
                                 rounds=7)
