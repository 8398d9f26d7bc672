"""Review 17 of nclx.evaluate / nclx.fuse: int subclasses in the integer
bound, and huge ints in explain().

Before: an IntEnum (or any int subclass) bound to a name was not computed
ahead, so ``x ** (x * x)`` with an IntEnum of 10**6 ran Python's power for
good, where the same with a plain int raises OverflowError at once; and
explain() of a function given an int too long for repr() (more than 4300
digits) said "tracing raised ValueError" instead of the conversion that
stops the trace."""
import enum
import subprocess
import sys

import numpy as np
import pytest

import nclx


class E(enum.IntEnum):
    BIG = 10**6
    SMALL = 3


class Odd(int):
    """An int subclass with its own power: not computed ahead."""

    def __pow__(self, other):
        return 7

    def __rpow__(self, other):
        return 7


def test_an_intenum_power_past_the_bound_raises_at_once():
    code = ("import enum, numpy as np, nclx\n"
            "class E(enum.IntEnum):\n    BIG = 10**6\n"
            "try:\n"
            "    nclx.evaluate('a * x ** (x * x)', {'a': np.arange(5.0), 'x': E.BIG}, {})\n"
            "except OverflowError as e:\n    print('overflow', e)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("overflow nclx.evaluate: 'x ** (x * x)' would be a Python integer"), r.stdout


@pytest.mark.parametrize("x", [E.SMALL, E.BIG, Odd(5)])
@pytest.mark.parametrize("text", ["a * x ** 3", "a + x * x", "a + (x << 4)", "a * 2 ** x"])
def test_int_subclasses_give_the_expressions_bits(text, x):
    a = np.linspace(-3, 3, 7)
    env = {"a": a, "x": x}
    with np.errstate(all="ignore"):
        try:
            want = eval(text, {}, env)
        except OverflowError:       # 2 ** E.BIG: Python's int does not fit a float64
            with pytest.raises(OverflowError):
                nclx.evaluate(text, env, {})
            return
        got = nclx.evaluate(text, env, {})
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_an_int_subclass_with_its_own_power_is_not_bounded():
    """Odd's power is 7 whatever the exponent: nothing overflows."""
    a = np.arange(3.0)
    got = nclx.evaluate("a * x ** (x * x)", {"a": a, "x": Odd(10**6)}, {})
    assert got.tobytes() == (a * 7).tobytes()


def test_explain_names_the_conversion_of_a_huge_int():
    def f(a, k):
        return a * 2.0 + k

    a = np.arange(1e5)
    k = 10**5000
    reason = nclx.fuse(f).explain(a, k)
    assert "ValueError" not in reason, reason
    assert "converting an int of 16,610 bits to float64" in reason, reason
    with pytest.raises(OverflowError):
        nclx.fuse(f)(a, k)
