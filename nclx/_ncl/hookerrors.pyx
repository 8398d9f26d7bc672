# cython: wraparound=True, boundscheck=True
"""Exceptions raised by hooks inside NumPy's loops.

NumPy does not check for Python errors after numeric loops, so such an
exception cannot travel through it: it goes to ``sys.unraisablehook`` and
is kept, per node, for the hook's handle (``handle.last_error``,
``handle.errors`` in nclx._ncl.hooks).  A KeyboardInterrupt is delivered
again once Python runs.
"""
from cpython.exc cimport PyErr_Clear, PyErr_SetInterrupt
import sys
import threading
import weakref

from nclx._ncl.ncl cimport ncl_node
from nclx._ncl import registry as _registry

__all__ = ["Unraisable"]

cdef dict _errors = {}             # node address -> (count, last exception)
# serial of a live node -> its Handle (nclx._ncl.hooks), told the node's
# last record when the node is freed: the address may then be another
# node's, whose record the handle must not read (found by review 18)
_watchers = weakref.WeakValueDictionary()


def watch(serial, handle):
    """``handle._freed(record)`` runs when the node of ``serial`` is freed."""
    _watchers[serial] = handle


def _forget_node(size_t address):
    record = _errors.pop(address, None)
    handle = _watchers.pop(_registry.node_serial(address), None)
    if handle is not None:
        handle._freed(record)

_registry.set_free_observer(_forget_node)


cdef tuple ncl_hook_record(size_t address):
    """(count, last exception) of the node at ``address``, or None."""
    return _errors.get(address)


ctypedef int (*_report_fn)(ncl_node *, object, str) noexcept


cdef void ncl_hook_report(ncl_node *node, object hook, str what) noexcept:
    """Keep and report the exception being handled, raised by ``hook``
    (described as ``what``) inside a loop: counted for ``node``.  Nothing
    leaves it: near Python's recursion limit, where even catching fails,
    the report is dropped without Python (before, Cython printed "Error in
    sys.excepthook" on stderr; review 25)."""
    # called as a noexcept function (Cython's own check of the -1 would jump
    # to this function's unraisable exit)
    if (<_report_fn>_report)(node, hook, what) == -1:
        PyErr_Clear()


cdef int _report(ncl_node *node, object hook, str what) except -1:
    exc = sys.exc_info()[1]
    try:
        key = <size_t>node
        count, _ = _errors.get(key, (0, None))
        _errors[key] = (count + 1, exc)
        if isinstance(exc, KeyboardInterrupt):
            _interrupt_later()
            return 0
        sys.unraisablehook(Unraisable(exc, f"Exception ignored in nclx {what}", hook))
    except BaseException as e:
        # (an unraisablehook that raises, no memory): nothing may leave a loop
        if isinstance(e, KeyboardInterrupt):
            _interrupt_later()
    return 0


cdef void _interrupt_later() noexcept:
    """A KeyboardInterrupt raised in a hook (Ctrl-C while it ran) cannot
    leave NumPy's loop: the call completes and the interrupt is delivered
    again as SIGINT once Python runs (on the main thread, where Python
    handles signals; elsewhere it is only recorded)."""
    if threading.current_thread() is threading.main_thread():
        PyErr_SetInterrupt()


class Unraisable:
    """The argument ``sys.unraisablehook`` takes."""
    def __init__(self, exc, msg, obj):
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = msg
        self.object = obj
