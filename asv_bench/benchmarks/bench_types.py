"""nclx.types (issue 14): Ragged against awkward-array and a Python loop.

- building a Ragged of 1e6 lists from offsets + values: ``validate=False``
  (O(1), no copy) and validated (one vectorized pass), against wrapping the
  same buffers in an awkward ListOffsetArray;
- ``r * 2`` and ``r.sum(axis=-1)`` (also ``max``) on 1e7 values in 1e6 lists,
  against awkward's ``a * 2`` / ``ak.sum(a, axis=-1)`` on the same buffers and
  a Python loop over the lists.

``track_*``: time(peer) / time(nclx) measured alternately in one process
(> 1: nclx is faster).  ``time_*``: absolute.  Goal: per-list sum at least
awkward's speed.
"""
import numpy as np

from ._ratio import alternating_ratio

import nclx
from nclx.types import Ragged

try:
    import awkward as ak
except ImportError:  # the awkward rows are skipped
    ak = None

NLISTS = 10 ** 6
NVALUES = 10 ** 7


def _buffers(nlists=NLISTS, nvalues=NVALUES, seed=0):
    rng = np.random.default_rng(seed)
    lens = rng.multinomial(nvalues, np.full(nlists, 1 / nlists))   # ~10 per list, total exact
    offsets = np.zeros(nlists + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    return offsets, rng.standard_normal(nvalues)


def _ak(offsets, values):
    return ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets),
                                                ak.contents.NumpyArray(values)))


def _per_call_us(fn, number=200, repeat=7):
    import timeit
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


class RaggedBuild:
    """validate=False costs the same for 1e3 and 1e6 lists (O(1)).

    ``track_*_us``: microseconds per call, the best of 7 rounds of timeit
    (asv's own ``time_*`` reported tens of microseconds here for a call that
    takes 1.5 us in timeit, growing with the size of setup's arrays)."""
    params = (["trusted", "validated"], [10 ** 3, 10 ** 6])
    param_names = ["how", "nlists"]

    def setup(self, how, nlists):
        self.offsets, self.values = _buffers(nlists, 10 * nlists)
        self.validate = how == "validated"

    def track_nclx_us(self, how, nlists):
        return _per_call_us(lambda: Ragged(self.offsets, self.values, validate=self.validate),
                            number=20 if self.validate and nlists > 10 ** 3 else 2000)

    track_nclx_us.unit = "us"

    def track_awkward_us(self, how, nlists):
        if ak is None:
            raise NotImplementedError("awkward is not installed")
        return _per_call_us(lambda: _ak(self.offsets, self.values), number=200)

    track_awkward_us.unit = "us"


class RaggedCompute:
    params = (["mul2", "sum", "max"], [1, 2])
    param_names = ["op", "threads"]
    timeout = 300

    def setup(self, op, threads):
        self.offsets, self.values = _buffers()
        self.r = Ragged(self.offsets, self.values)
        self.a = _ak(self.offsets, self.values) if ak is not None else None
        self._threads = nclx.get_num_threads()
        nclx.set_num_threads(threads)
        self.mine = {"mul2": lambda: self.r * 2, "sum": lambda: self.r.sum(axis=-1),
                     "max": lambda: self.r.max(axis=-1)}[op]
        if ak is not None:
            self.theirs = {"mul2": lambda: self.a * 2, "sum": lambda: ak.sum(self.a, axis=-1),
                           "max": lambda: ak.max(self.a, axis=-1)}[op]

    def teardown(self, op, threads):
        nclx.set_num_threads(self._threads)

    def time_nclx(self, op, threads):
        self.mine()

    def time_awkward(self, op, threads):
        if ak is None:
            raise NotImplementedError("awkward is not installed")
        self.theirs()

    def track_ratio_vs_awkward(self, op, threads):
        if ak is None:
            raise NotImplementedError("awkward is not installed")
        return alternating_ratio(self.theirs, self.mine, rounds=9, budget=0.05)

    track_ratio_vs_awkward.unit = "awkward/nclx"


class PythonLoop:
    """The per-list sum as a Python loop over the lists (to_list once, in setup)."""
    timeout = 600

    def setup(self):
        offsets, values = _buffers()
        self.r = Ragged(offsets, values)
        self.lists = self.r.to_list()

    def time_python_loop_sum(self):
        [sum(x) for x in self.lists]

    def track_ratio_vs_python_loop(self):
        return alternating_ratio(lambda: [sum(x) for x in self.lists], lambda: self.r.sum(axis=-1),
                                 rounds=3, budget=0.5)

    track_ratio_vs_python_loop.unit = "python/nclx"
