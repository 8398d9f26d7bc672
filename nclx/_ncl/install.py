"""install() / uninstall(): the one owner of install state.

NumPy's loops stay swapped while anybody wants them: an explicit
``install()`` (until ``uninstall()``), or any active ``installed()`` block,
``nclx.checked()`` or ``nclx.ledger.recording()`` in any thread -- counted,
so one thread leaving its block does not uninstall nclx under another.
``uninstall()`` restores NumPy at once, whatever is active; blocks entered
before it do nothing when they end.
"""
import contextlib
import contextvars
import sys
import threading
import warnings

from nclx._ncl import copying as _copying
from nclx._ncl import entries as _entries
from nclx._ncl import forksafe as _forksafe
from nclx._ncl import hooks as _hooks
from nclx._ncl import looptable as _looptable
from nclx._ncl import pychain as _pychain
from nclx._ncl import pyfunnel as _pyfunnel
from nclx._ncl import recycle as _recycle
from nclx._ncl import sortcopy as _sortcopy
from nclx._ncl import sorting as _sorting
from nclx.errors import NclxInstallError

_lock = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_lock", threading.RLock)
_state = {"explicit": False, "holds": 0, "funnel_explicit": False, "funnel_holds": 0,
          "generation": 0, "sorts": None, "copies": None}
_local = threading.local()
#: the handler install(recycle=True) replaced, per context: NumPy keeps a
#: handler per contextvars context, so one process-wide slot was overwritten
#: by another context's install and uninstall() gave this context that one
#: (found by review)
_recycle_prev = contextvars.ContextVar("nclx_recycle_prev", default=None)


def _final(ufunc, method, inputs, kwargs):
    # the call itself is not inside a hook; a hook may run next() on another
    # thread, which has no depth (before, an AttributeError; review 22)
    inside = getattr(_local, "depth", 0) > 0
    if inside:
        _local.depth -= 1
    try:
        if method == "__call__":
            return _pyfunnel.call_original(ufunc, inputs, kwargs)
        return getattr(ufunc, method)(*inputs, **kwargs)
    finally:
        if inside:
            _local.depth += 1


def _run_python_funnel(subsystem, ufunc, inputs, kwargs):
    """The Python funnel for plain ndarrays: entered from the ufunc's call."""
    if getattr(_local, "depth", 0):
        # a hook's own NumPy calls do not go through the hooks again
        return _pyfunnel.call_original(ufunc, inputs, kwargs)
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        return _pychain.run_python_chain(subsystem, ufunc, "__call__", inputs, kwargs, _final)
    finally:
        _local.depth -= 1


def _apply():
    """Make NumPy's tables match the state (lock held)."""
    s = _state
    swapped = 0
    if s["explicit"] or s["holds"] > 0:
        if not _entries.installed_count():
            _looptable.check_numpy_layout()
        swapped = _entries.swap_in()
        if s["sorts"] is False:
            _sorting.swap_out()
        else:
            swapped += _sorting.swap_in(require=s["sorts"] is True)
        if s["copies"] is False:
            _copying.swap_out()
        else:
            swapped += _copying.swap_in(require=s["copies"] is True)
        # np.sort's copy and in-order check in one pass: only while nclx
        # has both NumPy's sorts and its copies
        if _sorting.is_swapped() and _copying.is_swapped():
            swapped += _sortcopy.swap_in()
        else:
            _sortcopy.swap_out()
    else:
        _restore()
    if s["funnel_explicit"] or s["funnel_holds"] > 0:
        _pyfunnel.swap_in(_run_python_funnel)
    else:
        _pyfunnel.swap_out()
    return swapped


def _each(parts, done):
    """Call every part in order, whatever an earlier one raised; a part
    that raised is called once more (a Ctrl-C delivered inside it may have
    cut it short; the parts are idempotent), then its first exception goes
    on once the rest have run.  An interrupt between two parts left the
    later ones swapped while the state said uninstalled (review 16)."""
    if not parts:
        return
    try:
        try:
            done.append(parts[0]())
        except BaseException:
            with contextlib.suppress(BaseException):
                done.append(parts[0]())
            raise
    finally:
        _each(parts[1:], done)


def _restore():
    done = []
    _each((_entries.swap_out, _sorting.swap_out, _copying.swap_out, _sortcopy.swap_out,
           _pyfunnel.swap_out), done)
    _hooks.collect()
    pairs = [d for d in done if isinstance(d, tuple)]
    restored = sum(r for r, _ in pairs)
    foreign = sum(f for _, f in pairs)
    if foreign:
        warnings.warn(f"{foreign} NumPy loops had been replaced by someone else after "
                      f"nclx.install(); NumPy's originals were restored", RuntimeWarning,
                      stacklevel=3)
    return restored


def _recycle_on():
    """The recycling handler becomes the current context's (lock held)."""
    current = _recycle.current_handler()
    if not _recycle.is_ours(current):
        _recycle_prev.set(current)
        _recycle.set_handler(_recycle.handler())
    _recycle.set_active(True)


def _recycle_handler_back():
    """Give the current context back the handler install(recycle=True)
    replaced (lock held)."""
    if _recycle.is_ours(_recycle.current_handler()):
        _recycle.set_handler(_recycle_prev.get())   # None: NumPy's default
    _recycle_prev.set(None)


def release_memory():
    """Give memory nclx keeps for reuse back to the OS: the blocks the
    recycling allocator caches and the sort's merge scratch.

    Returns
    -------
    int
        Bytes released.
    """
    return _recycle.trim(0) + _sorting.release()


def install(python_funnel=False, sorts=None, recycle=False, copies=None):
    """Route NumPy's built-in loops through nclx's hook chains.

    Swaps the loops of every op and dtype of the kernel library (both int64
    signatures on LP64) for nclx entry points; NumPy's original loop stays
    reachable as the last node of each kernel chain.  Idempotent.  Refuses
    (:class:`NclxInstallError`) when the running NumPy's ufunc layout is not
    the one nclx was built for.

    Parameters
    ----------
    python_funnel : bool
        Also send calls of those ufuncs on plain ndarrays (``np.add(...)``,
        operators) through the "python" level chains.  Reductions and other
        ufunc methods are not reached this way (NumPy binds them elsewhere);
        nclx-aware arrays reach the python level for every method.
    sorts : bool or None
        Route NumPy's sorts of the fixed-width dtypes (np.sort, np.argsort,
        ndarray.sort/argsort and what calls them) through the Sort chains.
        None (default): where this NumPy sorts through the slots nclx
        replaces (probed once: NumPy 2.0-2.4), else leave them NumPy's;
        True: raise NclxInstallError where it does not; False: never.
    copies : bool or None
        Split NumPy's large copies of a fixed-width dtype to itself
        (``ndarray.copy``, ``np.array``, ``a[...] = b``, the copy in
        ``np.sort``) across nclx's threads, each piece NumPy's own copy loop,
        through the ``copy`` call op (docs/hooks.md).  None (default): where
        NumPy's copy methods have the layout nclx knows (NumPy 2.0-2.5),
        else leave them NumPy's; True: raise NclxInstallError where they do
        not; False: never.
    recycle : bool
        Also make nclx's recycling allocator NumPy's data-allocation
        handler (NEP 49) in the calling context: freed array data of
        1 MiB and more is kept (up to ``nclx.config(recycle_cap=...)``
        bytes, 1 GiB by default) for the next array of its size class.
        False (default) leaves the handler as it is; ``uninstall()`` puts
        the previous handler back and unmaps the cache.  NumPy keeps the
        handler in a contextvar: threads started later begin from NumPy's
        default handler (docs/recycle.md).

    Returns
    -------
    int
        Number of NumPy function pointers (ufunc loops, sort slots, copy
        loop getters) swapped by this call.
    """
    if sorts not in (None, True, False):
        raise TypeError(f"install(sorts=...) takes None, True or False, not {sorts!r}")
    if copies not in (None, True, False):
        raise TypeError(f"install(copies=...) takes None, True or False, not {copies!r}")
    if not isinstance(recycle, bool):
        raise TypeError(f"install(recycle=...) takes True or False, not {recycle!r}")
    if not isinstance(python_funnel, bool):
        # (before, any object: 'no' turned the funnel on; review 23)
        raise TypeError(f"install(python_funnel=...) takes True or False, not "
                        f"{python_funnel!r}")
    with _lock:
        was = dict(_state)
        _state["explicit"] = True
        _state["sorts"] = sorts
        _state["copies"] = copies
        if python_funnel:
            _state["funnel_explicit"] = True
        try:
            swapped = _apply()
        except BaseException:
            _state.update(explicit=was["explicit"], funnel_explicit=was["funnel_explicit"],
                          sorts=was["sorts"], copies=was["copies"])
            _apply()
            raise
        if recycle:
            _recycle_on()
        return swapped


def uninstall():
    """Put back every loop and call entry nclx replaced, exactly, now, and
    the data-allocation handler ``install(recycle=True)`` replaced (in the
    calling context; its cache is unmapped).

    Safe to call when not installed, after hooks raised, and inside blocks
    (which then end without touching NumPy).  Returns the number of loops
    restored.
    """
    with _lock:
        # the quick steps first, the slow one (unmapping the cache) last, each
        # whatever the one before raised, and the handler tried twice: a
        # Ctrl-C delivered as the unmap returned (it ran first) left NumPy's
        # loops and the recycler in place while the state said uninstalled
        # (review 15); one interrupt outside _restore() now leaves a whole state
        try:
            # (one call: blocks entered before must see the new generation
            # whenever they see their holds reset)
            _state.update(explicit=False, holds=0, funnel_explicit=False, funnel_holds=0,
                          sorts=None, copies=None, generation=_state["generation"] + 1)
            _recycle_handler_back()
        finally:
            try:
                restored = _restore()
            finally:
                try:
                    _recycle_handler_back()         # (a no-op unless cut short above)
                finally:
                    _recycle.set_active(False)      # stop caching, unmap the cache
        return restored


def is_installed():
    """True while nclx's entry points are in NumPy's loop tables."""
    return _entries.installed_count() > 0


@contextlib.contextmanager
def installed(python_funnel=False):
    """``with nclx.installed():`` -- NumPy's loops go through nclx inside the
    block.  Counted across threads: NumPy is restored when the last block
    ends (unless ``install()`` was called explicitly)."""
    if not isinstance(python_funnel, bool):
        raise TypeError(f"installed(python_funnel=...) takes True or False, not "
                        f"{python_funnel!r}")
    held = False
    try:
        # (the block is entered inside the try: an interrupt once the hold
        # is counted still gives it back)
        with _lock:
            gen = _state["generation"]
            _state["holds"] += 1
            if python_funnel:
                _state["funnel_holds"] += 1
            held = True
            try:
                _apply()
            except BaseException:
                held = False
                _state["holds"] -= 1
                if python_funnel:
                    _state["funnel_holds"] -= 1
                _apply()
                raise
        yield
    finally:
        if held:
            with _lock:
                if gen == _state["generation"]:
                    _state["holds"] -= 1
                    if python_funnel:
                        _state["funnel_holds"] -= 1
                    _apply()


__all__ = ["install", "uninstall", "is_installed", "installed", "release_memory",
           "NclxInstallError"]
