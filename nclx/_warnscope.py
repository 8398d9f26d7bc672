"""Warnings ignored or recorded around nclx's own steps without
``warnings.catch_warnings``' save and restore of the process's filters.

``catch_warnings`` saves the whole filter list (and ``showwarning``) on
entry and puts the saved one back on exit.  Python 3.11 keeps one list for
the process, so two threads inside it at once restore each other's copies:
the second one out puts back the list it saved, with the first one's
"ignore" still in it, and the process ignores that category for good.

Here each scope adds its one filter entry at the front and takes that same
entry (by identity) away again on exit, under a lock and counted, so that
scopes of several threads may open and close in any order and the list is
the same afterwards.  :func:`recording` lists the warnings of the calling
thread only: while some thread records, ``warnings.showwarning`` is a
dispatcher that appends a warning to the list of the thread that issued it
and passes every other thread's on to the function it replaced.

What stays process-wide (the filters are): while a scope is open, other
threads' warnings of its category are ignored (:func:`ignoring`) or shown
whatever their filters say (:func:`recording`; except where that thread
is inside an :func:`ignoring` of the warning's category: the dispatcher
drops it); a ``catch_warnings`` that
another thread opens and closes around one of these scopes can still put
its entry back.  Where Python keeps warning filters per context
(``sys.flags.context_aware_warnings``, Python 3.14), these are plain
``catch_warnings``.
"""
import contextlib
import os
import sys
import threading
import warnings

__all__ = ["ignoring", "recording"]

_lock = threading.Lock()
_open = {}              # filter entry -> number of scopes holding it
_local = threading.local()
_replaced = None        # the showwarning the dispatcher replaced, while it is in place
_recorders = 0


def _context_aware():
    return bool(getattr(sys.flags, "context_aware_warnings", False))


def _mutated():
    """Tell the warnings machinery its filter list changed (its cache of
    warnings already shown depends on it)."""
    tell = getattr(warnings, "_filters_mutated", None) or \
        getattr(warnings, "_filters_mutated_lock_held", None)
    if tell is not None:
        tell()


def _mine():
    held = getattr(_local, "held", None)
    if held is None:
        held = _local.held = {}
    return held


def _add(entry):
    mine = _mine()
    with _lock:
        n = _open.get(entry, 0)
        if n == 0:
            warnings.filters.insert(0, entry)
            _mutated()
        _open[entry] = n + 1
        mine[entry] = mine.get(entry, 0) + 1


def _take_away(entry):
    filters = warnings.filters
    for i, item in enumerate(filters):
        if item is entry:
            del filters[i]
            break
    _mutated()


def _remove(entry):
    mine = _mine()
    with _lock:
        mine[entry] -= 1
        n = _open[entry] - 1
        if n:
            _open[entry] = n
            return
        del _open[entry]
        _take_away(entry)


def _after_fork_in_child():
    """Only the forking thread lives on in a child: the scopes other threads
    had open there never close, so their entries (and the dispatcher, where
    no scope of this thread records) go now, and the lock is a new one."""
    global _lock, _recorders, _replaced
    _lock = threading.Lock()
    mine = _mine()
    for entry in list(_open):
        n = mine.get(entry, 0)
        if n:
            _open[entry] = n
        else:
            del _open[entry]
            _take_away(entry)
    _recorders = len(getattr(_local, "logs", None) or ())
    if _recorders == 0:
        if warnings.showwarning is _dispatch:
            warnings.showwarning = _replaced
        _replaced = None


if hasattr(os, "register_at_fork"):
    # the lock is held for a few list operations only: the fork waits for them
    os.register_at_fork(before=lambda: _lock.acquire(), after_in_parent=lambda: _lock.release(),
                        after_in_child=_after_fork_in_child)


# one entry object per (action, category): equal scopes share it
_entries = {}


def _entry(action, category):
    key = (action, category)
    e = _entries.get(key)
    if e is None:
        e = _entries.setdefault(key, (action, None, category, None, 0))
    return e


@contextlib.contextmanager
def ignoring(category=Warning):
    """Warnings of ``category`` (a subclass of Warning) issued inside are
    dropped."""
    if _context_aware():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category)
            yield
        return
    entry = _entry("ignore", category)
    _add(entry)
    try:
        yield
    finally:
        _remove(entry)


def _dispatch(message, category, filename, lineno, file=None, line=None):
    logs = getattr(_local, "logs", None)
    if logs:
        logs[-1].append(warnings.WarningMessage(message, category, filename, lineno, file, line))
        return
    held = getattr(_local, "held", None)
    if held and any(n and entry[0] == "ignore" and issubclass(category, entry[2])
                    for entry, n in held.items()):
        return      # this thread ignores it: another thread's "always" put it here
    show = _replaced if _replaced is not None else warnings._showwarning_orig
    show(message, category, filename, lineno, file, line)


@contextlib.contextmanager
def recording():
    """A list of the calling thread's warnings issued inside (every one, as
    under ``simplefilter("always")``), as ``catch_warnings(record=True)``
    gives them; none of them is shown."""
    if _context_aware():
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            yield log
        return
    global _replaced, _recorders
    log = []
    logs = getattr(_local, "logs", None)
    if logs is None:
        logs = _local.logs = []
    entry = _entry("always", Warning)
    with _lock:
        if _recorders == 0 or warnings.showwarning is not _dispatch:
            _replaced = warnings.showwarning
            warnings.showwarning = _dispatch
        _recorders += 1
    logs.append(log)
    _add(entry)
    try:
        yield log
    finally:
        _remove(entry)
        logs.pop()
        with _lock:
            _recorders -= 1
            if _recorders == 0:
                if warnings.showwarning is _dispatch:
                    warnings.showwarning = _replaced
                _replaced = None
