"""Where fused steps report: a raising step's traceback marks the columns
eager NumPy's marks (the call or operator of the step), and every step of a
multi-line ``nclx.evaluate`` string reports at the calling line, fused or
eager (each failed before its fix: the marks were the columns of nclx's own
stub; the eager path put a string's second line on the file's next line)."""
import sys
import traceback
import warnings

import numpy as np
import pytest

import nclx

N = 100_000


def _log_step(a, b):
    return 2 * np.log(a) + b * b


def _divide_step(a, b):
    return a * 3.0 + b / a


def _last_entry(fn, *args):
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as info:
            fn(*args)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    return last.filename, last.lineno, last.name, last.line, last.colno, last.end_colno


@pytest.mark.parametrize("fn", [_log_step, _divide_step])
def test_a_raising_step_marks_eager_numpy_s_columns(fn):
    a, b = np.zeros(N), np.ones(N)
    f = nclx.fuse(fn)
    assert f.explain(a, b) == "fused"
    want = _last_entry(fn, a, b)
    assert want[4] is not None
    assert _last_entry(f, a, b) == want


def _raised(fn, *args):
    with np.errstate(divide="raise"):
        try:
            fn(*args)
        except FloatingPointError as exc:
            return type(exc), exc, exc.__traceback__
    raise AssertionError("no FloatingPointError")


@pytest.mark.parametrize("fn", [_log_step, _divide_step])
def test_the_traceback_shows_the_step_s_marks(fn):
    """The printed last entry (source line and the marks under it) is
    eager NumPy's."""
    a, b = np.zeros(N), np.ones(N)

    def tail(f):
        text = "".join(traceback.format_exception(*_raised(f, a, b)))
        return text[text.rindex('  File "'):]
    assert tail(nclx.fuse(fn)) == tail(fn)


def _located(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.filename, x.lineno, str(x.message)) for x in w]


@pytest.mark.parametrize("n", [10, N], ids=["eager", "fused"])
def test_a_multi_line_evaluate_string_reports_at_the_calling_line(n):
    a, z = np.ones(n), np.zeros(n)
    line = sys._getframe().f_lineno + 1
    got = _located(lambda: nclx.evaluate("(a * 2.0 +\n a / z)", {"a": a, "z": z}))
    assert got == [(__file__, line, "divide by zero encountered in divide")]


@pytest.mark.parametrize("n", [10, N], ids=["eager", "fused"])
def test_evaluate_raising_marks_no_columns_of_the_string(n):
    """The expression's columns are the string's, not the calling line's:
    the traceback shows the calling line without marks."""
    a, z = np.ones(n), np.zeros(n)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as info:
            nclx.evaluate("(a * 2.0 +\n a / z)", {"a": a, "z": z})
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (__file__, sys._getframe().f_lineno - 2)
    assert last.colno is None and last.end_colno is None
