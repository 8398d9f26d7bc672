"""The hook registry: chains, positions, punting, removal, Python kernels."""
import gc
import sys

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from conftest import BIG, run_script


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


# ------------------------------------------------- hooks: review regressions
# Regression tests for defects that reviews found; each failed on the code
# before its fix and runs under ``threaded_clean`` (conftest: two threads,
# every op split above 65,536 elements).
# Views of a Python kernel's buffers kept after it returned pointed at freed
# memory; a hook that raised leaked its exception's frame; a hook placed
# after the threader must run (on the chunks); bad registrations (position
# without anchor, malformed kernel targets) must be refused; long hook names
# were cut; a handle removed after hooks.reset() must not touch a freed node
# (or a new node at the same address).
KEEP_SCRIPT = """
import gc, numpy as np, nclx, nclx.hooks as hooks
kept = []
class Keep(hooks.Kernel):
    def __call__(self, inputs, out):
        np.add(inputs[0], inputs[1], out=out)
        kept.append(out); kept.append(inputs[0]); kept.append(out[1:5]); kept.append(memoryview(out))
        return None
    def reduce(self, values, acc):
        return NotImplemented
nclx.set_num_threads(1)
with nclx.installed(), hooks.register("kernel", ("add", "float64"), Keep()):
    a = np.arange(3_000_000, dtype=np.float64)
    c = a + 1.0
expected = c[:5].copy()
del a, c
gc.collect()
junk = [np.full(3_000_000, 7.0) for _ in range(4)]   # reuse whatever was freed
out, inp, part, mv = kept[:4]
assert out[:5].tolist() == expected.tolist(), out[:5]
assert inp[:3].tolist() == [0.0, 1.0, 2.0], inp[:3]
assert part.tolist() == expected[1:5].tolist(), part
assert float(np.asarray(mv)[2]) == expected[2]
print("OK", float(out.sum()))
"""


@pytest.mark.usefixtures("threaded_clean")
def test_views_kept_after_a_kernel_returns_stay_valid():
    proc = run_script(KEEP_SCRIPT)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert proc.stdout.startswith("OK")


def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.mark.usefixtures("threaded_clean")
def test_hooks_that_raise_then_go_leave_no_memory_behind():
    def bad(call):
        tmp = np.ones(1024)                     # 8 KB the exception's frame keeps
        raise ValueError(f"boom {tmp.size}")

    old = sys.unraisablehook
    sys.unraisablehook = lambda u: None
    try:
        with nclx.installed():
            x = np.arange(4.0)
            for _ in range(300):                # warm up allocators
                with hooks.register("funnel", "binary", bad):
                    x + x
            gc.collect()
            before = _rss_kb()
            for _ in range(5000):
                with hooks.register("funnel", "binary", bad) as h:
                    x + x
                assert h.errors == 1
            gc.collect()
            grown = _rss_kb() - before
    finally:
        sys.unraisablehook = old
    assert grown < 8_000, f"RSS grew by {grown} KB over 5000 raise/remove cycles"


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("n", [10, BIG])
def test_hook_after_the_threader_runs(n):
    seen = []

    def late(call):
        seen.append(call.n)
        call.next()

    x = np.arange(n, dtype=np.int64)
    with nclx.installed(), hooks.register("funnel", "binary", late, after="threader"):
        assert hooks.chain("funnel", "binary").index("late") == 1
        r = x + x
    assert (r == 2 * x).all()
    assert sum(seen) == n


@pytest.mark.usefixtures("threaded_clean")
def test_position_before_without_anchor_is_a_valueerror():
    with pytest.raises(ValueError, match="before="):
        hooks.register("funnel", "binary", lambda c: c.next(), position="before")
    with pytest.raises(ValueError, match="after="):
        hooks.register("funnel", "binary", lambda c: c.next(), position="after")


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("target", [("add", None), ("add", 3), ("add",), None, ("nope", "int64")])
def test_bad_kernel_targets_are_rejected(target):
    with pytest.raises((TypeError, ValueError)) as info:
        hooks.register("kernel", target, hooks.Kernel())
    if target == ("add", None):
        assert info.type is TypeError or issubclass(info.type, TypeError)


@pytest.mark.usefixtures("threaded_clean")
def test_long_hook_names_are_kept_whole():
    name = "profiler." + "x" * 120
    with hooks.register("funnel", "binary", lambda c: c.next(), name=name) as h:
        assert name in hooks.chain("funnel", "binary")
        assert h.name == name
    with hooks.register("funnel", "unary", lambda c: c.next(), name=name + "a"):
        with pytest.raises(ValueError, match="already has a node named"):
            hooks.register("funnel", "unary", lambda c: c.next(), name=name + "a")


@pytest.mark.usefixtures("threaded_clean")
def test_handle_remove_after_reset_touches_nothing_freed():
    keep = hooks.register("funnel", "binary", lambda c: c.next(), name="old")
    hooks.reset()
    hooks.collect()
    assert keep.removed
    fresh = [hooks.register("funnel", "binary", lambda c: c.next(), name=f"new{i}")
             for i in range(50)]                 # may reuse the freed node's address
    keep.remove()                                # must not unlink one of the new nodes
    assert hooks.chain("funnel", "binary")[:50] == [f"new{i}" for i in reversed(range(50))]
    for h in fresh:
        h.remove()

