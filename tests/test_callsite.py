"""Warnings of ufuncs on nclx's array types name the line that wrote the
operation, as NumPy's do for an ndarray (nclx._callsite).

Before, the ``__array_ufunc__`` of storages, NclxArray and DistArray ran the
ufunc from nclx/aware.py: every RuntimeWarning named that line, and the
"default" action (once per text and location) showed the first one only,
whichever line of the user's met it later.
"""
import sys
import warnings

import numpy as np
import pytest

import nclx
from nclx import storage
from nclx.dap import DistArray
from nclx.hooks import NclxArray


def _kinds():
    return {
        "ndarray": lambda: np.ones(4),
        "NclxArray": lambda: np.ones(4).view(NclxArray),
        "storage": lambda: storage.ones((4,), dtype=np.float64),
        "DistArray": lambda: DistArray.from_global(np.ones(4)),
    }


KINDS = sorted(_kinds())


def _records(make):
    x = make()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("default")
        first = sys._getframe().f_lineno + 1
        x / 0
        x / 0
        x * 1e308 * 10
        np.add.reduce(x * 1e308)
    return [(r.filename, r.lineno - first, str(r.message)) for r in w]


@pytest.mark.parametrize("kind", KINDS)
def test_each_line_warns_at_its_line(kind):
    got = _records(_kinds()[kind])
    assert got == [(__file__, 0, "divide by zero encountered in divide"),
                   (__file__, 1, "divide by zero encountered in divide"),
                   (__file__, 2, "overflow encountered in multiply"),
                   (__file__, 3, "overflow encountered in reduce")], got


@pytest.mark.parametrize("kind", KINDS)
def test_module_filter_matches_the_callers_module(kind):
    x = _kinds()[kind]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", category=RuntimeWarning, module=__name__)
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide"):
            x / 0


@pytest.mark.parametrize("kind", KINDS)
def test_raise_mode_and_results_unchanged(kind):
    x = _kinds()[kind]()
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
            x / 0
    with np.errstate(all="ignore"):
        r = np.asarray(x * 3 if kind != "DistArray" else (x * 3).gather())
    assert r.tobytes() == np.full(4, 3.0).tobytes()


def test_warn_names_first_frame_outside_nclx():
    from nclx import _callsite
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        _callsite.warn("hello", UserWarning)
    assert [(r.filename, r.lineno) for r in w] == [(__file__, line)]


def test_call_runs_from_the_caller_with_no_frame_outside():
    from nclx import _callsite
    assert _callsite.call(np.add, (1, 2), {}) == 3
    assert _callsite.call(lambda *a, **k: (a, k), (1,), {"b": 2}) == ((1,), {"b": 2})


# -- review 23b: the stub frame stays out of sight --------------------------------

@pytest.mark.parametrize("kind", [k for k in KINDS if k != "ndarray"])
def test_a_raising_call_lists_the_callers_line_once(kind):
    import traceback
    x = _kinds()[kind]()
    with np.errstate(divide="raise"):
        try:
            x / 0
        except FloatingPointError:
            text = traceback.format_exc()
    assert text.count(f'File "{__file__}"') == 1, text
    assert text.count("x / 0") == 1, text


def test_a_breakpoint_on_the_line_stops_once(tmp_path):
    import subprocess
    script = tmp_path / "user.py"
    script.write_text("import numpy as np\nfrom nclx.hooks import NclxArray\n"
                      "x = np.ones(4).view(NclxArray)\ny = x * 2\nprint('done', y.sum())\n")
    cmds = f"b {script}:4\nc\nc\nq\n"   # (a finished program restarts: no third c)
    out = subprocess.run([sys.executable, "-m", "pdb", str(script)], input=cmds,
                         capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    stops = out.stdout.count(f"{script.name}(4)<module>()")
    assert stops == 1, out.stdout[-3000:]
    assert "done 8.0" in out.stdout


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["dot", "inner", "norm"])
def test_linear_algebra_warnings_name_the_callers_line(kind, name):
    """np.dot/np.inner of NclxArray and storages named nclx/aware.py, a
    DistArray's nclx/dap/functions/linalg.py; np.linalg.norm of a DistArray
    gave no warning where NumPy says "overflow encountered in dot"."""
    make = _kinds()[kind]
    x = make() * 1e308 if kind != "ndarray" else np.full(4, 1e308)
    fn = {"dot": lambda v: np.dot(v, v), "inner": lambda v: np.inner(v, v),
          "norm": np.linalg.norm}[name]
    with warnings.catch_warnings(record=True) as ref:
        warnings.simplefilter("always")
        fn(np.full(4, 1e308))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(x)
    assert [str(r.message) for r in w] == [str(r.message) for r in ref]
    if name != "norm":              # (NumPy's own norm names its _linalg.py)
        # the lambda's line, as for the ndarray
        assert [(r.filename, r.lineno) for r in w] == [(r.filename, r.lineno) for r in ref]
        assert all(r.filename == __file__ for r in w)


def test_storage_power_warns_at_the_callers_line():
    """Review 23c: ``x ** 2`` and ``x **= 2`` of a storage (ndarray's fast
    paths: square, sqrt, reciprocal) named nclx/storage/core.py."""
    x = storage.as_storage(np.array([1e308, 2.0]))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        first = sys._getframe().f_lineno + 1
        x ** 2
        x ** 3
        x **= 2
    assert [(r.filename, r.lineno - first) for r in w] == [(__file__, 0), (__file__, 1),
                                                          (__file__, 2)], \
        [(r.filename, r.lineno) for r in w]
