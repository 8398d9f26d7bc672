"""Property tests: nclx ufuncs equal NumPy's, bit for bit and warning for
warning, on generated arrays (every op x every dtype x every ISA build).

Elements come from ``hypothesis.extra.numpy.from_dtype`` (NaN, infinities,
subnormals, the integer limits) mixed with the dtype's extreme values; shapes
are mutually broadcastable (0-d and empty included); each operand is laid out
as a strided, reversed, transposed or unaligned view.
"""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

from conftest import (BINARY_OPS, COMPARE_OPS, DTYPE_CHARS, FLOATS, ISAS, OPS, TEST_DTYPES,
                      UNARY_OPS, compare_call, dtype_id, extreme_values, nclx_ufunc,
                      numpy_reference_args)

# every available ISA build, as a plain parameter (a function-scoped fixture
# would not be reset between generated examples)
pytestmark = pytest.mark.parametrize("isa", ISAS)


def elements(dt):
    """Any value of ``dt``, with its extreme values drawn often."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        anything = hnp.from_dtype(dt, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    else:
        anything = hnp.from_dtype(dt)
    return st.one_of(st.sampled_from(list(extreme_values(dt))), anything)


@st.composite
def laid_out(draw, dt, shape):
    """An array of ``shape`` as a contiguous, strided, reversed, transposed or unaligned view."""
    dt = np.dtype(dt)
    layout = draw(st.sampled_from(["contiguous", "strided", "reversed", "transposed", "unaligned"]))
    base = draw(hnp.arrays(dt, shape, elements=elements(dt)))
    if base.ndim == 0:
        return base
    if layout == "strided":
        # a view with a step per axis into a larger buffer (whose other
        # elements are never read)
        steps = [draw(st.sampled_from([1, 2, 3, -1, -2])) for _ in shape]
        buf = np.zeros(tuple(max(n, 1) * abs(s) for n, s in zip(shape, steps)), dt)
        view = buf[tuple(slice(None, None, s) for s in steps)][tuple(slice(0, n) for n in shape)]
        view[...] = base
        return view
    if layout == "reversed":
        return np.ascontiguousarray(base[(slice(None, None, -1),) * len(shape)])[
            (slice(None, None, -1),) * len(shape)]
    if layout == "transposed" and len(shape) >= 2:
        return np.ascontiguousarray(base.T).T
    if layout == "unaligned":
        buf = np.zeros(base.nbytes + 1, np.uint8)
        u = buf[1:].view(dt).reshape(shape)
        u[...] = base
        return u
    return base


@st.composite
def operands(draw, dts):
    """Arrays of dtypes ``dts`` with mutually broadcastable shapes."""
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=len(dts), min_dims=0, max_dims=3,
                                                    max_side=5))
    return tuple(draw(laid_out(dt, s)) for dt, s in zip(dts, shapes.input_shapes))


def _numpy_scalar_or_array(draw, a):
    """Sometimes pass a 0-d operand as a NumPy scalar."""
    if a.ndim == 0 and draw(st.booleans()):
        return a[()]
    return a


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
@given(data=st.data())
def test_binary_ufunc_equals_numpy_on_generated_arrays(op, dt, isa, data):
    args = data.draw(operands((dt, dt)))
    args = tuple(_numpy_scalar_or_array(data.draw, a) for a in args)
    compare_call(op, *args, isa=isa, np_args=numpy_reference_args(op, args))


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", UNARY_OPS)
@given(data=st.data())
def test_unary_ufunc_equals_numpy_on_generated_arrays(op, dt, isa, data):
    (a,) = data.draw(operands((dt,)))
    a = _numpy_scalar_or_array(data.draw, a)
    compare_call(op, a, isa=isa, np_args=numpy_reference_args(op, (a,)))


@pytest.mark.parametrize("op", OPS)
@given(data=st.data())
def test_mixed_dtype_operands_promote_and_compute_like_numpy(op, isa, data):
    nin = nclx_ufunc(op, isa).nin
    dts = tuple(data.draw(st.sampled_from(DTYPE_CHARS)) for _ in range(nin))
    args = data.draw(operands(dts))
    compare_call(op, *args, isa=isa, np_args=numpy_reference_args(op, args))


PY_SCALARS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([0, 1, -1, 127, 128, 255, 256, 2**31, 2**63 - 1, 2**63, 2**64 - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)


# NumPy before 2.2.2 itself crashes (segfault) comparing an integer array of
# 2 or more dimensions that is not contiguous or not aligned with a Python int
# outside the array's dtype range, e.g. on 2.0.2
# np.not_equal(511503, np.full((2, 4), 1, np.uint8)[:, ::2]); 2.0.2, 2.1.3,
# 2.2.0 and 2.2.1 do, 2.2.2 and later do not.  There NumPy's side of a
# comparison (the expected result, which does not depend on the layout) gets
# a C-contiguous, aligned copy.  So does nclx's, where its comparison hands
# the call to NumPy's ufunc (an int outside the dtype's range: NumPy's own
# loops; on NumPy 2.0.2 the drawn (1, 1, 1) uint16 view against
# -99_999_999_999_999 crashed there).
NUMPY_CRASHES_ON_STRIDED_PYINT_COMPARE = np.lib.NumpyVersion(np.__version__) < "2.2.2"


@pytest.mark.parametrize("op", BINARY_OPS)
@given(data=st.data())
def test_python_scalar_operand_equals_numpy(op, isa, data):
    dt = data.draw(st.sampled_from(TEST_DTYPES))
    (a,) = data.draw(operands((dt,)))
    s = data.draw(PY_SCALARS)
    args = (a, s) if data.draw(st.booleans()) else (s, a)
    np_args = None
    if NUMPY_CRASHES_ON_STRIDED_PYINT_COMPARE and op in COMPARE_OPS and type(s) is int:
        np_args = tuple(x.copy(order="C") if isinstance(x, np.ndarray) else x for x in args)
        info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
        if info is not None and not info.min <= s <= info.max:
            args = np_args              # nclx hands it to NumPy's ufunc
    compare_call(op, *args, isa=isa, np_args=np_args)


@pytest.mark.parametrize("op", BINARY_OPS)
@given(data=st.data())
def test_out_and_where_equal_numpy(op, isa, data):
    dt = data.draw(st.sampled_from(TEST_DTYPES))
    a, b = data.draw(operands((dt, dt)))
    shape = np.broadcast_shapes(a.shape, b.shape)
    try:
        with np.errstate(all="ignore"):
            odt = np.asarray(nclx_ufunc(op, isa)(a, b)).dtype
    except TypeError:
        odt = np.dtype(dt)
    fill = data.draw(laid_out(odt, shape))
    where = data.draw(hnp.arrays(np.bool_, data.draw(hnp.broadcastable_shapes(shape, max_dims=len(shape)))))
    compare_call(op, a, b, isa=isa, out=lambda: fill.copy(), where=where)


REDUCE_OPS = ("add", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
              "subtract", "floor_divide", "remainder", "true_divide", "equal", "less")


@pytest.mark.parametrize("op", REDUCE_OPS)
@given(data=st.data())
def test_reduce_accumulate_equal_numpy(op, isa, data):
    dt = data.draw(st.sampled_from(TEST_DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=12))
    a = data.draw(laid_out(dt, shape))
    ndim = a.ndim
    axis = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                               st.lists(st.integers(0, ndim - 1), unique=True).map(tuple)))
    kw = {"axis": axis, "keepdims": data.draw(st.booleans())}
    if data.draw(st.booleans()):
        kw["initial"] = data.draw(elements(np.dtype(dt))).item()
    if data.draw(st.booleans()):
        kw["where"] = data.draw(hnp.arrays(np.bool_, shape))
    compare_call(op, a, isa=isa, method="reduce", **kw)
    acc_axis = data.draw(st.integers(-ndim, ndim - 1))
    compare_call(op, a, isa=isa, method="accumulate", axis=acc_axis)
    n = a.shape[acc_axis]
    if n:
        idx = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6))
        compare_call(op, a, np.array(idx, np.intp), isa=isa, method="reduceat", axis=acc_axis)


@pytest.mark.parametrize("dt", FLOATS)
@given(data=st.data())
def test_float_add_reduce_equals_numpy_pairwise_sum(dt, isa, data):
    n = data.draw(st.integers(0, 2100))
    step = data.draw(st.sampled_from([1, 2, 3, -1, -5]))
    x = data.draw(hnp.arrays(dt, n * abs(step), elements=elements(dt)))[::step]
    assume(x.size == n)
    compare_call("add", x, isa=isa, method="reduce")
