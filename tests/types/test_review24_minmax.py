"""Review 24, nclx.types: a Ragged's per-list float max/min give NumPy's
per-row bits -- which NaN of several (payload and sign) and which sign of
zero -- as ``np.max(row)`` / ``np.min(row)`` of each list.  Before, the
segment kernels' fold gave the first met: ``max([-0.0, 0.0])`` was -0.0
(NumPy: 0.0), ``max([nan(1), nan(2)])`` NaN(1) (NumPy: the default NaN),
``max([nan(7)])`` the default NaN (NumPy: NaN(7)).  NumPy's choice is its
own loop's, so the comparison is with the NumPy running the test."""
import numpy as np
import pytest

from nclx.types import Ragged
from nclx.types import compute

BITS = {"float64": ("u8", 0x7FF8000000000000, 63), "float32": ("u4", 0x7FC00000, 31)}


def _rows(rng, dtype, count, longest):
    u, quiet, sign = BITS[dtype]
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5], dtype)
    rows = []
    for _ in range(count):
        r = pool[rng.integers(0, len(pool), int(rng.integers(0, longest)))]
        bits = r.view(u)
        for j in rng.integers(0, max(len(r), 1), int(rng.integers(0, 3)) if len(r) else 0):
            bits[j] = quiet | int(rng.integers(1, 1000)) | (int(rng.integers(0, 2)) << sign)
        rows.append(r)
    return rows


def _check(rows, dtype):
    u = BITS[dtype][0]
    offsets = np.cumsum([0] + [len(r) for r in rows])
    r = Ragged(offsets, np.concatenate(rows) if rows else np.zeros(0, dtype))
    for name in ("max", "min"):
        got = getattr(r, name)(axis=-1)
        data, mask = np.ma.getdata(got), np.ma.getmaskarray(got)
        for i, row in enumerate(rows):
            if len(row) == 0:
                assert mask[i]
                continue
            want = getattr(np, name)(row)
            assert data[i].view(u) == want.view(u), (name, i, row.view(u), hex(int(data[i].view(u))))


@pytest.mark.parametrize("dtype", list(BITS))
@pytest.mark.parametrize("longest", [3, 60, 200])
def test_float_max_min_bits_per_list_as_numpys_row(dtype, longest):
    rng = np.random.default_rng(longest)
    _check(_rows(rng, dtype, 400, longest), dtype)


@pytest.mark.parametrize("dtype", list(BITS))
def test_float_max_min_bits_threaded(dtype, monkeypatch):
    # above PARALLEL_MIN_VALUES the lists are split across the thread team
    monkeypatch.setattr(compute, "PARALLEL_MIN_VALUES", 64)
    rng = np.random.default_rng(7)
    _check(_rows(rng, dtype, 600, 40), dtype)


@pytest.mark.parametrize("dtype", list(BITS))
def test_the_review_cases(dtype):
    u, quiet, _ = BITS[dtype]

    def nan(p):
        return np.array([quiet | p], u).view(dtype)[0]

    rows = [np.array(x, dtype) for x in (
        [-0.0, 0.0], [0.0, -0.0], [nan(1), nan(2)], [1.0, nan(3), nan(4)], [nan(7)], [-0.0],
        [0.0] * 17 + [-0.0], [nan(5)] + [0.0] * 40 + [nan(6)])]
    _check(rows, dtype)


def test_lists_after_an_offset_and_values_past_the_last_list():
    vals = np.array([9.0, -0.0, 0.0, np.nan, 0.0, -0.0, 7.0])
    r = Ragged(np.array([1, 3, 3, 6]), vals)
    rows = [vals[1:3], vals[3:3], vals[3:6]]
    for name in ("max", "min"):
        got = np.ma.getdata(getattr(r, name)(axis=-1))
        for i in (0, 2):
            assert got[i].view("u8") == getattr(np, name)(rows[i]).view("u8")
