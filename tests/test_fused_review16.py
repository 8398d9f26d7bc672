"""Review 16 of nclx.evaluate and @nclx.fuse (profilers, tracers and fork:
test_fused_review16_watch.py).  Failed on the code before the fixes: a
Python integer power or shift in an expression string (``2 ** 2**40``)
hung in Python's own arithmetic; near the recursion limit a fused call
raised RecursionError (or evaluate a SyntaxError) where the plain call ran,
and a trace that hit the limit was kept as a refusal; a deeply nested
tuple global raised RecursionError; error messages carried the whole
expression string and named constructs by their AST type alone.  Guards of
what held: results NumPy makes of Python integers, the parametrized cases
far from the limit."""
import json

import numpy as np
import pytest
from conftest import run_script

import nclx
from nclx import _expr

N = 100_000
A = np.linspace(-1.0, 1.0, N)
I64 = np.arange(N, dtype=np.int64)


def _outcome(thunk):
    try:
        r = thunk()
    except Exception as exc:                  # noqa: BLE001 -- compared with eager's
        return type(exc), str(exc)
    return type(r), np.asarray(r).dtype, np.shape(r), np.asarray(r).tobytes()


# -- 1. Python integers past any dtype ----------------------------------------

#: (expression, what the message quotes); every one hung before (minutes and
#: gigabytes in Python's long power or shift, holding the GIL)
_HUGE = [
    ("2 ** 2**40", "'2 ** 2**40'"),
    ("a * 2**2**40", "'2**2**40'"),
    ("sum(a) * 2**2**40", "'2**2**40'"),
    ("-2 ** 2 ** 40", "'2 ** 2 ** 40'"),
    ("1 << 2**40", "'1 << 2**40'"),
    ("True << 2**40", "'True << 2**40'"),
    ("(2**600000) * (2**600000)", "'(2**600000) * (2**600000)'"),
    ("2 ** n", "'2 ** n'"),                   # n: a Python int name
    ("a + 3 ** n", "'3 ** n'"),
    ("(k > 0) << 2**40", "'(k > 0) << 2**40'"),   # k: a Python float, True here
    ("2 ** 2 ** 2 ** 20", "'2 ** 2 ** 20'"),
]

_SCRIPT = """
import json, time
import numpy as np, nclx
env = {"a": np.linspace(-1.0, 1.0, 100_000), "n": 2**40, "k": 1.5}
out = {}
for ex in CASES:
    t = time.perf_counter()
    try:
        nclx.evaluate(ex, env, {})
        out[ex] = ["no error", None, time.perf_counter() - t]
    except Exception as exc:
        out[ex] = [type(exc).__name__, str(exc), time.perf_counter() - t]
print(json.dumps(out))
"""


def test_a_huge_python_integer_raises_overflow_error_at_once():
    """Run in a fresh Python (a hang there is a timeout here, not a hung
    test run)."""
    done = run_script(f"CASES = {[ex for ex, _ in _HUGE]!r}\n" + _SCRIPT, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for ex, quoted in _HUGE:
        kind, message, seconds = got[ex]
        assert kind == "OverflowError", (ex, kind, message)
        assert quoted in message and "would be a Python integer" in message, message
        assert "more than nclx.evaluate's limit of 1,048,576" in message
        assert seconds < 0.5, (ex, seconds)


def _eager(ex, env):
    functions = {k: v for k, v in _expr.FUNCTIONS.items()}
    return eval(ex, {"__builtins__": {}, **functions}, dict(env))


@pytest.mark.parametrize("ex", [
    "2**62 * a", "2**62 * i", "2**63 - 1", "2**-1", "(-2)**63", "(-2)**63 * i",
    "2**1000 * a", "2**1100 * a", "2**64 * i", "a + 3 ** m", "0 << 2**40", "1 ** 2**40",
    "(-1) ** 2**40 * a", "2 ** -(2**40)", "1/0 + 2**2**40", "10 ** 400 / 3", "(k < 0) << 2**40",
    "2**65535 // 2**65530 * a", "x ** 2**40", "i << 70",
])
def test_python_integers_numpy_takes_are_unchanged(ex):
    """Every result NumPy can make of the expression is NumPy's (errors too:
    NumPy's "int too large to convert to float", Python's ZeroDivisionError
    before the huge power is reached)."""
    env = {"a": A, "i": I64, "m": 100, "k": 1.5, "x": 1.0000001}
    with np.errstate(all="ignore"):
        want = _outcome(lambda: _eager(ex, env))
        got = _outcome(lambda: nclx.evaluate(ex, env, {}))
    assert got == want


_THREADS = """
import threading
import numpy as np, nclx
A, B = np.linspace(-1.0, 1.0, 100_000), np.linspace(2.0, 3.0, 100_000)
errors, barrier = [], threading.Barrier(4)

def work(k):
    barrier.wait()
    for r in range(40):
        n = 2**40 if (k + r) % 2 else 3
        try:
            got = nclx.evaluate("a * 2 ** n + b", {"a": A, "b": B, "n": n}, {})
        except OverflowError as exc:
            if n == 3 or "'2 ** n'" not in str(exc):
                errors.append((k, r, str(exc)))
            continue
        if n != 3 or got.tobytes() != (A * 2**3 + B).tobytes():
            errors.append((k, r, "bits"))
threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
print(sum(t.is_alive() for t in threads), errors)
"""


def test_threads_check_one_expression_for_values_that_overflow_and_not():
    """One expression, values that overflow and values that do not, on four
    threads at once (the function for a value is made under a lock)."""
    done = run_script(_THREADS, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "0 []"


# -- 2. near the recursion limit ----------------------------------------------

def _room():
    """How many more frames this frame can call before RecursionError."""
    n = 0

    def down():
        nonlocal n
        n += 1
        down()
    try:
        down()
    except RecursionError:
        pass
    return n


def _with_room(k, thunk):
    """``thunk()`` called where about ``k`` frames are left."""
    def descend(n):
        if n > 0:
            return descend(n - 1)
        return thunk()
    return descend(_room() - k)


def _plain(x):
    return x * 2.0 + 1.0


@pytest.mark.parametrize("k", [8, 10, 12, 14, 20, 30])
@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
def test_a_fused_call_near_the_recursion_limit_is_the_plain_call(k, warm):
    want = _plain(A).tobytes()
    assert _with_room(k, lambda: _plain(A)).tobytes() == want
    f = nclx.fuse(_plain)
    if warm:
        f(A)                                   # the plan traced and kept here
    assert _with_room(k, lambda: f(A)).tobytes() == want
    # no refusal kept: from here the call fuses (before, "tracing raised
    # RecursionError" was kept for the signature)
    assert f.explain(A) == "fused"
    assert not any(isinstance(v, str) for v in f.plans.items.values())


def _helper(x, n):
    return _helper(x, n - 1) if n else x * 3.0


def _deep(x):
    return _helper(x, 60)


def test_a_trace_that_hits_the_limit_in_the_function_is_not_kept():
    """The function's own recursion leaves the trace short of frames: the
    call is the plain one, and nothing is kept (before, "tracing raised
    RecursionError" was, for good).  The plain call the fused function
    makes is two frames deeper than a direct one (the gate's call and
    nclx's frame; Python 3.11 counts both)."""
    want = _deep(A).tobytes()
    fns = []
    for k in range(56, 100):
        f = nclx.fuse(_deep)
        fns.append(f)
        try:
            got = _with_room(k, lambda: f(A))
        except RecursionError:
            with pytest.raises(RecursionError):  # the plain call two frames deeper too
                _with_room(k - 2, lambda: _deep(A))
            continue
        assert got.tobytes() == want
    assert sum(f.explain(A) == "fused" for f in fns) == len(fns)


def test_a_deeply_nested_tuple_global_runs_eagerly():
    nested = (1.0,)
    for _ in range(3000):
        nested = (nested,)
    g = {"np": np, "T": nested}
    exec("def f(x):\n    return x * 2.0 if T else x\n", g)
    f = nclx.fuse(g["f"])
    assert f(A).tobytes() == (A * 2.0).tobytes()      # before: RecursionError
    assert "nested too deeply" in f.explain(A)


@pytest.mark.parametrize("k", [10, 12, 16, 24])
def test_evaluate_near_the_recursion_limit(k):
    """A new expression string near the limit compiled (before: SyntaxError
    "nested too deeply to check" for a 9-character string), and runs as
    the eager expression."""
    ex = f"a * 2.0 + {k}.25"                   # a string of its own: compiled here
    want = (A * 2.0 + (k + 0.25)).tobytes()
    assert _with_room(k, lambda: nclx.evaluate(ex, {"a": A}, {})).tobytes() == want
    assert _with_room(k, lambda: nclx.evaluate(ex, {"a": A}, {})).tobytes() == want


def test_nesting_up_to_the_documented_levels_compiles_from_any_depth():
    """Nesting is checked without recursion: MAX_NESTING levels evaluate,
    one more is a SyntaxError, wherever evaluate is called from (before,
    the limit depended on the caller's depth, and 490 levels raised under
    pytest)."""
    x = np.arange(N, dtype=np.int64)
    deep = "-" * (_expr.MAX_NESTING - 1) + "x"
    want = x if (_expr.MAX_NESTING - 1) % 2 == 0 else -x
    assert nclx.evaluate(deep, {"x": x}, {}).tobytes() == want.tobytes()
    with pytest.raises(SyntaxError, match="nested too deeply"):
        nclx.evaluate("-" + "-" * _expr.MAX_NESTING + "x", {"x": x}, {})
    # near the limit too (Python's parser and compiler then run on a thread)
    deep = deep[:-1] + "y"
    assert _with_room(30, lambda: nclx.evaluate(deep, {"y": x}, {})).tobytes() == \
        want.tobytes()
    with pytest.raises(SyntaxError, match="nested too deeply"):
        _with_room(30, lambda: nclx.evaluate("-" + deep, {"y": x}, {}))


# -- 3. messages --------------------------------------------------------------

@pytest.mark.parametrize("text, words", [
    ("a.T", "attribute access (Attribute)"),
    ("lambda: a", "a lambda (Lambda)"),
    ("f'{a}'", "an f-string (JoinedStr)"),
    ("(b := a)", "an assignment expression (:=) (NamedExpr)"),
    ("a if a else a", "a conditional expression (IfExp)"),
    ("[x for x in a]", "a comprehension (ListComp)"),
    ("a[0]", "subscripts (Subscript)"),
])
def test_an_unsupported_construct_is_named(text, words):
    with pytest.raises(SyntaxError) as info:
        nclx.evaluate(text, {"a": A}, {})
    assert words in str(info.value)


@pytest.mark.parametrize("text", ["a.T" + " " * 1_000_000, "'" + "x" * 1_000_000 + "'",
                                  "a + " * 300 + "a[0]"])
def test_a_long_expression_gives_a_short_message(text):
    with pytest.raises(SyntaxError) as info:
        nclx.evaluate(text, {"a": A}, {})
    assert len(str(info.value)) < 600                # before: the whole string


# -- review 23: integers past 64 bits but within the limit are computed ---------

@pytest.mark.parametrize("ex", [
    "ia < 2**70000", "ia == 2**70000", "ia < 1 << 70000", "ia + 2**70000 // 2**69990",
    "ia * (2**40000 * 2**40000 - 2**80000 + 1)", "ia < 3**60000", "ia > -(2**65536)",
    "ia < 2**1000000",
])
def test_large_python_integers_below_the_limit_are_computed_as_eagerly(ex):
    """``ia < 2**70000`` is all True in NumPy; nclx.evaluate raised
    OverflowError at 65,536 bits (and 3**60000, 95,098 bits, passed: the
    estimate was (bit_length - 1) * y)."""
    env = {"ia": np.arange(40_000) - 5}
    want = _outcome(lambda: _eager(ex, env))
    got = _outcome(lambda: nclx.evaluate(ex, env, {}))
    assert got == want, (ex, got[0])


def test_power_estimate_follows_log2_of_the_base():
    from nclx._intahead import INT_BITS, grows
    import ast
    assert grows(ast.Pow, 3, 661_000) == 0               # 1,047,663 bits
    assert grows(ast.Pow, 3, 662_000) > INT_BITS         # 1,049,248 bits
    assert grows(ast.Pow, 2, INT_BITS) > INT_BITS        # INT_BITS + 1 bits
    assert grows(ast.Pow, 2, INT_BITS - 1) == 0
