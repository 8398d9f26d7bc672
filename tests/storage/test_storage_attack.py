"""A hostile user of nclx.storage: threads, fork and multiprocessing,
dangling references, huge/empty/0-d storages, overlapping and read-only
wraps, and malformed input to every creation function and keyword.

What must hold: no crash (candidates run in a subprocess), no exception
other than the documented ones, values and metadata consistent, and every
bad keyword refused with a StorageError/StorageTypeError (a ValueError /
TypeError) whose message names the keyword and the value.

Device-side code runs on the emulated device backend (a second host buffer
stands in for device memory), as the package's own tests do without a GPU.
"""
import copy
import functools
import gc
import multiprocessing
import operator
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import nclx.storage as ns
from nclx.storage import (
    NoSuchBufferError,
    Storage,
    StorageError,
    SyncState,
    devices,
)
from nclx.storage.devices import EmulatedDevice, EmulatedDeviceArray

# the folder holding the nclx package under test (subprocesses import it from there)
STAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ns.__file__))))


@pytest.fixture
def emu():
    """The emulated device backend for the test (this thread's: threads that
    create device storages enter ``with devices.use(emu):`` themselves)."""
    with devices.use(EmulatedDevice()) as backend:
        yield backend


@pytest.fixture
def fast_switching():
    """Make the interpreter switch threads very often (races show up)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_python(code, timeout=60):
    """Run ``code`` in a fresh interpreter importing this nclx; (rc, output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [STAGE] + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd="/", check=False)
    return proc.returncode, proc.stdout + proc.stderr


def dev_array(values):
    """A device array (of the emulated backend) holding ``values``."""
    return np.array(values, copy=True).view(EmulatedDeviceArray)


# ================================================================ threads
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


def test_threads_each_with_their_own_device_backend():
    """``with devices.use(backend):`` in one thread must not change (or, on
    leaving, reset) the backend another thread is using in its own block."""
    entered = [threading.Event(), threading.Event()]
    first_left = threading.Event()
    results, errors = {}, []

    def first():
        try:
            with devices.use(EmulatedDevice()):
                entered[0].set()
                entered[1].wait(10)
            first_left.set()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def second():
        try:
            entered[0].wait(10)
            with devices.use(EmulatedDevice()) as mine:
                entered[1].set()
                first_left.wait(10)
                # the first thread has left its block; this one is still in its own
                s = ns.zeros((3,), device="gpu")
                s.set_host_modified()
                s.to_cupy()
                results["h2d"] = mine.h2d_calls
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t1, t2 = threading.Thread(target=first), threading.Thread(target=second)
    t1.start()
    t2.start()
    t1.join(30)
    t2.join(30)
    assert not errors, f"the second thread's block lost its backend: {errors[0]!r}"
    assert results.get("h2d") == 1, "the copy did not go through the thread's own backend"


@pytest.mark.parametrize("where", ["other_thread", "after_the_block"])
@pytest.mark.parametrize("kind", ["gt4py", "cuda", "gpu"])
def test_existing_device_storages_work_outside_the_use_block(where, kind):
    """A device storage created inside ``with devices.use(b):`` keeps its
    backend: ufunc results, copies and ``*_like`` storages made from it later
    (after the block, or in a thread without a block) are allocated on that
    same backend, not refused for want of a current one."""
    backend = EmulatedDevice()
    with devices.use(backend):
        m = ns.storage(np.arange(6.0).reshape(2, 3), device="gpu",
                       managed=None if kind == "gpu" else kind, halo=((1, 0), (0, 1)))
    results, errors = {}, []

    def work():
        for name, f in (("add", lambda: m + 1), ("copy", m.copy), ("deepcopy",
                        lambda: copy.deepcopy(m)), ("zeros_like", lambda: ns.zeros_like(m)),
                        ("transpose_copy", lambda: m.T.copy())):
            try:
                results[name] = f()
            except Exception as e:  # noqa: BLE001
                errors.append(f"{name}: {e!r}")
    if where == "other_thread":
        t = threading.Thread(target=work)
        t.start()
        t.join(30)
    else:
        work()
    assert not errors, "\n".join(errors)
    for name, r in results.items():
        assert type(r) is type(m), (name, type(r))
        assert r._buf.backend is backend, f"{name}: allocated on another backend"
    got = results["add"].to_cupy()
    np.testing.assert_array_equal(np.asarray(got), np.arange(6.0).reshape(2, 3) + 1)


# ===================================================== fork / multiprocessing
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"),
                                reason="os.fork() is POSIX-only: no fork on this platform")


def _wait_child(pid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child did not finish within {timeout} s (killed)")


@needs_fork
def test_fork_child_uses_the_parents_storages(emu):
    s = ns.storage(np.arange(24.0).reshape(4, 6), halo=1, alignment_size=64, layout=(1, 0))
    m = ns.storage(np.arange(10, dtype=np.int32), device="gpu")
    m.to_cupy()[...] = np.arange(10, dtype=np.int32) * 2     # device side newer
    m.set_device_modified()
    v = s[1:3, ::-1]
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # fork in a threaded process
        pid = os.fork()
    if pid == 0:   # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            msgs = []
            if not np.array_equal(np.asarray(s), np.arange(24.0).reshape(4, 6)):
                msgs.append("values")
            if not np.array_equal(np.asarray(v), np.arange(24.0).reshape(4, 6)[1:3, ::-1]):
                msgs.append("view")
            if not np.array_equal(np.asarray(m), np.arange(10) * 2):
                msgs.append("managed device->host")
            s[0] = -1.0                      # the child's copy of the memory
            r = np.add(s, 1.0)
            if not isinstance(r, Storage) or r.halo != s.halo or r.strides != s.strides:
                msgs.append("ufunc result")
            p = pickle.loads(pickle.dumps(s))
            if not np.array_equal(np.asarray(p), np.asarray(s)):
                msgs.append("pickle")
            t = ns.zeros((100, 100), halo=2)
            t += 1
            if float(np.sum(t)) != 1e4:
                msgs.append("new storage")
            os.write(write, ("ok" if not msgs else ",".join(msgs)).encode())
            code = 0
        except BaseException as e:  # noqa: BLE001
            os.write(write, repr(e).encode()[:1000])
        finally:
            os._exit(code)
    os.close(write)
    status = _wait_child(pid, 60)
    msg = os.read(read, 4096).decode()
    os.close(read)
    assert os.WIFEXITED(status), f"the child died: status {status:#x} (signal?) {msg}"
    assert os.WEXITSTATUS(status) == 0 and msg == "ok", msg
    # the child's writes do not reach the parent (copy on write)
    np.testing.assert_array_equal(np.asarray(s), np.arange(24.0).reshape(4, 6))


def _pool_storages(managed):
    kw = {"device": "gpu"} if managed else {}
    return [ns.storage(np.arange(12.0).reshape(3, 4), halo=((1, 0), (0, 2)), alignment_size=64,
                       layout=(1, 0), aligned_index=(2, 1), dims="JK", **kw),
            ns.storage(np.arange(5, dtype=np.int16), **kw),
            ns.zeros((0, 3), dtype=np.complex128, **kw),
            ns.full((), 7, dtype=np.uint8, **kw)]


@pytest.fixture
def default_backend():
    """An emulated device as the process-wide default backend."""
    backend = EmulatedDevice()
    devices.set_default(backend)
    try:
        yield backend
    finally:
        devices.set_default(None)


@pytest.mark.parametrize("scope", ["cpu", "managed_default", "managed_with_use"])
@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
def test_multiprocessing_pool_pickles_storages(request, method, scope):
    """Storages through a Pool (pickled to the workers and back).  Managed
    storages: the workers get the emulated device as their default backend;
    the parent has it as its default ("managed_default") or inside a
    ``with devices.use(...)`` block around the whole Pool ("managed_with_use":
    the results come back through the Pool's result-handler thread)."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"start method {method!r} is not available on this platform")
    if scope == "managed_with_use" and method != multiprocessing.get_all_start_methods()[0]:
        pytest.skip("the with-block case runs with the platform's first start method only")
    managed = scope != "cpu"
    ctx_backend = request.getfixturevalue("emu" if scope == "managed_with_use" else
                                          "default_backend") if managed else None
    assert ctx_backend is None or devices.current() is ctx_backend
    items = _pool_storages(managed)
    ctx = multiprocessing.get_context(method)
    # workers: the emulated device as their process-wide backend
    init = {"initializer": devices.set_default, "initargs": (EmulatedDevice(),)} if managed else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # fork in a threaded process
        with ctx.Pool(2, **init) as pool:
            # the workers import the nclx under test (not another installed copy)
            where = pool.apply(eval, ("__import__('nclx.storage', fromlist=['_']).__file__",))
            assert os.path.samefile(where, ns.__file__), (where, ns.__file__)
            jobs = [pool.map_async(f, items, chunksize=1)
                    for f in (operator.neg, copy.copy, functools.partial(np.add, 1))]
            deadline = time.monotonic() + 60
            while not all(j.ready() for j in jobs):
                handler = getattr(pool, "_result_handler", None)   # CPython's Pool
                if handler is not None and not handler.is_alive():
                    pytest.fail("the Pool's result-handler thread died: a result could not "
                                "be unpickled in the parent (the Pool would hang)")
                if time.monotonic() > deadline:
                    pytest.fail("the Pool did not deliver the results within 60 s")
                time.sleep(0.02)
            negated, same, added = (j.get(timeout=1) for j in jobs)
    for s, n, c, a in zip(items, negated, same, added):
        for got, want in ((n, -np.asarray(s)), (c, np.asarray(s)), (a, 1 + np.asarray(s))):
            assert type(got) is type(s), (type(got), type(s))
            np.testing.assert_array_equal(np.asarray(got), want)
            assert got.dtype == want.dtype
            assert got.dims == s.dims and got.halo == s.halo and got.layout == s.layout
        assert c.strides == s.strides and c.aligned_index == s.aligned_index
        assert c.alignment_size == s.alignment_size


# ============================================== references after deletion
def _churn():
    """Allocate and fill other memory (so a freed buffer would be reused)."""
    junk = [ns.full((257, 33), -12345.0, alignment_size=64) for _ in range(50)]
    junk += [np.full(257 * 33, -54321.0) for _ in range(50)]
    return junk


@pytest.mark.parametrize("kind", ["cpu", "gt4py", "cuda", "gpu", "wrapped_bytes"])
def test_references_outlive_the_storage(emu, kind):
    values = np.arange(257 * 33, dtype=np.float64).reshape(257, 33)
    if kind == "wrapped_bytes":
        s = ns.as_storage(bytearray(values.tobytes()), shape=values.shape, dtype=np.float64)
    elif kind == "cpu":
        s = ns.storage(values, halo=2, alignment_size=256, layout=(1, 0))
    else:
        s = ns.storage(values, device="gpu", managed=None if kind == "gpu" else kind)
    refs = {}
    if kind != "gpu":
        refs["asarray"] = np.asarray(s)
        refs["view"] = s[3:-3, ::-2]
        refs["domain"] = s.domain_view
        refs["T"] = s.T
        refs["memoryview"] = s.data
        refs["scalar_row"] = s[5]
    if kind != "cpu" and kind != "wrapped_bytes":
        refs["device"] = s.to_cupy()
        refs["dev_view"] = s[1:4].to_cupy()
    if kind != "gpu":
        s.set_synchronized()
    expected = {"asarray": values, "view": values[3:-3, ::-2], "domain": values, "T": values.T,
                "memoryview": values, "scalar_row": values[5], "device": values,
                "dev_view": values[1:4]}
    if kind == "cpu":
        expected["domain"] = values[2:-2, 2:-2]
    del s
    gc.collect()
    junk = _churn()
    for name, ref in refs.items():
        got = np.asarray(ref.to_cupy() if name == "dev_view" and isinstance(ref, Storage)
                         else ref)
        if name == "memoryview":
            got = np.asarray(ref).reshape(values.shape) if got.ndim == 1 else got
        np.testing.assert_array_equal(got, expected[name], err_msg=f"{kind}: {name} after del")
    del junk


# ======================================================= huge / empty / 0-d
def test_huge_storages():
    n = 10 ** 7
    s = ns.zeros((n,), halo=3, alignment_size=256, aligned_index=(3,))
    assert (np.asarray(s).ctypes.data + 3 * 8) % 256 == 0     # aligned_index on a boundary
    s[...] = 1.0
    r = s + 1.0
    assert isinstance(r, Storage) and r.halo == ((3, 3),) and r.strides == s.strides
    assert float(np.sum(r)) == 2.0 * n
    s += r
    assert float(np.max(s)) == 3.0 and float(np.min(s)) == 3.0
    v = s[::1000]
    assert v.shape == (n // 1000,) and np.shares_memory(np.asarray(v), np.asarray(s))
    v[...] = 0.0
    assert float(np.sum(s)) == 3.0 * n - 3.0 * (n // 1000)
    c = copy.deepcopy(s)
    p = pickle.loads(pickle.dumps(s, protocol=5))
    for x in (c, p):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(s))
        assert x.strides == s.strides and x.halo == s.halo
    b = ns.empty((100, 100, 1000), dtype=np.float32, layout=(2, 1, 0), alignment_size=128,
                 halo=((1, 1), (2, 2), (3, 3)))
    b[...] = 2.0
    assert b.strides[0] == 4 and float(np.sum(b, dtype=np.float64)) == 2.0 * n
    w = ns.as_storage(np.asarray(b), layout=(2, 1, 0))
    assert np.shares_memory(np.asarray(w), np.asarray(b))
    t = np.add.reduce(b, axis=2)
    assert t.shape == (100, 100)


def test_huge_managed_storage(emu):
    n = 10 ** 7
    m = ns.ones((n,), device="gpu", dtype=np.float64)
    m.synchronize()
    emu.reset_counters()
    d = m.to_cupy()
    d[...] = 2.0
    assert float(np.sum(m)) == 2.0 * n
    assert emu.d2h_calls == 1 and emu.d2h_bytes >= 8 * n
    m[::2] = 5.0
    m.synchronize()
    assert float(np.sum(np.asarray(m.to_cupy()))) == 3.5 * n


EMPTY_SHAPES = [(), (0,), (3, 0), (0, 0, 0), (2, 0, 5), (1, 1, 1, 1)]
KINDS = ["cpu", "gt4py", "cuda", "gpu"]


def _make(kind, shape, dtype=np.float64, fill=None, **kw):
    if kind != "cpu":
        kw.update(device="gpu", managed=None if kind == "gpu" else kind)
    s = ns.empty(shape, dtype, **kw)
    if fill is not None:
        s[...] = fill
    return s


def _host_view(x):
    return np.asarray(x.to_cupy() if isinstance(x, Storage) and x._host is None else x)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_empty_and_0d_storages_everywhere(emu, kind, shape):
    """Every part of the API on empty, 0-d and all-ones-shaped storages,
    compared with NumPy where NumPy has a counterpart."""
    ref = np.full(shape, 3.0)
    s = _make(kind, shape, fill=3.0)
    host = kind != "gpu"
    assert s.shape == shape and s.size == ref.size and s.nbytes == ref.nbytes
    assert s.ndim == ref.ndim and s.halo == ((0, 0),) * len(shape)
    repr(s)
    gdi = s.__gt_data_interface__
    assert (None in gdi) == host and ("gpu" in gdi) == (kind != "cpu")
    if host:
        np.testing.assert_array_equal(np.asarray(s), ref)
        assert s.__array_interface__["shape"] == shape
        assert memoryview(s.data).nbytes == ref.nbytes
    else:
        with pytest.raises(NoSuchBufferError):
            np.asarray(s)
        np.testing.assert_array_equal(np.asarray(s.to_cupy()), ref)
    if kind != "cpu":
        assert s.__cuda_array_interface__["shape"] == shape
    else:
        assert not hasattr(s, "__cuda_array_interface__")
    # creation functions of the same shape
    for f, want in ((ns.zeros, np.zeros(shape)), (ns.ones, np.ones(shape))):
        np.testing.assert_array_equal(_host_view(f(shape, **({} if kind == "cpu" else
                                                           {"device": "gpu"}))), want)
    for f, want in ((ns.zeros_like, np.zeros(shape)), (ns.ones_like, np.ones(shape)),
                    (functools.partial(ns.full_like, fill_value=5), np.full(shape, 5.0))):
        t = f(s)
        assert type(t) is type(s) and t.shape == shape
        np.testing.assert_array_equal(_host_view(t), want)
    assert ns.empty_like(s).shape == shape
    np.testing.assert_array_equal(_host_view(ns.storage(s)), ref)
    # len / iteration / truth / conversion, as NumPy
    for fn in (len, lambda x: list(iter(x)), bool, float):
        try:
            want = fn(ref)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                fn(s)
        else:
            got = fn(s)
            if fn is bool or fn is float or fn is len:
                assert got == want
            else:
                assert len(got) == len(want)
    # indexing
    for key in ((), Ellipsis, None, (Ellipsis, None), 0, (slice(None, None, -1),)):
        try:
            want = ref[key]
        except IndexError:
            with pytest.raises(IndexError):
                s[key]
            continue
        got = s[key]
        np.testing.assert_array_equal(_host_view(got), want)
    s[...] = 4.0
    ref[...] = 4.0
    np.testing.assert_array_equal(_host_view(s), ref)
    # ufuncs and reductions
    for fn in (lambda x: x + 1, lambda x: -x, lambda x: x == x, lambda x: x * x,  # noqa: PLR0124
               lambda x: np.sum(x), lambda x: np.sum(x, axis=None, keepdims=True),
               lambda x: np.add.accumulate(x) if x.ndim else x + 0,
               lambda x: np.maximum.reduce(x, axis=None)):
        try:
            want = fn(ref)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                fn(s)
            continue
        got = fn(s)
        np.testing.assert_array_equal(_host_view(got), want)
        assert np.asarray(_host_view(got)).dtype == np.asarray(want).dtype
    if host:
        with warnings.catch_warnings(record=True) as w_np, np.errstate(all="warn"):
            warnings.simplefilter("always")
            want = np.mean(ref)
        with warnings.catch_warnings(record=True) as w_st, np.errstate(all="warn"):
            warnings.simplefilter("always")
            got = np.mean(s)
        np.testing.assert_array_equal(got, want)
        assert [str(x.message) for x in w_st] == [str(x.message) for x in w_np]
    # views, copies, transfers
    for t in (s.T, s.transpose(), np.transpose(s) if host else s.T, s.domain_view,
              s.copy(), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert type(t) is type(s)
        np.testing.assert_array_equal(_host_view(t), ref.T if t.shape != ref.shape else ref)
    for method in ("synchronize", "device_to_host", "host_to_device", "set_host_modified",
                   "set_device_modified", "set_synchronized"):
        getattr(s, method)()
    s.synchronize()
    np.testing.assert_array_equal(_host_view(s), ref)


@pytest.mark.parametrize("op", ["add", "neg", "compare", "divmod", "reduce_keepdims",
                                "accumulate", "0d"])
def test_device_only_ufunc_results_keep_the_operands_metadata(emu, op):
    """A GPUStorage (device buffer only) computes with the device backend's
    ufuncs; like host storages, a result with the operand's shape must keep
    its dims, halo, layout and strides (and 0-d results be storages too)."""
    values = np.arange(12.0).reshape(3, 4)
    if op == "0d":
        g = ns.storage(np.array(2.0), device="gpu", managed=None)
        h = ns.storage(np.array(2.0))
        assert isinstance(h + 1, Storage), "host reference"
        r = g + 1
        assert isinstance(r, ns.GPUStorage), f"0-d result is {type(r).__name__}"
        return
    g = ns.storage(values, device="gpu", managed=None, halo=((1, 1), (2, 1)), layout=(1, 0),
                   alignment_size=64, dims="JK")
    assert isinstance(g, ns.GPUStorage)
    f = {"add": lambda x: x + 1, "neg": lambda x: -x, "compare": lambda x: x > 3,
         "divmod": lambda x: np.divmod(x, 5)[0], "reduce_keepdims":
         lambda x: np.add.reduce(x, axis=0, keepdims=True), "accumulate": np.add.accumulate}[op]
    r = f(g)
    want = f(values)
    assert isinstance(r, ns.GPUStorage), type(r)
    np.testing.assert_array_equal(np.asarray(r.to_cupy()), want)
    if op == "reduce_keepdims":
        assert r.dims == g.dims and r.halo == ((0, 0), (2, 1))
        return
    assert r.dims == g.dims, f"dims {r.dims} != {g.dims}"
    assert r.halo == g.halo, f"halo {r.halo} != {g.halo}"
    assert r.layout == g.layout, f"layout {r.layout} != {g.layout}"
    if r.dtype == g.dtype:
        assert r.strides == g.strides, f"strides {r.strides} != {g.strides}"


@pytest.mark.parametrize("method", ["at", "out_tuple", "reduce_out", "accumulate_out"])
def test_in_place_ufunc_methods_mark_the_host_modified(emu, method):
    """np.add.at(m, ...) and out= of reduce/accumulate write the host side of
    a managed storage: the device side must see the change afterwards."""
    m = ns.storage(np.zeros((3, 4)), device="gpu")
    m.synchronize()
    want = np.zeros((3, 4))
    if method == "at":
        np.add.at(m, (0, [0, 0, 1]), 1.0)
        np.add.at(want, (0, [0, 0, 1]), 1.0)
    elif method == "out_tuple":
        np.add(m, 2.0, out=(m,))
        want += 2.0
    elif method == "reduce_out":
        np.add.reduce(np.ones((5, 3, 4)), axis=0, out=m)
        want[...] = 5.0
    else:
        np.add.accumulate(np.ones((3, 4)), axis=0, out=m)
        want[...] = np.add.accumulate(np.ones((3, 4)), axis=0)
    np.testing.assert_array_equal(np.asarray(m.to_cupy()), want,
                                  err_msg="the device side did not see the host write")
    np.testing.assert_array_equal(np.asarray(m), want)


# ================================================ strided / overlapping wraps
def _read_only_overlapping():
    base = np.arange(20.0)
    return base, as_strided(base, shape=(5, 4), strides=(8, 8), writeable=False)


WRITES = {
    "setitem_scalar": lambda s: s.__setitem__((0, 0), 1.0),
    "setitem_all": lambda s: s.__setitem__(Ellipsis, 0.0),
    "setitem_overlap": lambda s: s.__setitem__(slice(1, None), s[:-1]),
    "setitem_mask": lambda s: s.__setitem__(np.asarray(s) > 3, 0.0),
    "iadd": lambda s: operator.iadd(s, 1.0),
    "imul_array": lambda s: operator.imul(s, np.ones(4)),
    "out_self": lambda s: np.add(s, 1.0, out=s),
    "out_where": lambda s: np.negative(s, out=s, where=np.ones((5, 4), bool)),
    "ufunc_at": lambda s: np.add.at(s, (0, 0), 1.0),
    "asarray_write": lambda s: np.asarray(s).__setitem__((0, 0), 1.0),
    "to_numpy_write": lambda s: s.to_numpy().__setitem__((0, 0), 1.0),
    "copyto": lambda s: np.copyto(np.asarray(s), 0.0),
    "full_like_into": lambda s: s.__setitem__(Ellipsis, ns.full_like(s, 9.0)),
}


@pytest.mark.parametrize("write", sorted(set(WRITES) - {"ufunc_at"}))
@pytest.mark.parametrize("managed", [False, True], ids=["cpu", "managed"])
def test_writes_through_a_read_only_wrap_raise(emu, write, managed):
    """(np.add.at is left out: NumPy 2.4 itself writes through read-only
    arrays with ufunc.at, a NumPy bug, not the storage's.)"""
    base, ro = _read_only_overlapping()
    s = ns.as_storage(ro, **({"device": "gpu"} if managed else {}))
    np.testing.assert_array_equal(np.asarray(s), ro)
    assert np.shares_memory(np.asarray(s), base)
    with pytest.raises(ValueError, match="read-only"):
        WRITES[write](s)
    np.testing.assert_array_equal(base, np.arange(20.0))


def test_read_only_bytes_wrap(emu):
    raw = bytes(np.arange(8.0).tobytes())
    s = ns.as_storage(raw, shape=(2, 4), dtype=np.float64)
    np.testing.assert_array_equal(np.asarray(s), np.arange(8.0).reshape(2, 4))
    for w in ("setitem_scalar", "iadd", "out_self", "asarray_write"):
        with pytest.raises(ValueError, match="read-only"):
            {"setitem_scalar": lambda: s.__setitem__((0, 0), 1.0),
             "iadd": lambda: operator.iadd(s, 1.0),
             "out_self": lambda: np.add(s, 1.0, out=s),
             "asarray_write": lambda: np.asarray(s).__setitem__((0, 0), 1.0)}[w]()
    assert raw == np.arange(8.0).tobytes()
    r = s + 1     # reading is fine; the result is a new, writeable storage
    r[0, 0] = -1.0
    assert float(np.asarray(r)[0, 0]) == -1.0


@pytest.mark.parametrize("write", ["setitem_all", "setitem_overlap", "iadd", "out_self",
                                   "imul_array", "ufunc_at"])
def test_writeable_overlapping_wrap_behaves_like_the_ndarray(write):
    """Writes through an overlapping (writeable) view: the same memory
    result as the same write on the ndarray view itself."""
    base_s, base_n = np.arange(20.0), np.arange(20.0)
    vs = as_strided(base_s, shape=(5, 4), strides=(8, 8))
    vn = as_strided(base_n, shape=(5, 4), strides=(8, 8))
    s = ns.as_storage(vs)
    assert s.strides == (8, 8)
    WRITES[write](s)
    WRITES[write](vn)
    np.testing.assert_array_equal(base_s, base_n)


@pytest.mark.parametrize("view", ["step", "negative", "transposed", "unaligned", "zero_stride"])
def test_strided_wraps(view):
    base = np.arange(2 * 6 * 8, dtype=np.float64).reshape(6, 16)
    if view == "step":
        v = base[::2, 1::3]
    elif view == "negative":
        v = base[::-1, ::-2]
    elif view == "transposed":
        v = base.T[::3]
    elif view == "unaligned":
        raw = np.zeros(8 * 24 + 1, np.uint8)
        v = raw[1:].view(np.float64).reshape(4, 6)
        v[...] = np.arange(24.0).reshape(4, 6)
    else:
        v = np.broadcast_to(base[0], (3, 16))
    s = ns.as_storage(v)
    a = np.asarray(s)
    assert a.strides == v.strides and a.shape == v.shape
    np.testing.assert_array_equal(a, v)
    assert np.shares_memory(a, v)
    r = -s
    np.testing.assert_array_equal(np.asarray(r), -v)
    if v.flags.writeable:
        w = v.copy()
        s[0] = 12345.0
        assert (v[0] == 12345.0).all()
        s[1:] = s[:-1]
        w[0] = 12345.0
        w[1:] = w[:-1].copy()
        np.testing.assert_array_equal(v, w)
    else:
        with pytest.raises(ValueError, match="read-only"):
            s[0] = 1.0


# ============================================================ bad input
BAD_INPUT = [
    # (id, keyword, value, call)
    ("halo_len", "halo", ((1, 1),), None),
    ("halo_len3", "halo", (1, 1, 1), None),
    ("halo_neg", "halo", ((-1, 0), (0, 0)), None),
    ("halo_neg_int", "halo", (-1, 0), None),
    ("halo_wide", "halo", ((2, 2), (0, 0)), None),
    ("halo_wide_int", "halo", 3, None),
    ("halo_triple", "halo", ((1, 2, 3), (0, 0)), None),
    ("halo_float", "halo", ((1.5, 0), (0, 0)), None),
    ("halo_str", "halo", "ab", None),
    ("ai_out", "aligned_index", (3, 0), None),
    ("ai_out2", "aligned_index", (0, 4), None),
    ("ai_neg", "aligned_index", (-1, 0), None),
    ("ai_len", "aligned_index", (0,), None),
    ("ai_int", "aligned_index", 2, None),
    ("ai_float", "aligned_index", (0.5, 0), None),
    ("align_0", "alignment_size", 0, None),
    ("align_3", "alignment_size", 3, None),
    ("align_48", "alignment_size", 48, None),
    ("align_neg", "alignment_size", -8, None),
    ("align_float", "alignment_size", 2.0, None),
    ("align_str", "alignment_size", "64", None),
    ("align_none", "alignment_size", None, None),
    ("layout_dup", "layout", (0, 0), None),
    ("layout_range", "layout", (1, 2), None),
    ("layout_short", "layout", (0,), None),
    ("layout_long", "layout", (0, 1, 2), None),
    ("layout_str", "layout", "01", None),
    ("layout_float", "layout", (0.0, 1), None),
    ("dims_long", "dims", "IJK", None),
    ("dims_short", "dims", "I", None),
    ("dims_repeat", "dims", ("I", "I"), None),
    ("dims_name", "dims", ("X", "J"), None),
    ("dims_lower", "dims", "ij", None),
    ("dims_int", "dims", ("I", 1), None),
    ("dims_negative", "dims", ("I", "-1"), None),
    ("dims_unicode_digit", "dims", ("I", "\u00b2"), None),
    ("dims_number", "dims", 5, None),
    ("defaults_unknown", "defaults", "gtmc", None),
    ("defaults_lower", "defaults", "c", None),
    ("defaults_int", "defaults", 1, None),
    ("device_cpu", "device", "cpu", None),
    ("device_cuda", "device", "cuda", None),
    ("device_int", "device", 0, None),
    ("managed_yes", "managed", "yes", None),
    ("managed_true", "managed", True, None),
    ("unknown_kw", "foo", 1, None),
    ("order_kw", "order", "F", None),
    ("strides_kw", "strides", (8, 8), "not as_storage"),
]
CREATORS = {
    "empty": lambda **kw: ns.empty((3, 4), **kw),
    "zeros": lambda **kw: ns.zeros((3, 4), **kw),
    "ones": lambda **kw: ns.ones((3, 4), **kw),
    "full": lambda **kw: ns.full((3, 4), 1.5, **kw),
    "empty_like": lambda **kw: ns.empty_like(ns.zeros((3, 4)), **kw),
    "zeros_like": lambda **kw: ns.zeros_like(np.zeros((3, 4)), **kw),
    "ones_like": lambda **kw: ns.ones_like(ns.zeros((3, 4)), **kw),
    "full_like": lambda **kw: ns.full_like(ns.zeros((3, 4)), 2, **kw),
    "storage": lambda **kw: ns.storage(np.zeros((3, 4)), **kw),
    "storage_nocopy": lambda **kw: ns.storage(np.zeros((3, 4)), copy=False, **kw),
    "as_storage": lambda **kw: ns.as_storage(np.zeros((3, 4)), **kw),
}


def _value_named(msg, value):
    return repr(value) in msg or str(value) in msg


def assert_refused(call, keyword, value, name_value=True):
    __tracebackhide__ = True
    try:
        result = call()
    except StorageError as e:
        assert isinstance(e, (ValueError, TypeError))
        msg = str(e)
        assert keyword in msg, f"message does not name {keyword!r}: {msg!r}"
        if name_value:
            assert _value_named(msg, value), f"message does not name the value {value!r}: {msg!r}"
        return e
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"{keyword}={value!r}: raised {type(e).__name__}({e}), not the package's "
                    "StorageError/StorageTypeError")
    pytest.fail(f"{keyword}={value!r}: accepted, gave {result!r}")


# strides= is as_storage's own keyword (tested with flat buffers below)
BAD_CASES = [(creator, case) for case in BAD_INPUT for creator in sorted(CREATORS)
             if case[3] is None or creator not in ("as_storage", "storage_nocopy")]


@pytest.mark.parametrize("creator, case", BAD_CASES, ids=[f"{c[0]}-{k}" for k, c in BAD_CASES])
def test_bad_keywords_are_refused_by_name(emu, creator, case):
    _, keyword, value, _ = case
    kw = {keyword: value}
    if keyword == "managed":
        kw["device"] = "gpu"
    assert_refused(lambda: CREATORS[creator](**kw), keyword, value,
                   name_value=keyword not in ("foo", "order", "strides"))


@pytest.mark.parametrize("creator", ["empty", "zeros", "ones", "full", "storage_shape"])
@pytest.mark.parametrize("shape", [-1, (2, -1), (2.5,), "abc", None, (2, None), (1,) * 65],
                         ids=lambda x: "65_dims" if x == (1,) * 65 else repr(x))
def test_bad_shapes(creator, shape):
    call = {"empty": lambda: ns.empty(shape), "zeros": lambda: ns.zeros(shape),
            "ones": lambda: ns.ones(shape), "full": lambda: ns.full(shape, 1),
            "storage_shape": lambda: ns.storage(shape=shape)}[creator]
    assert_refused(call, "shape", shape)


def test_creation_cache_never_shares_or_skips_validation():
    """Creating the same storage again (the cached recipe) gives fresh memory
    and the same layout as the validating path; a bad value that equals a
    cached good one (a float, a bool, a list) is still refused."""
    kw = {"halo": ((1, 1), (0, 2)), "layout": (1, 0), "alignment_size": 64,
          "aligned_index": (1, 0)}
    a = ns.zeros((4, 5), **kw)
    b = ns.zeros((4, 5), **kw)
    c = ns.empty((np.int64(4), np.int64(5)), halo=[[1, 1], [0, 2]], layout=[1, 0],
                 alignment_size=np.int64(64), aligned_index=[1, 0])
    assert not np.shares_memory(np.asarray(a), np.asarray(b))
    for x in (b, c):
        assert (x.strides, x.halo, x.layout, x.aligned_index) == \
            (a.strides, a.halo, a.layout, a.aligned_index)
    a[...] = 1.0
    np.testing.assert_array_equal(np.asarray(b), 0.0)
    for key, value in (("alignment_size", 64.0), ("alignment_size", True),
                       ("aligned_index", (1.0, 0))):
        bad = {**kw, key: value}
        assert_refused(functools.partial(ns.zeros, (4, 5), **bad), key, value)
    assert_refused(lambda: ns.zeros((4.0, 5), **kw), "shape", (4.0, 5))


def test_like_functions_do_not_take_shape():
    for f in (ns.empty_like, ns.zeros_like, ns.ones_like):
        assert_refused(functools.partial(f, ns.zeros((2, 2)), shape=(3, 3)), "shape", None,
                       name_value=False)


@pytest.mark.parametrize("value", [((5, 5), (0, 0)), ((1, 1),), "x", ((-1, 0), (0, 0))],
                         ids=repr)
def test_halo_setter_refuses_bad_values(value):
    s = ns.zeros((3, 4), halo=1)
    assert_refused(lambda: setattr(s, "halo", value), "halo", value)
    assert s.halo == ((1, 1), (1, 1))


@pytest.mark.parametrize("value", ["dirty", 1, SyncState.SYNC_HOST_DIRTY], ids=repr)
@pytest.mark.parametrize("creator", ["as_storage", "storage", "storage_gpu"])
def test_bad_sync_state(emu, creator, value):
    call = {"as_storage": lambda: ns.as_storage(np.zeros(3), sync_state=value),
            "storage": lambda: ns.storage(np.zeros(3), sync_state=value),
            "storage_gpu": lambda: ns.storage(np.zeros(3), sync_state=value, device="gpu")}
    assert_refused(call[creator], "sync_state", value)


FLAT = [
    # (id, kwargs, keyword named, value named)
    ("past_end", {"shape": (9,)}, "shape", (9,)),
    ("stride_past_end", {"shape": (5,), "strides": (16,)}, "strides", (16,)),
    ("offset_past_end", {"shape": (1,), "offset": 64}, "offset", 64),
    ("offset_negative", {"shape": (1,), "offset": -8}, "offset", -8),
    ("negative_stride_before_start", {"shape": (2,), "strides": (-8,)}, "strides", (-8,)),
    ("negative_stride_past_end", {"shape": (2,), "strides": (-8,), "offset": 72}, "offset", 72),
    ("two_d_past_end", {"shape": (2, 4), "strides": (64, 8)}, "shape", (2, 4)),
    ("two_d_negative", {"shape": (2, 4), "strides": (-32, 8), "offset": 16}, "strides", (-32, 8)),
    ("strides_len", {"shape": (2,), "strides": (8, 8)}, "strides", (8, 8)),
    ("strides_float", {"shape": (2,), "strides": (1.5,)}, "strides", (1.5,)),
    ("strides_str", {"shape": (2,), "strides": ("8",)}, "strides", ("8",)),
    ("strides_none", {"shape": (2,), "strides": (None,)}, "strides", (None,)),
    ("offset_float", {"shape": (2,), "offset": 1.5}, "offset", 1.5),
    ("offset_str", {"shape": (2,), "offset": "8"}, "offset", "8"),
    ("shape_negative", {"shape": (-2,)}, "shape", (-2,)),
    ("dtype_unknown", {"shape": (2,), "dtype": "foo"}, "dtype", "foo"),
]


@pytest.mark.parametrize("buffer", ["ndarray_u1", "bytearray", "bytes", "memoryview"])
@pytest.mark.parametrize("case", FLAT, ids=[c[0] for c in FLAT])
def test_flat_buffers_reaching_outside_are_refused(case, buffer):
    _, kw, keyword, value = case
    raw = {"ndarray_u1": np.zeros(64, np.uint8), "bytearray": bytearray(64),
           "bytes": bytes(64), "memoryview": memoryview(bytearray(64))}[buffer]
    assert_refused(lambda: ns.as_storage(raw, **kw), keyword, value)


@pytest.mark.parametrize("call, keyword, value", [
    (lambda: ns.as_storage(), "data", None),
    (lambda: ns.as_storage([1, 2, 3]), "data", "list"),
    (lambda: ns.as_storage(5), "data", "int"),
    (lambda: ns.as_storage("abc"), "data", "str"),
    (lambda: ns.as_storage(np.zeros(4), offset=8), "offset", 8),
    (lambda: ns.as_storage(np.zeros(4), strides=(16,)), "strides", (16,)),
    (lambda: ns.as_storage(np.zeros(4), dtype=np.int64), "dtype", "int64"),
    (lambda: ns.as_storage(np.zeros((4, 4))[::2], shape=(8,)), "shape", (8,)),
    (lambda: ns.as_storage(np.zeros(4), layout=(0, 1)), "layout", (0, 1)),
    (lambda: ns.as_storage(np.zeros((3, 4)), layout=(1, 0)), "layout", (1, 0)),
    (lambda: ns.as_storage(np.zeros(64, np.uint8)[1:9].view(np.float64),
                           alignment_size=64), "alignment_size", 64),
    (lambda: ns.as_storage(device_data=np.zeros(3)), "device_data", "ndarray"),
    (lambda: ns.as_storage(np.zeros(3), dev_array(np.zeros(4))), "shape", "(4,)"),
    (lambda: ns.as_storage(np.zeros(3), dev_array(np.zeros(3, np.float32))), "dtype",
     "float32"),
    (lambda: ns.as_storage(np.zeros(3), dev_array(np.zeros(3)), managed="cuda"), "managed",
     "cuda"),
    (lambda: ns.as_storage(np.zeros(3), device="gpu", managed=None), "managed", "None"),
    (lambda: ns.storage(), "shape", None),
], ids=lambda x: x if isinstance(x, str) else None)
def test_as_storage_misuse(emu, call, keyword, value):
    assert_refused(call, keyword, value, name_value=value is not None)


def test_typed_array_with_another_shape_is_not_reinterpreted():
    """as_storage(int32 array, shape=...) must not silently reinterpret the
    int32 bytes as float64 (the flat-buffer default)."""
    a = np.arange(6, dtype=np.int32)
    try:
        s = ns.as_storage(a, shape=(3,))
    except StorageError as e:
        assert "shape" in str(e)
        return
    assert s.dtype == a.dtype, f"reinterpreted {a.dtype} bytes as {s.dtype}: {np.asarray(s)}"


# ---------------------------------------------------------- crash candidates
CRASHERS = {
    "empty_object": "s = ns.empty((64,), dtype=object); print(np.asarray(s))",
    "zeros_object": "s = ns.zeros((64,), dtype=object); print(np.asarray(s))",
    "storage_object": "s = ns.storage(np.array([None, 1, 'x'], dtype=object)); print(np.asarray(s))",
    "struct_object": "s = ns.empty((64,), dtype=[('a', object), ('b', 'f8')]); print(np.asarray(s))",
    "flat_object": "s = ns.as_storage(np.full(64, 0xAB, np.uint8), shape=(2,), dtype=object); "
                   "print(np.asarray(s))",
    "wrap_object_then_ufunc": "s = ns.as_storage(np.array([1, 2], dtype=object)); print(s + 1)",
    "zero_itemsize": "s = ns.zeros((3,), dtype='V0'); print(np.asarray(s))",
}


@pytest.mark.parametrize("name", sorted(CRASHERS))
def test_dtypes_that_cannot_live_in_raw_memory(name):
    """Object dtypes (and other unusual ones) in raw, uninitialised or
    foreign memory: refused with the package's error naming dtype, or
    working as NumPy does -- never a crash.  Run in a subprocess."""
    code = f"""
        import os, numpy as np, nclx.storage as ns
        print("NCLX=" + os.path.dirname(os.path.dirname(os.path.dirname(ns.__file__))), flush=True)
        try:
            {CRASHERS[name]}
        except ns.StorageError as e:
            print("REFUSED", type(e).__name__, e)
        except Exception as e:
            print("OTHER", type(e).__name__, e)
        else:
            print("WORKED")
    """
    rc, out = run_python(code)
    assert f"NCLX={STAGE}" in out, out[-500:]
    assert rc == 0, f"the interpreter died (rc {rc}, {signal.Signals(-rc).name if rc < 0 else rc}): {out[-500:]}"
    last = out.strip().splitlines()[-1]
    assert not last.startswith("OTHER"), last
    if last.startswith("REFUSED"):
        assert "dtype" in last, last


def test_nothing_crashes_on_garbage_keywords_in_a_subprocess():
    """A sweep of odd values for every keyword of every creation function
    in one subprocess: each call returns or raises, the process survives."""
    code = """
        import itertools, numpy as np, nclx.storage as ns
        from nclx.storage import devices
        devices.use(devices.EmulatedDevice())
        odd = [None, 0, 1, -1, 2**63, -2**63, 1.5, float('nan'), "", "x", (), (None,), (1, 2, 3),
               ((1, 2), (3, 4)), [[0, 0]], b"ab", object(), np.array([1, 2]), True]
        keys = ["aligned_index", "alignment_size", "defaults", "device", "dims", "halo",
                "layout", "managed", "shape", "strides", "offset", "dtype", "sync_state"]
        n = 0
        for key, v in itertools.product(keys, odd):
            for call in (lambda kw: ns.empty((3, 2), **kw), lambda kw: ns.empty_like(ns.zeros((3, 2)), **kw),
                         lambda kw: ns.as_storage(bytearray(64), **kw),
                         lambda kw: ns.as_storage(np.zeros((3, 2)), **kw),
                         lambda kw: ns.storage(np.zeros((3, 2)), **kw)):
                try:
                    call({key: v})
                except (ValueError, TypeError):
                    pass
                except Exception as e:
                    print("UNEXPECTED", key, repr(v)[:40], type(e).__name__, e)
                n += 1
        print("DONE", n)
    """
    rc, out = run_python(code, timeout=120)
    assert rc == 0, f"the interpreter died (rc {rc}): {out[-800:]}"
    assert "DONE" in out, out[-800:]
    unexpected = [ln for ln in out.splitlines() if ln.startswith("UNEXPECTED")]
    assert not unexpected, "\n".join(unexpected[:20])
