"""install() / uninstall(): route ordinary NumPy code through nclx's hooks."""
import contextlib
import threading

from nclx._ncl import funnel as _funnel
from nclx._ncl import hooks as _hooks

_lock = threading.RLock()
_state = {"loops": False, "python_funnel": False}
_local = threading.local()


def _final(ufunc, method, inputs, kwargs):
    if method == "__call__":
        return _funnel.call_original(ufunc, inputs, kwargs)
    return getattr(ufunc, method)(*inputs, **kwargs)


def _run_python_funnel(index, subsystem, ufunc, inputs, kwargs):
    """The Python funnel for plain ndarrays: entered from the ufunc's call."""
    if getattr(_local, "depth", 0):
        # a hook's own NumPy calls do not go through the hooks again
        return _funnel.call_original(ufunc, inputs, kwargs)
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        return _hooks.run_python_chain(subsystem, ufunc, "__call__", inputs, kwargs, _final_guarded)
    finally:
        _local.depth -= 1


def _final_guarded(ufunc, method, inputs, kwargs):
    _local.depth -= 1   # the call itself is not inside a hook
    try:
        return _final(ufunc, method, inputs, kwargs)
    finally:
        _local.depth += 1


def install(python_funnel=False):
    """Route NumPy's built-in loops through nclx's hook chains.

    Swaps the loops of every op and dtype of the kernel library (both int64
    signatures on LP64) for nclx entry points; NumPy's original loop stays
    reachable as the last node of each kernel chain.  Idempotent.

    Parameters
    ----------
    python_funnel : bool
        Also send calls of those ufuncs on plain ndarrays (``np.add(...)``,
        operators) through the "python" level chains.  Reductions and other
        ufunc methods are not reached this way (NumPy binds them elsewhere);
        nclx-aware arrays reach the python level for every method.

    Returns
    -------
    int
        Number of loops swapped by this call.
    """
    with _lock:
        n = _funnel.install_loops()
        _state["loops"] = True
        if python_funnel and not _state["python_funnel"]:
            _funnel.install_vectorcall(_run_python_funnel)
            _state["python_funnel"] = True
        return n


def uninstall():
    """Put back every loop and call entry install() replaced, exactly.

    Safe to call when not installed, and after hooks raised.  Returns the
    number of loops restored.
    """
    with _lock:
        restored, foreign = _funnel.uninstall_loops()
        _funnel.uninstall_vectorcall()
        _state["loops"] = False
        _state["python_funnel"] = False
        _hooks.collect()
        if foreign:
            import warnings
            warnings.warn(f"{foreign} NumPy loops had been replaced by someone else after "
                          f"nclx.install(); NumPy's originals were restored", RuntimeWarning,
                          stacklevel=2)
        return restored


def is_installed():
    """True while nclx's entry points are in NumPy's loop tables."""
    return _funnel.installed_count() > 0


@contextlib.contextmanager
def installed(python_funnel=False):
    """``with nclx.installed():`` -- install for the block, then restore
    NumPy as it was (uninstalled only if it was not installed before)."""
    with _lock:
        was = is_installed()
        had_funnel = _state["python_funnel"]
        install(python_funnel=python_funnel)
    try:
        yield
    finally:
        with _lock:
            if not was:
                uninstall()
            elif python_funnel and not had_funnel:
                _funnel.uninstall_vectorcall()
                _state["python_funnel"] = False
