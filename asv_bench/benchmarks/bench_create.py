"""nclx.create (issue 23) against NumPy's constructors, 1 to 1e7 elements,
float64, on 2 threads.  Goal: nowhere below 0.97x.

``Create.track_ratio``: time(numpy.<fn>) / time(nclx.create.<fn>) with the
same arguments, measured alternately in one process (> 1: nclx faster).
The ``_like`` functions take a C-contiguous prototype.

``Extras.track_ratio``: what nclx's own arguments cost or give, against the
plain NumPy call:

- ``align64``: ``empty(n, align=64)`` against ``np.empty(n)``;
- ``zeros_touch``: ``zeros(n, touch=True)`` (the team writes the zeros)
  against ``np.zeros(n)`` (calloc: fresh pages are not written at all);
- ``zeros_then_write`` / ``zeros_touch_then_write``: ``zeros`` then one
  ``+= 1`` over the array, touch off / on, against the same with NumPy:
  the price of the first write lands somewhere, this shows where;
- ``zeros_like_then_write``: ``zeros_like`` then ``+= 1`` (NumPy's
  zeros_like writes its zeros; nclx's gets calloc'd pages);
- ``full_noncontig_like``: ``full_like`` of a non-contiguous prototype.
"""
import numpy as np

import nclx
import nclx.create as nc

from ._ratio import alternating_ratio

SIZES = [1, 1_000, 100_000, 1_000_000, 10_000_000]
FUNCS = ["empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like"]


def _calls(fn, n):
    """(numpy call, nclx call) of ``fn`` at ``n`` elements."""
    proto = np.ones(n)
    if fn == "full":
        return (lambda: np.full(n, 2.5)), (lambda: nc.full(n, 2.5))
    if fn == "full_like":
        return (lambda: np.full_like(proto, 2.5)), (lambda: nc.full_like(proto, 2.5))
    f_np, f_nc = getattr(np, fn), getattr(nc, fn)
    arg = proto if fn.endswith("_like") else n
    return (lambda: f_np(arg)), (lambda: f_nc(arg))


def _extra(what, n):
    proto = np.ones(n)
    strided = np.ones(2 * n)[::2]

    def then_write(make):
        def run():
            a = make()
            a += 1
        return run
    return {
        "align64": (lambda: np.empty(n), lambda: nc.empty(n, align=64)),
        "zeros_touch": (lambda: np.zeros(n), lambda: nc.zeros(n, touch=True)),
        "zeros_then_write": (then_write(lambda: np.zeros(n)), then_write(lambda: nc.zeros(n))),
        "zeros_touch_then_write": (then_write(lambda: np.zeros(n)),
                                   then_write(lambda: nc.zeros(n, touch=True))),
        "zeros_like_then_write": (then_write(lambda: np.zeros_like(proto)),
                                  then_write(lambda: nc.zeros_like(proto))),
        "full_noncontig_like": (lambda: np.full_like(strided, 3.0),
                                lambda: nc.full_like(strided, 3.0)),
    }[what]


class _TwoThreads:
    def setup(self, *args):
        self._threads = nclx.get_num_threads()
        nclx.set_num_threads(2)

    def teardown(self, *args):
        nclx.set_num_threads(self._threads)


class Create(_TwoThreads):
    params = [FUNCS, SIZES]
    param_names = ["fn", "n"]
    timeout = 300

    def track_ratio(self, fn, n):
        base, other = _calls(fn, n)
        return alternating_ratio(base, other, rounds=9 if n >= 1_000_000 else 15,
                                 budget=0.02 if n >= 1_000_000 else 0.004)

    track_ratio.unit = "numpy/nclx"


class Extras(_TwoThreads):
    params = [["align64", "zeros_touch", "zeros_then_write", "zeros_touch_then_write",
               "zeros_like_then_write", "full_noncontig_like"], [1_000, 1_000_000, 10_000_000]]
    param_names = ["what", "n"]
    timeout = 300

    def track_ratio(self, what, n):
        base, other = _extra(what, n)
        return alternating_ratio(base, other, rounds=9, budget=0.02 if n >= 1_000_000 else 0.004)

    track_ratio.unit = "numpy/nclx"
