"""Review 19: floating-point flags raised before a ufunc's loop runs.

When NumPy casts an input in its buffers (a float32 signalling NaN read as
float64, 1e300 cast to float32) the cast's flags are still up when the loop
runs; NumPy's comparison, maximum/minimum, fmax/fmin, absolute, negative and
sign loops clear the status at their end, so stock NumPy reports nothing for
those ops, while add, floor ... report the cast's flag under their own name.
Under install() a call split across threads (or run whole by nclx's kernel)
kept the flags up before it and reported them: ``x >= y`` raised
FloatingPointError under ``errstate(invalid='raise')`` where NumPy does not.
nclx now probes each loop of NumPy once at import (entries._probe_clears)
and clears the flags after its own run where NumPy's loop would.
"""
import warnings

import numpy as np
import pytest

import nclx
from nclx._ncl import entries, policy

N = 100_000            # above NumPy's buffer (8192): its loop runs on buffers
SNAN32 = np.full(N, 0x7F800001, np.uint32).view(np.float32)
BIG64 = np.full(N, 1e300)
Z64 = np.zeros(N)
Z32 = np.zeros(N, np.float32)

CASES = {
    "greater_equal": lambda x, z: np.greater_equal(x, z),
    "equal": lambda x, z: np.equal(x, z),
    "less": lambda x, z: np.less(x, z),
    "not_equal": lambda x, z: np.not_equal(x, z),
    "maximum": lambda x, z: np.maximum(x, z),
    "minimum": lambda x, z: np.minimum(x, z),
    "fmax": lambda x, z: np.fmax(x, z),
    "fmin": lambda x, z: np.fmin(x, z),
    "absolute": lambda x, z: np.absolute(x, dtype=z.dtype),
    "negative": lambda x, z: np.negative(x, dtype=z.dtype),
    "sign": lambda x, z: np.sign(x, dtype=z.dtype),
    "add": lambda x, z: np.add(x, z, dtype=z.dtype),
    "floor": lambda x, z: np.floor(x, dtype=z.dtype),
    "copysign": lambda x, z: np.copysign(x, z, dtype=z.dtype),
}
INPUTS = {"snan32->f64": (SNAN32, Z64), "big64->f32": (BIG64, Z32)}


@pytest.fixture(autouse=True)
def _clean():
    threads = nclx.get_num_threads()
    nclx.uninstall()
    yield
    nclx.uninstall()
    nclx.reset_thresholds()
    policy.reset_preferences()
    nclx.set_num_threads(threads)


def _outcome(fn, x, z, mode):
    with warnings.catch_warnings(record=True) as rec, np.errstate(all=mode):
        warnings.simplefilter("always")
        try:
            r = fn(x, z)
        except FloatingPointError as exc:
            return ("raise", str(exc))
    return ("ok", r.dtype.str, r.tobytes(), [str(w.message) for w in rec])


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("setting", ["split", "whole", "bufsize"])
def test_flags_up_before_the_loop_as_numpy(op, inputs, setting):
    fn, (x, z) = CASES[op], INPUTS[inputs]
    want = [_outcome(fn, x, z, m) for m in ("warn", "raise")]
    old_buf = np.getbufsize()
    nclx.install()
    try:
        if setting == "split":
            nclx.set_num_threads(2)
            nclx.set_threshold(64)
        elif setting == "whole":
            nclx.set_num_threads(1)
            nclx.set_threshold(64)
        else:                   # default threshold, buffers over it
            nclx.set_num_threads(2)
            np.setbufsize(1 << 20)
        got = [_outcome(fn, x, z, m) for m in ("warn", "raise")]
    finally:
        np.setbufsize(old_buf)
        nclx.uninstall()
    if setting == "bufsize":
        np.setbufsize(1 << 20)
        try:
            want = [_outcome(fn, x, z, m) for m in ("warn", "raise")]
        finally:
            np.setbufsize(old_buf)
    assert got == want


def test_the_probe_finds_numpys_clearing_loops():
    # the loops stock NumPy clears in (the table above); add's does not
    clears = {sig: entries.clears_flags(k) for k, sig in enumerate(entries.signatures())}
    assert clears[("greater_equal", "dd?")] == 1
    assert clears[("maximum", "ddd")] == 1
    assert clears[("add", "ddd")] == 0


# -------------------------------------------- calls down the hook chains
def test_flags_cleared_after_a_hook_or_checked_run():
    """A call down the chains (a kernel hook passing it on, checked(), the
    ledger, nclx's kernel on the whole call) ends as NumPy's loop ends: with
    the cast's flags cleared (before, only split and fast-path calls did)."""
    import nclx.hooks as hooks
    x, z = SNAN32, Z64
    want = [_outcome(CASES[op], x, z, m) for op in ("greater_equal", "maximum")
            for m in ("warn", "raise")]
    nclx.install()
    try:
        h = hooks.register("kernel", ("greater_equal", "float64"), lambda call: call.next())
        h2 = hooks.register("kernel", ("maximum", "float64"), lambda call: call.next())
        try:
            got = [_outcome(CASES[op], x, z, m) for op in ("greater_equal", "maximum")
                   for m in ("warn", "raise")]
        finally:
            h.remove()
            h2.remove()
        assert got == want
        policy.set_preference("maximum", "ddd", False, False, False)   # nclx's kernel, whole
        for scope in (nclx.checked, nclx.ledger.recording):
            with scope():
                got = [_outcome(CASES["maximum"], x, z, m) for m in ("warn", "raise")]
            assert got == want[2:], scope
    finally:
        nclx.uninstall()


# ----------------------------------------- a short last piece of a split call
@pytest.mark.parametrize("op", [np.add, np.multiply], ids=lambda u: u.__name__)
@pytest.mark.parametrize("dt, bits", [("f8", (0x7FF0000000000001, 0x7FF8000020000000)),
                                      ("f4", (0x7F800001, 0x7FC00020))])
def test_short_last_piece_keeps_numpys_nan(op, dt, bits):
    """A last piece shorter than one vector ran NumPy's loop for a short
    call, which keeps the other operand's NaN than a whole call's tail: the
    last piece now joins the one before it."""
    u = np.uint64 if dt == "f8" else np.uint32
    for n, threads, threshold in [(64 * 3 + 1, 2, 64), (64 * 5 + 7, 3, 64),
                                  (64 * 2 + 15, 2, 64), (65537, 33, None)]:
        a = np.full(n, bits[0], u).view(dt)
        b = np.full(n, bits[1], u).view(dt)
        with np.errstate(all="ignore"):
            want = [op(a, b).tobytes(), op(b, a).tobytes()]
        nclx.install()
        try:
            nclx.set_num_threads(threads)
            if threshold is not None:
                nclx.set_threshold(threshold)
            with np.errstate(all="ignore"):
                got = [op(a, b).tobytes(), op(b, a).tobytes()]
        finally:
            nclx.uninstall()
            nclx.reset_thresholds()
        assert got == want, (n, threads)
