"""Fixtures the fused-evaluation tests share (test_fused*.py import them)."""
import pytest

import nclx
from nclx import fused


@pytest.fixture
def low():
    """fuse_threshold(1): every size fuses."""
    before = fused.fuse_threshold()
    fused.fuse_threshold(1)
    try:
        yield
    finally:
        fused.fuse_threshold(before)


@pytest.fixture(params=[1, 2, 3, 7])
def threads(request):
    """nclx's team at 1, 2, 3 and 7 threads."""
    before = nclx.get_num_threads()
    nclx.set_num_threads(request.param)
    try:
        yield request.param
    finally:
        nclx.set_num_threads(before)
