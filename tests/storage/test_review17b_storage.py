"""Review 17b of nclx.storage: ``as_storage`` of a typed buffer object
(array.array, a memoryview of a typed array, ctypes arrays) is the array
``np.asarray`` makes of it, zero-copy, not its uint8 bytes."""
import array
import ctypes
import mmap

import numpy as np
import pyarrow as pa
import pytest

import nclx.storage as st
from nclx.storage.params import StorageError, StorageTypeError


def _typed():
    return {
        "array-i": lambda: array.array("i", [7, -8, 9]),
        "array-d": lambda: array.array("d", [0.5, 1.5]),
        "array-b": lambda: array.array("b", [1, -2, 3]),
        "memoryview-i8": lambda: memoryview(np.arange(4, dtype=np.int64)),
        "memoryview-be": lambda: memoryview(np.arange(4, dtype=">i4")),
        "memoryview-bool": lambda: memoryview(np.array([True, False, True])),
        "memoryview-record": lambda: memoryview(np.zeros(2, [("a", "<i4"), ("b", "<f8")])),
        "cast-d-2d": lambda: memoryview(bytearray(np.arange(6.0).tobytes())).cast("d", (2, 3)),
        "cast-d-readonly": lambda: memoryview(np.arange(6.0).tobytes()).cast("d"),
        "strided-d": lambda: memoryview(np.arange(16.0).reshape(4, 4))[::2],
        "ctypes-int": lambda: (ctypes.c_int * 3)(1, 2, 3),
        "ctypes-double-2d": lambda: ((ctypes.c_double * 2) * 3)(),
        "ctypes-char": lambda: (ctypes.c_char * 3)(b"a", b"b", b"c"),
        "arrow": lambda: pa.py_buffer(b"\x01\xfe\x03"),
    }


@pytest.mark.parametrize("name", sorted(_typed()))
def test_as_storage_of_a_typed_buffer_is_what_numpy_reads(name):
    """Before: every one of these was wrapped as uint8 bytes (array('i')
    [7, -8, 9] as 12 bytes 7, 0, 0, 0, 248, ...), while np.asarray gives
    the typed array."""
    obj = _typed()[name]()
    want = np.asarray(obj)
    s = st.as_storage(obj)
    got = np.asarray(s)
    assert (got.dtype, got.shape, got.tobytes()) == (want.dtype, want.shape, want.tobytes())
    assert (s.dtype, s.shape) == (want.dtype, want.shape)
    assert np.shares_memory(got, want)                      # zero-copy
    assert got.flags.writeable == want.flags.writeable
    if got.flags.writeable:
        got[(0,) * got.ndim] = want[(-1,) * want.ndim]      # the object's own memory
        assert np.asarray(obj)[(0,) * got.ndim] == want[(-1,) * want.ndim]


def test_storage_copy_false_agrees_with_the_copy():
    obj = array.array("q", [1, 2, 3])
    a = np.asarray(st.storage(obj, copy=False))
    b = np.asarray(st.storage(obj))
    assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())


@pytest.mark.parametrize("kw", [
    {"shape": (4,), "dtype": np.float64},      # a reinterpretation of its 12 bytes
    {"shape": (12,), "dtype": np.uint8},
    {"shape": (1, 3)},
    {"dtype": np.float32},
    {"dtype": np.uint32},
    {"strides": (8,)},
], ids=["reshape-f8", "bytes", "1x3", "f4", "u4", "strides"])
def test_a_typed_buffer_is_never_reinterpreted(kw):
    """dtype=/shape=/strides= describe raw bytes only (docs/storage.md); a
    typed buffer, like a typed ndarray, must agree with them."""
    obj = array.array("i", [7, -8, 9])
    with pytest.raises(StorageError, match=r"as_storage: (shape|dtype|strides)=") as info:
        st.as_storage(obj, **kw)
    if "shape" in kw:
        assert "cast('B')" in str(info.value)
    # its raw bytes, said so, are described as before
    s = st.as_storage(memoryview(obj).cast("B"), shape=(3,), dtype=np.int32)
    assert np.asarray(s).tolist() == [7, -8, 9]


def test_keywords_that_agree_are_accepted():
    obj = memoryview(bytearray(np.arange(6.0).tobytes())).cast("d", (2, 3))
    s = st.as_storage(obj, shape=(2, 3), dtype=np.float64, strides=(24, 8))
    assert np.asarray(s).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_a_format_numpy_cannot_read_is_refused_by_name():
    obj = (ctypes.c_void_p * 2)()
    with pytest.raises(StorageTypeError, match=r"c_void_p_Array_2.*buffer format '<P'"):
        st.as_storage(obj)
    with pytest.raises(ValueError):
        np.asarray(obj)                        # NumPy refuses it too
    s = st.as_storage(memoryview(obj).cast("B"))
    assert (s.dtype, s.shape) == (np.uint8, (2 * ctypes.sizeof(ctypes.c_void_p),))


@pytest.mark.parametrize("make", [
    lambda b: b,
    bytearray,
    lambda b: memoryview(bytearray(b)),
    lambda b: np.frombuffer(b, np.uint8),
    lambda b: pa.py_buffer(b),
    lambda b: (ctypes.c_char * len(b)).from_buffer_copy(b),
    lambda b: memoryview(bytearray(b)).cast("B", (2, len(b) // 2)),
], ids=["bytes", "bytearray", "memoryview", "uint8", "arrow", "ctypes-char", "2d-bytes"])
def test_byte_buffers_are_still_described_by_shape_and_dtype(make):
    raw = np.array([1.5, 2.5, 3.5, 4.5]).tobytes()
    s = st.as_storage(make(raw), shape=(2, 2), dtype=np.float64)
    assert np.asarray(s).tolist() == [[1.5, 2.5], [3.5, 4.5]]
    s = st.as_storage(make(raw), shape=(1,), dtype=np.float64, offset=8)
    assert np.asarray(s).tolist() == [2.5]


@pytest.mark.parametrize("make", [
    lambda: bytes(5), lambda: bytearray(5), lambda: memoryview(bytearray(5)),
    lambda: mmap.mmap(-1, 5),
])
def test_byte_buffers_still_give_uint8(make):
    s = st.as_storage(make())
    assert (s.dtype, s.shape) == (np.uint8, (5,))


@pytest.mark.parametrize("make", ["storage", "empty_like", "zeros_like", "ones_like"])
def test_creation_from_a_memoryview_reads_it_as_numpy_does(make):
    """A memoryview has a shape but no dtype: storage() and the *_like
    functions raised AttributeError ('memoryview' object has no attribute
    'dtype')."""
    import nclx.storage as st
    src = np.arange(6, dtype=np.int32).reshape(2, 3)
    view = memoryview(src)
    got = getattr(st, make)(view)
    arr = np.asarray(got)
    assert arr.shape == (2, 3) and arr.dtype == np.int32
    if make == "storage":
        assert arr.tobytes() == src.tobytes()
        assert not np.shares_memory(arr, src)
