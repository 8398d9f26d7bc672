"""Review 16 of nclx.storage (hostile use): a device view of a storage that
wraps read-only host data, the strides and read-only flags of the exported
interfaces, and ``x in storage``."""
import ctypes

import numpy as np
import pytest

import nclx.storage as st
from nclx.storage import devices
from nclx.storage.devices import EmulatedDevice, SyncState

HOST, DEV = SyncState.SYNC_HOST_DIRTY, SyncState.SYNC_DEVICE_DIRTY


class ThroughTheFlag(EmulatedDevice):
    """An emulated device whose device -> host copy writes raw bytes, as
    CuPy's ``get(out=)`` does, whatever the host array's writeable flag."""

    def copy_d2h(self, dst, src):
        src = np.ascontiguousarray(np.asarray(src))
        assert dst.flags.c_contiguous and dst.nbytes == src.nbytes
        ctypes.memmove(dst.__array_interface__["data"][0], src.__array_interface__["data"][0],
                       src.nbytes)
        self.d2h_calls += 1


# -- a device view of read-only host data --------------------------------------
def test_a_device_view_of_read_only_data_keeps_the_host_the_reference():
    """Before: to_cupy() / __cuda_array_interface__ marked the device
    modified, so every later host read copied device -> host into the
    read-only array and failed ("assignment destination is read-only"): the
    storage could not be read on the host again."""
    with devices.use(EmulatedDevice()):
        ro = np.arange(4.0)
        ro.flags.writeable = False
        s = st.as_storage(ro, device="gpu")
        d = s.to_cupy()
        assert s.sync_state.state == HOST
        d[0] = 99.0                        # a device write that cannot be kept
        assert np.asarray(s).tobytes() == np.arange(4.0).tobytes()
        assert s[1] == 1.0
        assert float(s.to_cupy()[0]) == 0.0          # the device view is refreshed
        assert s.__cuda_array_interface__["data"][1] is True
        assert s.__gt_data_interface__["gpu"]["data"][1] is True
        assert np.asarray(s).tobytes() == ro.tobytes()


def test_device_data_is_never_copied_into_read_only_host_memory():
    """Before: device_to_host(force=True) (or a set_device_modified() and a
    host read) handed the read-only host buffer to the backend's copy, and a
    backend that writes raw bytes (CuPy's get(out=)) rewrote an immutable
    bytes object."""
    with devices.use(ThroughTheFlag()):
        raw = bytes(np.arange(4.0).tobytes())
        s = st.as_storage(raw, shape=(4,), dtype=np.float64, device="gpu")
        s.to_cupy()[...] = -1.0
        with pytest.raises(st.StorageError, match="read-only"):
            s.device_to_host(force=True)
        with pytest.raises(st.StorageError, match="read-only"):
            s.set_device_modified()
        assert raw == np.arange(4.0).tobytes()
        assert np.asarray(s).tobytes() == np.arange(4.0).tobytes()


def test_writable_host_data_still_syncs_both_ways():
    with devices.use(EmulatedDevice()):
        w = np.arange(4.0)
        s = st.as_storage(w, device="gpu")
        s.to_cupy()[0] = 7.0
        assert s.sync_state.state == DEV
        assert s.__cuda_array_interface__["data"][1] is False
        assert s[0] == 7.0 and w[0] == 7.0


# -- interfaces ---------------------------------------------------------------------
@pytest.mark.parametrize("shape, kw", [((3, 4), {}), ((1, 5), {"halo": ((0, 0), (1, 1))}),
                                       ((2, 3), {"layout": (1, 0)}), ((), {})])
def test_gt_data_interface_gives_strides_as_a_tuple(shape, kw):
    """GDP-3: every buffer entry has ``"strides": Tuple[int, ...]``; before,
    a contiguous storage's entries said None (NumPy's own dict)."""
    with devices.use(EmulatedDevice()):
        for s in (st.zeros(shape, **kw), st.zeros(shape, device="gpu", **kw)):
            gdi = s.__gt_data_interface__
            for entry in gdi.values():
                assert entry["strides"] == s.strides
                assert all(type(x) is int for x in entry["strides"])
            assert s.__array_interface__["strides"] == s.strides


# -- x in storage ------------------------------------------------------------------
def test_in_is_ndarrays_any_of_equal():
    """ndarray.__contains__ is ``(a == x).any()``; a storage iterated its
    rows and asked a row's truth value (ValueError, ambiguous)."""
    a = np.arange(12.0).reshape(3, 4)
    s = st.zeros((3, 4), halo=1, alignment_size=64)
    s[...] = a
    for x in (5.0, 11, -1.0, np.nan, [0.0, 1.0, 2.0, 3.0], [9.0, 9.0, 9.0, 9.0]):
        assert (x in s) == (x in a)
    assert (st.storage(a[0]) in s) == (a[0] in a)
    assert (0.0 in st.zeros(())) and not (1.0 in st.zeros((0, 3)))


# -- storage(data, shape=) --------------------------------------------------------
@pytest.mark.parametrize("shape", [(5,), (3, 1), "junk", (-1,)])
def test_storage_refuses_a_shape_its_data_does_not_have(shape):
    """storage(data, shape=...) dropped the keyword (a (3,) copy for
    shape=(5,), even for shape='junk'), where as_storage refuses it."""
    with pytest.raises(st.StorageError, match="shape="):
        st.storage(np.zeros(3), shape=shape)
    with pytest.raises(st.StorageError, match="shape="):
        st.as_storage(np.zeros(3), shape=shape)
    assert st.storage(np.zeros(3), shape=(3,)).shape == (3,)
    assert st.storage(np.zeros((2, 3)), shape=[2, 3], halo=1).halo == ((1, 1), (1, 1))


# -- transpose ----------------------------------------------------------------------
@pytest.mark.parametrize("axes", [(2**70, 0), (0, -2**70)])
def test_transpose_axes_past_c_long_are_an_axis_error(axes):
    """A bare OverflowError ("Python int too large to convert to C long");
    NumPy raises a ValueError."""
    with pytest.raises(ValueError):
        np.zeros((2, 3)).transpose(axes)
    s = st.zeros((2, 3), halo=1)
    with pytest.raises(np.exceptions.AxisError, match=r"transpose axes="):
        s.transpose(axes)
    with pytest.raises(np.exceptions.AxisError):
        np.transpose(s, axes)
    assert s.transpose((1, -2)).shape == (3, 2)
