"""Review 16 of nclx.evaluate and @nclx.fuse: profilers, tracers and fork
(the rest: test_fused_review16.py).  Failed on the code before the fixes:
a function setting a profile function lost it to the trace's watcher, and
a profiler or tracer set before the call did not see a fused function's
calls; a fork while another thread measured NumPy's temporary elision left
the child's first trace waiting for good.  Guards of what held: evaluate
under a profiler, fork() after threaded evaluation."""
import os
import sys
import types

import numpy as np
import pytest
from conftest import run_script

import nclx

N = 100_000
A = np.linspace(-1.0, 1.0, N)
B = np.linspace(2.0, 3.0, N)


# -- 1. profilers and tracers -------------------------------------------------

@pytest.fixture
def profiler():
    """A profile function recording (event, code name); unset afterwards."""
    seen = []

    def prof(frame, event, arg):
        seen.append((event, frame.f_code.co_name))
    prof.seen = seen
    yield prof
    sys.setprofile(None)


def _sets_profile(prof):
    def f(x):
        sys.setprofile(prof)
        return x * 2.0 + 1.0
    return f


def test_a_function_that_sets_a_profiler_leaves_it_set(profiler):
    f = nclx.fuse(_sets_profile(profiler))
    assert "setprofile" in f.explain(A) and sys.getprofile() is None
    assert f(A).tobytes() == (A * 2.0 + 1.0).tobytes()
    assert sys.getprofile() is profiler              # before: None (the trace unset it)
    sys.setprofile(None)
    f(A)
    assert sys.getprofile() is profiler


def test_a_profiler_set_through_a_helper_is_restored_and_kept(profiler):
    """Code the scan does not follow (a module attribute's function): the
    trace finds the profile function changed, restores it, and the call runs
    eagerly, as every later one."""
    helper = types.ModuleType("nclx_review16_helper")
    exec("import sys\ndef start(p):\n    sys.setprofile(p)\n", helper.__dict__)

    def f(x):
        helper.start(profiler)
        return x * 3.0

    fused = nclx.fuse(f)
    assert fused(A).tobytes() == (A * 3.0).tobytes()
    assert sys.getprofile() is profiler              # before: None
    sys.setprofile(None)
    assert "sets a profile or trace function" in fused.explain(A)
    assert sys.getprofile() is None                  # explain's trace undid its own
    fused(A)
    assert sys.getprofile() is profiler


def test_a_profiler_set_before_sees_the_plain_calls(profiler):
    def h(x):
        return x * 2.0 - 1.0

    f = nclx.fuse(h)
    f(A)                                             # a plan kept
    assert f.explain(A) == "fused"
    sys.setprofile(profiler)
    try:
        got = f(A)
        seen = list(profiler.seen)
        why = f.explain(A)
    finally:
        sys.setprofile(None)
    assert got.tobytes() == h(A).tobytes()
    assert ("call", "h") in seen and ("return", "h") in seen      # before: not
    assert "profiler" in why
    assert f.explain(A) == "fused"


def test_a_tracer_set_before_sees_the_plain_calls():
    def h(x):
        return x * 2.0 - 1.0

    f = nclx.fuse(h)
    f(A)
    events = []

    def tracer(frame, event, arg):
        if frame.f_code is h.__code__:
            events.append(event)
        return tracer
    sys.settrace(tracer)
    try:
        got = f(A)
        after = sys.gettrace()
    finally:
        sys.settrace(None)
    assert got.tobytes() == h(A).tobytes()
    assert after is tracer
    assert events[0] == "call" and "line" in events and events[-1] == "return"


def test_evaluate_under_a_profiler_keeps_it(profiler):
    sys.setprofile(profiler)
    try:
        got = nclx.evaluate("a * 2.0 + b", {"a": A, "b": B}, {})
        after = sys.getprofile()
    finally:
        sys.setprofile(None)
    assert after is profiler
    assert got.tobytes() == (A * 2.0 + B).tobytes()


# -- 2. fork -----------------------------------------------------------------

_FORK = """
import faulthandler, os, threading
import numpy as np, nclx
A = np.linspace(-1.0, 1.0, 100_000)
stop = threading.Event()

def churn(k):
    j = 0
    while not stop.is_set():
        j += 1
        nclx.evaluate(f"a * {k}.{j} + a * a", {"a": A}, {})   # a new string: compile, trace
threads = [threading.Thread(target=churn, args=(k,), daemon=True) for k in range(2)]
for t in threads:
    t.start()
codes = []
for i in range(5):
    pid = os.fork()
    if pid == 0:                      # one thread here: none to wait for
        faulthandler.dump_traceback_later(10, exit=True)
        ok = False
        try:
            ok = nclx.evaluate("a * 3.0 + a * a", {"a": A}, {}).tobytes() == \
                (A * 3.0 + A * A).tobytes()
            f = nclx.fuse(lambda x: x * 2.0 + 1.0)
            ok = ok and f(A).tobytes() == (A * 2.0 + 1.0).tobytes()
            ok = ok and nclx.evaluate(f"a * 9.{i} + 1", {"a": A}, {}).shape == A.shape
        finally:
            os._exit(0 if ok else 3)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
stop.set()
print(codes)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork()")
def test_fork_after_threads_evaluated():
    """Children forked while two threads compile and trace new expressions
    evaluate and fuse (a child that hangs ends itself after 10 s)."""
    done = run_script(_FORK)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0, 0]"


_FORK_MEASURING = """
import faulthandler, os, threading
import numpy as np, nclx
from nclx import _elide
A = np.linspace(-1.0, 1.0, 100_000)
_elide._state.clear()                 # elision not measured yet in this process
inside, release = threading.Event(), threading.Event()
measure = _elide._measure_active

def slow():                           # the other thread is measuring at the fork
    if threading.current_thread() is other:
        inside.set()
        release.wait(30)
    return measure()
_elide._measure_active = slow
other = threading.Thread(target=_elide.active)
other.start()
inside.wait(10)
pid = os.fork()
if pid == 0:
    faulthandler.dump_traceback_later(10, exit=True)
    ok = False
    try:
        ok = nclx.evaluate("a * 2.0 + a * a", {"a": A}, {}).tobytes() == \\
            (A * 2.0 + A * A).tobytes()
    finally:
        os._exit(0 if ok else 3)
code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
release.set()
other.join()
print(code)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork()")
def test_fork_while_another_thread_measures_elision():
    """The first trace measures NumPy's temporary elision; it did so under
    a lock, which a fork while another thread measured left held in the
    child, whose first trace waited for good (found by the fork test above)."""
    done = run_script(_FORK_MEASURING)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "0", done.stderr[-2000:]

