"""Review 4 of the threaded copies (nclx._ncl.copying): hostile layouts and
uses, each equal to stock NumPy bit for bit under install()."""
import pathlib
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import nclx
from nclx._ncl import copying

from copy_fixtures import split_small

pytestmark = pytest.mark.skipif(copying.layout() != "",
                                reason=f"NumPy's copy methods not reachable: {copying.layout()}")


@pytest.fixture(autouse=True)
def clean():
    with split_small(4):
        yield


def _stock_and_installed(f, tries=5):
    nclx.uninstall()
    ref = f()
    nclx.install()
    try:
        before = copying.split_calls()
        got = [f() for _ in range(tries)]
        split = copying.split_calls() - before
    finally:
        nclx.uninstall()
    return ref, got, split


@pytest.mark.parametrize("dstride", [0, 4, -4])
def test_destination_elements_sharing_bytes(dstride):
    """A destination whose elements share bytes (stride 0, or smaller than
    the itemsize: as_strided) is written in NumPy's order, the last write
    winning: never split (was split across the team: whichever piece ended
    last won)."""
    n = 1 << 16

    def f():
        buf = np.zeros(n * 4 + 16, np.uint8)
        start = 0 if dstride >= 0 else (n - 1) * 4
        base = np.frombuffer(buf, np.int64, count=1, offset=start)
        dst = as_strided(base, shape=(n,), strides=(dstride,), writeable=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dst[...] = np.arange(n, dtype=np.int64) * 0x0101010101
        return buf.tobytes()

    ref, got, split = _stock_and_installed(f)
    assert split == 0
    assert all(g == ref for g in got)


def test_docs_name_the_sizes_the_code_uses():
    """docs/hooks.md "Copies" states the piece and cold sizes of
    nclx._ncl.copying (it said 8 MiB after the cold size became 4 MiB)."""
    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "hooks.md"
    if not doc.exists():
        pytest.skip("no docs next to the tests")
    text = " ".join(doc.read_text().split())
    assert f"pieces of {copying.PIECE_BYTES >> 10} KiB" in text
    assert f"below {copying.COLD_BYTES >> 20} MiB" in text


STRUCTS = [
    [("a", "<f8"), ("b", "<i4"), ("c", "u1", (3,))],
    np.dtype([("a", "<f8"), ("b", "<i2"), ("c", "<f4")], align=True),
    [("a", ">f8"), ("b", "<i8"), ("n", [("x", "<f4"), ("y", "<u2")])],
]


def _field_bytes(x):
    """The bytes of every field (padding, which NumPy leaves unwritten, left
    out), nested fields opened."""
    if x.dtype.names is None:
        return [x.tobytes()]
    return [b for nm in x.dtype.names for b in _field_bytes(x[nm])]


@pytest.mark.parametrize("sdt", STRUCTS, ids=["packed", "aligned", "nested"])
def test_structured_copies_go_field_by_field_through_nclx(sdt):
    """A structured copy is NumPy's field by field, each numeric field's copy
    NumPy's within-dtype loop, which install() splits like any other (the
    docs said structured copies were left untouched): the same bytes."""
    n = 20000
    raw = np.random.default_rng(3).integers(0, 256, n * np.dtype(sdt).itemsize, dtype=np.uint8)
    s = np.frombuffer(raw.tobytes(), sdt).copy()
    names = s.dtype.names

    def cases():
        out = [s.copy(), s[::-1].copy(), np.array(s[list(names[:2])])]
        t = s.copy()
        t[1:] = t[:-1]
        out.append(t)
        u = np.zeros_like(s)
        u[::2] = s[1::2]
        out.append(u)
        v = np.zeros(n, [(nm, s.dtype.fields[nm][0]) for nm in reversed(names)])
        for nm in names:
            v[nm] = s[nm]
        out.append(v)
        return out

    ref, got, split = _stock_and_installed(cases, tries=2)
    assert split > 0
    want = [_field_bytes(x) for x in ref]
    assert all([_field_bytes(x) for x in g] == want for g in got)


@pytest.mark.parametrize("piece, cold", [(1 << 62, None), (1 << 63, None), (64, 1 << 63),
                                         (128, -1), (0, 1 << 20)])
def test_tune_out_of_range_raises_value_error_and_changes_nothing(piece, cold):
    """tune() checks both sizes before it sets either (a piece of 2**62
    bytes set piece_bytes, then raised OverflowError computing twice it;
    cold_bytes 2**63 raised OverflowError after piece_bytes was set)."""
    before = copying.tune()
    with pytest.raises(ValueError):
        copying.tune(piece, cold)
    assert copying.tune() == before
    a = np.arange(10000, dtype=np.int64)
    with nclx.installed():
        assert a.copy().tobytes() == a.tobytes()
