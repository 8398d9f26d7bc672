"""arrmeta: DyND's layout as Python objects and ctypes structures at real addresses."""
import ctypes
import gc
import threading
import weakref

import numpy as np
import pyarrow as pa
import pytest

from nclx.types import (arrmeta, arrmeta_address_of, arrmeta_struct_of, data_address_of,
                        debug_repr, from_list, from_strings)
from nclx.types.arrmeta import FixedDimMeta, OptionMeta, RecordMeta, StringMeta, VarDimMeta


def test_dynd_strided_example():
    # the notebook's first example: addresses from the arrmeta equal NumPy's
    a = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    assert data_address_of(a) == a.ctypes.data
    assert data_address_of(a[1, 2, ...]) == a.ctypes.data + 20
    assert ctypes.c_int32.from_address(data_address_of(a[1, 2, ...])).value == 6

    class Strided(ctypes.Structure):
        _fields_ = [("size", ctypes.c_ssize_t), ("stride", ctypes.c_ssize_t)]
    meta = (Strided * 2).from_address(arrmeta_address_of(a))
    assert [(m.size, m.stride) for m in meta] == [(2, 12), (3, 4)]
    s = arrmeta_struct_of(a)
    assert (s.size, s.stride, s.element.size, s.element.stride) == (2, 12, 3, 4)
    with pytest.raises(TypeError, match="NumPy scalar"):
        data_address_of(a[1, 2])


def test_dynd_ragged_example():
    a = from_list([[1], [2, 3, 4], [5, 6]], dtype=np.int32)
    am = arrmeta(a)
    assert isinstance(am.root, FixedDimMeta) and isinstance(am.root.element, VarDimMeta)
    var = arrmeta_struct_of(a).element
    assert var.stride == 4 and var.offset == 0
    block = var.blockref.contents
    assert block.data == data_address_of(a.values) and block.size == a.values.nbytes
    assert block.owner is a.values or block.owner is a.values.base
    # the outer data is the offsets; element i of list j from the arrmeta alone
    offs = (ctypes.c_int64 * 4).from_address(data_address_of(a))
    j, i = 1, 2
    addr = block.data + var.offset + (offs[j] + i) * var.stride
    assert ctypes.c_int32.from_address(addr).value == 4
    assert data_address_of(a[0]) == block.data


def test_string_and_record_and_option():
    s = from_strings(["this is the first string", "second", "third"])
    meta = arrmeta_struct_of(s).element
    blk = meta.blockref.contents
    offs = (ctypes.c_int64 * 4).from_address(data_address_of(s))
    text = ctypes.string_at(blk.data + offs[0], offs[1] - offs[0]).decode()
    assert text == "this is the first string"
    assert isinstance(arrmeta(s).root.element, StringMeta)
    rec = np.zeros(2, dtype=[("x", "i4"), ("y", "f8", (2,))])
    rm = arrmeta(rec).root.element
    assert isinstance(rm, RecordMeta) and rm.data_offsets == (0, 4)
    assert list(arrmeta_struct_of(rec).element.data_offsets) == [0, 4]
    o = from_list([[1], None])
    om = arrmeta(o).root.element
    assert isinstance(om, OptionMeta) and om.block.address == data_address_of(o.validity)
    m = np.ma.masked_array([1, 2], mask=[0, 1])
    assert arrmeta(m).root.element.mask_kind == "bytemask"


def test_flags_and_debug_repr():
    a = np.arange(4)
    text = debug_repr(a)
    for word in ("------ array", "type: 4 * int64", "flags: 3 (read_access write_access )",
                 "fixed_dim arrmeta", "size: 4", "stride: 8", f"pointer: 0x{a.ctypes.data:016X}",
                 "memory_block"):
        assert word in text, word
    ro = a.copy()
    ro.flags.writeable = False
    assert "flags: 5 (read_access immutable )" in debug_repr(ro)
    arr = pa.array([[1, 2], [3]])
    text = debug_repr(arr)
    assert "var_dim arrmeta" in text and "immutable" in text and "pyarrow" in text
    assert "var_dim arrmeta" in debug_repr(from_list([[1]]))
    assert "string arrmeta" in debug_repr(from_strings(["x"]))


def test_address_stable_and_no_leak():
    a = np.arange(10)
    addr = arrmeta_address_of(a)
    assert arrmeta_address_of(a) == addr and arrmeta(a) is arrmeta(a)
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None          # the cache does not keep the array alive
    r = from_list([[1, 2]])
    rref = weakref.ref(r)
    arrmeta_address_of(r)
    del r
    gc.collect()
    assert rref() is None


def test_owner_kept_alive_by_struct():
    base = np.arange(100)
    view = base[10:20]
    s = arrmeta(view).struct
    blk = s.data_reference.contents
    assert blk.owner is base and blk.data == base.ctypes.data and blk.size == base.nbytes
    del base, view
    gc.collect()
    assert blk.owner[15] == 15     # the structure's reference keeps the memory alive


def test_threads_share_one_structure():
    a = np.arange(5)
    seen = []
    ts = [threading.Thread(target=lambda: seen.append(arrmeta_address_of(a))) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(seen)) == 1


def test_targets():
    import nclx.storage as gs
    s = gs.zeros((3, 4), dtype=np.float32, aligned_index=(1, 1))
    assert arrmeta_struct_of(s).size == 3
    assert data_address_of(s) == np.asarray(s).ctypes.data
    assert arrmeta_struct_of(pa.array([1, 2, 3])).size == 3
    with pytest.raises(TypeError, match="single-buffer"):
        arrmeta(pa.table({"a": [1]}))
    with pytest.raises(TypeError, match="no layout"):
        arrmeta(object())
    import awkward as ak
    assert arrmeta(ak.Array([[1], [2, 3]])).root.size == 2


def test_targets_known_by_their_protocol():
    block = np.arange(12, dtype=np.int32).reshape(4, 3)

    class Dap:
        def __distarray__(self):
            return {"__version__": "1.0.0", "buffer": block, "dim_data": ()}
    assert data_address_of(Dap()) == block.ctypes.data
    assert arrmeta_struct_of(Dap()).element.stride == 4
    iface = dict(block.__array_interface__)
    device_only = type("DeviceOnly", (), {"__gt_data_interface__": {"gpu": iface}})()
    with pytest.raises(TypeError, match="device-only"):
        arrmeta(device_only)

    class Plain:
        __array_interface__ = iface
        base = block                     # keeps the memory alive
    assert data_address_of(Plain()) == block.ctypes.data
    assert arrmeta(Plain()).type == "4 * 3 * int32"
