"""nclx._warnscope: warnings ignored or recorded around nclx's own steps with
scopes of several threads opening and closing in any order, the process's
filters left as they were.

Before, nclx.dap silenced its own casts' ComplexWarnings (and recorded
NumPy's warnings on probes) with ``warnings.catch_warnings``, which saves
the process's whole filter list and restores it on exit: two threads whose
scopes interleaved left an "ignore" filter in place for good
(``test_complex_casts_quiet_of_two_threads_leaves_the_filters``)."""
import threading
import warnings

import numpy as np
import pytest

from nclx._warnscope import ignoring, recording
from nclx.dap.complexcasts import ComplexCasts

CW = np.exceptions.ComplexWarning


def _in_turns(steps):
    """Run ``steps`` (a list of (thread index, callable)) in that order, each
    in its thread (two threads), one at a time."""
    turns = [threading.Event() for _ in steps] + [threading.Event()]
    errors = []

    def worker(me):
        for k, (who, fn) in enumerate(steps):
            if who != me:
                continue
            assert turns[k].wait(10), "turn not reached"
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            turns[k + 1].set()

    threads = [threading.Thread(target=worker, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    turns[0].set()
    for t in threads:
        t.join(20)
        assert not t.is_alive(), "a thread hung"
    assert not errors, errors


def _filters():
    return list(warnings.filters)


def test_complex_casts_quiet_of_two_threads_leaves_the_filters():
    x = np.ones(3, complex)
    casts = [ComplexCasts(np.sum, (x,), {"out": np.zeros((), float)}, np.ndarray)
             for _ in range(2)]
    assert all(c.active for c in casts)
    with warnings.catch_warnings():
        before = _filters()
        _in_turns([(0, casts[0].quiet), (1, casts[1].quiet),
                   (0, casts[0].close), (1, casts[1].close)])
        assert _filters() == before


@pytest.mark.parametrize("order", ["nested", "crossed"])
def test_ignoring_scopes_of_two_threads_in_any_order(order):
    scopes = [ignoring(CW), ignoring(CW)]

    with warnings.catch_warnings():
        warnings.simplefilter("error", CW)
        before = _filters()
        first_out = 0 if order == "crossed" else 1
        _in_turns([(0, scopes[0].__enter__), (1, scopes[1].__enter__),
                   (first_out, lambda: scopes[first_out].__exit__(None, None, None)),
                   (1 - first_out, lambda: scopes[1 - first_out].__exit__(None, None, None))])
        assert _filters() == before
        with pytest.raises(CW):         # the user's "error" is back in force
            warnings.warn("after", CW)


def test_ignoring_drops_its_category_only():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with ignoring(CW):
            warnings.warn("cast", CW)
            warnings.warn("other", RuntimeWarning)
        warnings.warn("cast after", CW)
    assert [(w.category, str(w.message)) for w in rec] == \
        [(RuntimeWarning, "other"), (CW, "cast after")]


def test_recording_lists_the_calling_threads_warnings_only():
    inside = threading.Event()
    done = threading.Event()
    other = []

    def other_thread():
        assert inside.wait(10)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            warnings.warn("from the other thread", UserWarning)
        other.extend(rec)
        done.set()

    t = threading.Thread(target=other_thread)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # recording shows every warning anyway
        before_show = warnings.showwarning
        before = _filters()
        t.start()
        with recording() as log:
            warnings.warn("mine", RuntimeWarning)
            inside.set()
            assert done.wait(10)
            warnings.warn("mine again", CW)
        t.join(10)
        assert [(w.category, str(w.message)) for w in log] == \
            [(RuntimeWarning, "mine"), (CW, "mine again")]
        assert warnings.showwarning is before_show
        assert _filters() == before
    assert [str(w.message) for w in other] == ["from the other thread"]


def test_recording_nested_and_raising():
    with warnings.catch_warnings():
        before = _filters()
        show = warnings.showwarning
        with pytest.raises(ZeroDivisionError):
            with recording() as outer:
                warnings.warn("a", UserWarning)
                with recording() as inner:
                    warnings.warn("b", UserWarning)
                warnings.warn("c", UserWarning)
                1 / 0
        assert [str(w.message) for w in outer] == ["a", "c"]
        assert [str(w.message) for w in inner] == ["b"]
        assert _filters() == before and warnings.showwarning is show


def test_many_threads_recording_and_ignoring_at_once():
    """Eight threads, each 200 times in a recording or an ignoring scope
    with its own warnings: each records exactly its own; the filters and
    showwarning are the same afterwards."""
    bad = []
    start = threading.Barrier(8)

    def work(i):
        start.wait(10)
        for k in range(200):
            if i % 2:
                with recording() as log:
                    warnings.warn(f"t{i} k{k}", UserWarning)
                if [str(w.message) for w in log] != [f"t{i} k{k}"]:
                    bad.append((i, k, [str(w.message) for w in log]))
            else:
                with ignoring(CW):
                    pass

    with warnings.catch_warnings():
        before, show = _filters(), warnings.showwarning
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
        assert _filters() == before and warnings.showwarning is show
    assert not bad, bad[:3]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_fork_while_another_thread_is_in_a_scope():
    """The child of a fork made while another thread holds an ignoring and a
    recording scope open: those scopes never close there, so their filter
    entries and the dispatcher are gone in the child, and new scopes work
    (the lock is free)."""
    import faulthandler
    import os
    opened, release = threading.Event(), threading.Event()

    def holder():
        with ignoring(CW), recording():
            opened.set()
            release.wait(10)

    with warnings.catch_warnings():
        before, show = _filters(), warnings.showwarning
        t = threading.Thread(target=holder)
        t.start()
        assert opened.wait(10)
        pid = os.fork()
        if pid == 0:
            faulthandler.dump_traceback_later(10, exit=True)
            ok = False
            try:
                ok = _filters() == before and warnings.showwarning is show
                with recording() as log:
                    warnings.warn("child", UserWarning)
                with ignoring(CW):
                    pass
                ok = ok and [str(w.message) for w in log] == ["child"] and \
                    _filters() == before and warnings.showwarning is show
            finally:
                os._exit(0 if ok else 3)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        release.set()
        t.join(10)
        assert _filters() == before and warnings.showwarning is show
    assert status == 0


def test_a_thread_ignoring_while_another_records_still_ignores():
    """Thread A records (its "always" entry in front), thread B ignores
    ComplexWarnings: B's own ComplexWarning is not shown (before the
    dispatcher looked at B's scopes, it was printed: the "always" entry
    came first)."""
    shown = []
    ready, recorded = threading.Event(), threading.Event()

    def b():
        with ignoring(CW):
            ready.set()
            assert recorded.wait(10)
            warnings.warn("B's own cast", CW)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda *a, **k: shown.append(str(a[0]))
        t = threading.Thread(target=b)
        t.start()
        assert ready.wait(10)
        with recording() as log:
            recorded.set()
            t.join(10)
        assert not t.is_alive()
    assert shown == [] and log == []
