"""as_storage over objects exposing ``__array_interface__``: the extent the
interface describes is checked against its data buffer's length."""
import numpy as np
import pytest

import nclx.storage as ns
from nclx.storage import StorageError


class _Iface:
    def __init__(self, buf, shape, typestr="<f8", strides=None, offset=None):
        self.buf = buf
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": buf,
                                    "version": 3}
        if strides is not None:
            self.__array_interface__["strides"] = strides
        if offset is not None:
            self.__array_interface__["offset"] = offset


@pytest.mark.parametrize("shape,strides,offset,nbytes", [
    ((4, 4), None, None, 16),            # 128 bytes described, 16 held
    ((2, 2), (16, 8), None, 24),         # the last element ends at byte 32
    ((3,), (-8,), None, 24),             # a negative stride from offset 0 reads before the start
    ((2,), None, 16, 24),                # the offset pushes the end past the buffer
])
def test_interface_larger_than_its_buffer_is_refused(shape, strides, offset, nbytes):
    obj = _Iface(bytearray(nbytes), shape, strides=strides, offset=offset)
    with pytest.raises(StorageError, match=rf"holds {nbytes} bytes") as exc:
        ns.as_storage(obj)
    assert str(tuple(shape)) in str(exc.value)


def test_interface_inside_its_buffer_wraps_without_copying():
    buf = bytearray(np.arange(8, dtype=np.float64).tobytes())
    s = ns.as_storage(_Iface(buf, (2, 4)))
    assert np.asarray(s).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    s2 = ns.as_storage(_Iface(buf, (3,), strides=(-8,), offset=16))
    assert np.asarray(s2).tolist() == [2.0, 1.0, 0.0]
    assert ns.as_storage(_Iface(bytearray(0), (0, 5))).shape == (0, 5)
