"""Storage creation (issue 11): nclx.storage.empty/zeros against np.empty /
np.zeros and gt4py.storage.empty (where gt4py is installed), at 1e2 and 1e7
elements.  Goal: within 2x of np.empty at small sizes, equal at large.

``kw``: "none" creates a storage with the same arguments as the array
(like for like); "gdp3" adds a halo, a 64-byte alignment and a layout.
``track_call_floor`` is np.empty against a Python function that does
nothing with the "gdp3" keywords: what passing them costs by itself.

``track_*``: time(peer) / time(nclx) measured alternately in one process
(> 1 means nclx is faster; 0.5 means twice as slow).  ``time_*``: absolute.
"""
import numpy as np

from ._ratio import alternating_ratio

import nclx.storage as st

try:
    import gt4py.storage as gs
except Exception:  # not installed (or fails to import): those rows are skipped
    gs = None

SIZES = {"1e2": (4, 5, 5), "1e7": (200, 250, 200)}
KW = dict(halo=((1, 1), (1, 1), (0, 0)), alignment_size=64, layout=(0, 1, 2))


KWS = {"none": {}, "gdp3": KW}


def _nothing(shape, dtype=None, **kwargs):
    pass


class StorageCreation:
    params = (["empty", "zeros"], ["1e2", "1e7"], ["none", "gdp3"])
    param_names = ["what", "size", "kw"]

    def setup(self, what, size, kw):
        self.shape = SIZES[size]
        self.kw = KWS[kw]

    def time_numpy(self, what, size, kw):
        getattr(np, what)(self.shape)

    def time_nclx(self, what, size, kw):
        getattr(st, what)(self.shape, **self.kw)

    def track_ratio_vs_numpy(self, what, size, kw):
        shape, kwargs = self.shape, self.kw
        np_fn, st_fn = getattr(np, what), getattr(st, what)
        rounds = 7 if size == "1e7" else 15
        return alternating_ratio(lambda: np_fn(shape), lambda: st_fn(shape, **kwargs),
                                 rounds=rounds)

    track_ratio_vs_numpy.unit = "numpy/nclx"


class CallFloor:
    """np.empty(shape) against a no-op Python call with the "gdp3" keywords."""

    def track_call_floor(self):
        shape = SIZES["1e2"]
        return alternating_ratio(lambda: np.empty(shape), lambda: _nothing(shape, **KW),
                                 rounds=15)

    track_call_floor.unit = "numpy/no-op call"


class StorageVsGt4py:
    params = (["empty", "zeros"], ["1e2", "1e7"])
    param_names = ["what", "size"]

    def setup(self, what, size):
        if gs is None:
            raise NotImplementedError("gt4py is not installed")
        self.shape = SIZES[size]

    def track_ratio_vs_gt4py(self, what, size):
        shape = self.shape
        g_fn, st_fn = getattr(gs, what), getattr(st, what)
        rounds = 7 if size == "1e7" else 15
        return alternating_ratio(
            lambda: g_fn(shape, np.float64, backend="numpy", aligned_index=(1, 1, 0)),
            lambda: st_fn(shape, **KW), rounds=rounds)

    track_ratio_vs_gt4py.unit = "gt4py/nclx"
