"""nclx.checked: integer arithmetic that raises instead of wrapping.

>>> import numpy as np, nclx
>>> a = np.array([2**62], dtype=np.int64)
>>> with nclx.checked():
...     a * 4
Traceback (most recent call last):
    ...
OverflowError: integer overflow in multiply (int64): 1 element(s) wrapped

Inside the block, integer ``add``, ``subtract``, ``multiply`` (also their
reductions, e.g. ``a.sum()``) and ``negative``/``absolute`` of the minimum
signed integer run nclx's checked kernels: C nodes at the front of those
kernel chains that detect wrap-around with the compiler's overflow builtins
and raise the FE_OVERFLOW flag.  NumPy hands that flag to the error callback
the block installs with ``np.errstate(over="call")``, which raises
OverflowError.  A genuine float overflow inside the block is still handled
the way the surrounding ``np.errstate`` says.

Not covered (NumPy does not call a replaced loop there): NumPy scalar math
(``np.int64(2**62) * 4``) and ``ufunc.at``.
"""
import contextlib
import itertools
import warnings

import numpy as np

from nclx import _install
from nclx._ncl import funnel as _funnel
from nclx._ncl import hooks as _hooks
from nclx._ncl.spec import INTS

_ids = itertools.count()
OPS = ("add", "subtract", "multiply", "negative", "absolute")


def _make_callback(previous):
    """The np.errstate callback: integer overflow -> OverflowError; anything
    else is handled as the surrounding errstate said."""
    prev_mode = previous["over"]
    prev_call = np.geterrcall()

    def on_overflow(kind, flag):
        info = _funnel.take_checked_overflow()
        if info is not None:
            op, dtype, count = info
            raise OverflowError(f"integer overflow in {op} ({dtype}): "
                                f"{count} element(s) wrapped")
        if prev_mode == "raise":
            raise FloatingPointError(f"{kind} encountered")
        if prev_mode == "warn":
            warnings.warn(f"{kind} encountered", RuntimeWarning, stacklevel=2)
        elif prev_mode == "print":
            print(f"Warning: {kind} encountered")
        elif prev_mode == "call" and prev_call is not None:
            if callable(prev_call):
                prev_call(kind, flag)
            else:
                prev_call.write(f"Warning: {kind} encountered\n")
        elif prev_mode == "log" and prev_call is not None:
            prev_call.write(f"Warning: {kind} encountered\n")

    return on_overflow


@contextlib.contextmanager
def checked():
    """Make integer add/subtract/multiply/negative/absolute raise
    OverflowError instead of wrapping, inside the block."""
    name = f"checked#{next(_ids)}"
    loops = _funnel.checked_loops()
    fn = _funnel.checked_hook_address()
    handles = []
    with _install.installed():
        try:
            for (op, dtype), addr in loops.items():
                handles.append(_hooks.register_c("kernel", (op, dtype), fn, addr, name=name))
            _funnel.take_checked_overflow()   # start clean
            with np.errstate(over="call", call=_make_callback(np.geterr())):
                yield
        finally:
            for h in handles:
                h.remove()
            _funnel.take_checked_overflow()
