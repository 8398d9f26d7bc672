"""Defects found by the eighth review of the Create and RNG subsystems (each
test failed on the code before its fix)."""
import warnings

import numpy as np
import pytest

import nclx
from nclx.random import Generator


@pytest.mark.parametrize("dtype", ["S", "U", "S0", "U0", ">U", np.dtype("U")])
@pytest.mark.parametrize("align", [None, 64, 4096])
def test_unsized_string_dtypes_hold_one_character_as_numpys(dtype, align):
    """align= made arrays of zero-width strings (fills lost, strides 0)."""
    for make, want, filled in (
            (lambda **k: nclx.full(3, "abc", dtype, **k), np.full(3, "abc", dtype), True),
            (lambda **k: nclx.ones(3, dtype, **k), np.ones(3, dtype), True),
            (lambda **k: nclx.zeros((2, 2), dtype, **k), np.zeros((2, 2), dtype), True),
            (lambda **k: nclx.empty(4, dtype, **k), np.empty(4, dtype), False),
            (lambda **k: nclx.ones_like(np.ones(3), dtype=dtype, **k),
             np.ones_like(np.ones(3), dtype=dtype), True)):
        got = make(align=align)
        assert got.dtype == want.dtype and got.strides == want.strides
        if filled:
            assert got.tolist() == want.tolist()
        if align:
            assert got.ctypes.data % align == 0


@pytest.mark.parametrize("dtype, kind", [(int, int), (bool, bool), (np.bool_, np.bool_),
                                         ("bool", np.bool_), (np.longlong, np.int64),
                                         (np.ulonglong, np.uint64), ("q", np.int64),
                                         (np.int64, np.int64), (np.uint8, np.uint8)])
def test_integers_scalars_and_arrays_have_numpys_types(dtype, kind):
    """dtype=int gave np.int64 (NumPy: int), np.bool_ a Python bool (NumPy:
    numpy.bool), np.longlong a longlong ('q'; NumPy: int64 'l')."""
    g = Generator(3)
    want = np.random.default_rng(3).integers(0, 2, dtype=dtype)
    v = g.integers(0, 2, dtype=dtype)
    assert type(v) is type(want) is kind
    a = g.integers(0, 2, size=3, dtype=dtype)
    w = np.random.default_rng(3).integers(0, 2, size=3, dtype=dtype)
    assert a.dtype == w.dtype and a.dtype.char == w.dtype.char


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32])
def test_a_nan_array_bound_is_cast_with_numpys_warning(dtype):
    """NumPy force-casts array bounds of small types (a NaN warns); nclx
    converted by value (ValueError)."""
    g = Generator(1)
    with pytest.warns(RuntimeWarning, match="invalid value encountered in cast"):
        np.random.default_rng(1).integers([np.nan], 5, dtype=dtype)
    with pytest.warns(RuntimeWarning, match="invalid value encountered in cast"):
        r = g.integers([np.nan], 5, dtype=dtype)
    assert r.dtype == dtype and r.shape == (1,)
    with pytest.raises(ValueError, match="cannot convert float NaN"):
        g.integers([np.nan], 5, dtype=np.int64)          # NumPy's value conversion


@pytest.mark.parametrize("dtype, low", [(np.int64, 2 ** 63), (np.uint64, 2 ** 64)])
def test_a_64_bit_low_above_the_range_is_out_of_bounds(dtype, low):
    for high in (0, low):
        with pytest.raises(ValueError) as want:
            np.random.default_rng(1).integers([low], [high], dtype=dtype, endpoint=True)
        with pytest.raises(ValueError) as got:
            Generator(1).integers([low], [high], dtype=dtype, endpoint=True)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("low, high, size", [([0, 5], [[10], [20], [30]], (2, 3)),
                                             ([[0], [5]], [10, 20, 30], (3, 3))])
def test_the_broadcast_error_names_numpys_shapes(low, high, size):
    with pytest.raises(ValueError) as want:
        np.random.default_rng(1).integers(low, high, size=size)
    with pytest.raises(ValueError) as got:
        Generator(1).integers(low, high, size=size)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("make", [
    lambda m, **k: m.empty(2 ** 63 - 1, "u1", **k),
    lambda m, **k: m.empty((1,) * 62 + (0,), "(2,2)f8", **k),
    lambda m, **k: m.zeros((2 ** 40, 2 ** 20), "f8", **k),
    lambda m, **k: m.full(2 ** 62, 1.0, **k)])
def test_align_errors_are_numpys(make):
    """An aligned allocation out of memory said "cannot allocate N bytes
    aligned to A" and a subarray past 64 dimensions "too many dimensions
    with dtype": NumPy's own texts now."""
    with pytest.raises(Exception) as want:
        make(np)
    with pytest.raises(Exception) as got:
        make(nclx, align=2 ** 30)
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
