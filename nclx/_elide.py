"""NumPy's temporary elision, as a trace must mirror it (nclx._probe).

Eager NumPy evaluates ``a + b * c`` (``b * c`` an unnamed temporary of at
least 256 KiB) as ``np.add(tmp, a, out=tmp)``: for ``+`` and ``*`` it reuses
an unnamed temporary on either side, swapping the operands when the
temporary is on the right (NumPy's temp_elide.c).  The values are the same
but for one thing: of two NaN operands, an add or a multiply keeps the
first one's payload.  A trace runs on probes, which NumPy never elides
(they are no exact ndarrays), so the probes' ``+`` and ``*`` apply NumPy's
rule themselves and mark the steps eager NumPy would run swapped
(``tape.elisions``): an unnamed temporary (a step's result that nothing
names: its reference count, measured against an unnamed one at the first
trace), of a numeric dtype, to which the other operand (an array of the
same shape, a 0-d array or a scalar) casts safely, when the left operand
is no such temporary.  Whether the temporary reaches 256 KiB depends on
the call's length: :func:`variants` gives the program for each length.

Whether this NumPy elides at all (it needs ``backtrace()``; not on Windows
or PyPy) is measured once, by an eager expression whose NaN payload shows
it (:func:`active`).
"""
import sys
import threading

import numpy as np

from nclx._fused_program import Program, Step

__all__ = ["MIN_BYTES", "active", "operators", "variants", "caller"]

#: NumPy's NPY_MIN_ELIDE_BYTES: smaller temporaries are never reused
MIN_BYTES = 256 * 1024

_state = {}          # "active": bool; "refs": (unnamed self, other; reflected self)
_probe_type = None   # nclx._probe._Probe (operators())
_local = threading.local()       # .calls while this thread calibrates


def _measure_active():
    """Whether eager NumPy here evaluates ``x + (y * 1.0)`` otherwise than
    ``np.add(x, y * 1.0)`` (a ufunc call, never elided): x and y hold NaNs
    of other payloads, so the operand order shows in the bits (whichever
    of the two NumPy's loop keeps)."""
    n = MIN_BYTES // 8
    x = np.full(n, np.nan)
    y = np.full(n, np.nan)
    x.view(np.uint64)[:] = 0x7FF8000000000111
    y.view(np.uint64)[:] = 0x7FF8000000000222

    def expression(x, y):
        return x + (y * 1.0)
    with np.errstate(all="ignore"):
        r = expression(x, y)
        plain = np.add(x, y * 1.0)
    return r.tobytes() != plain.tobytes()


def active():
    """Whether this NumPy elides temporaries and the probes can tell an
    unnamed temporary by its reference count (measured once; threads that
    ask meanwhile measure too, alike: no lock, which a fork while another
    thread measured left held in the child, whose first trace waited for
    good; found by review)."""
    got = _state.get("active")
    if got is None:
        refs = _calibrate()
        got = refs is not None and _measure_active()
        _state["refs"] = refs            # (before "active": a reader of it reads refs)
        _state["active"] = got
    return got


def _calibrate():
    """The reference counts the probes' operators see for unnamed operands,
    or None when a named one looks the same."""
    _local.calls = calls = []
    try:
        def make():
            return np.zeros(1).view(_probe_type)
        named = make()
        make() + make()             # noqa: B018 -- both unnamed
        named + named               # noqa: B018 -- both named
        2.0 + make()                # noqa: B018 -- reflected, self unnamed
        2.0 + named                 # noqa: B018
    finally:
        _local.calls = None
    (a1, a2, _), (n1, n2, _), (_, r2, _), (_, rn2, _) = calls
    if not (a1 < n1 and a2 < n2 and r2 < rn2):
        return None
    return a1, a2, r2


def _operand_dtype(x):
    """The dtype NumPy's elision check casts from (PyArray_EnsureArray of
    the operand: a Python int by its value), or None: no array or scalar."""
    if isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
        try:
            return np.asarray(x).dtype
        except Exception:
            return None
    return None


def _reusable(t, other, tape, refs, unnamed):
    """Whether eager NumPy reuses ``t`` for ``t op other``."""
    if not isinstance(t, _probe_type) or refs != unnamed:
        return False
    d = object.__getattribute__(t, "__dict__")
    if d.get("_nclx_tape") is not tape or all(st.out != d.get("_nclx_slot") for st in tape.steps):
        return False              # an argument or a constant: named, never reused
    if d.get("_nclx_slot") not in tape.wide:
        return False              # of 0-d operands alone: eagerly a NumPy scalar
    if t.dtype.kind not in "biufc":
        return False
    od = _operand_dtype(other)
    return od is not None and np.can_cast(od, t.dtype, "safe")


def _operator(method, ufunc, m1, m2, refs1, refs2, reflected):
    """``m1 op m2`` as ndarray's operator computes it (``method`` on the
    probe), the step it records marked when eager NumPy would run it
    swapped."""
    calls = getattr(_local, "calls", None)
    if calls is not None:
        calls.append((refs1, refs2, reflected))
        return 0
    self = m2 if reflected else m1
    other = m1 if reflected else m2
    tape = object.__getattribute__(self, "__dict__").get("_nclx_tape")
    before = len(tape.steps) if tape is not None else -1
    result = method(self, other)
    if tape is None or len(tape.steps) != before + 1 or tape.steps[-1].ufunc is not ufunc \
            or not active():
        return result
    u1, u2, ur = _state["refs"]
    if reflected:
        swap = not _reusable(m1, m2, tape, refs1, -1) and _reusable(m2, m1, tape, refs2, ur)
    else:
        swap = not _reusable(m1, m2, tape, refs1, u1) and _reusable(m2, m1, tape, refs2, u2)
    if swap:
        tape.elisions.append((before, object.__getattribute__(m2, "__dict__")["_nclx_slot"],
                              m2.dtype.itemsize))
    return result


def caller(frame):
    """The frame that made an operator call of a probe: ``frame`` (the one
    calling the probe's ``__array_ufunc__``) or, past this module's frames,
    the code that wrote ``+`` or ``*``."""
    while frame is not None and frame.f_code in _CODES:
        frame = frame.f_back
    return frame


def operators(probe_type):
    """{name: function} of ``probe_type``'s ``+`` and ``*`` (both sides;
    nclx._probe's _Probe sets them)."""
    global _probe_type
    _probe_type = probe_type
    out = {}
    for name, ufunc in (("add", np.add), ("mul", np.multiply)):
        fwd_method = getattr(np.ndarray, f"__{name}__")
        rev_method = getattr(np.ndarray, f"__r{name}__")

        def fwd(self, other, _m=fwd_method, _u=ufunc):
            return _operator(_m, _u, self, other, sys.getrefcount(self),
                             sys.getrefcount(other), False)

        def rev(self, other, _m=rev_method, _u=ufunc):
            return _operator(_m, _u, other, self, sys.getrefcount(other),
                             sys.getrefcount(self), True)
        out[f"__{name}__"] = fwd
        out[f"__r{name}__"] = rev
        _CODES.update((fwd.__code__, rev.__code__))
    return out


_CODES = {_operator.__code__}


def variants(program, elisions, wide):
    """((fewest elements, program), ...), most elements first: the program
    with the steps eager NumPy swaps at that length and more (``elisions``:
    (step, the temporary's slot, its itemsize); only temporaries over the
    arrays' elements, ``wide`` slots, reach 256 KiB); below the last,
    ``program``."""
    kept = [(k, isz) for k, s, isz in elisions if s in wide]
    if not kept:
        return ()
    out = []
    for isz in sorted({isz for _, isz in kept}):
        n = -(-MIN_BYTES // isz)
        swap = {k for k, s in kept if s >= isz}
        steps = [Step(st.ufunc, st.chars, st.ins[::-1], st.out) if k in swap else st
                 for k, st in enumerate(program.steps)]
        out.append((n, Program(steps, program.nslots, program.ninputs, program.result,
                               program.reduce, program.reduce_chars)))
    return tuple(sorted(out, key=lambda v: -v[0]))
