"""Storages across processes: a forked child reads and writes the parent's
storages (its own copy of the memory), multiprocessing Pools (spawn, fork,
forkserver) pickle storages to the workers and back, with the emulated
device backend as the workers' default for managed ones, and unpickling
checks what a pickle says and loads pickles of earlier versions."""
import copy
import functools
import multiprocessing
import operator
import os
import pickle
import signal
import time
import warnings

import numpy as np
import pytest

import nclx.storage as ns
from nclx.storage import Storage, StorageError, core, devices
from nclx.storage.devices import EmulatedDevice
from storage_helpers import emu  # noqa: F401  (emu: a fixture)


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


def test_a_pickle_made_before_unpickling_moved_to_core_still_loads(emu):
    """Pickles name the unpickler by module: nclx.storage.core._rebuild now,
    nclx.storage.creation._rebuild in pickles made by earlier versions."""
    for kw in ({"halo": 1, "alignment_size": 64}, {"device": "gpu", "dims": "JK"}):
        s = ns.storage(np.arange(12.0).reshape(3, 4), **kw)
        new = pickle.dumps(s, protocol=0)
        assert b"cnclx.storage.core\n_rebuild\n" in new
        old = new.replace(b"cnclx.storage.core\n_rebuild\n", b"cnclx.storage.creation\n_rebuild\n")
        for data in (new, old):
            t = pickle.loads(data)
            assert type(t) is type(s) and t.strides == s.strides and t.halo == s.halo
            assert (t.dims, t.layout, t.aligned_index) == (s.dims, s.layout, s.aligned_index)
            np.testing.assert_array_equal(np.asarray(t), np.asarray(s))


@pytest.mark.parametrize("field, value", [("dims", "IJK"), ("halo", ((5, 5), (0, 0))),
                                          ("layout", (0, 0)), ("alignment", 48),
                                          ("device", "cpu"), ("managed", "yes"),
                                          ("aligned_index", (9, 0))])
def test_unpickling_checks_every_parameter_as_storage_does(emu, field, value):
    """A pickle's parameters are checked again (a pickle may come from
    elsewhere): the same error as storage(snapshot, ...) with them."""
    args = dict(dims="IJ", halo=((1, 1), (0, 0)), layout=(1, 0), alignment=8, device="gpu",
                managed="gt4py", aligned_index=(1, 0))
    args[field] = value
    snapshot = np.zeros((3, 4))
    with pytest.raises(StorageError) as got:
        core._rebuild(snapshot, args["dims"], args["halo"], args["layout"], args["alignment"],
                      args["device"], args["managed"], args["aligned_index"])
    with pytest.raises(StorageError) as want:
        ns.storage(snapshot, dims=args["dims"], halo=args["halo"], layout=args["layout"],
                   alignment_size=args["alignment"], device=args["device"],
                   managed=args["managed"], aligned_index=args["aligned_index"])
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
