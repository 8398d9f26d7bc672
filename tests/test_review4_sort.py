"""Review 4 of the sort changes (the in-order scan, the unstable float
shortcut, in_order_team)."""
import pathlib

import pytest

from nclx._ncl import sorting


def test_docs_name_the_in_order_team_threshold():
    """docs/sort.md says where the in-order check runs: on the team only
    from sorting.in_order_team() elements (it said "on the team" after
    fb8b982 moved checks below 2**18 elements to the calling thread)."""
    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "sort.md"
    if not doc.exists():
        pytest.skip("no docs next to the tests")
    text = " ".join(doc.read_text().split())
    assert "in_order_team()" in text
    assert sorting.in_order_team() == 1 << 18 and "2**18" in text
