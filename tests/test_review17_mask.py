"""Review 17 of nclx.mask against NumPy: arguments that are not plain
ndarrays are read the way NumPy reads them, and read once; a float
condition with signaling NaNs raises no floating-point error; piece_layout
rejects arguments that divided by zero."""
import array
import subprocess
import sys
import warnings

import numpy as np
import pytest

import nclx.mask as M


class ArrayLike:
    """An object with ``__array__`` only (no ``__array_function__``): NumPy
    reads it itself; ``calls`` counts its conversions."""

    def __init__(self, x):
        self.x = x
        self.calls = 0

    def __array__(self, dtype=None, copy=None):
        self.calls += 1
        return self.x


class Refusing(ArrayLike):
    """An ``__array__`` that raises (after counting the call)."""

    def __array__(self, dtype=None, copy=None):
        self.calls += 1
        raise ValueError("no array here")


class Truth:
    """An object whose truth warns and counts how often it is asked."""

    asked = 0

    def __init__(self, v):
        self.v = v

    def __bool__(self):
        Truth.asked += 1
        warnings.warn("truth asked", UserWarning)
        return bool(self.v)


def outcome(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            got = ("value", fn())
        except Exception as exc:      # noqa: BLE001 - the exception is the result compared
            got = ("error", type(exc), str(exc))
    return got, [(w.category, str(w.message)) for w in seen]


def same_value(x, y):
    if isinstance(x, np.ndarray):
        return (type(x) is type(y) and x.dtype == y.dtype and x.shape == y.shape
                and x.tobytes() == y.tobytes())
    return type(x) is type(y) and x == y


def check(fn, npfn, make):
    """fn(*make()) and npfn(*make()) return or raise the same, warn the same,
    and convert each ArrayLike argument as often."""
    args1, args2 = make(), make()
    (got, gw), (want, ww) = outcome(lambda: fn(*args1)), outcome(lambda: npfn(*args2))
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert got[1:] == want[1:], (got, want)
    else:
        assert same_value(got[1], want[1]), (got, want)
    assert gw == ww
    assert [x.calls for x in args1 if isinstance(x, ArrayLike)] == \
        [x.calls for x in args2 if isinstance(x, ArrayLike)]


# ------------------------------------------------------------ extract

def test_extract_of_an_array_like_that_gives_a_masked_array():
    """np.extract reads both arguments with asanyarray: the masked array an
    __array__ gives keeps its type (take) and its mask (nonzero).  Before,
    nclx read them with asarray: a plain ndarray, masked elements selected."""
    data = np.ma.masked_array(np.arange(6.0), mask=[0, 1, 0, 0, 1, 0])
    cond = np.array([1, 0, 1, 1, 0, 1], bool)
    got, want = M.extract(cond, ArrayLike(data)), np.extract(cond, ArrayLike(data))
    assert type(got) is type(want) is np.ma.MaskedArray
    assert got.tobytes() == want.tobytes() and np.array_equal(got.mask, want.mask)
    masked_cond = np.ma.masked_array(np.ones(6, bool), mask=[1, 1, 0, 0, 1, 0])
    x = np.arange(6.0)
    got, want = M.extract(ArrayLike(masked_cond), x), np.extract(ArrayLike(masked_cond), x)
    assert got.tobytes() == want.tobytes() == x[[2, 3, 5]].tobytes()


def test_extract_converts_an_array_like_once():
    """Where NumPy's function takes over (a condition of strings, a dtype
    nclx does not serve, an IndexError) it gets the arrays nclx read: the
    __array__ runs once, as under NumPy (before: twice)."""
    x = np.arange(6.0)
    strings = np.array(["a", "", "b", "", "c", ""])
    check(M.extract, np.extract, lambda: (ArrayLike(strings), x))
    check(M.extract, np.extract, lambda: (ArrayLike(strings), ArrayLike(x)))
    check(M.extract, np.extract, lambda: (np.ones(6, bool), ArrayLike(x.astype(np.float16))))
    check(M.extract, np.extract, lambda: (ArrayLike(np.ones(7, bool)), ArrayLike(x)))
    check(M.extract, np.extract, lambda: (ArrayLike(np.arange(6) % 2), ArrayLike(x)))
    check(M.extract, np.extract, lambda: (Refusing(None), ArrayLike(x)))       # its error, once
    check(M.extract, np.extract, lambda: (ArrayLike(np.ones(6, bool)), Refusing(None)))


# ------------------------------------------------------------ compress

CONDITIONS_NOT_ARRAYS = [
    lambda: memoryview(np.array([1, 0, 1, 1], np.int8)),
    lambda: array.array("d", [1.0, 0.0, 0.5, 0.0]),
    lambda: ArrayLike(np.array([1.0, 0.0, 2.0, 0.0])),
    lambda: ArrayLike(np.array([1, 0, 1, 0], np.uint8)),
    # read by truth (NumPy and nclx select the same)
    lambda: ArrayLike(np.array([1, 0, 1, 1], bool)),
    lambda: [1.0, 0.0, 2.0, float("nan")],
    lambda: [1 + 0j, 0j, 1j, 0j],
    lambda: [np.float64(1), np.float32(0), np.int8(3), np.float16(0)],
    lambda: range(4),
    lambda: np.float64(1.0),
]


def test_compress_reads_a_condition_that_is_not_an_array_as_numpy():
    """NumPy's compress converts such a condition to bool casting 'safe': a
    buffer or __array__ of numbers raises its TypeError (after retrying
    once, numpy's _wrapfunc), a list of numbers is read by truth.  Before,
    nclx read it with asarray and returned a selection where NumPy raises."""
    x = np.arange(4.0)
    for make_cond in CONDITIONS_NOT_ARRAYS:
        check(M.compress, np.compress, lambda: (make_cond(), x))
        check(lambda c, a: M.compress(c, a, axis=1), lambda c, a: np.compress(c, a, axis=1),
              lambda: (make_cond(), x.reshape(1, 4)))
        check(M.compress, np.compress, lambda: (make_cond(), x.tolist()))


def test_compress_converts_an_array_like_condition_once():
    x = np.arange(4.0)
    check(M.compress, np.compress, lambda: (ArrayLike(np.ones((2, 2), bool)), x))    # not 1-d
    check(M.compress, np.compress, lambda: (ArrayLike(np.ones(5, bool)), x))         # IndexError
    check(M.compress, np.compress, lambda: (ArrayLike(np.ones(4, bool)), x.astype(np.float16)))
    check(M.compress, np.compress, lambda: ([Truth(1), Truth(0)] * 2, x.astype(np.float16)))


# ------------------------------------------------------------ place, putmask

@pytest.mark.parametrize("fn, npfn", [(M.place, np.place), (M.putmask, np.putmask)])
def test_place_and_putmask_read_a_mask_once(fn, npfn):
    """A mask of the wrong size (and place's empty values) leave the error
    to NumPy's function, which got the converted mask: each element's truth
    is asked once, its warning shown once (before: twice)."""
    for n in (3, 7):
        for make in (lambda: [Truth(i % 2) for i in range(n)],
                     lambda: np.array([Truth(i % 2) for i in range(n)], dtype=object)):
            counts = []
            for f in (fn, npfn):
                Truth.asked = 0
                got = outcome(lambda: f(np.arange(6.0), make(), [7.0]))
                counts.append((got, Truth.asked))
            assert counts[0] == counts[1]
    mask = ArrayLike(np.array([1, 0, 1, 0, 1, 0], bool))
    check(fn, npfn, lambda: (np.arange(6.0), ArrayLike(mask.x), ArrayLike(np.zeros(0))))
    check(fn, npfn, lambda: (np.arange(6.0), ArrayLike(mask.x[:4]), [1.0]))


def test_place_values_that_overlap_the_array_are_read_once():
    base = np.arange(12.0)
    m = np.arange(12) % 3 != 1
    x1, x2 = base.copy(), base.copy()
    v1, v2 = ArrayLike(x1[2:9]), ArrayLike(x2[2:9])
    M.place(x1, ArrayLike(m), v1)
    np.place(x2, ArrayLike(m), v2)
    assert x1.tobytes() == x2.tobytes() and v1.calls == v2.calls == 1


# ------------------------------------------------------------ signaling NaNs

def _snan(dtype):
    if dtype == np.float16:
        bits = np.array([0x7C01, 0, 0x8000, 0x3C00, 0xFC01, 0], np.uint16)
    elif dtype == np.float32:
        bits = np.array([0x7F800001, 0, 0x80000000, 0x3F800000, 0xFFA00000, 0], np.uint32)
    else:
        bits = np.array([0x7FF0000000000001, 0, 1 << 63, 0x3FF0000000000000,
                         0xFFF4000000000000, 0], np.uint64)
    return bits.view(dtype)


def test_condition_with_signaling_nans_raises_no_floating_point_error():
    """NumPy's nonzero reads a signaling NaN as nonzero without a warning;
    nclx cast the condition to bool, which warned "invalid value encountered
    in cast" and raised FloatingPointError under np.errstate(all="raise")
    (float32, float64, complex; float16 casts without the FPU)."""
    x = np.arange(6.0)
    complex_cond = np.zeros(6, np.complex128)
    complex_cond.view(np.float64)[::2] = _snan(np.float64)     # the bits, not a cast
    for cond in (_snan(np.float16), _snan(np.float32), _snan(np.float64), complex_cond):
        for fn, npfn, args in ((M.extract, np.extract, (cond, x)), (M.compress, np.compress, (cond, x)),
                               (lambda c, a: M.compress(c, a, axis=1),
                                lambda c, a: np.compress(c, a, axis=1), (cond, x.reshape(1, 6)))):
            check(fn, npfn, lambda: args)
            with np.errstate(all="raise"):
                got, want = outcome(lambda: fn(*args)), outcome(lambda: npfn(*args))
            assert got[0][0] == want[0][0] == "value"
            assert got[0][1].tobytes() == want[0][1].tobytes() == x[[0, 3, 4]].tobytes()


# ------------------------------------------------------------ piece_layout

def test_piece_layout_rejects_bad_arguments_without_crashing():
    """piece_layout(100, 2**30): four pieces a thread overflowed a C int to
    0 pieces and the process died of SIGFPE (a division by zero)."""
    code = ("from nclx._ncl import masking\n"
            "print(masking.piece_layout(100, 2**30), masking.piece_layout(10**7, 2**31 - 1))\n"
            "for args in ((100, 0), (100, -5), (-1, 3)):\n"
            "    try:\n"
            "        masking.piece_layout(*args)\n"
            "    except ValueError as exc:\n"
            "        print(exc)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "(128, 1) (39104, 256)"
    assert lines[1:] == ["piece_layout: threads must be >= 1, got 0",
                         "piece_layout: threads must be >= 1, got -5",
                         "piece_layout: n must be >= 0, got -1"]
