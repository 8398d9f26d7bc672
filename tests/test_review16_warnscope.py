"""Review 16 of nclx._warnscope: a scope's effect is its own thread's only.

Before, a scope put a process-wide filter entry in front ("ignore" of its
category, or "always" for every warning) and swapped ``warnings.showwarning``
for a dispatcher.  Other threads' warnings were then ignored, or shown where
their filters made them errors; a recording thread's warnings went into
another thread's ``catch_warnings(record=True)`` log or to a user's
``showwarning``; a user filter equal to the scope's entry was lost; every
scope reset the "warned once" registries (a "default" warning shown again
after each nclx call); a scope closed by another thread (a generator)
raised KeyError and left its filter in place.  Now the entry matches in the
threads that hold such a scope only, and ``warnings._showwarnmsg`` sends
those threads' warnings to their innermost scope."""
import threading
import warnings

import numpy as np
import pytest

from nclx._warnscope import ignoring, recording

CW = np.exceptions.ComplexWarning


def _texts(log):
    return [str(w.message) for w in log]


class _Turns:
    """Steps of two threads run one at a time, in the given order."""

    def __init__(self, steps):
        self.steps = steps
        self.turns = [threading.Event() for _ in steps] + [threading.Event()]
        self.errors = []

    def _worker(self, me):
        for k, (who, fn) in enumerate(self.steps):
            if who != me:
                continue
            if not self.turns[k].wait(10):
                self.errors.append(f"turn {k} not reached")
                return
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported below
                self.errors.append(exc)
            self.turns[k + 1].set()

    def run(self):
        threads = [threading.Thread(target=self._worker, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        self.turns[0].set()
        for t in threads:
            t.join(20)
        assert not any(t.is_alive() for t in threads), "a thread hung"
        assert not self.errors, self.errors


@pytest.mark.parametrize("scope, action", [("ignoring", "ignore"), ("recording", "always")])
def test_a_user_filter_added_inside_a_scope_survives_it(scope, action):
    """``filterwarnings(..., append=True)`` inside the scope: the user's
    entry was equal to the scope's, so not added, and gone afterwards."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        with (ignoring(CW) if scope == "ignoring" else recording()):
            warnings.filterwarnings(action, category=CW if scope == "ignoring" else Warning,
                                    append=True)
        assert warnings.filters == [(action, None, CW if scope == "ignoring" else Warning,
                                     None, 0)]


def test_a_default_warning_is_shown_once_across_scopes():
    """Each scope reset the registries of warnings shown once: the user's
    warning under "default" came again after every scope."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("default")
        for _ in range(3):
            warnings.warn("the user's own", UserWarning)
            with ignoring(CW):
                pass
    assert _texts(rec) == ["the user's own"]


@pytest.mark.parametrize("scope", ["ignoring", "recording"])
def test_another_threads_error_filter_still_raises(scope):
    """Thread 0 holds a scope; thread 1's ComplexWarning, which the
    filters make an error, raises (before: ignored, or shown)."""
    raised = []
    holder = ignoring(CW) if scope == "ignoring" else recording()

    def other():
        try:
            warnings.warn("other's cast", CW)
        except CW:
            raised.append(True)

    with warnings.catch_warnings():
        warnings.simplefilter("error", CW)
        _Turns([(0, holder.__enter__), (1, other),
                (0, lambda: holder.__exit__(None, None, None))]).run()
    assert raised == [True]


def test_another_threads_ignoring_leaves_a_recording_complete():
    """Thread 1 opens ignoring(ComplexWarning) after thread 0 began to
    record: thread 0 still records its ComplexWarning (before, the "ignore"
    entry went in front of the recording's "always")."""
    rec, ign = recording(), ignoring(CW)
    logs = []
    with warnings.catch_warnings():
        _Turns([(0, lambda: logs.append(rec.__enter__())), (1, ign.__enter__),
                (0, lambda: warnings.warn("mine", CW)),
                (1, lambda: ign.__exit__(None, None, None)),
                (0, lambda: rec.__exit__(None, None, None))]).run()
    assert _texts(logs[0]) == ["mine"]


def test_recording_while_another_thread_catches_warnings():
    """Thread 1's catch_warnings(record=True) opened while thread 0 records
    took thread 0's warnings into its own log (it resets showwarning)."""
    rec = recording()
    logs, theirs = [], []
    cw = warnings.catch_warnings(record=True)
    with warnings.catch_warnings():
        show = warnings.showwarning
        _Turns([(0, lambda: logs.append(rec.__enter__())),
                (1, lambda: theirs.append(cw.__enter__())),
                (0, lambda: warnings.warn("mine", UserWarning)),
                (1, lambda: cw.__exit__(None, None, None)),
                (0, lambda: rec.__exit__(None, None, None))]).run()
        assert warnings.showwarning is show
    assert _texts(logs[0]) == ["mine"] and theirs[0] == []


def test_recording_while_the_user_replaces_showwarning():
    shown = []
    with warnings.catch_warnings():
        show = warnings.showwarning
        with recording() as log:
            warnings.showwarning = lambda *a, **k: shown.append(str(a[0]))
            warnings.warn("mine", UserWarning)
            warnings.showwarning = show
    assert _texts(log) == ["mine"] and shown == []


def test_a_scope_closed_by_another_thread():
    """A generator suspended in ignoring() and closed by another thread:
    before, KeyError, the entry left in the filters, and the first thread
    still dropping its ComplexWarnings."""
    def gen():
        with ignoring(CW):
            yield

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        g = gen()
        next(g)
        errors = []

        def close():
            try:
                g.close()
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors.append(exc)

        t = threading.Thread(target=close)
        t.start()
        t.join(10)
        assert not errors, errors
        assert warnings.filters == before
        with recording():       # any recording scope in place (the old dispatcher)
            pass
        warnings.warn("mine, after", CW)
    assert _texts(rec) == ["mine, after"]


def test_recording_scopes_closed_out_of_order():
    """A generator's recording closed while a later one is open in the same
    thread: before, it took the later scope's log away."""
    def gen():
        with recording():
            yield

    g = gen()
    next(g)
    with recording() as log:
        g.close()
        warnings.warn("mine", UserWarning)
    assert _texts(log) == ["mine"]


def test_ignoring_after_another_thread_resets_the_filters():
    """Thread 1's resetwarnings() while thread 0 ignores ComplexWarnings:
    thread 0's are still not shown."""
    ign = ignoring(CW)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        _Turns([(0, ign.__enter__), (1, warnings.resetwarnings),
                (0, lambda: warnings.warn("mine", CW)),
                (0, lambda: ign.__exit__(None, None, None))]).run()
    assert rec == []


def test_ignoring_refuses_what_is_not_a_warning_category():
    """ignoring(5) put an entry in the filters whose category made every
    thread's warnings raise TypeError."""
    with warnings.catch_warnings():
        before = list(warnings.filters)
        with pytest.raises(TypeError, match="Warning"):
            with ignoring(5):
                pass
        assert warnings.filters == before


def test_an_error_inside_ignoring_and_the_innermost_scope_wins():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before, show = list(warnings.filters), warnings.showwarning
        with pytest.raises(RuntimeWarning):
            with ignoring(CW):
                warnings.warn("ignored", CW)
                warnings.warn("an error", RuntimeWarning)
        with recording() as outer:
            with ignoring(CW):
                warnings.warn("ignored", CW)
                warnings.warn("recorded", RuntimeWarning)
                with recording() as inner:
                    warnings.warn("inner", CW)
        assert _texts(outer) == ["recorded"] and _texts(inner) == ["inner"]
        assert warnings.filters == before and warnings.showwarning is show


def test_recwarn_sees_what_is_issued_outside_the_scope(recwarn):
    warnings.simplefilter("always")
    warnings.warn("before", UserWarning)
    with recording() as log:
        warnings.warn("inside", UserWarning)
    with ignoring(UserWarning):
        warnings.warn("ignored", UserWarning)
    warnings.warn("after", UserWarning)
    assert _texts(recwarn) == ["before", "after"] and _texts(log) == ["inside"]


def test_catch_warnings_of_another_thread_around_a_scope_leaves_no_entry():
    """Thread 1's catch_warnings copied the filters with thread 0's entry in
    them and put that list back after thread 0's scope closed: the entry
    stayed in the process's filters."""
    ign, cw = ignoring(CW), warnings.catch_warnings()
    with warnings.catch_warnings():
        before = list(warnings.filters)
        _Turns([(0, ign.__enter__), (1, cw.__enter__),
                (0, lambda: ign.__exit__(None, None, None)),
                (1, lambda: cw.__exit__(None, None, None))]).run()
        assert warnings.filters == before


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_fork_inside_the_forking_threads_own_scopes():
    """The child keeps the forking thread's scopes: they still record and
    ignore there, and close leaving the filters and the hook as before."""
    import faulthandler
    import os
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before, hook = list(warnings.filters), warnings._showwarnmsg
        with recording() as log, ignoring(CW):
            pid = os.fork()
            if pid == 0:
                faulthandler.dump_traceback_later(10, exit=True)
                ok = False
                try:
                    warnings.warn("ignored", CW)
                    warnings.warn("recorded", UserWarning)
                    ok = _texts(log) == ["recorded"]
                finally:
                    os._exit(0 if ok else 3)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        assert warnings.filters == before and warnings._showwarnmsg is hook
    assert status == 0
