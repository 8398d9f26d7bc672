"""nclx.storage allocates with gt4py 1.1's padding and strides.

The oracle is a table recorded from gt4py 1.1.12's
``gt4py.storage.cartesian.utils.allocate_cpu`` by tools/record_gt4py_alloc.py
(tests/data/gt4py_alloc_cases.json): 1-4 D shapes with extents of 1, every
layout permutation, alignments 1..1024 bytes, item sizes 1..16, aligned
indices inside the halo.
"""
import json
import pathlib

import numpy as np
import pytest

import nclx.storage as st
from nclx.storage.alloc import plan

TABLE = json.loads((pathlib.Path(__file__).parent.parent / "data" /
                    "gt4py_alloc_cases.json").read_text())
CASES = TABLE["cases"]


def test_table_covers_what_the_issue_asks():
    assert TABLE["header"]["gt4py"] == "1.1.12"
    assert len(CASES) > 1000
    assert {len(c["shape"]) for c in CASES} == {1, 2, 3, 4}
    assert {c["align"] for c in CASES} == {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
    assert {c["isz"] for c in CASES} == {1, 2, 4, 8, 16}
    assert any(1 in c["shape"] for c in CASES)
    assert any(any(c["aidx"]) for c in CASES)
    perms = {tuple(c["layout"]) for c in CASES}
    assert len([p for p in perms if len(p) == 4]) == 24


def _chunks(n):
    return [CASES[i::n] for i in range(n)]


@pytest.mark.parametrize("chunk", range(8))
def test_plan_and_allocation_match_gt4py(chunk):
    for c in _chunks(8)[chunk]:
        shape, layout, dtype = tuple(c["shape"]), tuple(c["layout"]), np.dtype(c["dtype"])
        aidx = (0,) * len(shape) if c["aidx"] is None else tuple(c["aidx"])
        p = plan(shape, layout, dtype, c["align"], aidx)
        where = f"case {c}"
        assert p.padded_shape == tuple(c["padded"]), where
        assert p.strides == tuple(c["strides"]), where
        assert p.alloc_bytes == c["nbytes"], where
        kw = {} if c["aidx"] is None else {"aligned_index": aidx}
        s = st.empty(shape, dtype, layout=layout, alignment_size=c["align"], **kw)
        a = np.asarray(s)
        assert a.shape == tuple(c["oshape"]) and a.strides == tuple(c["strides"]), where
        addr = a.__array_interface__["data"][0] + sum(i * k for i, k in zip(aidx, a.strides))
        assert addr % c["align"] == 0, where
        assert s.layout == layout and s.aligned_index == aidx


def test_zero_extent_gives_an_empty_storage_where_gt4py_raises():
    edge = [e for e in TABLE["edge_cases"] if e["group"] == "zero_extent"]
    assert edge and all(e["error"] == "ValueError" for e in edge)
    for e in edge:
        s = st.zeros(tuple(e["shape"]), e["dtype"], layout=tuple(e["layout"]),
                     alignment_size=e["align"])
        assert s.shape == tuple(e["shape"]) and s.size == 0
        np.testing.assert_array_equal(np.asarray(s), np.zeros(tuple(e["shape"])))


def test_zero_dimensional_allocation_as_gt4py():
    e = next(e for e in TABLE["edge_cases"] if e["group"] == "ndim0" and e["align"] == 64)
    p = plan((), (), np.dtype(e["dtype"]), 64, ())
    assert p.alloc_bytes == e["result"]["nbytes"]
    s = st.full((), 3.5, alignment_size=64)
    assert s.ndim == 0 and s[()] == 3.5 and np.asarray(s).__array_interface__["data"][0] % 64 == 0


def test_alignment_smaller_than_the_item_as_gt4py():
    for e in TABLE["edge_cases"]:
        if e["group"] != "align_smaller_than_item":
            continue
        r = e["result"]
        p = plan(tuple(e["shape"]), tuple(e["layout"]), np.dtype(e["dtype"]), e["align"],
                 tuple(e["aidx"]))
        assert p.strides == tuple(r["strides"]) and p.alloc_bytes == r["nbytes"]


def test_incompatible_alignment_is_refused_as_gt4py_does():
    for e in TABLE["edge_cases"]:
        if e["group"] != "incompatible_align":
            continue
        with pytest.raises(st.StorageError, match="alignment_size"):
            st.empty(tuple(e["shape"]), e["dtype"], alignment_size=e["align"])
