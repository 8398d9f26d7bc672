"""Review 25: a Ctrl-C during a first (traced) ``nclx.evaluate`` /
``@nclx.fuse`` call, and builtins in a fused function's key.

- An interrupt inside np.errstate's ``__enter__``/``__exit__`` around a
  trace left the trace's errstate (``call`` with nclx's recorder, or all
  ``ignore``) as the caller's: every later NumPy warning was dropped.
- An interrupt just after the trace set its watcher as the thread's
  profiler, or as it began restoring, left the watcher set: every later
  ``@fuse`` call ran unfused ("a profiler is set").
- An interrupt right after the trace muted the ledger left the thread
  muted: later ``nclx.ledger.recording()`` blocks recorded nothing.
- A name a fused function reads from the builtins (``abs``) was not keyed:
  after ``builtins.abs`` was patched the old plan was served.

The interrupts are injected where the storm found them (a profile or trace
function raising KeyboardInterrupt at that moment), in fresh interpreters.
"""
import builtins
import textwrap

import numpy as np

import nclx
from conftest import run_script


def _run(code):
    proc = run_script(textwrap.dedent(code), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split("\n")


def test_an_interrupt_inside_the_traces_errstate_leaves_the_callers():
    out = _run("""
        import sys, warnings, numpy as np, nclx
        a = np.zeros(100_000)
        before = (np.geterr(), np.geterrcall())
        hits = 0
        for where in ("__enter__", "__exit__"):
            def prof(frame, event, arg):
                global hits
                if (event == "return" and frame.f_code.co_name == where
                        and "_ufunc_config" in frame.f_code.co_filename
                        and np.geterrcall() is not None):
                    hits += 1
                    raise KeyboardInterrupt
            sys.setprofile(prof)
            try:
                nclx.evaluate("a * 2 + 1" if where == "__enter__" else "a * 3 + 1")
            except KeyboardInterrupt:
                pass
            finally:
                sys.setprofile(None)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            np.log(a)
        print(hits > 0, (np.geterr(), np.geterrcall()) == before, len(w))
    """)
    assert out[0] == "True True 1", out


def test_an_interrupt_as_the_watcher_is_set_or_restored_leaves_no_profiler():
    out = _run("""
        import sys, types, numpy as np, nclx
        from nclx import _trace
        _tracewatch = sys.modules[_trace._Watch.__module__]     # where _Watch reads sys
        real = sys
        state = {"arm": None, "hits": 0}

        def setprofile(fn):
            real.setprofile(fn)
            if isinstance(fn, types.MethodType) and isinstance(fn.__self__, _tracewatch._Watch):
                if state["arm"] == "enter":
                    state["arm"] = None
                    state["hits"] += 1
                    raise KeyboardInterrupt          # as setprofile returns
                if state["arm"] == "exit":
                    state["arm"] = "exit-now"

        def getprofile():
            if state["arm"] == "exit-now":            # the first read in __exit__
                state["arm"] = None
                state["hits"] += 1
                raise KeyboardInterrupt
            return real.getprofile()

        _tracewatch.sys = types.SimpleNamespace(
            setprofile=setprofile, getprofile=getprofile, gettrace=real.gettrace,
            monitoring=getattr(real, "monitoring", None))
        a = np.arange(50_000.0)         # above fuse_threshold()
        for k, arm in enumerate(("enter", "exit")):
            state["arm"] = arm
            ns = {}
            exec(f"def f(x):\\n    return x * {k + 2} + 1\\n", {}, ns)
            try:
                nclx.fuse(ns["f"])(a)
            except KeyboardInterrupt:
                pass
        _tracewatch.sys = real
        g = nclx.fuse(lambda x: x * 5 + 2)
        print(state["hits"], sys.getprofile() is None, g.explain(a))
    """)
    assert out[0] == "2 True fused", out


def test_an_interrupt_right_after_the_ledger_is_muted_leaves_it_counting():
    out = _run("""
        import sys, numpy as np, nclx, nclx._trace as T
        a = np.ones(100_000)
        src = open(T.__file__).read().splitlines()
        MUTE = next(i + 1 for i, s in enumerate(src) if "_cledger.mute(1)" in s)
        hits = []
        def tracer(frame, event, arg):
            if frame.f_code.co_filename == T.__file__ and frame.f_code.co_name == "trace":
                def local(frame, event, arg):
                    if event == "line" and frame.f_lineno > MUTE and not hits:
                        hits.append(frame.f_lineno)
                        raise KeyboardInterrupt
                    return local
                return local
        sys.settrace(tracer)
        try:
            nclx.evaluate("a * 3 + 1")
        except KeyboardInterrupt:
            pass
        sys.settrace(None)
        with nclx.ledger.recording() as L:
            np.add(a, a)
            np.multiply(a, a)
        print(len(hits), sorted(r.op for r in L.records()))
    """)
    assert out[0] == "1 ['add', 'multiply']", out


def test_a_patched_builtin_traces_again():
    a = np.linspace(-1, 1, 50_000)         # above fuse_threshold()

    @nclx.fuse
    def f(x):
        return abs(x) + 1

    assert f(a).tobytes() == (np.abs(a) + 1).tobytes()
    assert f.explain(a) == "fused"
    real = builtins.abs
    builtins.abs = lambda x: x * 0
    try:
        assert f(a).tobytes() == (a * 0 + 1).tobytes()
    finally:
        builtins.abs = real
    assert f(a).tobytes() == (np.abs(a) + 1).tobytes()


def test_context_variables_the_traced_function_sets_are_kept():
    """Review 25b: with the traces in a copy of the caller's context, a
    fused function's ContextVar.set and decimal.setcontext never happened;
    they are set in the caller's context once the traces return, as the
    traces' other side effects happen (docs/fused.md)."""
    out = _run("""
        import contextvars, decimal, numpy as np, nclx
        cv = contextvars.ContextVar("cv", default=0)
        a = np.arange(1.0, 40001.0)
        @nclx.fuse
        def f(x):
            cv.set(cv.get() + 1)
            decimal.setcontext(decimal.Context(prec=7))
            return x * 2 + 1
        r = f(a)
        print(cv.get(), decimal.getcontext().prec, f.explain(a),
              r.tobytes() == (a * 2 + 1).tobytes())
    """)
    assert out[0] == "3 7 fused True", out


def test_recorded_flags_keeps_the_steps_context_variables():
    import contextvars
    from nclx._fpflags import recorded_flags
    cv = contextvars.ContextVar("cv25", default=0)

    def step():
        cv.set(5)
        return np.array([1.0]) / np.array([0.0])

    before = np.geterr()
    result, flags = recorded_flags(step)
    assert cv.get() == 5 and flags != 0 and np.isinf(result[0])
    assert np.geterr() == before
