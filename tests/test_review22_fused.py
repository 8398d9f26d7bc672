"""Review 22 of nclx.evaluate (each test failed on the code before its fix):

- D1: ``Expression.function`` built its OverflowError function (an
  expression with ``*``, ``**`` or ``<<`` whose Python integers would pass
  INT_BITS) under a plain ``threading.Lock``: (a) another thread inside
  that critical section at ``os.fork()`` left the child's evaluate of the
  same string hanging for good; (b) a signal handler evaluating the same
  string while the main thread was inside it deadlocked.  The cache insert
  is idempotent, so there is no lock now.
- D2: within 9-11 frames of the recursion limit that function's tree was
  parsed again on the caller's stack: ``a * (k ** 200000)`` with ``k=2**40``
  raised SyntaxError ("nested too deeply") or RecursionError instead of
  the documented OverflowError, while plain expressions at that depth
  ran.  The parse and compile now fall back to a helper thread's fresh
  stack, as compiling the string does.
- D3 (the cross-feature review): the first fused float sum or product in a
  process measured NumPy's chunking with about 450 calls of its own, which
  a recording ledger counted as the user's; they are muted now.
"""
import numpy as np
import pytest
from conftest import run_script

import nclx
from test_fused_review16 import _room, _with_room  # noqa: F401 - the recursion-limit helpers

A = np.ones(10)
K = 2 ** 40

# the OverflowError function's construction slowed down, so that a fork or a
# signal lands inside it deterministically
SLOW_VARIANT = """
import faulthandler, os, signal, sys, threading, time
import numpy as np, nclx
from nclx import _expr
a = np.ones(10); K = 2**40; EX = "a * (k ** 200000)"
inside = threading.Event()
_variant = _expr.Expression._variant
def slow_variant(self, index, message):
    inside.set()
    SLOW()
    return _variant(self, index, message)
_expr.Expression._variant = slow_variant

def overflows():
    try:
        nclx.evaluate(EX, local_dict={"a": a, "k": K})
    except OverflowError as exc:
        return "would be a Python integer" in str(exc)
    return False
"""


def test_d1a_fork_while_another_thread_builds_the_overflow_function():
    proc = run_script(SLOW_VARIANT + """
SLOW = lambda: time.sleep(0.5)
t = threading.Thread(target=overflows)
t.start()
inside.wait()
pid = os.fork()
if pid == 0:
    faulthandler.dump_traceback_later(10, exit=True)   # a hang: exit code 1
    SLOW = lambda: None
    os._exit(0 if overflows() else 3)
code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
t.join()
print(code, overflows())
""", timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0 True", proc.stderr[-3000:]


def test_d1b_a_signal_handler_evaluates_the_string_the_main_thread_is_building():
    proc = run_script(SLOW_VARIANT + """
faulthandler.dump_traceback_later(20, exit=True)        # a deadlock: exit code 1
got, raised = [], []
signal.signal(signal.SIGUSR1, lambda sig, frame: got.append(overflows()))
def SLOW():
    if not raised:
        raised.append(1)
        signal.raise_signal(signal.SIGUSR1)             # the handler runs in here
print(overflows(), got)
""", timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "True [True]", proc.stderr[-3000:]


def test_d1_the_expression_has_no_lock_to_inherit():
    e = nclx._expr.compile_expression("a * (k ** 200000) + 0.5")
    assert not any(type(v).__name__ in ("lock", "RLock") for v in vars(e).values())
    with pytest.raises(OverflowError, match="k \\*\\* 2000"):
        nclx.evaluate("a * (k ** 200000) + 0.5", {"a": A, "k": K}, {})


def _balanced(leaves):
    """``(a + a) + (a + a) ...`` of ``leaves`` (a power of 2) terms, shallow."""
    terms = ["a"] * leaves
    while len(terms) > 1:
        terms = [f"({x} + {y})" for x, y in zip(terms[::2], terms[1::2])]
    return terms[0]


@pytest.mark.parametrize("k", range(9, 17))
@pytest.mark.parametrize("compiled_here", [False, True])
def test_d2_overflow_near_the_recursion_limit(k, compiled_here):
    """The documented OverflowError at any margin, the string compiled far
    from the limit (only the raising function built near it) or near it;
    plain expressions there run as before."""
    ex = f"a * (k ** 200000) * {k}.5 + {int(compiled_here)}"   # strings of their own
    if not compiled_here:
        nclx._expr.compile_expression(ex)
    for _ in range(2):                                     # built, then cached
        with pytest.raises(OverflowError, match=r"'k \*\* 200000' would be a Python integer"):
            _with_room(k, lambda: nclx.evaluate(ex, {"a": A, "k": K}, {}))
    plain = f"a * (k ** 2) + {k}.25 + {int(compiled_here)}"
    got = _with_room(k, lambda: nclx.evaluate(plain, {"a": A, "k": 3}, {}))
    assert got.tobytes() == (A * 9 + (k + 0.25 + int(compiled_here))).tobytes()


@pytest.mark.parametrize("k", [9, 12, 16])
def test_d2_a_large_expression_parsed_again_near_the_limit(k):
    """An expression of more nodes than are kept (its string parsed again to
    look at a call's Python integers) near the limit."""
    ex = f"{_balanced(4096)} + a * (k ** 200000) * {k}"
    assert nclx._expr.compile_expression(ex)._order is None        # not kept
    with pytest.raises(OverflowError, match=r"'k \*\* 200000' would be a Python integer"):
        _with_room(k, lambda: nclx.evaluate(ex, {"a": A, "k": K}, {}))
    got = _with_room(k, lambda: nclx.evaluate(ex, {"a": A, "k": 1}, {}))
    assert got.tobytes() == (A * 4096 + A * k).tobytes()


def test_d3_the_first_fused_float_sum_adds_no_calibration_rows_to_a_ledger():
    # (cross-feature review 22) the first fused float reduction in a process
    # measured NumPy's chunking with about 450 add.reduce calls of its own,
    # which a recording ledger counted as the user's
    proc = run_script("""
        import numpy as np, nclx, nclx.ledger
        a = np.arange(40000.0); b = a[::-1].copy()
        for i in range(2):
            with nclx.ledger.recording() as led:
                s = nclx.evaluate("sum(a*b)")
            rows = [(r.op, r.kind, r.dtypes[0], r.elements, r.calls) for r in led.records()
                    if r.op != "copy"]
            print(i, s == np.sum(a * b), sorted(rows))
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("0 True "), proc.stdout
    assert lines[0][2:] == lines[1][2:], proc.stdout      # the first call's rows: the second's
    assert "float32" not in proc.stdout and "('multiply', 'elementwise'" in proc.stdout
