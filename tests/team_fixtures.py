"""nclx's thread count as a pytest fixture, shared by the test modules that
run each case on several team sizes (test_sort, test_sort_lanes, the fused
tests)."""
import pytest

import nclx


def threads_fixture(counts):
    """A fixture running each test with ``nclx.set_num_threads(n)`` for each
    ``n`` in ``counts``, the previous count restored after."""
    @pytest.fixture(params=list(counts))
    def threads(request):
        before = nclx.get_num_threads()
        nclx.set_num_threads(request.param)
        try:
            yield request.param
        finally:
            nclx.set_num_threads(before)
    return threads


threads = threads_fixture([1, 2, 3, 7])
