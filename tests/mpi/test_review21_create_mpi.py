"""Defects of NumPy's creation functions on DistArrays found in the
twenty-first look at nclx.dap (each test failed on the code before its
fix, on 1, 2 and 3 ranks):

- R1: ``np.arange(..., like=da)`` ignored ``step=`` given by keyword
  (``np.arange(0, 10, step=3, like=da)`` gave 0..9) and refused
  ``start=``/``stop=`` keywords and a dtype by position
  (``np.arange(0, 3, 1, float, like=da)``): every call form NumPy takes is
  now taken, with NumPy's errors for the ones it refuses;
- R2: ``np.arange(like=da)``'s values and dtypes differed from NumPy's:
  float16 steps (NumPy fills ``first + i * (second - first)`` in float32,
  then rounds), ``np.arange(np.float32(0.1), 3)`` (float64 in NumPy: the
  dtype starts from intp), ``arange(2**64 - 3, 2**64 - 1)`` (float64 in
  NumPy; an OverflowError), ``arange(2, dtype=bool)`` (a TypeError; NumPy
  allows two items); datetimes and timedeltas were refused.  Now NumPy's
  dtype and bytes for every dtype (compared over a sweep below);
- R3: ``np.zeros(3, dtype='U3', like=da)`` gave '0' strings (NumPy: ''),
  'S2' b'0', a record 'i4,U2' (0, '0'): the blocks were np.full(..., 0);
  now zero bytes as np.zeros, and np.ones's ones;
- R4: ``np.full(3, [1, 2, 3], like=da)`` failed with an internal DapError
  (the fill value broadcast against each block); NumPy broadcasts the fill
  value to the shape: now each rank takes its part of it, and a fill value
  that does not broadcast raises NumPy's ValueError on every rank;
- R5: ``np.ones_like(da, order='X')``, ``np.zeros_like(da, device='gpu')``
  (and ``np.full(..., like=da)`` with them) were accepted silently; now
  NumPy's errors, on every rank.
"""
import datetime

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, error_of

# NumPy's own casts warn so (int8 items from 300.0, say): the same on both sides
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

comm = MPI.COMM_WORLD
LIKE = dap.DistArray.from_global(np.arange(4.0), comm=comm)


def _bits(a):
    """dtype, shape and bytes (long double's padding bytes left out: no
    value lives there and NumPy leaves them as they come)."""
    a = np.asarray(a)
    raw = a.tobytes()
    part = a.dtype.itemsize // (2 if a.dtype.kind == "c" else 1)
    if a.dtype.char in "gG" and part in (12, 16) and np.finfo(np.longdouble).nmant == 63:
        raw = np.frombuffer(raw, np.uint8).reshape(-1, part)[:, :10].tobytes()
    return a.dtype.str, a.shape, raw


def _outcome(fn):
    """('ok', bits of the gathered result) or (exception type, message)."""
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - compared with NumPy's
        return type(exc), str(exc)
    if isinstance(r, dap.DistArray):
        if r.comm is not LIKE.comm or \
                r.distribution != dap.Distribution.from_shape(r.shape, nprocs=N):
            return "wrong layout", repr(r.distribution)
        r = r.gather(root=None)
    return "ok", _bits(r)


def _same(got, want):
    """NumPy's result bit for bit, or an error of NumPy's class (its very
    message where raised before any block is made, as NumPy raises it)."""
    if want[0] == "ok" or got[0] == "ok":
        return got == want
    return isinstance(got[0], type) and issubclass(got[0], want[0])


def _check(cases, exact_errors=True):
    bad = []
    for args, kw in cases:
        want = _outcome(lambda: np.arange(*args, **kw))
        got = _outcome(lambda: np.arange(*args, like=LIKE, **kw))
        ok = _same(got, want) and (not exact_errors or want[0] == "ok" or got[1] == want[1])
        if not ok:
            bad.append(f"np.arange{args} {kw}: {str(got)[:160]} != NumPy's {str(want)[:160]}")
    collective_assert(not bad, "\n".join(bad[:10]) + f"\n({len(bad)} of {len(cases)})")
    return len(cases)


# ---------------------------------------------------------------- R1
def test_r1_arange_takes_every_call_form():
    cases = [((0, 10), {"step": 3}), ((), {"start": 2, "stop": 7}), ((), {"stop": 5}),
             ((0, 3, 1, float), {}), ((5,), {"step": 2}), ((0, 10, 3, "f4"), {}),
             ((1, 10), {"step": 2, "dtype": np.int16}), ((), {"start": 1, "stop": 9, "step": 3}),
             ((5, None), {}), ((5, None, None), {}), ((0, 5, None, None), {}),
             ((3,), {"device": "cpu"}), ((10,), {"dtype": None}),
             # NumPy's errors, its message, on every rank
             ((), {"start": 3}), ((), {}), ((None,), {}), ((0, 1, 0), {}), ((0, np.inf), {}),
             ((np.nan,), {}), (((1, 2),), {}), ((0, (1, 2)), {}), (("a",), {}),
             ((0, 3, 1, "S3"), {}), ((300, 400, 30, np.int8), {})]
    _check(cases)


# ---------------------------------------------------------------- R2
_DTYPES = [None, np.float16, np.float32, np.float64, np.longdouble, np.int8, np.uint8,
           np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, bool,
           np.complex64, np.complex128, np.clongdouble, ">f8", ">i2", ">c8", "<f2"]
_RANGES = [(10,), (0.3, 7.1, 0.7), (1, 0, -0.3), (0, 1, 0.1), (-5, 600, 13), (7, 3),
           (0, 0), (2, 11, 1.5), (np.float32(0.1), 3), (np.float32(0.1), 30, np.float32(0.3)),
           (0, 300, 0.37), (-2.5, 40, 1 / 3), (0.5, 1e4, 7.77), (100, -100, -7),
           (0, 70000, 1), (1j, 5 + 7j, 0.5 + 0.5j), (0, 5, 1 + 1j)]


@pytest.mark.parametrize("dtype", _DTYPES, ids=[str(d) for d in _DTYPES])
def test_r2_arange_values_and_dtype_are_numpys(dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    _check([(r, kw) for r in _RANGES])


def test_r2_arange_reported_cases_and_extremes():
    D, T = np.datetime64, np.timedelta64
    cases = [((0.3, 7.1, 0.7), {"dtype": np.float16}), ((np.float32(0.1), 3), {}),
             ((2 ** 64 - 3, 2 ** 64 - 1), {}), ((2,), {"dtype": bool}), ((3,), {"dtype": bool}),
             ((0, 10, 1, bool), {}), ((2 ** 64 - 40, 2 ** 64 - 1, 3), {"dtype": np.uint64}),
             ((2 ** 63 - 50, 2 ** 63 - 1, 7), {}), ((-2 ** 63, 2 ** 63 - 1, 2 ** 61), {}),
             ((0, 2 ** 63), {}), ((0, 2 ** 63, 2 ** 62), {}), ((0, 60000, 7, np.int8), {}),
             ((-5, 60000, 13, np.uint8), {}), ((0, 2 ** 25 + 10, 1, np.float32), {}),
             ((3, 2 ** 25 + 100, 1.5, np.float32), {}), ((0, 1e6, 0.1, np.float16), {}),
             ((0.1, 1e20, 3e18, np.float16), {}), ((0, 1.5 + 8j, 0.5j, np.complex64), {}),
             ((0, 1, np.inf), {}), ((np.int64(-2 ** 63 + 1), np.int64(2 ** 63 - 1)), {}),
             ((np.array(0.5), 5), {}), ((True, 7), {}), ((np.uint64(3), 60), {}),
             ((np.float16(1), 40), {}), ((np.int8(3), 60), {}),
             # datetimes and timedeltas (were refused)
             ((D("2020-01-01"), D("2020-03-05")), {}), ((D("2020-01-01"), 40), {}),
             ((D("2020-01-01"), T(40, "h")), {}),
             ((D("2020-01-01"), D("2020-01-09"), T(7, "h")), {}),
             (("2020-01-01", "2020-02-01"), {"dtype": "M8[h]"}),
             (("2020-01-01", "2020-02-01"), {"dtype": "M8"}),
             ((D("2020-01"), D("2021-05")), {}), ((D("2020"), D("2031"), T(1, "M")), {}),
             ((datetime.date(2020, 1, 1), datetime.date(2020, 3, 4)), {}),
             ((datetime.datetime(2020, 1, 1), datetime.timedelta(seconds=50),
               datetime.timedelta(seconds=1.5)), {}),
             ((T(3, "s"), T(3500, "ms"), T(200, "us")), {}), ((3, T(60, "s")), {}),
             ((T(-1500, "ms"), T(-90000, "ms"), T(-1500, "ms")), {"dtype": "m8[s]"}),
             ((0, 50, 3), {"dtype": "m8[ms]"}), ((D("2020-01-01"), 30), {"dtype": ">M8[D]"}),
             ((D("2020-02-01"), D("2020-01-01"), -3), {}), ((T(40, "D"), None, T(3, "D")), {}),
             ((D("1969-12-31T23:59:59.5"), D("1970-01-01T00:01")), {"dtype": "M8[s]"}),
             ((D("2020-01-01"), D("2020-01-05"), T(1, "h")), {"dtype": "M8[2h]"}),
             ((D("2020-01-01"), "NaT"), {}), ((D("2020-01-01"), 5, 0), {}),
             ((D("2020-01-01"), D("2021-01-01"), T(1, "M")), {}), ((0, 50), {"dtype": "M8"})]
    _check(cases)


def test_r2_arange_sweep_of_random_ranges():
    rng = np.random.default_rng(21)       # the same cases on every rank
    dtypes = [np.float16, np.float32, np.float64, np.complex64, np.int8, np.uint16, np.int32,
              np.uint64, np.int64, None]
    cases = []
    for k in range(400):
        if k % 3 == 0:
            s, st = float(rng.normal() * 10.0 ** rng.integers(-3, 4)), \
                float(rng.normal() * 10.0 ** rng.integers(-4, 2))
        elif k % 3 == 1:
            s, st = np.float32(rng.normal() * 100), np.float32(rng.normal())
        else:
            s, st = int(rng.integers(-2 ** 40, 2 ** 40)), int(rng.integers(-2 ** 20, 2 ** 20)) or 1
        stop = s + st * float(rng.integers(0, 300)) + float(rng.normal())
        d = dtypes[k % len(dtypes)]
        cases.append(((s, stop, st), {} if d is None else {"dtype": d}))
    _check(cases)


def test_r2_object_results_are_refused_naming_the_dtype():
    for args, kw in [((2 ** 70, 2 ** 70 + 5), {}), ((0, 5), {"dtype": object})]:
        got = error_of(lambda: np.arange(*args, like=LIKE, **kw))
        collective_assert(got[0] == "DapError" and "dtype is object" in got[1], f"{got}")


# ---------------------------------------------------------------- R3
_FILL_DTYPES = ["U3", "S2", "i4,U2", "V4", "?", "c16", "M8[s]", "m8[s]", "U", "i4,(2,)f8",
                "f2", ">i4", "S"]


@pytest.mark.parametrize("shape", [(5,), (3, 4)])
def test_r3_zeros_and_ones_of_every_dtype_are_numpys(shape):
    bad = []
    for dt in _FILL_DTYPES:
        for fn in (np.zeros, np.ones, np.empty):
            want = _outcome(lambda: (np.zeros if fn is np.empty else fn)(shape, dtype=dt))
            got = _outcome(lambda: fn(shape, dtype=dt, like=LIKE))     # empty: zeroed
            if got != want:
                bad.append(f"np.{fn.__name__}({shape}, {dt!r}): {str(got)[:120]} "
                           f"!= {str(want)[:120]}")
    collective_assert(not bad, "\n".join(bad))


# ---------------------------------------------------------------- R4
_FULLS = [(3, [1, 2, 3], None), ((4, 3), [1, 2, 3], None), ((2, 3), [[1], [2]], None),
          ((2, 3), [[[1, 2, 3]]], None), ((5,), [2.5], None), ((3, 4), np.arange(4), "f4"),
          ((3,), ["a", "bc", "d"], None), ((3,), [1.5, 2.5, -1], "i2"), ((2, 0), [[1], [2]], None),
          ((7, 5), np.arange(35).reshape(7, 5), None), ((6, 2, 3), np.arange(3.0), "c8"),
          ((9,), np.arange(9) % 2 == 0, None), ((4,), [300, 1, 2, 3], np.int8),
          ((3,), [1, 2, 3], "U2"), ((2, 2), [[1, 2]], [("a", "i2"), ("b", "f4")]),
          # NumPy's broadcast errors, its message, on every rank
          (3, [1, 2], None), ((2, 3), [[1], [2], [3]], None),
          ((2, 3), [[[1, 2, 3]], [[1, 2, 3]]], None),
          ((4,), np.ones((2, 2)), None), ((), [1, 2], None), ((3, 0), [1, 2], None)]


def test_r4_full_broadcasts_the_fill_value():
    bad = []
    for shape, fill, dtype in _FULLS:
        want = _outcome(lambda: np.full(shape, fill, dtype=dtype))
        if shape == () and N > 1 and want[0] == "ok":
            continue
        got = _outcome(lambda: np.full(shape, fill, dtype=dtype, like=LIKE))
        if not (_same(got, want) and (want[0] == "ok" or got[1] == want[1])):
            bad.append(f"np.full({shape}, {fill!r}, {dtype}): {str(got)[:160]} "
                       f"!= {str(want)[:160]}")
    collective_assert(not bad, "\n".join(bad))


def test_r4_a_cast_one_rank_meets_is_raised_on_every_rank():
    """Strings that do not convert: NumPy's ValueError, on every rank --
    also on those whose block holds none of them."""
    shape, fill = (3 * N,), ["1"] * (3 * N - 1) + ["x"]
    want = _outcome(lambda: np.full(shape, fill, dtype=float))
    got = _outcome(lambda: np.full(shape, fill, dtype=float, like=LIKE))
    collective_assert(want[0] is ValueError and _same(got, want) and want[1] in got[1],
                      f"{got} != {want}")


# ---------------------------------------------------------------- R5
_BAD_ARGUMENTS = [{"order": "X"}, {"order": 1}, {"device": "gpu"}, {"device": 0},
                  {"order": "F"}, {"order": None}, {"device": "cpu"}, {"subok": False},
                  {"dtype": "bogus"}, {"dtype": "i4", "order": "X"},
                  {"shape": (2, -1), "device": "gpu"},
                  {"shape": (2.5,), "device": "gpu"}, {"shape": (2, 3), "order": "A"}]


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_r5_like_functions_check_their_arguments_as_numpy(name):
    fn = getattr(np, name)
    args = (7,) if name == "full_like" else ()
    g = np.arange(4.0)
    bad = []
    for kw in _BAD_ARGUMENTS:
        want = error_of(lambda: fn(g, *args, **kw))
        got = error_of(lambda: fn(LIKE, *args, **kw))
        if got != want:
            bad.append(f"np.{name}({kw}): {got} != NumPy's {want}")
    collective_assert(not bad, "\n".join(bad))


def test_r5_full_checks_order_and_device_as_numpy():
    bad = []
    for kw in [{"order": "X"}, {"order": 1}, {"device": "gpu"}, {"order": "F"},
               {"dtype": "bogus", "order": "X"}, {"order": "X", "device": "gpu"}]:
        for shape in (3, (2, -1), (2.5,)):
            want = error_of(lambda: np.full(shape, 1.5, **kw))
            got = error_of(lambda: np.full(shape, 1.5, like=LIKE, **kw))
            if got != want:
                bad.append(f"np.full({shape}, {kw}): {got} != NumPy's {want}")
    collective_assert(not bad, "\n".join(bad))
