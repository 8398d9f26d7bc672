"""Kernel chains named by string and by (op, dtype) name the same chain, for
every loop nclx serves -- NumPy's own loops' chains (exp, square, power on
ints...) included: `nclx.hooks.chains()` reports them by name, and that
name must be accepted back (before, "no nclx kernel named 'exp_float64'")."""
import numpy as np
import pytest

import nclx
from nclx import hooks
from nclx._ncl import spec, targets


def _loops():
    return [(op, ins, out, name) for op, _kind, ins, out, name in spec.all_loops()]


def test_every_loop_is_named_the_same_both_ways():
    loops = _loops()
    assert len(loops) > 300
    wrong = []
    for op, ins, out, name in loops:
        if targets.kernel_chain_name(name) != name:
            wrong.append(("str", name))
        if targets.kernel_chain_name((op, tuple(ins) + (out,))) != name:
            wrong.append(("tuple", name))
    assert wrong == []


@pytest.mark.parametrize("op,dtype", [("exp", "float64"), ("square", "int8"), ("power", "int32"),
                                      ("add", "int64")])
def test_a_name_from_chains_registers_back(op, dtype):
    h = hooks.register("kernel", (op, dtype), lambda call: call.next(), name="first")
    try:
        (key,) = [k for k, names in hooks.chains().items() if "first" in names]
        assert key[0] == "kernel" and isinstance(key[1], str)
        h2 = hooks.register(*key, lambda call: call.next(), name="second")
        try:
            assert hooks.chain(*key)[:2] == ["second", "first"]
            assert hooks.chain("kernel", (op, dtype)) == hooks.chain(*key)
        finally:
            h2.remove()
    finally:
        h.remove()


def test_a_hook_registered_by_name_on_numpys_loop_runs():
    seen = []

    def spy(call):
        seen.append(True)
        call.next()                 # punt: the rest of the chain computes

    a = np.linspace(-1.0, 1.0, 1000)
    want = np.exp(a)
    h = hooks.register("kernel", "exp_float64", spy, name="spy")
    try:
        with nclx.installed():
            got = np.exp(a)
    finally:
        h.remove()
    assert seen
    assert got.tobytes() == want.tobytes()


def test_unknown_names_are_still_refused():
    for bad in ("exp_float65", "nosuch_int64", "", "add_int64 "):
        with pytest.raises(nclx.errors.HookError, match="no nclx kernel named"):
            targets.kernel_chain_name(bad)
