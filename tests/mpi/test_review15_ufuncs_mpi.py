"""Defects found in the fifteenth look at DistArray's ufunc contract
(nclx/dap/ufuncs.py, nclx/dap/fold.py); each test failed on the code before
its fix, at 2 ranks or more where it says so:

- U1: ``np.power`` whose integer loop is chosen by ``dtype=`` or
  ``signature=`` (float operands, ``casting="unsafe"``) raised NumPy's
  ValueError for a negative exponent on the ranks holding one only, the
  others went on (and met the next collective alone: a hang); the check
  for calls that can fail on some ranks looked at the operands' dtypes
  only.  Now the loop NumPy picks (``ufunc.resolve_dtypes`` with
  ``dtype=``/``signature=``) decides, and every rank raises;
- U2: under ``np.errstate(...='call')`` only the ranks whose cells met a
  flag called the function (NumPy calls it once for the whole array); now
  each rank's flags are ORed in the call's agreement and every rank calls
  it once, with NumPy's arguments;
- U3: under ``np.errstate(...='log')`` likewise only those ranks wrote to
  the log object, and with no object NumPy's NameError was raised there
  alone (no agreement: ``log`` was not counted as a mode that can raise);
  now one write per flag on every rank, or the NameError on every rank;
- U4: ``da == b"a"`` of a str DistArray (and ``da != ...``, a number
  DistArray against a str) raised the ufunc's UFuncTypeError where
  ndarray's operators give every cell False (True).
"""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank, within as _within

comm = MPI.COMM_WORLD
last = N - 1


def outcome(fn):
    """('ok', value) or ('exc', 'Type: message'); a DistArray gathered."""
    try:
        r = fn()
        if isinstance(r, dap.DistArray):
            r = r.gather(root=None)
        return "ok", (np.asarray(r).dtype.str, np.asarray(r).tobytes())
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {exc}"


def within(fn):
    """``outcome(fn)`` in a thread: ('hang', ...) past 10 seconds
    (``mpi_helpers.within``)."""
    got = _within(outcome, fn)       # outcome never raises: ('ok', its pair) or a hang
    return got[1] if got[0] == "ok" else got


def _neg_on_last():
    """Exponents 2 everywhere but -1 in the last rank's cells (float64)."""
    g = np.full(2 * N, 2.0)
    g[-1] = -1.0
    return g


# ------------------------------------------------------------------ U1
@pytest.mark.parametrize("kw", [dict(dtype=np.int64, casting="unsafe"),
                                dict(signature=(np.int64, np.int64, np.int64), casting="unsafe"),
                                dict(signature=(None, None, np.int64), casting="unsafe")],
                         ids=["dtype", "signature", "signature-out"])
def test_power_integer_loop_chosen_by_keywords_raises_on_every_rank(kw):
    g = _neg_on_last()
    A = dap.DistArray.from_global(g, comm=comm)
    try:        # nothing collective after the call (before: it returned on some ranks)
        np.power(A, A, **kw)
        got = ("ok", "")
    except Exception as exc:  # noqa: BLE001 - compared collectively
        got = ("exc", f"{type(exc).__name__}: {exc}")
    every = comm.allgather(got)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        np.power(g, g, **kw)
    collective_assert(all(e[0] == "exc" and "Integers to negative integer powers" in e[1]
                          for e in every), f"{every}")


def test_power_float_loop_with_dtype_still_works():
    g = _neg_on_last()
    A = dap.DistArray.from_global(g, comm=comm)
    got = outcome(lambda: np.power(A, A, dtype=np.float32))
    want = np.power(g, g, dtype=np.float32)
    collective_assert(got == ("ok", (want.dtype.str, want.tobytes())), f"{got}")


# ------------------------------------------------------------------ U2
def _zero_on_last():
    g = np.ones(2 * N)
    g[-1] = 0.0
    return g


def test_call_mode_calls_once_on_every_rank_with_numpys_arguments():
    g = _zero_on_last()
    A = dap.DistArray.from_global(g, comm=comm)
    want, got = [], []
    with np.errstate(all="call", call=lambda *a: want.append(a)):
        expect = np.divide(0.0 * g, g)            # divide by zero? no: 0/0 -> invalid
        np.divide(1.0, g)
    with np.errstate(all="call", call=lambda *a: got.append(a)):
        r1 = np.divide(0.0 * A, A).gather(root=None)
        np.divide(1.0, A)
    collective_assert(got == want and r1.tobytes() == expect.tobytes(),
                      f"calls {got}, NumPy's {want}")


def test_call_mode_callback_error_raised_on_every_rank():
    g = _zero_on_last()
    A = dap.DistArray.from_global(g, comm=comm)

    def boom(kind, flag):
        raise KeyError(kind)

    def call():
        with np.errstate(divide="call", call=boom):      # the thread's own errstate
            return np.divide(1.0, A)

    got = within(call)
    every = comm.allgather(got)
    collective_assert(all(e == ("exc", "KeyError: 'divide by zero'") for e in every),
                      f"{every}")


# ------------------------------------------------------------------ U3
class _Log:
    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.append(text)


def test_log_mode_writes_once_on_every_rank():
    g = _zero_on_last()
    A = dap.DistArray.from_global(g, comm=comm)
    want, got = _Log(), _Log()
    with np.errstate(all="log", call=want):
        np.divide(1.0, g)
    with np.errstate(all="log", call=got):
        np.divide(1.0, A)
    collective_assert(got.lines == want.lines == ["Warning: divide by zero encountered in "
                                                  "divide\n"], f"{got.lines} {want.lines}")


def test_log_mode_without_object_raises_numpys_error_on_every_rank():
    g = _zero_on_last()
    A = dap.DistArray.from_global(g, comm=comm)
    with np.errstate(divide="log"):
        with pytest.raises(NameError) as info:
            np.divide(1.0, g)

    def call():
        with np.errstate(divide="log"):                  # the thread's own errstate
            return np.divide(1.0, A)

    got = within(call)
    every = comm.allgather(got)
    collective_assert(all(e == ("exc", f"NameError: {info.value}") for e in every),
                      f"{every}")


# ------------------------------------------------------------------ U4
@pytest.mark.parametrize("kind", ["str-bytes", "float-str"])
def test_equality_without_a_loop_is_ndarrays_answer(kind):
    if kind == "str-bytes":
        g, other = np.array(["a", "bb", "c"] * N), b"a"
    else:
        g, other = np.arange(3.0 * N), "x"
    A = dap.DistArray.from_global(g, comm=comm)
    for op in (lambda x: x == other, lambda x: x != other):
        want = op(g)
        got = outcome(lambda: op(A))
        collective_assert(got == ("ok", (want.dtype.str, want.tobytes())), f"{got}")
