"""Fixtures the fused-evaluation tests share (test_fused*.py import them)."""
import pytest

from nclx import fused
from team_fixtures import threads  # noqa: F401 - re-exported fixture (1, 2, 3, 7 threads)


@pytest.fixture
def low():
    """fuse_threshold(1): every size fuses."""
    before = fused.fuse_threshold()
    fused.fuse_threshold(1)
    try:
        yield
    finally:
        fused.fuse_threshold(before)
