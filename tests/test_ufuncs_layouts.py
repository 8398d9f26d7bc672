"""Every nclx ufunc x every dtype x every ISA build x every memory layout,
compared bit for bit (and warning for warning) with the NumPy ufunc of the
same name.

Layouts reach each path of the kernels: contiguous (vectorised), one operand
a broadcast scalar (stride 0, either side), the general strided loop
(positive and negative strides, Fortran order, strided outputs), 0-d and
empty operands, and unaligned operands (which NumPy's iterator buffers).
"""
import numpy as np
import pytest

from conftest import (BINARY_OPS, OPS, TEST_DTYPES, UNARY_OPS, compare_call, compare_factory,
                      dtype_id, nclx_ufunc, numpy_reference_args, sample_array)

N = 67  # not a multiple of any vector width: exercises vector body and tail


def unaligned(a):
    """A copy of ``a`` whose data pointer is one byte off alignment."""
    a = np.ascontiguousarray(a)
    buf = np.zeros(a.nbytes + 1, np.uint8)
    u = buf[1:].view(a.dtype).reshape(a.shape)
    u[...] = a
    if a.dtype.itemsize > 1 and a.size:
        assert not u.flags.aligned
    return u


def strided_out(dt, shape, step=2):
    """A factory of an output view with stride ``step`` elements."""
    def make():
        n = int(np.prod(shape))
        return np.zeros(n * step, dt)[::step].reshape(shape)
    return make


def result_dtype(op, args, isa):
    """The dtype nclx gives (None when the call is rejected)."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(nclx_ufunc(op, isa)(*args)).dtype
    except TypeError:
        return None


def build(layout, nin, dt):
    """(args, kw) of one layout for an op with ``nin`` inputs of dtype ``dt``."""
    s = [sample_array(dt, 4 * N, seed=11 + k) for k in range(nin)]
    if layout == "contiguous":
        return tuple(x[:N] for x in s), {}
    if layout == "strided":
        return tuple(x[k % 2::3 + k][:N] for k, x in enumerate(s)), {}
    if layout == "negative_stride":
        return tuple(x[::-(1 + k)][:N] for k, x in enumerate(s)), {}
    if layout == "fortran_2d":
        return tuple(x[:7 * 9].reshape(7, 9).T if k == 0 else x[:7 * 9].reshape(9, 7)
                     for k, x in enumerate(s)), {}
    if layout == "broadcast_scalar_second":
        return tuple(x[:N] if k == 0 else np.array(x[5]) for k, x in enumerate(s)), {}
    if layout == "broadcast_scalar_first":
        return tuple(np.array(x[3]) if k == 0 else x[:N] for k, x in enumerate(s)), {}
    if layout == "broadcast_outer":
        return tuple(x[:6].reshape(6, 1) if k == 0 else x[:9].reshape(1, 9)
                     for k, x in enumerate(s)), {}
    if layout == "broadcast_row":
        return tuple(x[:5 * 8].reshape(5, 8) if k == 0 else x[:8] for k, x in enumerate(s)), {}
    if layout == "zero_d":
        return tuple(np.array(x[k + 1]) for k, x in enumerate(s)), {}
    if layout == "numpy_scalars":
        return tuple(x[k + 2] for k, x in enumerate(s)), {}
    if layout == "empty":
        return tuple(x[:0] for x in s), {}
    if layout == "empty_2d":
        return tuple(x[:0].reshape(3, 0) if k == 0 else x[:0] for k, x in enumerate(s)), {}
    if layout == "unaligned":
        return tuple(unaligned(x[:N]) for x in s), {}
    if layout == "unaligned_strided":
        return tuple(unaligned(x[:2 * N])[::2] for x in s), {}
    raise ValueError(layout)


LAYOUTS = ("contiguous", "strided", "negative_stride", "fortran_2d", "zero_d", "numpy_scalars",
           "empty", "empty_2d", "unaligned", "unaligned_strided")
BINARY_LAYOUTS = LAYOUTS + ("broadcast_scalar_second", "broadcast_scalar_first",
                            "broadcast_outer", "broadcast_row")


@pytest.mark.parametrize("layout", BINARY_LAYOUTS)
@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_ufunc_matches_numpy_bitwise_in_layout(op, dt, layout, isa):
    args, kw = build(layout, 2, dt)
    compare_call(op, *args, isa=isa, np_args=numpy_reference_args(op, args), **kw)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_ufunc_matches_numpy_bitwise_in_layout(op, dt, layout, isa):
    args, kw = build(layout, 1, dt)
    compare_call(op, *args, isa=isa, np_args=numpy_reference_args(op, args), **kw)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000])
@pytest.mark.parametrize("op", OPS)
def test_every_length_around_vector_widths_matches_numpy(op, n, isa):
    # contiguous and scalar-broadcast paths at lengths around 128/256-bit
    # vector widths, for the 64-bit and the 8-bit element types
    nin = nclx_ufunc(op, isa).nin
    for dt in ("int8", "uint64", "float32", "float64"):
        s = [sample_array(dt, n, seed=n + k) for k in range(nin)]
        compare_call(op, *s, isa=isa, np_args=numpy_reference_args(op, s))
        if nin == 2:
            compare_call(op, s[0], s[1][:1].reshape(()), isa=isa)
            compare_call(op, s[0][:1].reshape(()), s[1], isa=isa)


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", OPS)
def test_strided_out_argument_is_written_like_numpy(op, dt, isa):
    nin = nclx_ufunc(op, isa).nin
    args = tuple(sample_array(dt, N, seed=3 + k) for k in range(nin))
    ref = numpy_reference_args(op, args)
    odt = result_dtype(op, args, isa) or np.dtype(dt)
    compare_call(op, *args, isa=isa, np_args=ref, out=strided_out(odt, (N,), 3))
    # a negative-stride output
    compare_call(op, *args, isa=isa, np_args=ref,
                 out=lambda: np.zeros(N, odt)[::-1])
    # an output given as a 1-tuple
    compare_call(op, *args, isa=isa, np_args=ref, out=(lambda: np.zeros(N, odt),))


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", OPS)
def test_in_place_operation_with_out_aliasing_an_input_matches_numpy(op, dt, isa):
    nin = nclx_ufunc(op, isa).nin
    base = tuple(sample_array(dt, N, seed=21 + k) for k in range(nin))
    for which in range(nin):
        for view in (slice(None), slice(None, None, -1), slice(None, None, 2)):
            def factory(which=which, view=view):
                arrs = [b.copy() for b in base]
                args = tuple(a[view] for a in arrs)
                return args, {"out": args[which]}, (arrs[which],)
            compare_factory(op, factory, isa=isa)
    if nin == 2:
        # a = op(a, a): both inputs and the output are one array
        def same():
            a = base[0].copy()
            return (a, a), {"out": a}, (a,)
        compare_factory(op, same, isa=isa)
        # overlapping shifted views: NumPy must copy, results stay identical
        def shifted():
            a = base[0].copy()
            return (a[1:], a[:-1]), {"out": a[:-1]}, (a,)
        compare_factory(op, shifted, isa=isa)


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", OPS)
def test_where_mask_selects_elements_like_numpy(op, dt, isa):
    nin = nclx_ufunc(op, isa).nin
    args = tuple(sample_array(dt, N, seed=31 + k) for k in range(nin))
    ref = numpy_reference_args(op, args)
    odt = result_dtype(op, args, isa) or np.dtype(dt)
    mask = np.random.default_rng(5).random(N) < 0.5
    fill = np.arange(N).astype(odt)
    compare_call(op, *args, isa=isa, np_args=ref, where=mask, out=lambda: fill.copy())
    # a broadcast scalar mask, and a strided mask with a strided output
    compare_call(op, *args, isa=isa, np_args=ref, where=np.False_, out=lambda: fill.copy())
    compare_call(op, *args, isa=isa, np_args=ref, where=np.repeat(mask, 2)[::2],
                 out=strided_out(odt, (N,), 2))


DTYPE_ARGS = ("bool", "int8", "int64", "uint64", "float32", "float64", "q")


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", OPS)
def test_dtype_argument_selects_loop_like_numpy(op, dt, isa):
    # dtype= picks the loop (or is rejected) exactly as NumPy does, under
    # the default and the unsafe casting rule
    nin = nclx_ufunc(op, isa).nin
    args = tuple(sample_array(dt, 19, seed=41 + k) for k in range(nin))
    for target in DTYPE_ARGS:
        for casting in ("same_kind", "unsafe"):
            compare_call(op, *args, isa=isa, dtype=target, casting=casting)


@pytest.mark.parametrize("op", BINARY_OPS)
def test_outer_method_matches_numpy(op, isa):
    for dt in ("bool", "int16", "uint32", "float64", "q"):
        a = sample_array(dt, 13, seed=1)
        b = sample_array(dt, 11, seed=2)
        compare_call(op, a, b, isa=isa, method="outer")
        compare_call(op, a.reshape(13, 1)[::2], b[::-3], isa=isa, method="outer")
