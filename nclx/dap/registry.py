"""Which NumPy functions a DistArray implements (``__array_function__``).

A NumPy function called with a DistArray argument reaches
:func:`dispatch`; a function registered with :func:`implements` runs
(every rank must make the same call: the implementations are collective),
any other raises ``TypeError`` naming the function and the way out
(``da.gather()``).  Nothing falls back to NumPy silently: a silent gather of
a distributed array is a wrong answer or an out-of-memory on a large one.
"""
import numpy as np

_HANDLED = {}


def _name(func):
    module = getattr(func, "__module__", None) or "numpy"
    module = "np" if module == "numpy" else module.replace("numpy.", "np.")
    return f"{module}.{getattr(func, '__name__', repr(func))}"


def implements(np_func):
    """Decorator: register ``impl`` as what ``np_func`` does for DistArrays.

    ``impl`` takes ``np_func``'s arguments.  Registering a function twice
    raises ``ValueError`` (two modules would otherwise race on import order)."""
    if not callable(np_func):
        raise TypeError(f"implements() needs a NumPy function, not {type(np_func).__name__}")

    def register(impl):
        if np_func in _HANDLED:
            raise ValueError(f"{_name(np_func)} is already implemented for DistArray "
                             f"(by {_HANDLED[np_func].__module__}.{_HANDLED[np_func].__name__})")
        _HANDLED[np_func] = impl
        return impl
    return register


def implemented():
    """The NumPy functions a DistArray implements, as ``{name: function}``."""
    return {_name(f): f for f in _HANDLED}


def refusal(what):
    """The TypeError for a NumPy operation a DistArray does not implement."""
    return TypeError(
        f"{what} is not implemented for nclx.dap.DistArray: nothing is gathered implicitly. "
        f"Gather explicitly (da.gather(root) returns the global NumPy array on root, "
        f"da.gather(root=None) on every rank) and call NumPy on that, or register an "
        f"implementation with nclx.dap.implements({what})")


def dispatch(own, func, types, args, kwargs):
    """``__array_function__``'s body for the array class ``own``: the
    registered implementation, or a TypeError naming ``func``.  Foreign array
    types defer (NotImplemented)."""
    if not all(issubclass(t, (own, np.ndarray)) for t in types):
        return NotImplemented
    impl = _HANDLED.get(func)
    if impl is None:
        raise refusal(_name(func))
    return impl(*args, **kwargs)
