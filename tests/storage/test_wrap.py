"""as_storage: wrapping without copying.  Objects exposing
``__array_interface__`` (the extent the interface describes is checked
against its data buffer's length), flat byte buffers described by shape=,
strides= and offset= (never reaching outside), strided, overlapping and
read-only wraps (writes raise, or behave as on the ndarray view), and every
misuse refused by name."""
import operator

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import nclx.storage as ns
from nclx.storage import StorageError, core
from storage_helpers import assert_refused, dev_array, emu  # noqa: F401  (emu: a fixture)


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


# -- core's wrap constructors (ufunc results) against as_storage ----------------
def _meta(s):
    return (type(s), s.shape, s.dtype, s.strides, s.dims, s.halo, s.layout, s.alignment_size,
            s.aligned_index, s._buf.kind)


@pytest.mark.parametrize("make", [
    lambda: np.arange(12.0).reshape(3, 4),
    lambda: np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
    lambda: np.arange(24.0).reshape(4, 6)[::2, ::-3],
    lambda: np.zeros((0, 3)),
    lambda: np.ma.masked_array(np.arange(4.0).reshape(2, 2)),
], ids=["c", "f", "strided", "empty", "subclass"])
@pytest.mark.parametrize("dims, halo", [(None, None), ("JK", ((1, 0), (0, 1)))])
def test_wrap_host_makes_what_as_storage_makes(make, dims, halo):
    """ufunc.py wraps a host result through core.wrap_host (it sits below
    wrap.py): the same storage as as_storage(arr, dims=, halo=, device=None)."""
    arr = make()
    if 0 in arr.shape:
        halo = None         # wider than the empty extent
    got = core.wrap_host(arr, dims, halo)
    want = ns.as_storage(arr, dims=dims, halo=halo, device=None)
    assert _meta(got) == _meta(want)
    host = np.asarray(got)
    assert type(host) is np.ndarray and host.strides == arr.strides
    assert host.__array_interface__["data"][0] == arr.__array_interface__["data"][0]


def test_wrap_host_and_wrap_device_refuse_as_as_storage_does(emu):
    with pytest.raises(StorageError, match="data=dtype\\('O'\\)") as got:
        core.wrap_host(np.array([None, 1]), None, None)
    with pytest.raises(StorageError) as want:
        ns.as_storage(np.array([None, 1]), device=None)
    assert str(got.value) == str(want.value) and type(got.value) is type(want.value)
    with pytest.raises(StorageError, match="not a device array") as got:
        core.wrap_device(np.zeros(3), None, None)
    with pytest.raises(StorageError) as want:
        ns.as_storage(device_data=np.zeros(3), device="gpu", managed=None)
    assert str(got.value) == str(want.value)


def test_wrap_device_makes_what_as_storage_makes(emu):
    d = dev_array(np.arange(12.0).reshape(3, 4))
    got = core.wrap_device(d, "IJ", ((1, 1), (0, 2)))
    want = ns.as_storage(device_data=d, device="gpu", managed=None, dims="IJ",
                         halo=((1, 1), (0, 2)))
    assert _meta(got) == _meta(want) and isinstance(got, ns.GPUStorage)
    assert got._buf.backend is emu and got._dev is want._dev


def test_an_interface_read_once_cannot_grow_after_the_check():
    """A property describing a small extent while checked and a large one
    afterwards is read once: the checked dict is the one wrapped."""
    buf = bytearray(16)

    class Flip:
        reads = 0

        @property
        def __array_interface__(self):
            Flip.reads += 1
            shape = (2,) if Flip.reads == 1 else (4096, 4096)
            return {"shape": shape, "typestr": "<f8", "data": buf, "version": 3}
    s = ns.as_storage(Flip())
    assert s.shape == (2,) and Flip.reads == 1
    np.asarray(s)[:] = 7.0
    assert np.frombuffer(buf, np.float64).tolist() == [7.0, 7.0]


class _Described:
    def __init__(self, d):
        self.__array_interface__ = d


@pytest.mark.parametrize("typestr,descr,nbytes", [
    ("|V1", [("a", "<f8")], 8),                         # descr's 8 bytes, not typestr's 1
    ("|V1", [("a", "<f8"), ("b", "<f8"), ("c", "V4080")], 4096),
    ("|V16", [("a", "<f8")], 8),
])
def test_interface_extent_uses_the_dtype_numpy_builds(typestr, descr, nbytes):
    """Found by review: the extent check took the item size from typestr
    while NumPy builds the dtype from descr: an 8-byte buffer described as
    four float64 records was accepted and read 24 bytes past its end (a
    large one crashed)."""
    itemsize = np.asarray(_Described({"data": (0, True), "shape": (0,), "typestr": typestr,
                                  "descr": descr, "version": 3})).dtype.itemsize
    n = 4
    short = bytearray(itemsize * n - 1)
    with pytest.raises(StorageError, match="addresses bytes"):
        ns.as_storage(_Described({"data": short, "shape": (n,), "typestr": typestr,
                              "descr": descr, "version": 3}))
    exact = bytearray(itemsize * n)
    s = ns.as_storage(_Described({"data": exact, "shape": (n,), "typestr": typestr, "descr": descr,
                              "version": 3}))
    assert np.asarray(s).nbytes == len(exact) and itemsize == nbytes
