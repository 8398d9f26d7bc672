"""Defects found by the eighth review round of nclx.dap (each test failed on
the code before its fix)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank, result_bits
from mpi_helpers import error_of as _error_of

comm = MPI.COMM_WORLD


class _PickyBefore(dap.DistArray):
    """Refuses on rank 0 before joining DistArray's agreement."""
    def __init__(self, local, distribution, comm=None):
        if rank == 0:
            raise ValueError("rank 0 refuses this block")
        super().__init__(local, distribution, comm)


class _PickyAfter(dap.DistArray):
    """Joins DistArray's agreement everywhere, then refuses on the last rank."""
    def __init__(self, local, distribution, comm=None):
        super().__init__(local, distribution, comm)
        if rank == N - 1:
            raise ValueError("the last rank refuses this block")


@pytest.mark.skipif(N == 1, reason="needs a rank that refuses and one that does not")
@pytest.mark.parametrize("cls", [_PickyBefore, _PickyAfter])
@pytest.mark.parametrize("how", ["from_shape", "from_global", "from_global_root"])
def test_a_subclass_init_raising_on_one_rank_raises_everywhere(cls, how):
    """Found by review: from_shape/from_global call a subclass's __init__;
    one raising on one rank left the others waiting in the next collective
    (a hang)."""
    g = np.arange(4.0 * N)
    make = {"from_shape": lambda: cls.from_shape((4 * N,), comm=comm),
            "from_global": lambda: cls.from_global(g, comm=comm),
            "from_global_root": lambda: cls.from_global(g if rank == 0 else None, comm=comm,
                                                        root=0)}[how]
    kind, msg = _error_of(make)
    refusing = 0 if cls is _PickyBefore else N - 1
    collective_assert(kind.startswith(("ValueError", "DapError")) and
                      ("refuses" in msg or rank != refusing), f"{kind}: {msg}")
    # every rank goes on together afterwards
    x = dap.DistArray.from_global(g, comm=comm)
    collective_assert(x.gather(root=None).tobytes() == g.tobytes(), "after")


@pytest.mark.parametrize("fn", [np.var, np.std, np.nanvar, np.nanstd])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.bool_])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_std_with_an_integer_dtype_are_numpys(fn, dtype, axis):
    """Found by review: an integer dtype= raised TypeError ("No loop matching
    ... divide") where NumPy divides in float64 and casts back (a scalar
    result) or raises its sqrt casting error (an array: std); nanvar of
    integers is NumPy's var (it was the NaN-dropping path: NaN where NumPy
    gives inf, other warnings)."""
    g = (np.arange(6 * N * 4, dtype=np.int64).reshape(6 * N, 4) * 37) % 101
    x = dap.DistArray.from_global(g, comm=comm)
    for ddof in (0, 1):
        want = result_bits(fn, g, axis=axis, dtype=dtype, ddof=ddof)
        got = result_bits(fn, x, axis=axis, dtype=dtype, ddof=ddof)
        collective_assert(got == want, f"ddof={ddof}: {got[:4]} != NumPy's {want[:4]}")


def test_nanvar_of_floats_refuses_an_integer_dtype_as_numpy():
    x = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
    for fn in (np.nanvar, np.nanstd):
        kind, msg = _error_of(lambda: fn(x, dtype=np.int64))
        collective_assert(kind == "TypeError" and "dtype must be inexact" in msg, f"{kind}: {msg}")



def _warned(fn, *args, **kw):
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn(*args, **kw)
    if isinstance(r, dap.DistArray):
        r = r.gather(root=None)
    return np.asarray(r).dtype.str, np.asarray(r).tobytes(), sorted({str(m.message) for m in w})


@pytest.mark.parametrize("fn", [np.nansum, np.nanprod])
@pytest.mark.parametrize("dtype", [np.int64, np.uint8, None])
def test_nansum_nanprod_replace_nans_as_numpy(fn, dtype):
    """Found by review: the NaN-skipping sums masked NaNs with where=, so an
    integer dtype= cast the NaNs ("invalid value encountered in reduce"
    where NumPy warns nothing)."""
    g = np.array([[np.nan, -0.0, 3.5, np.nan]] * (2 * N))
    g[::3, 1] = 2.0
    x = dap.DistArray.from_global(g, comm=comm)
    for axis in (None, 0, 1):
        got, want = _warned(fn, x, axis=axis, dtype=dtype), _warned(fn, g, axis=axis, dtype=dtype)
        collective_assert(got == want, f"axis={axis}: {got} != NumPy's {want}")


def test_nansum_of_negative_zeros_is_numpys():
    """A guard: with NaNs replaced instead of masked, the sign of zero stays NumPy's."""
    g = np.full(4 * N, -0.0)
    x = dap.DistArray.from_global(g, comm=comm)
    collective_assert(np.nansum(x).tobytes() == np.nansum(g).tobytes(),
                      f"{np.nansum(x)!r} != {np.nansum(g)!r}")


def test_mean_of_an_empty_float32_sum_warns_as_numpy():
    """NumPy divides by an np.intp count ("invalid value encountered in
    divide"); the count was a Python int ("... in scalar divide")."""
    g = np.zeros((4 * N, 0))
    x = dap.DistArray.from_global(g, comm=comm)
    for dtype in (np.float32, None):
        got, want = _warned(np.mean, x, dtype=dtype), _warned(np.mean, g, dtype=dtype)
        collective_assert(got == want, f"{got} != NumPy's {want}")


def test_average_of_an_empty_result_raises_numpys_zero_division():
    g = np.zeros((4 * N, 0))
    x = dap.DistArray.from_global(g, comm=comm)
    import warnings
    for axis in (0, None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # axis=None: "Mean of empty slice"
            want = _error_of(lambda: np.average(g, axis=axis))
            got = _error_of(lambda: np.average(x, axis=axis))
        collective_assert(got == want, f"axis={axis}: {got} != NumPy's {want}")


@pytest.mark.skipif(N == 1, reason="needs a rank whose cells fail and one whose do not")
def test_integer_power_failing_on_one_rank_raises_everywhere():
    """Found by review: NumPy's ValueError for a negative integer exponent
    was raised on the rank holding it alone; the others went on to their
    next collective and waited there (a hang)."""
    a = dap.DistArray.from_global(np.arange(3 * N), comm=comm)
    e = dap.DistArray.from_global(np.r_[np.ones(3 * N - 1, int), -1], comm=comm)
    for call in (lambda: np.power(a, e), lambda: a ** e):
        kind, msg = _error_of(call)
        collective_assert(kind.startswith(("ValueError", "DapError")) and "negative integer powers" in msg,
                          f"{kind}: {msg}")
    collective_assert(float(a.sum()) == float(np.arange(3 * N).sum()), "after")


def test_a_generalized_ufunc_is_refused_not_run_blockwise():
    """Found by review: np.matmul ran on the local blocks as if elementwise
    (a wrong product, silently)."""
    A = np.arange(16.0 * N * N).reshape(4 * N, 4 * N)
    a = dap.DistArray.from_global(A, comm=comm)
    for call in (lambda: np.matmul(a, a), lambda: a @ a):
        kind, msg = _error_of(call)
        collective_assert(kind == "TypeError" and "generalized ufunc" in msg, f"{kind}: {msg}")


def test_the_operators_numpy_has():
    """Found by review: no **, <<, >>, divmod; in-place operators built a new
    array (an alias kept the old values)."""
    g = np.arange(6 * N).reshape(3 * N, 2)
    x = dap.DistArray.from_global(g, comm=comm)
    pairs = [(x ** 2, g ** 2), (2 ** x, 2 ** g), (x << 1, g << 1), (x >> 1, g >> 1),
             (divmod(x, 4)[0], divmod(g, 4)[0]), (divmod(x, 4)[1], divmod(g, 4)[1]),
             (divmod(9, x + 1)[1], divmod(9, g + 1)[1])]
    for k, (got, want) in enumerate(pairs):
        got = got.gather(root=None)
        collective_assert(got.dtype == want.dtype and got.tobytes() == want.tobytes(), str(k))
    alias = x
    x += 3
    x **= 2
    x <<= 1
    collective_assert(alias is x and alias.gather(root=None).tobytes() == (((g + 3) ** 2) << 1)
                      .tobytes(), "in place")
    kind, msg = _error_of(lambda: x.__iadd__(1.5))
    want = _error_of(lambda: g.copy().__iadd__(1.5))
    collective_assert(kind == want[0] == "UFuncTypeError", f"{kind}: {msg}")


@pytest.mark.parametrize("case", ["own", "combined", "lines"])
def test_a_scan_under_errstate_raise_raises_everywhere(case):
    """Found by review: an overflow in one rank's scan (or in the ranks'
    combined prefix) under np.errstate(over='raise') was raised on some ranks
    only: an MPI abort ("Message truncated") or a hang."""
    g = np.ones(3 * N + 3)
    if case == "own":
        g[-2:] = 1e308
    elif case == "combined":
        g[[0, -1]] = 1e308
    else:
        g = np.ones((3 * N, 4))
        g[-1, 2:] = 1e308
    x = dap.DistArray.from_global(g, comm=comm, dist="b" if g.ndim == 1 else ("b", "n"))
    with np.errstate(over="raise"):
        kind, msg = _error_of(lambda: np.cumsum(x, axis=None if g.ndim == 1 else 1))
        want = _error_of(lambda: np.cumsum(g, axis=None if g.ndim == 1 else 1))
    collective_assert(want[0] == "FloatingPointError" and kind.startswith(("FloatingPointError", "DapError"))
                      and "overflow" in msg, f"{kind}: {msg}")
    collective_assert(float(dap.DistArray.from_global(np.ones(N), comm=comm).sum()) == N, "after")


def test_var_along_an_axis_under_errstate_raise_is_numpys():
    """Found by review: the mean's sum ran under errstate(invalid='ignore'):
    inf and -inf in a line returned NaN where NumPy raises."""
    g = np.ones((3 * N, 4))
    g[-1, 1], g[-1, 2] = np.inf, -np.inf
    x = dap.DistArray.from_global(g, comm=comm, dist=("b", "n"))
    for fn in (np.var, np.std):
        with np.errstate(all="raise"):
            want = _error_of(lambda: fn(g, axis=1))
            kind, msg = _error_of(lambda: fn(x, axis=1))
        collective_assert(want[0] == "FloatingPointError" and
                          kind.startswith(("FloatingPointError", "DapError")) and "invalid" in msg,
                          f"{kind}: {msg}")
    h = np.ones((3 * N, 4))
    h[-1, :] = np.nan                       # nanvar divides quietly, as NumPy's
    y = dap.DistArray.from_global(h, comm=comm, dist=("b", "n"))
    with np.errstate(all="raise"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        got = np.nanvar(y, axis=1).gather(root=None)
        want = np.nanvar(h, axis=1)
    collective_assert(got.tobytes() == want.tobytes(), f"{got} {want}")


_ODD_DTYPES = {
    ">f8": np.arange(4.0 * N + 1).astype(">f8"),
    ">f4": (np.arange(4.0 * N + 1) / 3).astype(">f4"),
    "m8[s]": np.arange(4 * N + 1).astype("m8[s]"),
}


@pytest.mark.parametrize("name", sorted(_ODD_DTYPES))
@pytest.mark.parametrize("fn", [np.mean, np.var, np.std, np.average, np.cumsum, np.sum])
def test_reductions_of_non_native_and_timedelta_dtypes_are_numpys(name, fn):
    """Found by review: mean/var/std/average passed the array's own dtype to
    the sum and scans their result dtype to accumulate: a non-native byte
    order or a timedelta unit there only selects a DType (TypeError)."""
    g = _ODD_DTYPES[name]
    x = dap.DistArray.from_global(g, comm=comm, dist="c")
    got, want = result_bits(fn, x), result_bits(fn, g)
    if want[0] == "ok" and got[0] == "ok" and g.dtype.kind == "f":     # 1e-12 relative (docs)
        ok = got[2] == want[2] and np.allclose(np.frombuffer(got[4], got[2]),
                                               np.frombuffer(want[4], want[2]), rtol=1e-6)
    else:
        ok = got == want
    collective_assert(ok, f"{got[:4]} != NumPy's {want[:4]}")


@pytest.mark.parametrize("fn", [np.argmax, np.argmin, np.nanargmax, np.nanargmin])
@pytest.mark.parametrize("kind", ["M8[D]", "m8[s]", "U3", "S2", "M8[D] NaT"])
def test_argmax_of_datetimes_and_strings_is_numpys(fn, kind):
    """Found by review: datetime64/timedelta64 and string arrays raised
    (no maximum loop for strings; a datetime's -inf)."""
    rng = np.random.default_rng(8)
    v = rng.integers(0, 5, 5 * N)
    if kind.startswith(("M8", "m8")):
        g = v.astype(kind.split()[0])
        if "NaT" in kind:
            g[[3, 5 * N - 2]] = np.datetime64("NaT", "D")
    else:
        g = np.array([str(i) * (i % 3) for i in v], dtype=kind)
    for dist in ("b", "c"):
        x = dap.DistArray.from_global(g, comm=comm, dist=dist)
        got, want = result_bits(fn, x), result_bits(fn, g)
        collective_assert(got == want, f"{dist}: {got[:4]} != NumPy's {want[:4]}")
    g2 = g.reshape(5, N)
    x2 = dap.DistArray.from_global(g2, comm=comm, dist=("c", "n"))
    for axis in (0, 1):
        got, want = result_bits(fn, x2, axis=axis), result_bits(fn, g2, axis=axis)
        collective_assert(got == want, f"axis {axis}: {got} != NumPy's {want}")


def test_count_nonzero_of_strings_and_records_is_numpys():
    """Found by review: count_nonzero compared cells with 0: every string
    counted (6 for NumPy's 3), records raised."""
    s = np.array(["", "a", "", "b", "c", ""] * N)
    r = np.zeros(4 * N, dtype=[("x", "f8"), ("y", "i4")])
    r["x"][1::4] = -0.0
    r["y"][2::4] = 7
    r["x"][3::4] = np.nan
    for g in (s, s.astype("S1"), r):
        x = dap.DistArray.from_global(g, comm=comm, dist="c")
        got, want = np.count_nonzero(x), np.count_nonzero(g)
        collective_assert(got == want, f"{g.dtype}: {got} != NumPy's {want}")


@pytest.mark.parametrize("shape, kth, axis", [((0, 3), 1, 0), ((0,), 5, -1), ((3, 0), 5, 0),
                                              ((3, 0), 1, 1), ((0, 4), 9, None)])
def test_partition_of_an_empty_array_takes_any_kth_as_numpy(shape, kth, axis):
    g = np.zeros(shape)
    x = dap.DistArray.from_global(g, comm=comm)
    got, want = result_bits(np.partition, x, kth, axis=axis), result_bits(np.partition, g, kth, axis=axis)
    collective_assert(got == want, f"{got} != NumPy's {want}")


@pytest.mark.skipif(N == 1, reason="padding needs a neighbour")
def test_a_padded_block_dimension_beside_a_cyclic_one_exchanges_and_sorts():
    """Found by review: sort/argsort/partition/cumsum (their results go
    through a halo exchange) refused a padded 'b' dimension beside a 'c'
    one ("dimension 1 has dist_type 'c'"), a layout from_global and
    load_npy accept; the 'c' dimension has no padding to exchange."""
    g = np.arange(20.0 * N).reshape(5 * N, 4)[::-1].copy()
    x = dap.DistArray.from_global(g, comm=comm, dist=["b", "c"], padding=[1, 0],
                                  grid_shape=(N, 1) if N > 1 else None)
    filled = x._block.copy()
    own = x.distribution.owned_slices(rank)
    mask = np.ones(x._block.shape, bool)
    mask[own] = False
    x._block[mask] = -1.0
    x.exchange_halos()
    collective_assert(x._block.tobytes() == filled.tobytes(), "exchanged padding")
    for name, f in [("sort", lambda v: np.sort(v, axis=0)), ("argsort", lambda v: np.argsort(v, axis=1)),
                    ("cumsum", lambda v: np.cumsum(v, axis=0)),
                    ("partition", lambda v: np.partition(v, 1, axis=1))]:
        got = f(x).gather(root=None)
        collective_assert(got.tobytes() == f(g).tobytes(), name)


def test_float16_nans_keep_their_bits_through_the_sample_sort():
    """Found by review: on more than one rank the sample sort ran NumPy's
    default sort on float16, whose SIMD path writes NaN as 0x7C01: sort and
    median returned other NaN bits than NumPy's."""
    g = np.array([1, np.nan, 1, -0.0, 0.0, 3, 3, np.nan, 2] * N, "f2")
    x = dap.DistArray.from_global(g, comm=comm)
    got = np.sort(x, kind="stable").gather(root=None)
    want = np.sort(g, kind="stable")
    collective_assert(got.view("u2").tobytes() == want.view("u2").tobytes(),
                      f"{got.view('u2')} != {want.view('u2')}")
    m, w = np.asarray(np.median(x)), np.asarray(np.median(g))
    collective_assert(m.dtype == w.dtype and m.tobytes() == w.tobytes(), f"{m!r} {w!r}")


def test_a_hook_linked_on_one_rank_only_costs_no_agreement():
    """Found by a review of the fixes: a user hook on one rank made that rank
    alone agree after an elementwise call (a hang: a profiler on rank 0 is
    ordinary use)."""
    from nclx import hooks
    a = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
    h = hooks.register("python", "binary", lambda call: call.next(), name="spy") \
        if rank == 0 else None
    try:
        b = a + 1
        comm.Barrier()
        total = b.gather(root=None).sum()
    finally:
        if h is not None:
            h.remove()
    collective_assert(total == np.arange(4.0 * N).sum() + 4 * N, str(total))


@pytest.mark.skipif(N < 4 or N % 2, reason="needs a 2 x k grid (k >= 2)")
def test_a_scan_along_a_grid_axis_under_errstate_raise_raises_on_every_column():
    """Found by a review of the fixes: the agreement ran over the ranks of
    the scanned column only; the other columns waited in the next collective."""
    g = np.ones((4, 2 * N))
    g[:, 0] = 1e308
    x = dap.DistArray.from_global(g, comm=comm, grid_shape=(2, N // 2))
    with np.errstate(over="raise"):
        kind, msg = _error_of(lambda: np.cumsum(x, axis=0))
    collective_assert(kind.startswith(("FloatingPointError", "DapError")) and "overflow" in msg,
                      f"{kind}: {msg}")
    collective_assert(float(dap.DistArray.from_global(np.ones(N), comm=comm).sum()) == N, "after")


@pytest.mark.parametrize("dtype", [">f8", "<f8", ">i4", "f4", "c16", None])
@pytest.mark.parametrize("fn", [np.cumsum, np.cumprod])
def test_scans_take_numpys_dtype_arguments(fn, dtype):
    """Found by a review of the fixes: dtype='>f8' went to accumulate as
    given (TypeError) where NumPy scans in the native dtype."""
    g = np.arange(1.0, 3 * N + 1) / 2
    x = dap.DistArray.from_global(g, comm=comm)
    got, want = result_bits(fn, x, dtype=dtype), result_bits(fn, g, dtype=dtype)
    ok = got[:4] == want[:4] and (got[0] != "ok" or np.allclose(
        np.frombuffer(got[4], got[2]), np.frombuffer(want[4], want[2]),
        rtol=1e-6 if np.dtype(got[2]).itemsize == 4 else 1e-12))     # float32: its precision
    collective_assert(ok, f"{got[:4]} != NumPy's {want[:4]}")


def test_which_elementwise_calls_agree():
    """Found by a review of the fixes: a float array to a Python-number power
    agreed (one collective a call, 3x the time of a * a)."""
    from nclx.dap.ufuncs import _may_fail_alone
    f = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
    i = dap.DistArray.from_global(np.arange(4 * N), comm=comm)
    cases = [((f, 2), False), ((f, 2.0), False), ((f, i), False), ((i, 2.0), False),
             ((i, 2), True), ((i, i), True), ((2, i), True), ((i > 1, i > 2), True)]
    for args, want in cases:
        got = _may_fail_alone(np.power, args, {})
        collective_assert(got == want, f"{[getattr(a, 'dtype', a) for a in args]}: {got}")
    collective_assert(not _may_fail_alone(np.add, (i, 2), {}), "add")


@pytest.mark.skipif(N == 1, reason="needs a rank whose cells warn and one whose do not")
@pytest.mark.parametrize("how", ["call", "warnings-error"])
def test_a_floating_point_callback_or_warning_error_on_one_rank_raises_everywhere(how):
    """Found by a review of the fixes: np.errstate(divide='call') with a
    raising callback, or 'warn' with warnings turned into errors, raised on
    the rank meeting the flag alone (a hang)."""
    import warnings
    a = dap.DistArray.from_global(np.r_[np.ones(3 * N - 1), 0.0], comm=comm)

    def boom(kind, flag):
        raise FloatingPointError(kind)
    with warnings.catch_warnings():
        if how == "call":
            ctx = np.errstate(divide="call", call=boom)
        else:
            warnings.simplefilter("error")
            ctx = np.errstate(divide="warn")
        with ctx:
            kind, msg = _error_of(lambda: 1.0 / a)
    collective_assert(kind.startswith(("FloatingPointError", "RuntimeWarning", "DapError")) and
                      "divide" in msg, f"{kind}: {msg}")
    collective_assert(float(a.sum()) == 3 * N - 1, "after")

