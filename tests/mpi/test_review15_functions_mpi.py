"""Defects a hostile review of the registered NumPy functions found (each
test failed before its fix): np.reshape taking order='K' (NumPy's
ValueError) and refusing lower-case orders NumPy takes; the layout
functions' error texts (transpose, swapaxes, moveaxis, reshape's shape)
not NumPy's; np.copy taking any order; np.full_like with a DistArray
fill_value failing inside on np.ndim; np.array_equal(equal_nan=True)
calling NaT unequal and comparing strings NumPy refuses; float16
dot/inner/vdot rounding each rank's partial to float16; np.concatenate
with both out= and dtype= raising another error than NumPy's."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, error_of, result_bits

comm = MPI.COMM_WORLD


def D(g, **kw):
    return dap.DistArray.from_global(np.asarray(g), comm=comm, **kw)


def _same_error(want_fn, got_fn):
    """NumPy's exception class (or a subclass) and its message inside ours,
    on every rank."""
    want, got = error_of(want_fn), error_of(got_fn)
    ok = want[0] != "ok" and (got[0] == want[0] or want[0] in got[0]) and want[1] in got[1]
    return ok, f"NumPy {want}, DistArray {got}"


G3 = np.arange(60.0).reshape(3, 4, 5)


@pytest.mark.parametrize("order", ["K", "k"])
def test_reshape_refuses_order_k_as_numpy(order):
    ok, msg = _same_error(lambda: np.reshape(G3, (5, -1), order=order),
                          lambda: np.reshape(D(G3), (5, -1), order=order))
    collective_assert(ok, msg)


@pytest.mark.parametrize("call", [
    lambda x: np.reshape(x, (5, -1), order="f"),
    lambda x: np.reshape(x, (5, -1), order="c"),
    lambda x: np.reshape(x, (5, -1), order="a"),
    lambda x: np.ravel(x, order="f"),
    lambda x: np.ravel(x, order="K"),
    lambda x: np.ravel(x, order="k"),
    lambda x: np.reshape(x, None),
])
def test_orders_numpy_takes(call):
    want = result_bits(call, G3)
    got = result_bits(call, D(G3, dist=("c", "n", "n")))
    collective_assert(want == got, f"NumPy {want[:4]}, DistArray {got[:4]}")


@pytest.mark.parametrize("call", [
    lambda x: np.transpose(x, (0, 0, 1)),
    lambda x: np.transpose(x, (0, 1)),
    lambda x: np.transpose(x, (0, 1, 2, 3)),
    lambda x: np.swapaxes(x, 1, 3),
    lambda x: np.swapaxes(x, -4, 0),
    lambda x: np.moveaxis(x, (0, 1), (1,)),
    lambda x: np.moveaxis(x, (0, 0), (1, 2)),
    lambda x: np.reshape(x, 60.0),
    lambda x: np.ravel(x, order="X"),
    lambda x: np.reshape(x, 60, order="fortran"),
    lambda x: np.reshape(x, 60, order=1),
])
def test_layout_errors_are_numpys(call):
    ok, msg = _same_error(lambda: call(G3), lambda: call(D(G3)))
    collective_assert(ok, msg)


def test_copy_checks_order():
    g = np.arange(12.0).reshape(3, 4)
    ok, msg = _same_error(lambda: np.copy(g, order="X"), lambda: np.copy(D(g), order="X"))
    collective_assert(ok, msg)


def test_full_like_with_a_distarray_fill_value_says_why():
    g = np.arange(12.0).reshape(3, 4)
    kind, text = error_of(lambda: np.full_like(D(g), D(g * 2)))
    collective_assert(kind == "DapError" and "only a scalar fill_value" in text, (kind, text))


@pytest.mark.parametrize("make", [
    lambda: np.array(["NaT", "2001-01-01", "NaT"] * 3, "M8[s]"),
    lambda: np.array([1, "NaT", 3] * 3, "m8[s]"),
    lambda: np.arange(9.0).astype("U3"),
    lambda: np.arange(9).astype("i4,i4"),
    lambda: np.arange(9.0).astype("S3"),
])
def test_array_equal_equal_nan_as_numpy(make):
    g = make()
    want = error_of(lambda: np.array_equal(g, g.copy(), equal_nan=True))
    wantv = np.array_equal(g, g.copy(), equal_nan=True) if want[0] == "ok" else None
    a, b = D(g), D(g.copy(), dist=("c",))
    got = error_of(lambda: np.array_equal(a, b, equal_nan=True))
    gotv = np.array_equal(a, b, equal_nan=True) if got[0] == "ok" else None
    ok = (want[0] == got[0] or want[0] in got[0]) and want[1] in got[1] and wantv == gotv
    collective_assert(ok, f"NumPy {want} {wantv}, DistArray {got} {gotv}")
    # the same operand twice: NumPy's shortcut, True for any dtype
    collective_assert(np.array_equal(a, a, equal_nan=True) is True, "a, a")


@pytest.mark.parametrize("fn", [np.dot, np.inner, np.vdot])
def test_float16_products_round_once(fn):
    rng = np.random.default_rng(15)
    bad = []
    for n in (5, 7, 13, 31):
        x = rng.standard_normal(n).astype(np.float16)
        y = rng.standard_normal(n).astype(np.float16)
        want = fn(x, y)
        for kw in ({}, {"dist": ("c",)}):
            got = fn(D(x, **kw), D(y, **kw))
            if np.asarray(got).dtype != want.dtype or np.asarray(got).tobytes() != want.tobytes():
                bad.append((n, kw, want, got))
    collective_assert(not bad, f"{bad}")


@pytest.mark.parametrize("fn", [np.dot, np.inner, np.vdot])
def test_float16_product_overflow_warns_as_numpy(fn):
    x = np.full(3 * N, 300, np.float16)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        want = fn(x, x)
    wmsgs = [str(w.message) for w in rec]
    a = D(x)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = fn(a, a)
    gmsgs = [str(w.message) for w in rec]
    collective_assert(np.asarray(got).tobytes() == want.tobytes() and gmsgs == wmsgs,
                      f"NumPy {want!r} {wmsgs}, DistArray {got!r} {gmsgs}")
    if wmsgs:
        with np.errstate(over="raise"):
            kind, _ = error_of(lambda: fn(a, a))
        collective_assert(kind == "FloatingPointError", kind)


def test_concatenate_out_and_dtype_is_numpys_type_error():
    g = np.arange(12.0).reshape(3, 4)
    ok, msg = _same_error(
        lambda: np.concatenate([g, g], out=np.empty((6, 4)), dtype=float),
        lambda: np.concatenate([D(g), D(g)], out=D(np.empty((6, 4))), dtype=float))
    collective_assert(ok, msg)
