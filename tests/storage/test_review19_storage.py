"""Review 19 of nclx.storage: an out= storage whose host view has no axis of
unit stride (a padded column, shape (n, 1) aligned to 64 bytes) took wrong
values from NumPy 2.4's SIMD loops (np.negative, np.isfinite ...), as a
plain ndarray of that layout does; results nclx allocates were already
computed contiguous and copied.  Now an out= storage of that layout is
written through a contiguous copy too (the test failed before the fix on
NumPy 2.4.6; on a NumPy without the bug it passes either way)."""
import numpy as np
import pytest

import nclx.storage as st

UFUNCS = [np.negative, np.absolute, np.isfinite, np.signbit, np.sqrt, np.square]


def _column(values, dtype=float):
    s = st.zeros((len(values), 1), dtype=dtype, alignment_size=64)
    np.asarray(s)[:, 0] = values
    return s


@pytest.mark.parametrize("uf", UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize("inplace", [False, True])
def test_out_storage_of_a_padded_column(uf, inplace):
    vals = np.array([1.0, -2.0, 3.5, -0.0, np.inf, 4.0, 9.0])
    c = _column(vals)
    with np.errstate(invalid="ignore"):
        want = uf(vals.reshape(-1, 1))
    if inplace and want.dtype == c.dtype:
        out = c
    else:
        out = st.zeros((len(vals), 1), dtype=want.dtype, alignment_size=64)
    with np.errstate(invalid="ignore"):
        r = uf(c, out=out)
    assert r is out
    assert np.asarray(out).tobytes() == np.ascontiguousarray(want).tobytes()


def test_where_keeps_the_out_storage_values():
    c = _column(np.arange(1.0, 8.0))
    m = _column(np.full(7, 5.0))
    mask = (np.arange(7) % 2 == 0)[:, None]
    np.negative(c, out=m, where=mask)
    assert np.asarray(m)[:, 0].tolist() == [-1.0, 5.0, -3.0, 5.0, -5.0, 5.0, -7.0]


def test_out_storage_written_when_numpy_raises_after_writing():
    # NumPy writes the whole output, then raises the FP error: out= holds it
    c = _column(np.array([1.0, -2.0, 4.0, -9.0, 16.0]))
    out = _column(np.zeros(5))
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        np.sqrt(c, out=out)
    with np.errstate(invalid="ignore"):
        want = np.sqrt(np.array([1.0, -2.0, 4.0, -9.0, 16.0]))
    assert np.asarray(out)[:, 0].tobytes() == want.tobytes()
