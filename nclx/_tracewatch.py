"""What watches a traced call's thread (nclx._trace): a profiler, tracer or
debugger already set (:func:`watchers`: a fused function then runs as the
plain function), and :class:`_Watch` around each traced run -- the
function's reads of the errstate (the trace's own, not the caller's) and
the profile or trace functions it sets."""
import sys
import threading

import numpy as np

__all__ = ["HOOK_SETTERS", "watchers"]


#: NumPy's functions that read the errstate a trace replaces with its own
_ERRSTATE_READS = frozenset(f.__code__ for f in (np.geterr, np.geterrcall)
                            if hasattr(f, "__code__"))

#: names whose call sets a profile or trace function (nclx._fusecode.sets_hooks)
HOOK_SETTERS = frozenset("setprofile settrace setprofile_all_threads settrace_all_threads "
                         "monitoring breakpoint set_trace".split())


def watchers():
    """Why a profiler, tracer or debugger watches this thread (sys.setprofile,
    sys.settrace, a sys.monitoring tool), or None: a fused function then runs
    as the plain function, whose calls the watcher sees."""
    if sys.getprofile() is not None:
        return "a profiler is set (sys.setprofile)"
    if sys.gettrace() is not None:
        return "a tracer is set (sys.settrace: a debugger or coverage)"
    mon = getattr(sys, "monitoring", None)
    if mon is not None:
        for i in range(6):
            if mon.get_tool(i) is not None:
                return f"a sys.monitoring tool is registered ({mon.get_tool(i)!r})"
    return None


def _hooks():
    """This thread's profile and trace functions; the process's: threading's
    and the sys.monitoring tools with their events."""
    mon = getattr(sys, "monitoring", None)
    tools = () if mon is None else tuple((mon.get_tool(i), mon.get_events(i)) for i in range(6))
    return (sys.getprofile(), sys.gettrace(), getattr(threading, "_profile_hook", None),
            getattr(threading, "_trace_hook", None), tools)


class _Watch:
    """Around a traced call: whether the function (not nclx) read the
    errstate -- np.geterr() or np.geterrcall() -- which during the trace is
    the trace's own, not the caller's, so a branch taken on it is not the
    one eager calls take (found by review: ``x*2.0 if np.geterr()["divide"]
    == "warn" else x*3.0`` fused as x*3).  Watched (``watch``) with a
    profile function of this thread alone; where one is set already, it is
    left alone and ``why`` says the trace cannot watch.  And whether the
    function set a profile or trace function (its sys.setprofile replaced
    the watcher, which leaving set None where the plain function leaves the
    user's; found by review): the hooks are restored as they were, and
    ``hooks`` says why the function runs eagerly (for good: each call sets
    them)."""

    __slots__ = ("why", "unwatched", "hooks", "shared", "_watch", "_hook", "_before", "_changed")

    def __init__(self, watch=True):
        self.why = self.hooks = self.shared = self._hook = self._changed = None
        self.unwatched = False
        self._watch = watch

    def _profile(self, frame, event, arg):
        if event == "call" and frame.f_code in _ERRSTATE_READS and self.why is None:
            caller = frame.f_back
            module = "" if caller is None else str(caller.f_globals.get("__name__", ""))
            if not module.startswith("nclx."):
                self.why = (f"the function reads np.{frame.f_code.co_name}() (a trace runs "
                            f"under an errstate of its own)")

    def __enter__(self):
        self._before = _hooks()
        if self._watch and sys.getprofile() is not None:
            self.why = ("a profiler is set (sys.setprofile): the trace cannot watch the "
                        "function's reads of the errstate")
            self.unwatched = True
        elif self._watch:
            self._hook = self._profile       # one bound method: compared by identity
            try:
                sys.setprofile(self._hook)
            except BaseException:
                # a Ctrl-C as it returned: __exit__ never runs (before, the
                # watcher stayed this thread's profiler, and every later
                # @fuse call ran unfused; review 25)
                sys.setprofile(self._before[0])
                self._hook = None
                raise
        return self

    def __exit__(self, *exc):
        try:
            self._leave()
        except BaseException:
            self._leave()           # once more (a Ctrl-C cut it short), then raise
            raise
        return False

    def _leave(self):
        """Restore this thread's hooks (idempotent: its decision is kept)."""
        before = self._before
        if self._changed is None:
            self._changed = sys.getprofile() is not (
                before[0] if self._hook is None else self._hook) or \
                sys.gettrace() is not before[1]
        if self._changed:
            # this thread's: the function set them (restored exactly and at
            # once; the eager run sets them again, as the plain function does)
            sys.setprofile(before[0])
            sys.settrace(before[1])
            self.hooks = ("the function sets a profile or trace function (sys.setprofile, "
                          "sys.settrace): the plain function leaves it set")
        elif self._hook is not None:
            sys.setprofile(before[0])
        now = _hooks()
        if now[2] is not before[2] or now[3] is not before[3] or now[4] != before[4]:
            # the process's: maybe another thread's, so left as they are
            self.shared = ("a profile or trace hook of the process changed during the trace "
                           "(threading.setprofile/settrace, sys.monitoring)")
        self._hook = None
