"""Warnings ignored or recorded around nclx's own steps, in the calling
thread only, without ``warnings.catch_warnings``' save and restore of the
process's filters.

``catch_warnings`` saves the whole filter list (and ``showwarning``) on
entry and puts the saved one back on exit.  Python 3.11 keeps one list for
the process, so two threads inside it at once restore each other's copies,
and every thread's warnings follow the filters of whichever thread opened
a scope last.

Here a scope puts one filter entry in front, ``("always", holders,
category, None, 0)``, whose message field ``holders`` is no pattern: the
warnings machinery calls its ``match(text)``, which is true in the threads
that hold a scope of that category only.  ``match`` is a builtin (see
:class:`_Holders`): no Python code of ours runs inside the machinery's walk
over the filters, so no other thread runs in the middle of a walk either.
Every other thread's warnings pass the entry by, to the filters as they
are (an "error" still raises there, a "default" is still shown once).  A
holding thread's warnings reach ``warnings._showwarnmsg`` (the hook
``showwarning`` and ``catch_warnings``' ``record=True`` sit behind, which
neither replaces): while scopes are open it is :func:`_show`, which hands
them to the thread's innermost scope (:func:`recording` appends to its
list, :func:`ignoring` drops them) and every other warning to the hook it
replaced.  Nothing touches the filters' version, so the registries of
warnings already shown once stay (before, every scope reset them: a user's
"default" warning came again after each nclx call; and a warning shown
once from its line is not recorded again from there, as it would not be
shown again).  The entries are counted under a lock and taken away with
``list.remove`` (one step: no other thread's insertion comes between
finding and deleting), when the last scope of their category closes, in
whatever order and thread -- from every filter list they were put in (a
``catch_warnings`` of another thread that copied the list with one in puts
that list back later).

Left process-wide: a filter another thread puts in front while a scope is
open applies to the scope's thread too (its "error" raises there).  A
``catch_warnings`` that another thread opened before a scope and closes
while it is open puts back a list without the scope's entry (Python: it is
not thread-safe); until the scope closes, its warnings follow that list's
filters.  Where Python keeps warning filters per context (``sys.flags.
context_aware_warnings``, Python 3.14), these are plain ``catch_warnings``.
"""
import functools
import os
import re
import sys
import threading
import types
import warnings

__all__ = ["ignoring", "recording"]

_lock = threading.RLock()
_open = {}              # filter entry -> scopes of the process holding it
_homes = {}             # filter entry -> the filter lists it was put into while held
_local = threading.local()
_epoch = 0              # a fork's child counts again: scopes opened before are not its own
_scopes = 0             # scopes open in the process (the hook is in place while any is)
_beneath = None         # the _showwarnmsg that _show replaced (last)
_ORIGINAL = warnings._showwarnmsg


def _context_aware():
    return bool(getattr(sys.flags, "context_aware_warnings", False))


class _Holders(threading.local):
    """The message field of a scope's filter entry.  The warnings machinery
    calls its ``match(text)``, which is builtin so that the machinery's walk
    over the filters runs no Python code of ours.  Python code there lets
    the interpreter switch threads in the middle of the walk, and another
    thread's edit of the list then skips the filter after ours (an "error"
    the user set was passed by) or frees the list being walked (a
    ``catch_warnings`` that closed: a crash).

    Per thread: in a thread that has held a scope of the entry's category,
    ``match`` is ``partial(getattr, box, "held")``, whose ``box.held`` any
    thread that closes one of its scopes sets (the text is getattr's unused
    default); in every other thread it is the class's, an empty set's
    membership test, false."""
    match = frozenset().__contains__

    def __repr__(self):
        category = _categories.get(id(self))
        return f"<nclx: threads in a warnings scope of {getattr(category, '__name__', '?')}>"

    def __reduce__(self):
        # a copy (copy, deepcopy, pickle) of the filters is the same entry:
        # a threading.local cannot be pickled, and a copy of ours would be
        # no entry of ours (never taken away; its thread's switch a copy)
        return _holders_of, (_categories[id(self)],)


def _holders_of(category):
    return _entry(category)[1]


_entries = {}
_twins = {}                 # a category's entry -> its twin (below)
_categories = {}            # id of a _Holders -> its category
_ANY_MODULE = re.compile("")


def _entry(category):
    """The filter entry of a scope of ``category``.  Its twin differs in the
    module field only (a pattern every module name matches, where the entry
    has None), so that the two compare unequal: moving the entry in front
    puts the one not in the list there, then takes the other away with
    ``list.remove``, each a single step no other thread comes between."""
    e = _entries.get(category)
    if e is None:
        with _lock:         # published complete: another thread finds it with its twin
            e = _entries.get(category)
            if e is None:
                holders = _Holders()
                e = ("always", holders, category, None, 0)
                _twins[e] = ("always", holders, category, _ANY_MODULE, 0)
                _categories[id(holders)] = category
                _entries[category] = e
    return e


def _box(entry):
    """The calling thread's switch for ``entry``."""
    holders = entry[1]
    match = holders.__dict__.get("match")
    if match is None:
        match = holders.match = functools.partial(getattr, types.SimpleNamespace(held=False), "held")
    return match.args[0]


def _hold(scope, stack):
    """``scope``'s entry matches in the thread ``stack`` is of while it
    holds a scope of that category."""
    scope._box.held = any(s.category is scope.category for s in stack)


def _ours(item):
    return type(item) is tuple and len(item) == 5 and isinstance(item[1], _Holders)


def _remove(filters, item):
    """Every ``item`` out of ``filters``: ``list.remove`` finds and deletes in
    one step (an index found first may point at a user's filter once another
    thread has put one in front)."""
    while True:
        try:
            filters.remove(item)
        except ValueError:
            return


def _drop(filters, entry):
    if isinstance(filters, list):
        _remove(filters, entry)
        _remove(filters, _twins[entry])


def _to_front(entry):
    """``entry`` (or its twin) ahead of every filter not ours: where a user's
    filter came in front since, the copy not in the list goes in front and
    then the other goes away, so a holding thread never finds neither."""
    filters = warnings.filters
    if not isinstance(filters, list):
        return                      # the machinery refuses every warning anyway
    twin = _twins[entry]
    for item in filters:
        if item is entry or item is twin:
            return
        if not _ours(item):
            break
    fresh, old = entry, twin
    if any(item is entry for item in filters) and not any(item is twin for item in filters):
        fresh, old = twin, entry
    filters.insert(0, fresh)
    _remove(filters, old)
    homes = _homes.setdefault(entry, [])
    if not any(h is filters for h in homes):
        homes.append(filters)


def _take_away(entry):
    """``entry`` out of the filters and of every list it was put into (a
    ``catch_warnings`` of another thread that copied the list with it in
    puts that list back later)."""
    _drop(warnings.filters, entry)
    for filters in _homes.pop(entry, ()):
        _drop(filters, entry)


def _show(msg):
    stack = getattr(_local, "stack", None)
    if stack:
        for scope in reversed(stack):
            if scope.log is not None:
                scope.log.append(msg)
                return
            if issubclass(msg.category, scope.category):
                return
    if getattr(_local, "showing", False):
        below = _ORIGINAL           # a hook above that calls this one back
    else:
        below = _beneath if _beneath is not None else _ORIGINAL
    was, _local.showing = getattr(_local, "showing", False), True
    try:
        below(msg)
    finally:
        _local.showing = was        # a hook above that calls back twice meets it again


class _Scope:
    __slots__ = ("category", "log", "_stack", "_epoch", "_aware", "_box")

    def __init__(self, category, log):
        if not (isinstance(category, type) and issubclass(category, Warning)):
            raise TypeError(f"a warnings scope needs a Warning subclass, not {category!r}")
        self.category, self.log, self._stack, self._aware = category, log, None, None
        self._box = None

    def __enter__(self):
        global _scopes, _beneath
        if self._stack is not None or self._aware is not None:
            raise RuntimeError("a warnings scope is entered once")
        if _context_aware():
            self._aware = warnings.catch_warnings(record=self.log is not None)
            log = self._aware.__enter__()
            warnings.simplefilter("always" if self.log is not None else "ignore", self.category)
            if self.log is not None:
                self.log = log
            return self.log
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        entry = _entry(self.category)
        with _lock:
            stack.append(self)
            self._stack, self._epoch, self._box = stack, _epoch, _box(entry)
            _hold(self, stack)
            _open[entry] = _open.get(entry, 0) + 1
            _scopes += 1
            if warnings._showwarnmsg is not _show:
                _beneath, warnings._showwarnmsg = warnings._showwarnmsg, _show
            _to_front(entry)
        return self.log

    def __exit__(self, *exc):
        global _scopes
        if self._aware is not None:
            aware, self._aware = self._aware, False
            return aware.__exit__(*exc)
        stack, self._stack = self._stack, False
        if stack is None or stack is False:
            return False            # never entered, or left already
        entry = _entry(self.category)
        with _lock:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is self:
                    del stack[i]
                    break
            _hold(self, stack)
            if self._epoch != _epoch:
                return False        # opened before a fork by another thread: not counted here
            n = _open.get(entry, 0) - 1
            if n > 0:
                _open[entry] = n
            else:
                _open.pop(entry, None)
                _take_away(entry)
            _scopes -= 1
            if _scopes <= 0:
                _scopes = 0
                if warnings._showwarnmsg is _show:
                    warnings._showwarnmsg = _beneath if _beneath is not None else _ORIGINAL
        return False


def ignoring(category=Warning):
    """A context manager: warnings of ``category`` (a subclass of Warning)
    that the calling thread issues inside are dropped."""
    return _Scope(category, None)


def recording():
    """A context manager giving a list of the calling thread's warnings
    issued inside (every one, as under ``simplefilter("always")``), as
    ``catch_warnings(record=True)`` gives them; none of them is shown."""
    return _Scope(Warning, [])


def _after_fork_in_child():
    """Only the forking thread lives on in a child: the scopes other threads
    had open there never close, so their entries (and the hook, where this
    thread holds no scope) go now, and the lock is a new one."""
    global _lock, _scopes, _epoch
    _lock = threading.RLock()
    _epoch += 1
    stack = getattr(_local, "stack", None) or []
    counts = {}
    for scope in stack:
        scope._epoch = _epoch
        entry = _entry(scope.category)
        counts[entry] = counts.get(entry, 0) + 1
    for entry in list(_open):
        if entry not in counts:
            _take_away(entry)
    _open.clear()
    _open.update(counts)
    _scopes = len(stack)
    if not stack and warnings._showwarnmsg is _show:
        warnings._showwarnmsg = _beneath if _beneath is not None else _ORIGINAL


if hasattr(os, "register_at_fork"):
    # the lock is held for a few list operations only: the fork waits for them
    os.register_at_fork(before=lambda: _lock.acquire(), after_in_parent=lambda: _lock.release(),
                        after_in_child=_after_fork_in_child)
