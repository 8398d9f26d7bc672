"""nclx.checked: integer arithmetic that raises instead of wrapping.

>>> import numpy as np, nclx
>>> a = np.array([2**62], dtype=np.int64)
>>> with nclx.checked():
...     a * 4
Traceback (most recent call last):
    ...
OverflowError: integer overflow in multiply (int64): 1 element(s) wrapped

Inside the block, integer ``add``, ``subtract``, ``multiply`` (also their
reductions, e.g. ``a.sum()``), ``negative`` (of the minimum signed integer,
and of any nonzero unsigned value, which wraps), ``absolute`` of the
minimum signed integer, ``square``, ``power`` (a negative exponent is
left to NumPy's ValueError) and ``floor_divide`` (the minimum signed integer
divided by -1; division by zero keeps NumPy's 0 and "divide by zero"
warning) run nclx's checked kernels: C nodes at the front
of those kernel chains that detect wrap-around and raise the FE_OVERFLOW
flag.  ``left_shift`` and ``right_shift`` raise when bits are lost: a left
shift whose result shifted back is not the value, a right shift whose
shifted-out bits are not all zero (``np.int64(3) >> 1`` raises: the shift
dropped a 1 bit) -- "bits lost in right_shift (int64): 1 element(s)".

The mode belongs to the thread that entered the block (and travels with its
calls to nclx's worker threads): other threads keep NumPy's wrap-around.
Reductions inside the block run on one thread, so whether a sum overflows
does not depend on the thread count.

Errors travel through NumPy's own channel: the block sets
``np.errstate(over="log")`` (``over="call"`` where the surrounding mode is
"call", whose callback then gets NumPy's flags) with a writer that turns an
integer overflow into OverflowError, and hands any other overflow (floats)
to the surrounding errstate -- warning, error, print, call or log -- with
NumPy's message, ufunc name included.  The other categories keep their
modes; what NumPy hands the writer for them ("call" and "log" modes) goes
to the surrounding callback or log object unchanged.  An
``np.errstate(over=...)`` inside the block decides for both
(``over="ignore"`` silences integer overflow too).

Not covered (NumPy does not call a replaced loop there): NumPy scalar math
(``np.int64(2**62) * 4``) and ``ufunc.at``.  Not covered either:
``np.divmod`` (its quotient of the minimum by -1 gets NumPy's warning, as
``floor_divide`` did before), ``matmul``/``dot``;
NumPy calls a Python hook makes (they run the kernels directly, not
through the chains: no recursion); and other coroutines of an asyncio
loop while one awaits inside the block (the mode is the thread's, the
errstate the coroutine's: their integer overflow then warns or raises as
NumPy's float-style "overflow encountered", review 20) -- do not await
inside ``checked()``.
"""
import contextlib
import functools
import os
import sys
import threading
import warnings

import numpy as np

from nclx._ncl import forksafe as _forksafe
from nclx._ncl import install as _install
from nclx._ncl import checked as _checked
from nclx._ncl import modes as _modes
from nclx._ncl import hooks as _hooks
from nclx._ncl import targets as _targets

OPS = _checked.OPS
_lock = threading.RLock()    # RLock: a fork from inside its critical section (forksafe)
_forksafe.guard(sys.modules[__name__], "_lock")
_mine = threading.local()          # .n: this thread's share of _shared["users"]
_shared = {"users": 0, "handles": []}
_NAME = "checked"
_FPE_OVERFLOW = 2          # numpy's flag value handed to an errstate "call" callback


class _Writer:
    """The errstate callback of a checked() block: ``over`` is "log" (or
    "call" where the surrounding ``over`` mode is "call", whose callback
    NumPy gives the full flags); every other category keeps its own mode,
    and what NumPy hands this object for those goes to the surrounding
    callback or log object unchanged (before, a float division under
    ``divide="call"`` raised TypeError and one under ``divide="log"`` was
    handled as an overflow)."""

    def __init__(self, mode, call):
        self.mode = mode
        self.call = call

    def _integer_overflow(self):
        info = _modes.take_checked_overflow()
        if info is not None:
            op, dtype, count = info
            if op in ("left_shift", "right_shift"):
                raise OverflowError(f"bits lost in {op} ({dtype}): {count} element(s)")
            raise OverflowError(f"integer overflow in {op} ({dtype}): {count} element(s) wrapped")

    def __call__(self, kind, flag):
        """NumPy's "call" mode: an overflow (when the surrounding mode is
        "call") or another category whose mode is "call"."""
        if kind == "overflow":
            self._integer_overflow()
        if self.call is None:          # NumPy's own complaint
            raise NameError(f"python callback specified for {kind} but no function found.")
        return self.call(kind, flag)

    def write(self, msg):
        """NumPy's "log" mode: an overflow, or another category whose mode is "log"."""
        text = msg.strip()
        if text.startswith("Warning: "):
            text = text[len("Warning: "):]
        if not text.startswith("overflow"):
            if self.call is None:
                raise NameError(f"log specified for {text.split(' encountered', 1)[0]} but no "
                                f"object with write method found.")
            return self.call.write(msg)
        self._integer_overflow()
        kind = text.split(" encountered", 1)[0]
        mode = self.mode
        if mode == "raise":
            raise FloatingPointError(text)
        if mode == "warn":
            warnings.warn(text, RuntimeWarning, stacklevel=2)
        elif mode == "print":
            # NumPy's fprintf(stderr): the process's fd 2, not sys.stderr (a
            # redirect_stderr does not see it; before review 21 it did here)
            try:
                os.write(2, f"Warning: {text}\n".encode())
            except OSError:         # fd 2 closed: fprintf's silence
                pass
        elif mode == "call" and self.call is not None:
            if callable(self.call):
                self.call(kind, _FPE_OVERFLOW)
            else:
                self.call.write(f"Warning: {text}\n")
        elif mode == "log" and self.call is not None:
            self.call.write(f"Warning: {text}\n")


@functools.cache
def _nodes():
    """(hook function, kernel chain name, node data) of each node a block
    adds: resolved once (1.2 ms a block before, 96 chains named each time)."""
    return tuple((fn, _targets.kernel_chain_name(target), addr)
                 for fn, loops in ((_checked.checked_hook_address(), _checked.checked_loops()),
                                   (_checked.counted_hook_address(), _checked.counted_loops()))
                 for target, addr in loops.items())


def _acquire():
    with _lock:
        if _shared["users"] == 0:
            try:
                for fn, chain, addr in _nodes():
                    # at the back: after the user's kernels, whenever
                    # they were registered (before, at the front: those
                    # registered before the block were skipped; review 22)
                    h = _hooks.register_c("kernel", chain, fn, addr, name=_NAME, position="back")
                    _shared["handles"].append(h)
                    h._pin()       # hooks.reset() leaves it to this block
            except BaseException:
                for h in _shared["handles"]:
                    h.remove()
                _shared["handles"].clear()
                raise
        n = getattr(_mine, "n", 0) + 1
        _shared["users"] += 1
        _mine.n = n                     # (no call between: counted together)


def _release():
    with _lock:
        n = _mine.n - 1
        _shared["users"] -= 1
        _mine.n = n
        if _shared["users"] == 0:
            for h in _shared["handles"]:
                h.remove()
            _shared["handles"].clear()


def active():
    """True while this thread is inside a ``nclx.checked()`` block (the mode
    travels with its calls to nclx's worker threads; other threads wrap)."""
    return _modes.checked_depth() > 0


@contextlib.contextmanager
def checked():
    """Make integer add/subtract/multiply/negative/absolute/square/power/
    floor_divide raise OverflowError instead of wrapping, and left_shift/right_shift when
    bits are lost, for this thread, inside the block."""
    with _install.installed():
        depth, mine = _modes.checked_depth(), getattr(_mine, "n", 0)
        try:
            # (an interrupt after any step is undone by the one call below)
            _acquire()
            _modes.checked_enter()
            _modes.take_checked_overflow()   # start clean
            over = np.geterr()["over"]
            # "log" gives the message (the ufunc's name) for the surrounding
            # warn/raise/print/log; a surrounding "call" gets NumPy's flags
            with np.errstate(over="call" if over == "call" else "log",
                             call=_Writer(over, np.geterrcall())):
                yield
        finally:
            _unwind(depth, mine)


def _unwind(depth, mine):
    """Leave what this thread's block entered (its mode, its share of the
    kernel hooks), judged by the state, not by flags an interrupt could
    have stopped short of setting."""
    if _modes.checked_depth() > depth:
        _modes.checked_leave()
    if getattr(_mine, "n", 0) > mine:
        _release()


#: ``nclx.checked.active()``: ``nclx.checked`` is the context manager itself
checked.active = active
