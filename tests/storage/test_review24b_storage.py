"""Review 24 (part 2), storages with threads, fork and NumPy functions:

- a ufunc on a managed storage read, computed and marked its output in
  separate steps: a device write another thread made to another row of the
  same buffer in between was lost (472 of 2,000 cells);
- a forked child waited for ever on a storage whose sync lock another
  thread held at the fork;
- NumPy functions that write into an argument (np.copyto, np.put,
  np.putmask, np.place, np.fill_diagonal, np.put_along_axis, out= of
  np.cumsum/np.round/np.dot/np.concatenate/np.einsum) refused a storage there
  ("copyto() argument 1 must be a numpy.ndarray") where an ndarray works;
- ``np.add.at`` wrote into a storage over read-only bytes (NumPy 2.4 does
  so for a read-only ndarray too; a storage must not change ``bytes``)."""
import contextlib
import os
import sys
import threading

import numpy as np
import pytest

import nclx
import nclx.storage as ns
from nclx.storage import devices
from storage_helpers import emu  # noqa: F401 - a fixture


@pytest.mark.parametrize("op", ["iadd", "add_out", "negative_out"])
def test_device_writes_of_another_row_are_not_lost(emu, op):  # noqa: F811
    width = 1500
    s = ns.zeros((2, width), dtype=np.int64, device="gpu")
    v0, v1 = s[0], s[1]
    done = threading.Event()
    calls = {"iadd": lambda: v0.__iadd__(1), "add_out": lambda: np.add(v0, 1, out=v0),
             "negative_out": lambda: np.negative(v0, out=v0)}[op]

    def a():
        while not done.is_set():
            calls()

    def b():
        with devices.use(emu):
            for j in range(width):
                v1[j:j + 1] = emu.to_device(np.array([j + 1]))
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ta, tb = threading.Thread(target=a), threading.Thread(target=b)
        ta.start()
        tb.start()
        tb.join(60)
        done.set()
        ta.join(60)
    finally:
        sys.setswitchinterval(old)
    lost = int((np.asarray(s)[1] != np.arange(1, width + 1)).sum())
    assert lost == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_holds_a_storages_lock(emu):  # noqa: F811
    s = ns.zeros((2, 8), device="gpu")
    held, release = threading.Event(), threading.Event()

    def holder():
        with s._buf.sync.lock:
            held.set()
            release.wait(30)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:             # the child: its first use of the storage
            code = 1
            try:
                import signal
                signal.alarm(10)            # a wait for ever ends the child, status -14
                s[0] = 5.0
                code = 0 if float(np.asarray(s)[0, 0]) == 5.0 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        t.join(30)
    assert os.waitstatus_to_exitcode(status) == 0


def _calls(dst_kind):
    ones = np.ones(3)
    m = np.array([True, False, True])
    return {
        "copyto": lambda x: np.copyto(x, 3.0),
        "copyto_kw": lambda x: np.copyto(dst=x, src=4.0),
        "put": lambda x: np.put(x, [0], 9.0),
        "putmask": lambda x: np.putmask(x, m, 7.0),
        "place": lambda x: np.place(x, m, [7.0]),
        "put_along_axis": lambda x: np.put_along_axis(x, np.array([1]), 8.0, axis=0),
        "cumsum_out": lambda x: np.cumsum(ones, out=x),
        "round_out": lambda x: np.round(ones * 1.26, 1, out=x),
        "dot_out": lambda x: np.dot(np.ones((3, 3)), ones, out=x),
        "concatenate_out": lambda x: np.concatenate([ones[:1], ones[:2]], out=x),
        "einsum_out": lambda x: np.einsum("i->i", ones * 2, out=x),
    }


@pytest.mark.parametrize("name", list(_calls("")))
@pytest.mark.parametrize("installed", [False, True])
def test_numpy_functions_write_into_a_storage_as_into_an_ndarray(name, installed):
    call = _calls("")[name]
    want_x = np.zeros(3)
    want = call(want_x)
    x = ns.zeros((3,))
    with nclx.installed() if installed else contextlib.nullcontext():
        got = call(x)
    assert np.asarray(x).tobytes() == want_x.tobytes()
    if want is want_x:
        assert got is x                 # NumPy returns its out=: the storage
    else:
        assert got is None and want is None


def test_fill_diagonal_into_a_storage():
    want = np.zeros((3, 3))
    np.fill_diagonal(want, 2.0)
    x = ns.zeros((3, 3))
    np.fill_diagonal(x, 2.0)
    assert np.asarray(x).tobytes() == want.tobytes()


def test_a_managed_storage_written_by_copyto_is_seen_on_the_device(emu):  # noqa: F811
    x = ns.zeros((4,), device="gpu")
    np.copyto(x, 5.0)
    assert x.sync_state.state == devices.SyncState.SYNC_HOST_DIRTY     # the host is newer
    x.host_to_device()
    assert np.array_equal(np.asarray(emu.to_host(x.device_data)), np.full(4, 5.0))


def test_a_read_only_storage_stays_read_only():
    b = bytes(16)
    s = ns.as_storage(b, shape=(4,), dtype=np.int32)
    with pytest.raises(ValueError, match="read-only"):
        np.add.at(s, [0], 5)
    with pytest.raises(ValueError, match="read-only"):
        np.copyto(s, 1)
    assert b == bytes(16)



def _finish_together(emu, calls, rounds, join):  # noqa: F811
    """Run each of ``calls`` ``rounds`` times in a thread of its own (a
    short switch interval forces interleavings); whether all finished
    within ``join`` seconds each (not: a deadlock)."""
    stop = threading.Event()
    done = []

    def run(f):
        with devices.use(emu):
            for _ in range(rounds):
                if stop.is_set():
                    return
                f()
        done.append(1)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threads = [threading.Thread(target=run, args=(f,), daemon=True) for f in calls]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(join)
    finally:
        stop.set()
        sys.setswitchinterval(old)
    return len(done) == len(calls)


def test_setitem_and_ufuncs_of_two_storages_in_two_threads_do_not_deadlock(emu):  # noqa: F811
    """A ufunc holds all its storages' locks at once (in one order): ``a[...]
    = b`` must take ``a``'s and ``b``'s in that same order, or a thread in
    ``np.add(b, 1, out=a)`` and one in ``a[...] = b`` wait on each other."""
    a = ns.zeros((64,), device="gpu")
    b = ns.zeros((64,), device="gpu")
    calls = [lambda: a.__setitem__(..., b), lambda: b.__setitem__(..., a),
             lambda: np.add(b, 1, out=a), lambda: np.add(a, 1, out=b)]
    assert _finish_together(emu, calls, 3000, 60), "threads still waiting: a deadlock"


# -- review 24c: storages inside lists and where= under the held locks; out by position --

def _pairs(emu):  # noqa: F811
    s, t = ns.zeros((2, 300), device="gpu"), ns.zeros((2, 300), device="gpu")
    p, q = ns.zeros((4,), dtype=np.int64, device="gpu"), ns.zeros((4,), dtype=np.int64, device="gpu")
    a, m = ns.zeros((300,), dtype=bool, device="gpu"), ns.zeros((300,), dtype=bool, device="gpu")
    sf, tf = ns.zeros((600,), device="gpu"), ns.zeros((600,), device="gpu")
    return {
        "value_list": (lambda: s.__setitem__(..., [t[0], t[1]]),
                       lambda: t.__setitem__(..., [s[0], s[1]])),
        "key_list": (lambda: p.__setitem__([q], 0), lambda: q.__setitem__([p], 0)),
        "where": (lambda: np.logical_not(a, out=a, where=m),
                  lambda: np.logical_not(m, out=m, where=a)),
        "concat_out": (lambda: np.concatenate([tf[:300], tf[300:]], out=sf),
                       lambda: np.concatenate([sf[:300], sf[300:]], out=tf)),
        "ufunc_list_input": (lambda: np.add([t[0]], 1, out=s[:1]),
                             lambda: np.add([s[0]], 1, out=t[:1])),
    }


@pytest.mark.parametrize("case", ["value_list", "key_list", "where", "concat_out",
                                  "ufunc_list_input"])
def test_nested_storages_in_two_threads_do_not_deadlock(emu, case):  # noqa: F811
    assert _finish_together(emu, _pairs(emu)[case], 1500, 30), "threads still waiting: a deadlock"


def test_nested_storage_values_and_where_give_ndarrays_results(emu):  # noqa: F811
    s, t = ns.zeros((2, 4), device="gpu"), ns.zeros((2, 4), device="gpu")
    t[...] = np.arange(8.0).reshape(2, 4)
    s[...] = [t[1], t[0]]
    assert np.asarray(s).tolist() == [[4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0]]
    m = ns.zeros((4,), dtype=bool, device="gpu")
    m[...] = [True, False, True, False]
    out = ns.zeros((4,), device="gpu")
    np.add(t[0], 10.0, out=out, where=m)
    assert np.asarray(out).tolist() == [10.0, 0.0, 12.0, 0.0]


@pytest.mark.parametrize("name", ["mean", "cumsum", "round", "take", "dot", "clip"])
def test_out_given_by_position_writes_into_the_storage(name):
    """np.mean(M, 0, None, s) wrote the sum into s and returned a new
    ndarray (silently wrong); np.cumsum(a, 0, None, s) and others raised
    "output must be an array"."""
    M = np.arange(9.0).reshape(3, 3)
    calls = {"mean": lambda o: np.mean(M, 0, None, o),
             "cumsum": lambda o: np.cumsum(np.ones(3), 0, None, o),
             "round": lambda o: np.round(M[0] * 1.26, 1, o),
             "take": lambda o: np.take(M[0], [2, 0, 1], None, o),
             "dot": lambda o: np.dot(M, M[0], o),
             "clip": lambda o: np.clip(M[0], 1.0, 1.5, o)}
    want_o = np.zeros(3)
    want = calls[name](want_o)
    s = ns.zeros((3,))
    got = calls[name](s)
    assert np.asarray(s).tobytes() == want_o.tobytes()
    assert (got is s) == (want is want_o)
