"""Review 22: Python-level hooks, checked(), hook targets, the Python funnel.

- H1: ``install(python_funnel=True)`` run by a signal handler (or a
  ``__del__``) while the main thread was inside the same call, between its
  "installed?" check and its swap: the outer call kept ``_ncl_vectorcall``
  itself as NumPy's entry, and ``np.add`` looped for ever, even after
  ``uninstall()``.  ``swap_in`` now runs every Python step before the
  check.
- H2: a funnel-level Python hook whose mirror could not be written back
  (its mirror resized): the error was reported but the call returned what
  the output held (uninitialised memory, an unsorted array, a stale copy);
  now the rest of the chain computes it, as for a Kernel.
- H3: inside ``checked()`` the user's kernel hooks registered before the
  block were skipped (the checked node went to the front and computed the
  call); it now goes behind the user's kernels.
  (Follow-up: a kernel registered inside the block at ``position="back"``
  landed behind the checked node and never ran; "back" now inserts before
  nclx's own mode nodes at the back too.)
- H4: the kernel target ``("cast", "float64")`` silently took the cast to
  bool, and ``("cast", ("float64", "int32"))`` said there was no such
  kernel; the pair (inputs then output) names one, the ambiguous form is a
  HookError listing the outputs.
- H5: with the Python funnel, ``call.next()`` from another thread raised
  ``AttributeError: '_thread._local' object has no attribute 'depth'``.
- H6: with the Python funnel, a python-level hook returning NotImplemented
  made ``np.add`` return the singleton (and ``a + 1`` a misleading
  TypeError); a TypeError now, as the aware route's.
"""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from nclx.errors import HookError


@pytest.fixture(autouse=True)
def _clean():
    yield
    nclx.uninstall()
    hooks.reset()


def test_h1_a_nested_install_inside_swap_in_keeps_numpys_entry(tmp_path):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import faulthandler
        faulthandler.dump_traceback_later(20, exit=True)
        import numpy as np, nclx
        from nclx._ncl import spec, pyfunnel
        import nclx._ncl.install as I
        orig = pyfunnel.vectorcall_address(np.add)
        real_numpy_ufunc, real_swap_in = spec.numpy_ufunc, pyfunnel.swap_in
        state = {"inside": False, "fired": False}
        def numpy_ufunc(op):        # a signal handler running at this bytecode boundary
            if state["inside"] and not state["fired"]:
                state["fired"] = True
                nclx.install(python_funnel=True)
            return real_numpy_ufunc(op)
        def swap_in(runner):
            state["inside"] = True
            try:
                return real_swap_in(runner)
            finally:
                state["inside"] = False
        spec.numpy_ufunc = numpy_ufunc
        I._pyfunnel = type("M", (), {"swap_in": staticmethod(swap_in),
                                     "swap_out": staticmethod(pyfunnel.swap_out),
                                     "call_original": staticmethod(pyfunnel.call_original)})
        nclx.install(python_funnel=True)
        spec.numpy_ufunc, I._pyfunnel = real_numpy_ufunc, pyfunnel
        print("fired", state["fired"])
        print("installed", np.add(np.arange(3), 1).tolist())
        nclx.uninstall()
        print("restored", pyfunnel.vectorcall_address(np.add) == orig)
        print("after", np.add(np.arange(3), 1).tolist())
    """)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "fired True" in proc.stdout
    assert "installed [1, 2, 3]" in proc.stdout
    assert "restored True" in proc.stdout
    assert "after [1, 2, 3]" in proc.stdout


def _bad_out(call):
    _ins, out = call.views()
    # the mirror cannot be written back (resize: setting .shape is
    # deprecated from NumPy 2.5, which made the hook itself fail instead)
    out.resize((out.size, 1), refcheck=False)


@pytest.mark.parametrize("sub, fn", [
    ("binary", lambda x: np.multiply(x, 2)),
    ("sort", lambda x: np.sort(x)),
    ("convert", lambda x: x.copy()),
], ids=["binary", "sort", "convert"])
def test_h2_a_failed_write_back_leaves_the_result_to_the_chain(sub, fn, monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))
    for n in (6, 100_003):
        x = np.random.default_rng(n).random(n)
        want = fn(x)
        with nclx.installed(), hooks.register("funnel", sub, _bad_out) as h:
            got = fn(x)
        assert got.tobytes() == want.tobytes(), sub
        assert h.errors >= 1
    assert reported and all(isinstance(e, ValueError) for e in reported)


def test_h3_checked_keeps_the_users_kernels():
    class Seven(hooks.Kernel):
        def __call__(self, ins, out):
            out[...] = 7

    seen = []

    def spy(call):
        seen.append(call.op)
        return call.next()

    a = np.arange(5, dtype=np.int64)
    with nclx.installed(), hooks.register("kernel", ("multiply", "int64"), Seven()), \
            hooks.register("kernel", ("add", "int64"), spy):
        with nclx.checked():
            chain = hooks.chain("kernel", ("multiply", "int64"))
            got = a * 2
            added = a + 1
            big = np.array([2**62], dtype=np.int64)
            with pytest.raises(OverflowError):
                big + big                # the spy passes it on: still checked
    assert chain.index("Seven") < chain.index("checked")
    assert got.tolist() == [7] * 5
    assert added.tolist() == [1, 2, 3, 4, 5]
    assert seen == ["add", "add"]


@pytest.mark.parametrize("position", ["back", "front"])
def test_h3_a_kernel_registered_inside_the_block_runs(position):
    class Seven(hooks.Kernel):
        def __call__(self, ins, out):
            out[...] = 7

    a = np.array([1, 2], dtype=np.int64)
    with nclx.installed(), nclx.checked():
        with hooks.register("kernel", ("add", "int64"), Seven(), position) as h:
            chain = hooks.chain("kernel", ("add", "int64"))
            got = a + a
        assert h.errors == 0
        big = np.array([2**62], dtype=np.int64)
        with pytest.raises(OverflowError):
            big + big                         # removed: checked again
    assert chain.index("Seven") < chain.index("checked"), chain
    assert got.tolist() == [7, 7]


def test_h3_back_inside_a_ledger_recording_stays_behind_the_ledger():
    # (the docs' check of the follow-up) "back" skipped every pinned node,
    # the ledger's too: a back hook inside recording() went in front of the
    # ledger node and its calls were not recorded
    import nclx.ledger as ledger

    def mine(call):
        return call.next()

    a = np.arange(4.0)
    with nclx.installed(), ledger.recording() as rec:
        with hooks.register("funnel", "binary", mine, "back"):
            chain = hooks.chain("funnel", "binary")
            a + a
    assert chain.index("mine") > [i for i, n in enumerate(chain) if n.startswith("ledger")][0]
    assert any(r.op == "add" for r in rec.records()), rec.records()


def test_h4_cast_targets_name_the_output():
    seen = []

    class K(hooks.Kernel):
        def __call__(self, ins, out):
            seen.append(out.dtype)
            return NotImplemented

    with pytest.raises(HookError, match=r"differ by output dtype .*name it: \('cast', "
                                        r"\('float64', 'bool'\)\)"):
        hooks.register("kernel", ("cast", "float64"), K())
    with nclx.installed(), hooks.register("kernel", ("cast", ("float64", "int32")), K()):
        got = nclx.convert(np.arange(3.0), np.int32)
        nclx.convert(np.arange(3.0), np.bool_)
    assert got.tolist() == [0, 1, 2]
    assert seen == [np.dtype(np.int32)]
    with pytest.raises(HookError, match="no kernels for dtype float16"):
        hooks.register("kernel", ("cast", ("float64", "float16")), K())
    # the other ops: inputs alone, as before
    with hooks.register("kernel", ("add", "int64"), K()) as h:
        assert h.target == ("add", "int64")


def test_h5_next_from_another_thread_under_the_python_funnel():
    def in_thread(call):
        box = {}

        def run():
            try:
                box["r"] = call.next()
            except BaseException as e:   # noqa: BLE001 - re-raised below
                box["e"] = e
        t = threading.Thread(target=run)
        t.start()
        t.join()
        if "e" in box:
            raise box["e"]
        return box["r"]

    a = np.arange(3.0)
    with nclx.installed(python_funnel=True), hooks.register("python", "binary", in_thread):
        got = a + 1
        again = np.multiply(a, 3)
    assert got.tolist() == [1.0, 2.0, 3.0]
    assert again.tolist() == [0.0, 3.0, 6.0]


def test_h6_not_implemented_from_a_python_hook_under_the_funnel():
    def ni(call):
        call.next()
        return NotImplemented

    a = np.arange(3.0)
    with nclx.installed(python_funnel=True), hooks.register("python", "binary", ni):
        with pytest.raises(TypeError, match="returned NotImplemented from nclx's python-level"):
            np.add(a, 1)
        with pytest.raises(TypeError, match="returned NotImplemented from nclx's python-level"):
            a + 1
    assert (a + 1).tolist() == [1.0, 2.0, 3.0]
