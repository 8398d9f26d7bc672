"""Review 27 (docs audit of storage.md); each test failed before its fix."""
import threading

import numpy as np
import pytest

import nclx.storage as st
from nclx.storage import devices
from nclx.storage.params import StorageError


@pytest.fixture
def made_in_a_block():
    dev = devices.EmulatedDevice()
    with devices.use(dev):
        g = st.ones((3, 4), device="gpu", managed=None)      # device only
        h = st.ones((3, 4), device="gpu")                    # host and device
    return dev, g, h


def test_reductions_of_a_device_storage_keep_its_backend(made_in_a_block):
    dev, g, _ = made_in_a_block
    # before: outside the block the current backend (CuPy) was asked for:
    # DeviceUnavailableError here; inside another block, that one was used
    for where in (None, devices.EmulatedDevice()):
        if where is None:
            r = np.sum(g, axis=0)
        else:
            with devices.use(where):
                r = np.sum(g, axis=0)
        assert r._buf.backend is dev
        assert dev.to_host(r.to_cupy()).tolist() == [3.0] * 4
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", np.add.reduce(g, axis=1)))
    t.start()
    t.join()
    assert out["r"]._buf.backend is dev


def test_wrapping_a_device_storage_keeps_its_backend(made_in_a_block):
    dev, g, h = made_in_a_block
    for src in (g, h):
        for wrapped in (st.as_storage(src), st.storage(src, copy=False), st.storage(src)):
            assert wrapped._buf.backend is dev          # before: CuPy asked for
            assert dev.to_host(wrapped.to_cupy()).tolist() == [[1.0] * 4] * 3


def test_a_flat_byte_buffer_with_dtype_alone_is_read_as_frombuffer_reads_it():
    raw = bytearray(np.arange(4.0).tobytes())
    for kw in (dict(dtype="f8"), dict(dtype="f8", offset=8), dict(dtype="i4", offset=4),
               dict(dtype="u1", offset=3), dict(dtype="f4", offset=32)):
        s = st.as_storage(raw, **kw)          # before: "dtype='f8' disagrees with ... uint8"
        want = np.frombuffer(raw, kw["dtype"], offset=kw["offset"]) if "offset" in kw \
            else np.frombuffer(raw, kw["dtype"])
        assert s.shape == want.shape and np.asarray(s).tobytes() == want.tobytes()
    s = st.as_storage(raw, dtype="f8")
    s[0] = 7.0
    assert np.frombuffer(raw)[0] == 7.0                 # no copy
    with pytest.raises(StorageError, match=r"32 bytes after offset=4 are not a whole number"):
        st.as_storage(raw, dtype="f8", offset=4)
    for off in (40, -8):
        with pytest.raises(StorageError, match=rf"offset={off} lies outside"):
            st.as_storage(raw, dtype="f8", offset=off)
