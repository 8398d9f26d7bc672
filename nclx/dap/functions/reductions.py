"""Reductions over a DistArray's global elements (collective)."""
import numpy as np

from nclx.dap.registry import implements


def _method(name, np_funcs, params):
    def impl(a, *args, **kwargs):
        return getattr(a, name)(*args, **kwargs)
    impl.__name__ = name
    impl.__doc__ = f"``{name}`` of a DistArray: :meth:`DistArray.{name}` ({params})."
    for f in np_funcs:
        implements(f, agreed=True)(impl)


_method("sum", [np.sum], "axis, dtype, out, keepdims, initial, where")
_method("prod", [np.prod], "axis, dtype, out, keepdims, initial, where")
_method("max", [np.max, np.amax], "axis, out, keepdims, initial, where")
_method("min", [np.min, np.amin], "axis, out, keepdims, initial, where")
_method("any", [np.any], "axis, out, keepdims, where")
_method("all", [np.all], "axis, out, keepdims, where")
_method("mean", [np.mean], "axis, dtype, out, keepdims, where")
