"""Review 17 of nclx.storage: a copy asked of ``__array__`` leaves the sync
state alone, and ``as_storage`` reads an object that has both the buffer
protocol and an array interface the way ``np.asarray`` does (the buffer)."""
import array
import mmap

import numpy as np
import pytest

import nclx.storage as st
from nclx.storage import devices
from nclx.storage.devices import EmulatedDevice, SyncState

CLEAN, HOST, DEV = SyncState.SYNC_CLEAN, SyncState.SYNC_HOST_DIRTY, SyncState.SYNC_DEVICE_DIRTY


# -- 1. __array__(copy=True) ------------------------------------------------------
def _device_newer(backend):
    """A managed storage whose device side holds the newest values (4, 5, ...)."""
    s = st.zeros((2, 3), device="gpu")
    d = s.to_cupy()
    d[...] = np.arange(4.0, 10.0).reshape(2, 3)
    assert s.sync_state.state == DEV
    backend.reset_counters()
    return s


@pytest.mark.parametrize("call", [
    lambda s: s.__array__(copy=True),
    lambda s: s.__array__(dtype=np.float64, copy=True),
    lambda s: s.__array__(dtype=np.float32, copy=True),
    lambda s: s.__array__(dtype=np.float32),          # a cast is a copy too
], ids=["copy", "same-dtype-copy", "cast-copy", "cast"])
def test_a_copy_does_not_mark_the_host_modified(call):
    """Before: __array__ went through to_numpy(), which marks the host
    modified, so a copy left SYNC_HOST_DIRTY and the next device access
    copied the whole buffer host -> device for nothing."""
    with devices.use(EmulatedDevice()) as backend:
        s = _device_newer(backend)
        out = call(s)
        # the copy holds the device's values (brought to the host first) ...
        assert out.tolist() == [[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
        assert backend.d2h_calls == 1 and s.sync_state.state == CLEAN
        assert not np.shares_memory(out, s._host)
        out[...] = -1.0                    # ... and is the caller's own
        s.to_cupy()
        assert backend.h2d_calls == 0      # no host -> device copy for a copy
        assert np.asarray(s).tolist() == [[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]


@pytest.mark.parametrize("call", [
    lambda s: s.__array__(),
    lambda s: s.__array__(copy=False),
    lambda s: s.__array__(dtype=np.float64),
    lambda s: s.__array__(dtype=np.float64, copy=False),
], ids=["none", "false", "same-dtype", "same-dtype-false"])
def test_a_view_still_marks_the_host_modified(call):
    """copy=None/False hand out the host buffer, which the caller may
    write: that stays marked, and the write reaches the device."""
    with devices.use(EmulatedDevice()) as backend:
        s = _device_newer(backend)
        view = call(s)
        assert np.shares_memory(view, s._host) and s.sync_state.state == HOST
        view[0, 0] = 42.0
        assert float(backend.to_host(s.to_cupy())[0, 0]) == 42.0
        assert backend.h2d_calls == 1


def test_a_cast_without_a_copy_is_still_refused():
    with devices.use(EmulatedDevice()) as backend:
        s = _device_newer(backend)
        with pytest.raises(ValueError, match="a cast needs a copy"):
            s.__array__(dtype=np.float32, copy=False)
        assert s.sync_state.state == DEV and backend.d2h_calls == 0


def test_numpy_reads_the_array_interface_which_marks():
    """np.array / np.asarray never call __array__ here: NumPy reads
    __array_interface__ first (before __array__, whatever copy= says), and
    that hands out the writable host buffer, so it marks.  Pinned so that a
    change in NumPy's order, or in ours, is seen."""
    with devices.use(EmulatedDevice()) as backend:
        for make in (np.array, np.asarray, lambda s: np.array(s, copy=True)):
            s = _device_newer(backend)
            out = make(s)
            assert out.tolist() == [[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
            assert s.sync_state.state == HOST


def test_copy_of_a_device_only_storage_names_to_cupy():
    with devices.use(EmulatedDevice()):
        g = st.zeros((2,), device="gpu", managed=None)
        for kw in ({"copy": True}, {"dtype": np.float32}, {}):
            with pytest.raises(st.NoSuchBufferError, match="to_cupy"):
                g.__array__(**kw)


# -- 4. as_storage: the buffer protocol before the array interface ----------------
_ELSEWHERE = np.arange(3, dtype=np.float64)      # what the interfaces describe


class _IfaceBytearray(bytearray):
    @property
    def __array_interface__(self):
        return _ELSEWHERE.__array_interface__


class _IfaceArray(array.array):
    @property
    def __array_interface__(self):
        return _ELSEWHERE.__array_interface__


class _IfaceMmap(mmap.mmap):
    @property
    def __array_interface__(self):
        return _ELSEWHERE.__array_interface__


class _StructBytearray(bytearray):
    @property
    def __array_struct__(self):
        return _ELSEWHERE.__array_struct__


class _RaisingIface(bytearray):
    @property
    def __array_interface__(self):      # NumPy never reads it: neither may we
        raise RuntimeError("read")


class _RaisingStruct(bytearray):
    @property
    def __array_struct__(self):
        raise RuntimeError("read")


def _mmap(payload):
    m = _IfaceMmap(-1, len(payload))
    m.write(payload)
    return m


@pytest.mark.parametrize("make", [
    lambda: _IfaceBytearray(b"\x01\x02\x03\x04\x05"),
    lambda: _IfaceArray("i", [7, -8, 9]),
    lambda: _IfaceArray("d", [0.5, 1.5]),
    lambda: _StructBytearray(b"\x09\x08"),
    lambda: _RaisingIface(b"\x0a\x0b\x0c"),
    lambda: _RaisingStruct(b"\x0d\x0e"),
    lambda: _mmap(b"abcdefgh"),
], ids=["bytearray", "array-i", "array-d", "struct", "raising", "raising-struct", "mmap"])
def test_as_storage_takes_the_buffer_as_numpy_does(make):
    """Before: the interface won, and the storage wrapped _ELSEWHERE (three
    float64s) rather than the object's own bytes, which np.asarray reads."""
    obj = make()
    want = np.asarray(obj)
    s = st.as_storage(obj)
    got = np.asarray(s)
    assert (got.dtype, got.shape, got.tobytes()) == (want.dtype, want.shape, want.tobytes())
    assert not np.shares_memory(got, _ELSEWHERE)
    got[0] = 3                             # the object's own memory, zero-copy
    assert np.asarray(obj)[0] == 3


def test_as_storage_of_such_a_buffer_with_shape_and_dtype():
    obj = _IfaceBytearray(np.array([1.5, 2.5, 3.5, 4.5]).tobytes())
    s = st.as_storage(obj, shape=(2, 2), dtype=np.float64)
    assert np.asarray(s).tolist() == [[1.5, 2.5], [3.5, 4.5]]
