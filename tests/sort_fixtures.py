"""What the Sort test modules share (test_sort, test_sort_few): thresholds
low enough that small arrays take the threaded paths, and the skip for a
NumPy whose sorts nclx does not reach."""
import contextlib

import pytest

import nclx
from nclx._ncl import sorting


@contextlib.contextmanager
def lowered(nthreads=None):
    """Thresholds low enough that small arrays take the threaded paths (and
    ``nthreads`` threads when given), restored after; for hypothesis tests,
    which take no function-scoped fixture."""
    t, f, m = sorting.threshold(), sorting.fast_threshold(), sorting.min_run()
    o, th = sorting.in_order_team(), nclx.get_num_threads()
    sorting.threshold(64)
    sorting.fast_threshold(64)
    sorting.min_run(16)
    sorting.in_order_team(64)
    if nthreads is not None:
        nclx.set_num_threads(nthreads)
    try:
        yield
    finally:
        sorting.threshold(t)
        sorting.fast_threshold(f)
        sorting.min_run(m)
        sorting.in_order_team(o)
        nclx.set_num_threads(th)


@pytest.fixture
def small():
    """Thresholds low enough that small arrays take the threaded paths."""
    with lowered():
        yield


def _reachable():
    with nclx.installed():
        pass
    return sorting.reachable() == ""


needs_slots = pytest.mark.skipif(not _reachable(), reason=f"this NumPy does not sort through "
                                 f"the slots nclx replaces: {sorting.reachable()}")
