"""The hook registry: chains, positions, punting, removal, Python kernels."""
import sys

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks


pytestmark = pytest.mark.usefixtures("installed_clean")


def _tracer(log, name):
    def hook(call):
        log.append(name)
        call.next()
    hook.__name__ = name
    return hook


def test_default_chains():
    assert hooks.chain("funnel", "binary") == ["threader", "kernel"]
    assert hooks.chain("kernel", ("add", "int64")) == ["nclx", "numpy"]
    assert hooks.chain("kernel", ("equal", ("int64", "uint64"))) == ["nclx", "numpy"]
    assert hooks.chain("python", "reduce") == ["ufunc"]
    assert hooks.chains() == {}


def test_positions_front_back_before_after_and_order_of_calls():
    log = []
    hooks.register("funnel", "binary", _tracer(log, "a"))
    hooks.register("funnel", "binary", _tracer(log, "b"), position="front")
    hooks.register("funnel", "binary", _tracer(log, "c"), position="back")
    hooks.register("funnel", "binary", _tracer(log, "d"), before="a")
    hooks.register("funnel", "binary", _tracer(log, "e"), after="c")
    assert hooks.chain("funnel", "binary") == ["b", "d", "a", "c", "e", "threader", "kernel"]
    np.add(np.arange(3), 1)
    assert log == ["b", "d", "a", "c", "e"]


def test_kernel_chain_back_is_before_the_default_nodes():
    hooks.register("kernel", ("add", "float64"), lambda c: c.next(), name="mine", position="back")
    assert hooks.chain("kernel", ("add", "float64")) == ["mine", "nclx", "numpy"]


def test_bad_registrations_name_the_problem():
    with pytest.raises(hooks.HookError, match="no node named 'zz'"):
        hooks.register("funnel", "binary", lambda c: c.next(), before="zz")
    with pytest.raises(hooks.HookError, match="subsystem"):
        hooks.register("funnel", "arith", lambda c: c.next())
    with pytest.raises(hooks.HookError, match="level"):
        hooks.register("loop", "binary", lambda c: c.next())
    with pytest.raises(hooks.HookError, match="no (add )?kernels? for dtype"):
        hooks.register("kernel", ("add", "complex128"), lambda c: c.next())
    with pytest.raises(hooks.HookError, match="unknown op"):
        hooks.register("kernel", ("frobnicate", "int64"), lambda c: c.next())
    with pytest.raises(TypeError, match="callable"):
        hooks.register("funnel", "binary", 42)
    with pytest.raises(hooks.HookError, match="last node"):
        hooks.register("kernel", ("add", "int64"), lambda c: c.next(), after="numpy")
    hooks.register("funnel", "binary", lambda c: c.next(), name="same")
    with pytest.raises(hooks.HookError, match="already has a node named 'same'"):
        hooks.register("funnel", "binary", lambda c: c.next(), name="same")


def test_default_nodes_cannot_be_removed_and_reset_restores_defaults():
    hooks.register("funnel", "unary", lambda c: c.next(), name="x")
    hooks.register("kernel", ("sqrt", "float64"), lambda c: c.next(), name="y")
    assert hooks.chains() == {("funnel", "unary"): ["x", "threader", "kernel"],
                              ("kernel", "sqrt_float64"): ["y", "nclx", "numpy"]}
    hooks.reset()
    assert hooks.chains() == {}


def test_handle_remove_is_idempotent_and_a_context_manager():
    with hooks.register("funnel", "compare", lambda c: c.next(), name="tmp") as h:
        assert hooks.chain("funnel", "compare") == ["tmp", "threader", "kernel"]
    assert h.removed
    h.remove()
    assert hooks.chain("funnel", "compare") == ["threader", "kernel"]


def test_a_hook_can_remove_itself_while_it_runs_and_still_punt():
    calls = []
    handle = {}

    def once(call):
        calls.append(call.n)
        handle["h"].remove()
        call.next()

    handle["h"] = hooks.register("funnel", "binary", once)
    r1 = np.arange(5) + 1
    r2 = np.arange(5) + 1
    assert calls == [5]
    assert np.array_equal(r1, r2) and np.array_equal(r1, np.arange(1, 6))


def test_a_funnel_hook_sees_call_details_and_buffers():
    seen = {}

    def look(call):
        ins, out = call.views()
        seen.update(op=call.op, dtypes=call.dtypes, types=call.types, n=call.n,
                    sub=call.subsystem, reduce=call.is_reduce, a=ins[0].copy())
        call.next()
        seen["out"] = out.copy()

    hooks.register("funnel", "binary", look)
    np.multiply(np.arange(4, dtype=np.int32), np.int32(3))
    assert seen["op"] == "multiply" and seen["dtypes"] == ("int32",) * 3
    assert seen["types"] == "iii" and seen["n"] == 4 and seen["sub"] == "binary"
    assert not seen["reduce"]
    assert list(seen["a"]) == [0, 1, 2, 3] and list(seen["out"]) == [0, 3, 6, 9]


def test_reductions_go_to_the_reduce_subsystem():
    seen = []
    hooks.register("funnel", "reduce", lambda c: (seen.append((c.op, c.is_reduce)), c.next()))
    assert np.arange(10).sum() == 45
    assert np.maximum.reduce(np.arange(10.0)) == 9.0
    assert ("add", True) in seen and ("maximum", True) in seen


def test_a_hook_that_does_not_punt_replaces_the_computation():
    def zeros(call):
        ins, out = call.views()
        out[...] = 0

    hooks.register("kernel", ("add", "int16"), zeros)
    a = np.arange(5, dtype=np.int16)
    assert not (a + a).any()
    assert np.array_equal(a.astype(np.int32) + a, 2 * np.arange(5))   # other kernels untouched


def test_call_objects_expire_after_the_hook_returns():
    kept = []
    hooks.register("funnel", "unary", lambda c: (kept.append(c), c.next()))
    np.negative(np.arange(3))
    with pytest.raises(RuntimeError, match="ended"):
        kept[0].n


def test_numpy_called_inside_a_hook_is_not_hooked_again():
    depth = []

    def reentrant(call):
        depth.append(call.op)
        np.add(np.arange(3), 1)     # must not recurse into this hook
        call.next()

    hooks.register("funnel", "binary", reentrant)
    np.multiply(np.arange(3), 2)
    assert depth == ["multiply"]


def test_python_kernel_subclass_computes_the_loop():
    class SaturatingInt8Add(hooks.Kernel):
        name = "saturate"

        def __call__(self, inputs, out):
            wide = inputs[0].astype(np.int16) + inputs[1]
            out[...] = np.clip(wide, -128, 127)

    hooks.register("kernel", ("add", "int8"), SaturatingInt8Add())
    a = np.array([100, -100, 5], dtype=np.int8)
    assert hooks.chain("kernel", ("add", "int8")) == ["saturate", "nclx", "numpy"]
    assert list(a + a) == [127, -128, 10]
    assert a.sum(dtype=np.int8) == 5        # reduce() not overridden: punted, wraps as NumPy


def test_python_kernel_reduce_and_notimplemented_punts():
    class CountingSum(hooks.Kernel):
        def __init__(self):
            self.reduced = 0

        def __call__(self, inputs, out):
            return NotImplemented

        def reduce(self, values, acc):
            self.reduced += values.size
            acc[0] = acc[0] + values.sum()

    k = CountingSum()
    hooks.register("kernel", ("add", "float32"), k)
    x = np.arange(100, dtype=np.float32)
    assert x.sum() == np.float32(4950)
    assert k.reduced == 100                 # NumPy 2 seeds the accumulator with -0.0
    assert np.array_equal(x + x, 2 * x)


def test_exceptions_in_kernels_are_reported_and_the_result_is_still_computed():
    class Broken(hooks.Kernel):
        def __call__(self, inputs, out):
            raise ZeroDivisionError("inside a loop")

    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        h = hooks.register("kernel", ("subtract", "int64"), Broken())
        r = np.arange(5) - 1
    finally:
        sys.unraisablehook = old
    assert list(r) == [-1, 0, 1, 2, 3]
    assert h.errors == 1 and isinstance(h.last_error, ZeroDivisionError)
    assert "Broken" in seen[0].err_msg


def test_run_numpy_and_run_nclx_from_a_hook():
    used = []

    def choose(call):
        if call.n > 3:
            call.run_numpy()
            used.append("numpy")
        else:
            call.run_nclx()
            used.append("nclx")

    hooks.register("kernel", ("add", "float64"), choose)
    assert np.array_equal(np.ones(2) + 1, [2, 2]) and np.array_equal(np.ones(5) + 1, [2] * 5)
    assert used == ["nclx", "numpy"]


def test_python_level_chain_for_nclx_aware_arrays_sees_every_method():
    seen = []

    def spy(call):
        seen.append((call.ufunc.__name__, call.method, call.subsystem))
        return call.next()

    for sub in hooks.SUBSYSTEMS:
        hooks.register("python", sub, spy, name=f"spy_{sub}")
    x = hooks.aware(np.arange(4))
    y = x + 1
    assert isinstance(y, hooks.NclxArray)
    x > 2
    np.negative(x)
    x.sum()
    np.add.accumulate(x)
    assert seen == [("add", "__call__", "binary"), ("greater", "__call__", "compare"),
                    ("negative", "__call__", "unary"), ("add", "reduce", "reduce"),
                    ("add", "accumulate", "reduce")]


def test_python_level_hook_can_change_inputs_and_result():
    def double_then_tag(call):
        call.inputs = tuple(np.asarray(i) * 2 for i in call.inputs)
        return call.next() + 1000

    hooks.register("python", "binary", double_then_tag)
    x = hooks.aware(np.arange(3))
    assert list(x + 1) == [1002, 1004, 1006]


def test_python_funnel_for_plain_ndarrays_is_opt_in():
    seen = []
    hooks.register("python", "binary", lambda c: (seen.append(c.ufunc.__name__), c.next())[1])
    np.arange(3) + 1
    assert seen == []
    nclx.install(python_funnel=True)
    r = np.arange(3) + 1
    np.add(np.arange(3), 1, out=np.empty(3, dtype=int))
    assert seen == ["add", "add"] and list(r) == [1, 2, 3]
    nclx.uninstall()
    np.arange(3) + 1
    assert seen == ["add", "add"]


def test_uninstall_restores_ufunc_call_entries():
    from nclx._ncl import pyfunnel as funnel
    from nclx._ncl import spec
    served = {op: spec.numpy_ufunc(op) for op in nclx.ufuncs.NAMES if op not in spec.NCLX_ONLY}
    before = {op: funnel.vectorcall_address(u) for op, u in served.items()}
    nclx.install(python_funnel=True)
    assert all(funnel.vectorcall_address(served[op]) != addr for op, addr in before.items())
    nclx.uninstall()
    assert {op: funnel.vectorcall_address(u) for op, u in served.items()} == before


def test_python_funnel_errors_propagate_to_the_caller():
    def refuse(call):
        raise PermissionError("no adding today")

    hooks.register("python", "binary", refuse)
    nclx.install(python_funnel=True)
    with pytest.raises(PermissionError, match="no adding"):
        np.add(np.arange(3), 1)
    with pytest.raises(PermissionError):
        hooks.aware(np.arange(3)) + 1


def test_aware_helper_covers_every_method_out_and_where():
    seen = []
    hooks.register("python", "reduce", lambda c: (seen.append(c.method), c.next())[1], name="m")
    x = hooks.aware(np.arange(6.0))
    out = hooks.aware(np.zeros(6))
    r = np.add(x, 1.0, out=out, where=x > 2)
    assert r is out and list(out) == [0, 0, 0, 4, 5, 6]
    assert np.sum(x) == 15.0 and np.max(x) == 5.0
    assert list(np.add.accumulate(x)) == [0, 1, 3, 6, 10, 15]
    assert list(np.add.reduceat(x, [0, 3])) == [3.0, 12.0]
    assert np.multiply.outer(x[:2], x[:2]).shape == (2, 2)
    y = hooks.aware(np.zeros(3))
    np.add.at(y, [0, 0, 2], 1.0)
    assert list(y) == [2.0, 0.0, 1.0]
    assert "reduce" in seen and "accumulate" in seen and "reduceat" in seen and "at" in seen
