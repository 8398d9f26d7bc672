"""Shared helpers for the nclx ufunc tests: every result is compared with the
NumPy ufunc of the same name, bit for bit, warnings included.

- ``ISAS``: every kernel build this CPU can run; tests parametrize over it.
- ``nclx_ufunc(op, isa)``: the nclx ufunc of one ISA build.
- ``assert_same(expected, actual)``: same type, dtype, shape and bits (NaN
  equal to NaN whatever its payload, the sign of zero checked).
- ``compare_call(op, *args, isa=..., **kw)``: call NumPy's and nclx's ufunc
  (or one of their methods) under ``np.errstate(all='warn')`` with warnings
  recorded; compare exceptions, results and warnings.
- ``installed_clean`` fixture: an empty hook registry and nclx installed,
  both undone afterwards (``pytestmark = pytest.mark.usefixtures(...)``).
- ``threaded_clean`` fixture: two threads, every op split above ``SPLIT``
  elements, an empty hook registry; afterwards nclx uninstalled and thread
  count, thresholds and hooks restored.  ``BIG`` is above ``SPLIT``.
- ``stock_and_installed(fn)``, ``run_script(code)``: stock vs installed
  results and warnings; a Python snippet in a fresh interpreter.
- Hypothesis profiles: ``ci`` (default, used by tools/test) and ``dev``.
"""
import faulthandler
import os
import re
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings

from nclx._ncl import spec
from nclx._ncl.ufuncs import available_isas, ufuncs_for

# --------------------------------------------------------------- hypothesis
# 'ci' (the default, and what tools/test selects): a moderate, reproducible
# search (derandomized: the same examples on every run) without the shrink
# phase, so a genuine mismatch fails fast and the suite stays within a few
# minutes on two cores; compare_call's message already names operands,
# layout and both results.  'dev': a wider random search that also shrinks
# failures to minimal examples.  Select with HYPOTHESIS_PROFILE=dev.
_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "ci", max_examples=12, derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target], **_COMMON)
settings.register_profile("dev", max_examples=300, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# ------------------------------------------------------------------ tables
#: Every kernel build this CPU can run (e.g. ('avx2', 'baseline')).
ISAS = tuple(available_isas())

#: Ops with nclx kernels and a NumPy twin (the kernel tests run over these;
#: the ops served by NumPy's own loops and nclx's own ops are tested in
#: test_elementwise.py).
OPS = tuple(op for op in spec.OPS if op not in spec.NUMPY_LOOPS and op not in spec.NCLX_ONLY)
BINARY_OPS = tuple(op for op in OPS if spec.OPS[op][1] == 2)
UNARY_OPS = tuple(op for op in OPS if spec.OPS[op][1] == 1)
COMPARE_OPS = tuple(op for op in OPS if spec.OPS[op][0] == "compare")

#: The fixed-width dtypes of nclx.
DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float32", "float64")
#: NumPy type characters served by nclx; 'l'/'q' and 'L'/'Q' are distinct
#: NumPy dtypes sharing one 64-bit kernel.
DTYPE_CHARS = "?bBhHiIlLqQfd"
#: What the dtype-parametrized tests run over: the fixed-width names (whose
#: int64/uint64 are NumPy's 'l'/'L') plus the other 64-bit characters 'q'/'Q'.
TEST_DTYPES = DTYPE_NAMES + ("q", "Q")

SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
FLOATS = ("float32", "float64")

#: Inputs for which NumPy picks a float16 loop that nclx does not have: nclx
#: computes them in float32 (the documented difference).
FLOAT16_IN_NUMPY = {"sqrt": ("bool", "int8", "uint8")}


def dtype_id(dt):
    """Test id of a dtype: 'int64_l' and 'int64_q' tell the two 64-bit chars apart."""
    dt = np.dtype(dt)
    return dt.name + ("_" + dt.char if dt.char in "lLqQ" else "")


def nclx_ufunc(op, isa):
    """The nclx ufunc ``op`` of the kernel build ``isa``."""
    return ufuncs_for(isa)[op]


@pytest.fixture
def installed_clean():
    """An empty hook registry and nclx installed; both undone afterwards."""
    import nclx
    import nclx.hooks
    nclx.hooks.reset()
    nclx.install()
    yield
    nclx.uninstall()
    nclx.hooks.reset()


#: The split threshold ``threaded_clean`` sets for every op (whatever the
#: shipped table says), and a size above it.
SPLIT = 65_536
BIG = SPLIT * 2 + 13        # above it: split across the two threads


@pytest.fixture
def threaded_clean():
    """Two threads, every op split above ``SPLIT`` elements, an empty hook
    registry; afterwards nclx uninstalled, hooks and thresholds reset and the
    thread count restored (the review regression tests run under it)."""
    import nclx
    import nclx.hooks
    threads = nclx.get_num_threads()
    nclx.set_num_threads(2)
    nclx.set_threshold(SPLIT)
    nclx.hooks.reset()
    yield
    nclx.uninstall()
    nclx.hooks.reset()
    nclx.reset_thresholds()
    nclx.set_num_threads(threads)


@pytest.fixture(params=ISAS)
def isa(request):
    """Every available kernel build in turn."""
    return request.param


def numpy_reference_args(op, args):
    """The inputs NumPy must see to compute what nclx computes.

    Only ops/dtypes where NumPy uses a float16 loop are changed: they are
    cast to float32 (nclx has no float16 loops, documented).
    """
    sub = FLOAT16_IN_NUMPY.get(op)
    if not sub:
        return args
    out = []
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)) and np.dtype(a.dtype).name in sub:
            a = a.astype(np.float32)
        elif isinstance(a, bool) and "bool" in sub:  # a Python bool is a bool operand
            a = np.float32(a)
        out.append(a)
    return tuple(out)


# --------------------------------------------------------------- comparing
def _describe(x):
    if isinstance(x, np.ndarray):
        with np.printoptions(threshold=16, edgeitems=3, linewidth=10**6):
            value = " ".join(repr(x).split())
        return (f"ndarray(dtype={x.dtype.str}/{x.dtype.char!r}, shape={x.shape}, "
                f"strides={x.strides}, aligned={x.flags.aligned}, value={value})")
    if isinstance(x, np.generic):
        return f"{type(x).__name__}({x!r})"
    return repr(x)


def _bits(a):
    """(uint view, nan mask or None) of a float/int/bool array."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "f":
        return a.view(f"u{a.dtype.itemsize}"), np.isnan(a)
    if a.dtype.kind == "b":
        return a.view(np.uint8), None
    return a, None


class _LazyMessage:
    """An assertion message formatted only when shown (array reprs are slow)."""

    def __init__(self, context, expected, actual):
        self.context, self.expected, self.actual = context, expected, actual

    def __str__(self):
        c = self.context() if callable(self.context) else self.context
        return f"\n  {c}\n  numpy: {_describe(self.expected)}\n  nclx:  {_describe(self.actual)}"

    def __radd__(self, other):
        return other + str(self)


def assert_same(expected, actual, context=""):
    """Assert that ``actual`` (nclx) is ``expected`` (NumPy) bit for bit.

    Checks the Python type (0-d array vs NumPy scalar vs tuple), dtype
    (including the type character: 'l' vs 'q'), shape and the bits of every
    element; a float NaN equals any NaN, a zero's sign must match.
    """
    __tracebackhide__ = True
    msg = _LazyMessage(context, expected, actual)
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), msg
        for e, a in zip(expected, actual):
            assert_same(e, a, context)
        return
    assert type(actual) is type(expected), "type differs: " + msg
    if not isinstance(expected, (np.ndarray, np.generic)):
        assert actual == expected, msg
        return
    assert actual.dtype == expected.dtype, "dtype differs: " + msg
    assert actual.dtype.char == expected.dtype.char, "dtype char differs: " + msg
    assert np.shape(actual) == np.shape(expected), "shape differs: " + msg
    eb, enan = _bits(np.asarray(expected))
    ab, anan = _bits(np.asarray(actual))
    if enan is not None:
        assert np.array_equal(enan, anan), "NaN positions differ: " + msg
        keep = ~enan
        bad = np.flatnonzero((eb != ab) & keep)
    else:
        bad = np.flatnonzero(eb != ab)
    if bad.size:
        i = bad[0]
        ef = np.asarray(expected).reshape(-1)
        af = np.asarray(actual).reshape(-1)
        raise AssertionError(
            f"{bad.size} element(s) differ in bits; first at flat index {i}: "
            f"numpy {ef[i]!r} (bits {eb.reshape(-1)[i]:#x}) vs nclx {af[i]!r} "
            f"(bits {ab.reshape(-1)[i]:#x})" + str(msg))


def _normalise_warning(w, ufunc):
    """(category, message) with the trailing ufunc name replaced by '<ufunc>'."""
    text = str(w.message)
    name = getattr(ufunc, "__name__", None)
    if name:
        text = re.sub(rf"(encountered in ){re.escape(name)}$", r"\1<ufunc>", text)
    return (w.category, text)


def builtin_exception_type(exc):
    """The built-in exception class an exception is (TypeError, ValueError, ...).

    NumPy raises private subclasses of TypeError (``_UFuncNoLoopError``,
    ...) and which one depends on its dispatch cache, i.e. on what ran
    before; the built-in class is the stable, public part of its behaviour.
    """
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return type(exc)


def run_recorded(func, *args, **kw):
    """Run ``func`` under errstate(all='warn') recording every warning.

    Returns (result or None, exception or None, raw warnings list).
    """
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            try:
                result, exc = func(*args, **kw), None
            except Exception as e:  # noqa: BLE001 - compared with NumPy's
                result, exc = None, e
    return result, exc, list(rec)


def warning_set(rec, ufunc):
    return {_normalise_warning(w, ufunc) for w in rec}


def _fresh(kw):
    """Resolve ``out=`` factories so each side writes its own buffer."""
    kw = dict(kw)
    out = kw.get("out")
    if callable(out):
        kw["out"] = out()
    elif isinstance(out, tuple) and any(callable(o) for o in out):
        kw["out"] = tuple(o() if callable(o) else o for o in out)
    return kw


def _outs(kw):
    if "out" not in kw or kw["out"] is None:
        return ()
    return kw["out"] if isinstance(kw["out"], tuple) else (kw["out"],)


def compare_factory(opname, factory, isa=None, method=None, np_factory=None):
    """Compare NumPy and nclx on arguments built afresh for each side.

    ``factory()`` returns ``(args, kw, watched)``: positional and keyword
    arguments and a tuple of arrays to compare after the call (an ``out``
    that is also an input, for in-place operations).  ``np_factory``, if
    given, builds NumPy's side instead.  Compared as in :func:`compare_call`.
    Returns the nclx result (or the exception both raised).
    """
    __tracebackhide__ = True
    isa = isa or ISAS[0]
    npf = getattr(np, opname)
    nxf = nclx_ufunc(opname, isa)
    npf_call = getattr(npf, method) if method else npf
    nxf_call = getattr(nxf, method) if method else nxf
    args_np, kw_np, watch_np = (np_factory or factory)()
    args_nx, kw_nx, watch_nx = factory()
    exp, exp_exc, exp_w = run_recorded(npf_call, *args_np, **kw_np)
    got, got_exc, got_w = run_recorded(nxf_call, *args_nx, **kw_nx)
    def ctx():
        return (f"op={opname} isa={isa} method={method} "
                f"args={[_describe(a) for a in args_nx]} "
                f"kw={ {k: (_describe(v) if k != 'out' else '...') for k, v in kw_nx.items()} }")

    if exp_exc is not None:
        assert got_exc is not None, (
            f"NumPy raised {exp_exc!r}, nclx did not\n  {ctx()}\n  nclx: {_describe(got)}")
        assert builtin_exception_type(got_exc) is builtin_exception_type(exp_exc), (
            f"NumPy raised {exp_exc!r}, nclx {got_exc!r}\n  {ctx()}")
        return got_exc
    assert got_exc is None, f"nclx raised {got_exc!r}, NumPy returned {_describe(exp)}\n  {ctx()}"
    assert_same(exp, got, ctx)
    for o_np, o_nx in zip(_outs(kw_np) + tuple(watch_np), _outs(kw_nx) + tuple(watch_nx)):
        assert_same(o_np, o_nx, lambda: ctx() + " (out/in-place array)")
    ew, gw = warning_set(exp_w, npf), warning_set(got_w, nxf)
    assert ew == gw, (f"warnings differ\n  numpy: {sorted((c.__name__, m) for c, m in ew)}\n"
                      f"  nclx:  {sorted((c.__name__, m) for c, m in gw)}\n  {ctx()}")
    return got


def compare_call(opname, *args, isa=None, method=None, np_args=None, **kw):
    """Call NumPy's and nclx's ufunc ``opname`` and compare everything.

    ``method`` is None for a plain call or 'reduce', 'accumulate',
    'reduceat', 'outer'.  ``out=`` may be a zero-argument callable returning
    a fresh output array (called once per side).  ``np_args`` replaces the
    positional arguments on the NumPy side only (for the float16
    difference).  Returns the nclx result.

    Compared: the exception type (when NumPy raises), else the result
    (assert_same), the ``out`` arrays, and the set of warnings (category,
    message with the ufunc's own name normalised).
    """
    __tracebackhide__ = True
    def factory():
        return args, _fresh(kw), ()

    np_factory = None
    if np_args is not None:
        def np_factory():
            return np_args, _fresh(kw), ()
    return compare_factory(opname, factory, isa=isa, method=method, np_factory=np_factory)


# ------------------------------------------------------------- test values
def extreme_values(dt):
    """Edge values of a dtype: limits, zeros, ones, NaN/inf, subnormals."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([False, True], dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = {info.min, info.max, 0, 1, 2, 3, 7, info.max - 1, info.max // 2, info.max // 2 + 1}
        if dt.kind == "i":
            vals |= {-1, -2, -3, -7, info.min + 1, info.min // 2}
        return np.array(sorted(vals), dt)
    info = np.finfo(dt)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 7.0, -7.0, 1.5, -2.5,
            np.nan, -np.nan, np.inf, -np.inf, float(info.max), -float(info.max),
            float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
            -float(info.smallest_subnormal), float(info.eps), 1e30 if dt.itemsize == 4 else 1e300,
            3.0000001 if dt.itemsize == 4 else 0.1]
    return np.array(vals, dt)


def sample_array(dt, n, seed=0):
    """``n`` values of dtype ``dt``: every extreme value plus random ones."""
    dt = np.dtype(dt)
    rng = np.random.default_rng(seed)
    ext = extreme_values(dt)
    if dt.kind == "b":
        rand = rng.integers(0, 2, n).astype(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        small = rng.integers(-9 if dt.kind == "i" else 0, 10, n)
        big = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        rand = np.where(rng.random(n) < 0.5, small.astype(dt), big)
    else:
        rand = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt)
    out = rand.copy()
    take = min(n, ext.size)
    pos = rng.permutation(n)[:take]
    out[pos] = rng.permutation(ext)[:take]
    return out


class Mismatches:
    """Collect the failures of many comparisons and report them all at once.

    >>> m = Mismatches()
    >>> m.check("label", compare_call, "add", a, b, isa=isa)
    >>> m.assert_none()
    """

    def __init__(self):
        self.problems = []

    def check(self, label, func, *args, **kw):
        __tracebackhide__ = True
        try:
            return func(*args, **kw)
        except AssertionError as e:
            lines = str(e).splitlines()
            self.problems.append(f"{label}: {lines[0]} {' | '.join(l.strip() for l in lines[1:4])}")
            return None

    def assert_none(self, limit=25):
        __tracebackhide__ = True
        if self.problems:
            raise AssertionError(f"{len(self.problems)} mismatch(es) with NumPy:\n"
                                 + "\n".join(self.problems[:limit]))


# tests/mpi/ runs only under mpiexec (tests/test_mpi_suite.py starts it with
# 4 ranks); a plain single-process run does not collect it.
if not (os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE")):
    collect_ignore_glob = ["mpi/*"]


def stock_and_installed(fn):
    """``fn()`` on stock NumPy, then with nclx installed (threaded as
    configured): (stock result, installed result, stock warnings, installed
    warnings), warnings as sorted message lists."""
    import nclx
    with warnings.catch_warnings(record=True) as w0, np.errstate(all="warn"):
        warnings.simplefilter("always")
        want = fn()
    with nclx.installed(), warnings.catch_warnings(record=True) as w1, np.errstate(all="warn"):
        warnings.simplefilter("always")
        got = fn()
    return want, got, sorted(str(w.message) for w in w0), sorted(str(w.message) for w in w1)


def run_script(code, timeout=120):
    """Run ``code`` (dedented) in a fresh Python from ``/``; the
    CompletedProcess (text stdout/stderr).  For crash- and hang-prone checks."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd="/")


# ------------------------------------------------------------ tests/mpi
#: a test in tests/mpi that runs longer than this has a rank stuck in a collective
MPI_HANG_GUARD_S = 60
_MPI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi")


@pytest.fixture(autouse=True)
def mpi_hang_guard(request):
    """Every test in tests/mpi runs under a hang guard and ends on all ranks
    together: a regression that leaves a rank waiting in a collective ends
    this process after MPI_HANG_GUARD_S seconds with every thread's
    traceback (mpiexec then ends the others) instead of hanging the suite,
    and a barrier after each test keeps a test that failed on one rank from
    leaving the others waiting in the next test's collectives.  (Here and
    not in tests/mpi/conftest.py: two conftest modules would shadow each
    other's ``from conftest import ...``.)"""
    if not str(request.node.path).startswith(_MPI_DIR + os.sep):
        yield
        return
    from mpi4py import MPI   # tests/mpi only: the other tests run without mpi4py
    comm = MPI.COMM_WORLD
    capman = request.config.pluginmanager.getplugin("capturemanager")

    def hung():
        try:
            if capman is not None:
                capman.suspend_global_capture(in_=True)
            sys.stderr.write(f"\nHANG GUARD: rank {comm.rank}/{comm.size} spent more than "
                             f"{MPI_HANG_GUARD_S} s in {request.node.nodeid} (a rank is waiting "
                             f"in a collective the others left)\n")
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            sys.stderr.flush()
        finally:
            os._exit(70)

    timer = threading.Timer(MPI_HANG_GUARD_S, hung)
    timer.daemon = True
    timer.start()
    try:
        yield
        comm.Barrier()          # every rank leaves the test; no rank is stuck
    finally:
        timer.cancel()
