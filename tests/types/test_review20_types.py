"""Review 20 regressions in nclx.types: each failed before its fix."""
import numpy as np
import pytest

from nclx.types import Record, Scalar, arrmeta, parse, typeof


class _InstanceInterface:
    """An object whose ``__array_interface__`` is an instance attribute,
    which NumPy reads (it looks the attribute up on the instance)."""

    def __init__(self, base):
        self.__array_interface__ = dict(base.__array_interface__)
        self._keep = base


def test_instance_array_interface_is_seen_as_numpy_sees_it():
    base = np.arange(6.0).reshape(2, 3)
    obj = _InstanceInterface(base)
    assert np.asarray(obj).tobytes() == base.tobytes()
    assert str(typeof(obj)) == "2 * 3 * float64"
    meta = arrmeta(obj)
    assert meta.data == base.ctypes.data
    assert str(meta.type) == "2 * 3 * float64"


def test_instance_interface_past_its_buffer_is_refused():
    buf = bytearray(16)
    obj = _InstanceInterface(np.zeros(1))
    obj.__array_interface__ = {"data": buf, "shape": (4,), "typestr": "<f8", "version": 3}
    with pytest.raises(ValueError, match="arrmeta"):
        arrmeta(obj)


def test_record_refuses_duplicate_names():
    with pytest.raises(ValueError, match="duplicate field name 'x'"):
        Record((Scalar("int64"), Scalar("float64")), ("x", "x"))
    ok = Record((Scalar("int64"), Scalar("float64")), ("x", "y"))
    assert parse(str(ok)) == ok


def test_typeof_arrow_struct_with_duplicate_names_is_a_clear_error():
    pa = pytest.importorskip("pyarrow")
    s = pa.StructArray.from_arrays([pa.array([1, 2]), pa.array([3.0, 4.0])], names=["x", "x"])
    with pytest.raises(ValueError, match="duplicate field name 'x'"):
        typeof(s)


def test_equals_of_records_holding_nan():
    from nclx.types import Ragged
    dt = np.dtype([("a", "f8"), ("b", "i4")])
    d = np.array([(1.0, 1), (2.0, 2), (np.nan, 3)], dt)
    off = np.array([0, 1, 3])
    assert Ragged(off, d).equals(Ragged(off, d.copy()))
    e = d.copy()
    e["b"][2] = 4
    assert not Ragged(off, d).equals(Ragged(off, e))


def test_values_equal_of_partially_masked_records():
    from nclx.types.compute import values_equal
    dt = np.dtype([("a", "f8"), ("b", "i4"), ("c", [("x", "f4", (2,))])])
    d = np.zeros(3, dt)
    d["a"] = [1, 2, np.nan]
    d["b"] = [1, 2, 3]
    d["c"]["x"][2] = [np.nan, 1]
    hidden = d.copy()
    hidden["b"][1] = 99                       # under the mask: not compared
    m = np.zeros(3, np.ma.make_mask_descr(dt))
    m["b"][1] = True
    assert values_equal(np.ma.MaskedArray(d, mask=m), np.ma.MaskedArray(hidden, mask=m))
    assert not values_equal(d, hidden)
    other = m.copy()
    other["b"][1], other["a"][1] = False, True   # a different field masked
    assert not values_equal(np.ma.MaskedArray(d, mask=m), np.ma.MaskedArray(d, mask=other))
    sub = m.copy()
    sub["c"]["x"][0] = [True, False]             # masks inside a subarray field
    assert not values_equal(np.ma.MaskedArray(d, mask=sub), np.ma.MaskedArray(d, mask=m))
    moved = d.copy()
    moved["c"]["x"][0, 0] = 5
    assert values_equal(np.ma.MaskedArray(d, mask=sub), np.ma.MaskedArray(moved, mask=sub))
