"""Review 17b of nclx._warnscope: a category's entry is published whole,
copies of the filters work while a scope is open, and a hook that calls
the one it replaced twice does not recurse."""
import copy
import pickle
import subprocess
import sys
import textwrap
import warnings

from nclx._warnscope import ignoring, recording


_FIRST_USE = textwrap.dedent("""
    import threading, warnings
    import nclx._warnscope as ws

    errors, fired = [], []

    def second():
        try:
            with ws.ignoring(Cat):
                warnings.warn("x", Cat)
        except Exception as exc:
            errors.append(repr(exc))

    class Meta(type):
        def __hash__(cls):
            # in the main thread, once the category's entry can be found:
            # another thread's first scope of it runs now
            if (not fired and threading.current_thread() is threading.main_thread()
                    and any(k is cls for k in list(ws._entries))):
                fired.append(threading.Thread(target=second))
                fired[0].start()
                fired[0].join(0.5)  # after the fix it waits for the lock
            return id(cls) >> 4

    class Cat(UserWarning, metaclass=Meta):
        pass

    with ws.ignoring(Cat):
        warnings.warn("y", Cat)
    fired[0].join(10)
    assert not fired[0].is_alive(), "hung"
    assert not errors, errors
    assert not any(ws._ours(f) for f in warnings.filters), warnings.filters
    assert warnings._showwarnmsg is ws._ORIGINAL
    print("ok")
""")


def test_a_categorys_first_scopes_in_two_threads_at_once():
    """Before: the entry was in ``_entries`` before its twin was made, so a
    second thread's first scope of the category found it and raised
    KeyError in ``__enter__``, its scope left counted and held (its thread
    ignored the category from then on, the hook stayed installed)."""
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", _FIRST_USE], cwd="/",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, (r.stdout[-2000:], r.stderr[-2000:])


def test_the_filters_copy_deepcopy_and_pickle_while_a_scope_is_open():
    """Before: ``copy.deepcopy(warnings.filters)`` and pickle raised
    "cannot pickle '_Holders' object" while any thread held a scope.  The
    copies hold the very entry, so a copy put back is taken away with it."""
    before = list(warnings.filters)
    with ignoring(RuntimeWarning), recording():
        live = list(warnings.filters)
        deep = copy.deepcopy(warnings.filters)
        back = pickle.loads(pickle.dumps(warnings.filters))
        assert deep == live and back == live
        assert [f for f in deep if f not in before][:2] == live[:2]
        assert copy.copy(live[0][1]) is live[0][1]
        warnings.filters[:] = back       # a user's restore of the copy
    assert warnings.filters == before


def test_a_hook_that_calls_the_one_it_replaced_twice():
    """A hook put over nclx's while a scope is open, calling it twice per
    warning, under which a second scope opens.  Before: the flag that sends
    a hook's call-back to Python's own was cleared by the first call back,
    so the second went round again: RecursionError."""
    hook = warnings._showwarnmsg
    calls = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        with ignoring(RuntimeWarning):
            prev = warnings._showwarnmsg

            def twice(msg):
                calls.append(msg)
                prev(msg)
                prev(msg)

            warnings._showwarnmsg = twice
            with ignoring(DeprecationWarning), warnings.catch_warnings(record=True) as log:
                warnings.simplefilter("always")
                warnings.warn("x", UserWarning)
    finally:
        sys.setrecursionlimit(limit)
        warnings._showwarnmsg = hook
    assert len(calls) == 1
    assert [str(w.message) for w in log] == ["x", "x"]
