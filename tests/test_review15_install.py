"""Defects a hostile review of install() on the elementwise subsystems found
(each test failed before its fix).

- A Python hook (funnel or kernel level) that makes a NumPy call of its own
  after ``call.next()`` -- a profiler logging what it saw -- erased the
  floating-point flags the loop had raised: NumPy clears the flags around
  every ufunc call, the hook's included, so the caller's call lost its
  warnings, and ``np.errstate(all="raise")`` raised nothing.  Likewise a hook
  that handed its ``Call`` to another thread: the loop's flags were raised on
  that thread, never on the caller's.  A hook's NumPy call also erased the
  flags of the call's earlier pieces (``where=``, buffering).
- Inside ``nclx.checked()`` the same hook call dropped the overflow record
  of earlier pieces: the call warned "overflow encountered in multiply"
  instead of raising OverflowError.
- ``set_num_threads`` / ``set_threshold`` took ``int(n)`` of anything: 1.5
  became a threshold of 1 (every call split), "2" and True were accepted.
"""
import threading
import warnings

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks

N_SPLIT = 70_000          # above the threshold set below: split across threads


@pytest.fixture(autouse=True)
def _clean():
    nclx.uninstall()
    hooks.reset()
    nclx.reset_thresholds()
    nclx.set_num_threads(2)
    nclx.set_threshold(4096)
    yield
    nclx.uninstall()
    hooks.reset()
    nclx.reset_thresholds()


def _warned(fn):
    with warnings.catch_warnings(record=True) as w, np.errstate(all="warn"):
        warnings.simplefilter("always")
        r = fn()
    return r, sorted(str(m.message) for m in w)


# --------------------------------------- FP flags across a hook's own NumPy calls

def _profiler(call):
    call.next()
    np.add(np.ones(3), 1.0)          # the hook's own NumPy call, after the loop


def _profiler_before(call):
    np.add(np.ones(3), 1.0)
    call.next()
    np.add(np.ones(3), 1.0)


def _handed_over(call):
    t = threading.Thread(target=call.next)
    t.start()
    t.join()


_HOOKS = {
    "funnel-front": lambda: hooks.register("funnel", "binary", _profiler),
    "funnel-after-threader": lambda: hooks.register("funnel", "binary", _profiler,
                                                    after="threader"),
    "funnel-both-sides": lambda: hooks.register("funnel", "binary", _profiler_before),
    "kernel": lambda: hooks.register("kernel", ("true_divide", "float64"), _profiler),
    "handed-to-a-thread": lambda: hooks.register("funnel", "binary", _handed_over),
}


@pytest.mark.parametrize("n", [7, N_SPLIT])
@pytest.mark.parametrize("where", list(_HOOKS))
def test_a_hooks_own_numpy_call_keeps_the_loops_warnings(where, n):
    x = np.zeros(n)
    x[1] = 1.0
    want, w0 = _warned(lambda: x / x)
    with nclx.installed(), _HOOKS[where]():
        got, w1 = _warned(lambda: x / x)
        with pytest.raises(FloatingPointError, match="invalid value"), np.errstate(all="raise"):
            x / x
    assert want.tobytes() == got.tobytes()
    assert w0 == w1 == ["invalid value encountered in divide"]


def _profiler_first(call):
    np.add(np.ones(3), 1.0)          # the hook's own NumPy call, before the loop
    call.next()


class _DivideKernel(hooks.Kernel):
    """Divides with NumPy, its own call's warnings silenced."""
    def __call__(self, inputs, out):
        with np.errstate(all="ignore"):
            np.true_divide(inputs[0], inputs[1], out=out)


@pytest.mark.parametrize("hook", ["funnel", "kernel"])
def test_a_hook_keeps_the_flags_of_the_pieces_before_it(hook):
    # a where= call reaches the loop in pieces (one per run of True); only
    # the first piece divides 0 by 0: the hook's NumPy call in the later
    # pieces must not erase its flag
    n = 1000
    x = np.ones(n)
    x[0] = 0.0
    mask = np.arange(n) % 3 != 2
    want, w0 = _warned(lambda: np.true_divide(x, x, out=np.zeros(n), where=mask))
    if hook == "funnel":
        h = hooks.register("funnel", "binary", _profiler_first)
    else:
        h = hooks.register("kernel", ("true_divide", "float64"), _DivideKernel())
    with nclx.installed(), h:
        got, w1 = _warned(lambda: np.true_divide(x, x, out=np.zeros(n), where=mask))
        with pytest.raises(FloatingPointError), np.errstate(all="raise"):
            np.true_divide(x, x, out=np.zeros(n), where=mask)
    assert want[mask].tobytes() == got[mask].tobytes()
    assert w0 == w1 == ["invalid value encountered in divide"]


def _profiler_first_int(call):
    np.add(np.ones(3, np.int64), 1)
    call.next()


class _MultiplyKernel(hooks.Kernel):
    # its own NumPy call, then the call passed on: since review 22 the
    # checked node sits behind the user's kernels (before, at the front, a
    # kernel registered before the block never ran), so a kernel that
    # computed the call itself would not be checked; this one passes it on
    def __call__(self, inputs, out):
        with np.errstate(over="ignore"):
            np.multiply(inputs[0], inputs[1], out=out)
        return NotImplemented


@pytest.mark.parametrize("hook", ["none", "funnel", "kernel"])
def test_checked_keeps_the_overflow_of_earlier_pieces_across_a_hook(hook):
    # inside checked(), the first piece of a where= call wraps; a hook's own
    # NumPy call in a later piece dropped that record: the call warned
    # "overflow encountered in multiply" instead of raising OverflowError
    n = 1000
    a = np.ones(n, np.int64)
    a[0] = 2 ** 62
    mask = np.arange(n) % 3 != 2
    if hook == "funnel":
        h = hooks.register("funnel", "binary", _profiler_first_int)
    elif hook == "kernel":
        h = hooks.register("kernel", ("multiply", "int64"), _MultiplyKernel())
    else:
        h = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(OverflowError, match=r"multiply \(int64\): 1 element"):
                with nclx.checked():
                    np.multiply(a, 4, out=np.zeros(n, np.int64), where=mask)
    finally:
        if h is not None:
            h.remove()


# --------------------------------------- thread count and threshold arguments

@pytest.mark.parametrize("bad", [1.5, 2.0, "2", True, None])
@pytest.mark.parametrize("setter", ["set_num_threads", "set_threshold"])
def test_thread_settings_refuse_what_is_not_an_integer(setter, bad):
    # int(n) took 1.5 as 1 (a threshold of 1 splits every call), "2" and True
    before = (nclx.get_num_threads(), nclx.get_threshold())
    with pytest.raises(TypeError, match="integer"):
        getattr(nclx, setter)(bad)
    assert (nclx.get_num_threads(), nclx.get_threshold()) == before


def test_thread_settings_take_numpy_integers():
    nclx.set_num_threads(np.int64(3))
    nclx.set_threshold(np.uint32(5000))
    assert nclx.get_num_threads() == 3 and nclx.get_threshold() == 5000
