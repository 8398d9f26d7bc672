"""Storages under threads: views of one managed (host + device) buffer
written and read from several threads, the sync lock against a lost write
between a transfer and its marking, and threads creating, copying,
pickling and dropping storages of every kind at once (on the emulated
device backend)."""
import copy
import gc
import pickle
import sys
import threading

import numpy as np
import pytest

import nclx.storage as ns
from nclx.storage import SyncState, devices
from storage_helpers import dev_array, emu  # noqa: F401  (emu: a fixture)


@pytest.fixture
def fast_switching():
    """Make the interpreter switch threads very often (races show up)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_threads_write_and_read_views_of_one_managed_storage(emu, fast_switching):
    """Each thread owns one row of a managed (host + device) storage and
    writes it from the host side and from the device side, reads it back
    through np.asarray / to_cupy / a sub-view, and calls the sync methods
    in between.  Every read sees the thread's last write; at the end host
    and device agree and all views share the one SyncState."""
    nthreads, width, rounds = 4, 64, 300
    s = ns.zeros((nthreads, width), dtype=np.int64, device="gpu", halo=((0, 0), (2, 2)))
    assert isinstance(s, ns.SoftwareManagedGPUStorage)
    errors, views = [], []
    start = threading.Barrier(nthreads)

    def worker(k):
        v = s[k]
        views.append(v)
        try:
            start.wait()
            for i in range(1, rounds):
                how = i % 3
                if how == 0:
                    v[...] = np.full(width, i)                       # host value
                elif how == 1:
                    v[...] = dev_array(np.full(width, i))            # device value
                else:
                    v[2:-2] = ns.full((width - 4,), i, dtype=np.int64)  # a storage value
                    v[:2] = i
                    v[-2:] = i
                read = i % 4
                if read == 0:
                    got = np.array(np.asarray(v))
                elif read == 1:
                    got = np.array(np.asarray(v.to_cupy()))
                elif read == 2:
                    got = np.array(np.asarray(v[::-1]))[::-1]
                else:
                    got = np.array(np.asarray(s[k, :]))
                if not (got == i).all():
                    errors.append(f"thread {k} round {i} (write {how}, read {read}): "
                                  f"read {got[:4]}..., wrote {i}")
                    return
                if i % 5 == 0:
                    s.synchronize()
                elif i % 7 == 0:
                    v.device_to_host()
                elif i % 11 == 0:
                    v.host_to_device()
        except Exception as e:  # noqa: BLE001
            errors.append(f"thread {k}: {e!r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    assert not errors, "\n".join(errors[:5])
    s.synchronize()
    assert s.sync_state.state == SyncState.SYNC_CLEAN
    want = np.full((nthreads, width), rounds - 1)
    np.testing.assert_array_equal(np.asarray(s), want)
    s.set_synchronized()
    np.testing.assert_array_equal(np.asarray(s.to_cupy()), want)
    assert all(v.sync_state is s.sync_state for v in views)


class _HookLock:
    """An RLock that runs a one-shot hook right after it is fully released:
    the point where another thread could run."""

    def __init__(self):
        self._lock = threading.RLock()
        self._depth = 0
        self.after_release = None

    def acquire(self, *args, **kwargs):
        got = self._lock.acquire(*args, **kwargs)
        if got:
            self._depth += 1
        return got

    def release(self):
        self._depth -= 1
        outer = self._depth == 0
        self._lock.release()
        if outer and self.after_release is not None:
            hook, self.after_release = self.after_release, None
            hook()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False


def _in_other_thread(fn):
    errors = []

    def run():
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the other thread hangs (the sync lock is still held)"
    assert not errors, errors


@pytest.mark.parametrize("reader", ["np.asarray", "to_numpy", "to_cupy", "__array_interface__"])
def test_a_read_does_not_lose_another_threads_write(emu, reader):
    """A read on one view (which brings its side up to date and then marks
    it modified) and a write by another thread on another view of the same
    buffer: the write must survive, whichever moment the other thread runs.

    The moment is forced: the other thread writes right after the reader
    released the sync lock the first time (between its transfer and its
    marking)."""
    sync = SyncState()
    sync.lock = _HookLock()
    host = np.zeros((2, 4))
    s = ns.as_storage(host, dev_array(np.zeros((2, 4))), sync_state=sync)
    assert isinstance(s, ns.SoftwareManagedGPUStorage) and s.sync_state is sync
    a, b = s[0], s[1]
    if reader == "to_cupy":
        # the other thread writes the host side while the reader reads the device
        value = np.full(4, 7.0)
        sync.lock.after_release = lambda: _in_other_thread(lambda: b.__setitem__(Ellipsis, value))
        a.to_cupy()
    else:
        value = dev_array(np.full(4, 7.0))
        sync.lock.after_release = lambda: _in_other_thread(lambda: b.__setitem__(Ellipsis, value))
        {"np.asarray": np.asarray, "to_numpy": lambda x: x.to_numpy(),
         "__array_interface__": lambda x: x.__array_interface__}[reader](a)
    assert sync.lock.after_release is None, "the hook did not run"
    s.synchronize()
    np.testing.assert_array_equal(np.asarray(b), 7.0, err_msg="the other thread's write was lost")
    s.set_synchronized()
    np.testing.assert_array_equal(np.asarray(b.to_cupy()), 7.0)


def test_threads_creating_and_destroying_storages(emu):
    """Threads each creating, using and dropping storages of every kind."""
    errors = []

    def worker(k):
        rng = np.random.default_rng(k)
        try:
            with devices.use(emu):
                _create_and_drop(rng, k)
        except Exception as e:  # noqa: BLE001
            errors.append(f"thread {k}: {e!r}")

    def _create_and_drop(rng, k):
        for i in range(60):
            shape = tuple(int(n) for n in rng.integers(0, 6, rng.integers(0, 4)))
            values = rng.standard_normal(shape)
            kind = ("cpu", "gt4py", "cuda", "gpu")[i % 4]
            kw = {} if kind == "cpu" else {"device": "gpu",
                                           "managed": None if kind == "gpu" else kind}
            s = ns.storage(values, halo=1 if all(n >= 2 for n in shape) else 0,
                           alignment_size=int(2 ** rng.integers(0, 9)), **kw)
            t = s + 1.0
            c = copy.deepcopy(t)
            p = pickle.loads(pickle.dumps(c))
            got = np.asarray(p.to_cupy() if isinstance(p, ns.GPUStorage) else p)
            np.testing.assert_array_equal(got, values + 1.0)
            del s, t, c, p
            if i % 10 == 0:
                gc.collect()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, "\n".join(errors[:5])
