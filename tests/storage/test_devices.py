"""Device storages and the host/device sync logic.

Every test runs on the emulated device (a second host buffer standing in
for device memory) and, where CuPy sees a GPU, on the real device; without
one the CuPy runs skip with the reason.
"""
import copy
import importlib.util
import pickle
import threading

import numpy as np
import pytest

import nclx.storage as st
from nclx.storage import devices
from nclx.storage.devices import EmulatedDevice, SyncState

CLEAN, HOST, DEV = SyncState.SYNC_CLEAN, SyncState.SYNC_HOST_DIRTY, SyncState.SYNC_DEVICE_DIRTY


def _cupy_backend():
    try:
        return devices.CupyBackend(), None
    except st.DeviceUnavailableError as exc:
        return None, str(exc)


@pytest.fixture(params=["emulated", "cupy"])
def backend(request):
    if request.param == "emulated":
        b = devices.EmulatedDevice()
    else:
        b, why = _cupy_backend()
        if b is None:
            pytest.skip(f"no real device: {why}")
    with devices.use(b):
        yield b


def host(x, b):
    """Device array -> NumPy copy (for checks)."""
    return b.to_host(x)


def test_fresh_zeros_are_clean_on_both_sides(backend):
    s = st.zeros((5, 6), device="gpu", halo=1, alignment_size=64)
    assert isinstance(s, st.SoftwareManagedGPUStorage) and s.device == "gpu"
    assert s.sync_state.state == CLEAN
    assert (backend.h2d_calls, backend.d2h_calls) == (0, 0)
    np.testing.assert_array_equal(host(s._dev, backend), np.zeros((5, 6)))
    addr = backend.address(s._dev) + sum(s.strides)      # element (1, 1): the aligned index
    assert addr % 64 == 0


def test_every_transition(backend):
    s = st.zeros((4, 8), device="gpu")
    span = s._buf.host_span.nbytes
    s[1, 2] = 5.0                                   # host write: host dirty, no copy yet
    assert s.sync_state.state == HOST and backend.h2d_calls == 0
    d = s.to_cupy()                                 # device wanted: h2d once, then device dirty
    assert backend.h2d_calls == 1 and backend.h2d_bytes == span
    assert s.sync_state.state == DEV
    assert float(host(d, backend)[1, 2]) == 5.0
    d[2, 3] = 7.0                                   # written on the device behind our back
    assert s[2, 3] == 7.0                           # host read: d2h once, clean
    assert backend.d2h_calls == 1 and backend.d2h_bytes == span
    assert s.sync_state.state == CLEAN
    s.host_to_device()                              # clean: nothing to do
    s.device_to_host()
    assert (backend.h2d_calls, backend.d2h_calls) == (1, 1)
    s.host_to_device(force=True)                    # force copies anyway
    s.device_to_host(force=True)
    assert (backend.h2d_calls, backend.d2h_calls) == (2, 2)
    s.set_host_modified()
    s.synchronize()
    assert backend.h2d_calls == 3 and s.sync_state.state == CLEAN
    s.set_device_modified()
    s.synchronize()
    assert backend.d2h_calls == 3 and s.sync_state.state == CLEAN
    s.set_device_modified()
    s.set_synchronized()
    assert s.sync_state.state == CLEAN
    s.set_host_modified()
    s.device_to_host()                              # host is newer: no copy, stays dirty
    assert backend.d2h_calls == 3 and s.sync_state.state == HOST


def test_device_value_writes_on_the_device(backend):
    s = st.zeros((3, 4), device="gpu")
    val = backend.to_device(np.full((4,), 2.0))
    s[1] = val                                     # a device value: written on the device
    assert s.sync_state.state == DEV and backend.d2h_calls == 0
    np.testing.assert_array_equal(np.asarray(s)[1], 2.0)
    assert backend.d2h_calls == 1
    s[0] = np.ones(4)                              # a host value: written on the host
    assert s.sync_state.state == HOST
    np.testing.assert_array_equal(host(s.to_cupy(), backend)[:2], [[1] * 4, [2] * 4])


def test_views_share_one_sync_state(backend):
    s = st.zeros((6, 6), device="gpu", halo=1)
    v = s[1:3, ::2]
    w = s.T
    d = s.domain_view
    assert v.sync_state is s.sync_state is w.sync_state is d.sync_state
    v.set_device_modified()
    assert s.sync_state.state == DEV
    v[0, 0] = 4.0                                  # host write through the view: syncs first
    assert backend.d2h_calls == 1 and s.sync_state.state == HOST
    assert s[1, 0] == 4.0 and w[0, 1] == 4.0


def test_gt_data_interface_acquire_and_touch(backend):
    s = st.zeros((4, 5), device="gpu", halo=((1, 0), (0, 2)), dims="IJ")
    gdi = s.__gt_data_interface__
    assert set(gdi) == {None, "gpu"}
    assert gdi[None]["dims"] == ("I", "J") and gdi["gpu"]["halo"] == ((1, 0), (0, 2))
    assert gdi[None]["shape"] == (4, 5) and gdi["gpu"]["shape"] == (4, 5)
    s.set_device_modified()
    gdi[None]["acquire"]()
    assert backend.d2h_calls == 1 and s.sync_state.state == CLEAN
    gdi[None]["touch"]()
    assert s.sync_state.state == HOST
    gdi["gpu"]["acquire"]()
    assert backend.h2d_calls == 1
    gdi["gpu"]["touch"]()
    assert s.sync_state.state == DEV


def test_copy_keeps_both_sides_and_the_state(backend):
    s = st.zeros((3, 5), device="gpu", halo=1)
    s[...] = np.arange(15.0).reshape(3, 5)
    c = s.copy()
    assert c.sync_state is not s.sync_state and c.sync_state.state == s.sync_state.state
    assert c.strides == s.strides and c.halo == s.halo
    np.testing.assert_array_equal(np.asarray(c), np.arange(15.0).reshape(3, 5))
    c.to_cupy()[0, 0] = -1
    assert s[0, 0] == 0.0 and c[0, 0] == -1


def test_gpu_only_storage(backend):
    g = st.ones((3, 4), device="gpu", managed=None)
    assert isinstance(g, st.GPUStorage) and g.sync_state is None
    assert not hasattr(g, "__array_interface__")
    with pytest.raises(st.NoSuchBufferError, match="no host buffer"):
        g.to_numpy()
    with pytest.raises(st.NoSuchBufferError):
        np.asarray(g)
    cai = g.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["data"][0] == backend.address(g._dev)
    h = g * 2 + 1                                    # computed by the device backend
    assert isinstance(h, st.GPUStorage)
    np.testing.assert_array_equal(host(h.to_cupy(), backend), np.full((3, 4), 3.0))
    with pytest.raises(st.StorageTypeError, match="host"):
        np.add(g, st.ones((3, 4)))
    g.synchronize(), g.device_to_host(), g.set_host_modified()   # no-ops, no error
    assert g.device_data is not None and g.data is None


def test_cuda_managed_storage_is_one_allocation(backend):
    m = st.zeros((4, 4), device="gpu", managed="cuda", alignment_size=128)
    assert isinstance(m, st.CUDAManagedGPUStorage)
    assert np.asarray(m).__array_interface__["data"][0] == backend.address(m._dev)
    assert np.asarray(m).__array_interface__["data"][0] % 128 == 0
    m[1, 1] = 3
    assert float(host(m.to_cupy(), backend)[1, 1]) == 3


def test_cpu_storage_sync_methods_are_no_ops():
    s = st.zeros((3,))
    for f in (s.device_to_host, s.host_to_device, s.synchronize, s.set_device_modified,
              s.set_host_modified, s.set_synchronized):
        f()
    assert s.sync_state is None and s.device is None and s.device_data is None
    assert not hasattr(s, "__cuda_array_interface__")
    with pytest.raises(st.NoSuchBufferError, match="no device buffer"):
        s.to_cupy()


def test_as_storage_pairs_and_disagreements(backend):
    data = np.arange(12.0).reshape(3, 4)
    ddev = backend.to_device(data)
    s = st.as_storage(data, ddev)
    assert isinstance(s, st.SoftwareManagedGPUStorage) and s.sync_state.state == CLEAN
    assert np.shares_memory(np.asarray(s), data)
    assert backend.address(s.to_cupy()) == backend.address(ddev)
    with pytest.raises(st.StorageError, match="shape"):
        st.as_storage(data, backend.to_device(np.zeros((4, 3))))
    with pytest.raises(st.StorageError, match="dtype"):
        st.as_storage(data, backend.to_device(np.zeros((3, 4), np.float32)))
    with pytest.raises(st.StorageError, match="strides"):
        st.as_storage(data, backend.to_device(np.asfortranarray(np.zeros((3, 4)))))
    shared = SyncState(DEV)
    t = st.as_storage(data, ddev, sync_state=shared)
    assert t.sync_state is shared


def test_wrapped_strided_host_data_never_clobbers_the_gaps(backend):
    base = np.full((4, 8), -7.0)
    view = base[:, ::2]
    s = st.as_storage(view, device="gpu")          # device sibling allocated, host is newer
    assert s.sync_state.state == HOST
    s.host_to_device()
    np.testing.assert_array_equal(host(s._dev, backend), view)
    s.to_cupy()[...] = 1.0
    s.device_to_host()
    np.testing.assert_array_equal(base[:, ::2], 1.0)
    np.testing.assert_array_equal(base[:, 1::2], -7.0)   # the gaps are someone else's


def test_device_only_wrap_and_host_sibling(backend):
    d = backend.to_device(np.arange(6.0))
    g = st.as_storage(device_data=d, managed=None)
    assert isinstance(g, st.GPUStorage)
    m = st.as_storage(device_data=d)                 # managed='gt4py': host sibling, device newer
    assert m.sync_state.state == DEV
    np.testing.assert_array_equal(np.asarray(m), np.arange(6.0))


def test_storage_copies_device_data(backend):
    d = backend.to_device(np.arange(6.0).reshape(2, 3))
    g = st.storage(device_data=d)
    assert g.device == "gpu"
    g.to_cupy()[0, 0] = 9
    assert float(host(d, backend)[0, 0]) == 0.0


def test_pickle_round_trip_of_a_device_storage(backend):
    s = st.zeros((2, 3), device="gpu", halo=((1, 0), (0, 1)))
    s.to_cupy()[1, 1] = 5
    s.set_device_modified()
    t = pickle.loads(pickle.dumps(s))
    assert type(t) is type(s) and t.halo == s.halo and t[1, 1] == 5


def test_cupy_consumes_the_cuda_array_interface_zero_copy():
    b, why = _cupy_backend()
    if b is None:
        pytest.skip(f"no real device: {why}")
    import cupy as cp
    with devices.use(b):
        s = st.zeros((16, 16), device="gpu", halo=2, alignment_size=256)
        c = cp.asarray(s)
        assert c.data.ptr == s.__cuda_array_interface__["data"][0]
        c[2, 2] = 42
        assert s[2, 2] == 42                         # device modified: host refreshed


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None,
                    reason="CuPy is installed here: the missing-package error cannot be shown")
def test_gpu_without_cupy_names_the_missing_package():
    with pytest.raises(st.DeviceUnavailableError, match="cupy"):
        st.zeros((3,), device="gpu")


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
                s = st.zeros((3,), device="gpu")
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
        m = st.storage(np.arange(6.0).reshape(2, 3), device="gpu",
                       managed=None if kind == "gpu" else kind, halo=((1, 0), (0, 1)))
    results, errors = {}, []

    def work():
        for name, f in (("add", lambda: m + 1), ("copy", m.copy), ("deepcopy",
                        lambda: copy.deepcopy(m)), ("zeros_like", lambda: st.zeros_like(m)),
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
