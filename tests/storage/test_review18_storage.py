"""Found by review 18 of nclx.storage: an unordered keyword value (a dict
read as its keys, a set in hash order) accepted as a sequence; ``full`` /
``ones`` not filling as ``np.full`` does (NumPy's unsafe cast, its warnings);
a ufunc result whose item size and the operand's alignment do not divide one
another refused; bool transpose axes taken as 0 and 1; a host storage given a
device-only storage as value or key; storage(list, dtype=) converting through
float64/int64; Storage() making a storage without buffers; a misleading
as_storage(device=None) message; an interface's bytearray resizable under the
storage that wraps it."""
import gc
import warnings

import numpy as np
import pytest

import nclx.storage as st
from storage_helpers import assert_refused, emu  # noqa: F401  (emu: a fixture)


# -- unordered keyword values ---------------------------------------------------
@pytest.mark.parametrize("keyword, value", [
    ("halo", {0: 1, 1: 1}),             # was halo ((0, 0), (1, 1)): the keys
    ("layout", {1: 0, 0: 0}),           # was layout (1, 0)
    ("aligned_index", {1: 0, 0: 0}),
    ("dims", {"J": 0, "I": 0}),         # was dims ('J', 'I')
    ("halo", frozenset({1, 2})),
    ("layout", {0, 1}),                 # hash order
])
def test_unordered_keyword_refused(keyword, value):
    assert_refused(lambda: st.zeros((4, 4), **{keyword: value}), keyword, value,
                   name_value=False)


@pytest.mark.parametrize("shape", [{3: 0, 4: 0}, {4, 5}])
def test_unordered_shape_refused(shape):
    assert_refused(lambda: st.empty(shape), "shape", shape, name_value=False)


def test_unordered_halo_setter_refused():
    s = st.zeros((4, 4))
    assert_refused(lambda: setattr(s, "halo", {0: 1, 1: 1}), "halo", None, name_value=False)
    assert s.halo == ((0, 0), (0, 0))


def test_sequences_still_accepted():
    s = st.zeros([4, 4], halo=[[1, 1], (2, 2)], layout=[1, 0], aligned_index=[1, 2],
                 dims=["J", "I"])
    assert (s.halo, s.layout, s.aligned_index, s.dims) == (((1, 1), (2, 2)), (1, 0), (1, 2),
                                                          ("J", "I"))


# -- full / ones fill as np.full ----------------------------------------------------
def _full_both(make_np, make_st):
    """(result or exception type, warning messages) of each."""
    out = []
    for make in (make_np, make_st):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = np.asarray(make())
                res = (r.dtype, r.shape, r.tobytes())
            except Exception as e:  # noqa: BLE001
                res = type(e)
        out.append((res, [(x.category, str(x.message)) for x in w]))
    return out


@pytest.mark.parametrize("fill, dtype", [
    (np.nan, "i4"), (np.inf, "i8"), (1e300, "f4"), (-1.5, "u1"), (300, "u1"),
    (2.5, "i2"), (1 + 2j, "f8"), (7, "f8"), (True, "i1"),
])
def test_full_matches_np_full_on_host(fill, dtype):
    (want, want_w), (got, got_w) = _full_both(lambda: np.full((3, 2), fill, dtype),
                                              lambda: st.full((3, 2), fill, dtype, halo=1))
    assert got == want and got_w == want_w


def test_full_like_matches_np_full_like():
    tmpl = np.zeros((2, 3), "i4")
    (want, want_w), (got, got_w) = _full_both(lambda: np.full_like(tmpl, np.nan),
                                              lambda: st.full_like(st.storage(tmpl), np.nan))
    assert got == want and got_w == want_w


@pytest.mark.parametrize("managed", ["gt4py", None])
@pytest.mark.parametrize("fill, dtype", [(np.nan, "i4"), (1e300, "f4"), (300, "u1"),
                                         (-1.5, "u1")])
def test_full_on_device_matches_np_full(emu, managed, fill, dtype):  # noqa: F811
    (want, want_w), _ = _full_both(lambda: np.full((3, 2), fill, dtype), lambda: None)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            s = st.full((3, 2), fill, dtype, device="gpu", managed=managed, alignment_size=16)
        except Exception as e:  # noqa: BLE001
            assert want is type(e)
            return
    assert [(x.category, str(x.message)) for x in w] == want_w     # once, not per side
    dev = np.asarray(s.to_cupy())
    assert (dev.dtype, dev.shape, dev.tobytes()) == want
    if managed == "gt4py":
        s.set_device_modified()             # the host side holds the same bytes
        host = np.asarray(s._host)
        assert host.tobytes() == want[2]


def test_full_array_fill_value_on_device(emu):  # noqa: F811
    want = np.full((2, 3), [1, 2, 3], "f8")
    for managed in ("gt4py", None):
        s = st.full((2, 3), [1, 2, 3], device="gpu", managed=managed)   # was ValueError
        assert np.asarray(s.to_cupy()).tobytes() == want.tobytes()
        s2 = st.full_like(s, [4, 5, 6])
        assert np.asarray(s2.to_cupy()).tobytes() == np.full((2, 3), [4, 5, 6], "f8").tobytes()


# -- ufunc results of another item size ------------------------------------------------
@pytest.mark.parametrize("data, other, alignment", [
    (np.array([b"ab", b"cd", b"ef", b"gh"], "S4"), b"x", 4),     # S5 result
    (np.array(["ab", "cd"], "U2"), "x", 8),                       # U3 result (12 bytes)
])
def test_ufunc_result_of_another_itemsize(data, other, alignment):
    s = st.storage(data, alignment_size=alignment)
    want = np.add(data, other)
    got = np.add(s, other)                  # was StorageError (alignment_size)
    assert isinstance(got, st.Storage)
    assert np.asarray(got).dtype == want.dtype
    assert np.asarray(got).tobytes() == want.tobytes()
    a = got.alignment_size
    assert a <= alignment and want.dtype.itemsize % a == 0


def test_ufunc_result_alignment_kept_when_it_divides():
    s = st.zeros((4, 4), "f4", alignment_size=64, halo=1)
    r = s + 1.0j
    assert r.alignment_size == 64 and r.dtype == (np.zeros(1, "f4") + 1.0j).dtype


# -- transpose axes ------------------------------------------------------------------------
@pytest.mark.parametrize("axes", [(True, False), (np.bool_(True), 0)])
def test_transpose_bool_axes_refused(axes):
    with pytest.raises(TypeError):
        np.zeros((2, 3)).transpose(*axes)
    with pytest.raises(TypeError, match="transpose axes"):     # was a (3, 2) view
        st.zeros((2, 3)).transpose(*axes)


# -- a host storage indexed by, or assigned, a device-only storage ---------------------
def test_host_storage_assigned_a_device_only_storage(emu):  # noqa: F811
    a = np.arange(20.0).reshape(4, 5)
    g = st.storage(a, device="gpu", managed=None)
    c = st.zeros((4, 5), halo=1)
    c[...] = g                              # was AttributeError ('NoneType' ... 'to_host')
    assert np.asarray(c).tobytes() == a.tobytes()
    c[1:3] = g[::-1][:2]
    want = a.copy()
    want[1:3] = a[::-1][:2]
    assert np.asarray(c).tobytes() == want.tobytes()


def test_host_storage_indexed_by_a_device_only_storage(emu):  # noqa: F811
    a = np.arange(20.0).reshape(4, 5)
    mask = st.storage(a > 7, device="gpu", managed=None)
    c = st.storage(a)
    assert c[mask].tobytes() == a[a > 7].tobytes()     # was AttributeError
    c[mask] = -1.0
    want = a.copy()
    want[a > 7] = -1.0
    assert np.asarray(c).tobytes() == want.tobytes()


# -- storage(list, dtype=) converts as np.array(list, dtype=) -------------------------------
@pytest.mark.parametrize("data, dtype", [([300, -1], "u1"), ([1.5, np.nan], "i4"),
                                         ([[1, 2], [3, 4]], "i2"), ([2 ** 63], "u8"),
                                         ([0.1, 0.2], "f4")])
def test_storage_of_a_list_with_dtype(data, dtype):
    (want, want_w), (got, got_w) = _full_both(lambda: np.array(data, dtype=dtype),
                                              lambda: st.storage(data, dtype=dtype))
    assert got == want and got_w == want_w       # [300] as u1 was 44, NaN as i4 INT_MIN


# -- the classes are not constructors ------------------------------------------------------
@pytest.mark.parametrize("name", ["Storage", "CPUStorage", "GPUStorage",
                                  "SoftwareManagedGPUStorage", "CUDAManagedGPUStorage"])
def test_storage_class_called_directly(name):
    from nclx.storage import core
    with pytest.raises(TypeError, match="as_storage"):     # was a storage without buffers
        getattr(core, name)()


def test_as_storage_of_a_device_storage_with_device_none(emu):  # noqa: F811
    s = st.zeros((3, 4), device="gpu")
    with pytest.raises(st.StorageError, match=r"device=None.*storage\(data, device=None\)"):
        st.as_storage(s, device=None)       # was "... device_data was given" (it was not)
    with pytest.raises(st.StorageError, match="device_data was given"):
        st.as_storage(s, device_data=s.to_cupy(), device=None)


# -- a wrapped interface keeps its buffer exported ----------------------------------------
class _Iface:
    def __init__(self, d):
        self.__array_interface__ = d


def test_interface_buffer_cannot_be_resized_under_the_storage():
    ba = bytearray(64)
    s = st.as_storage(_Iface({"data": ba, "shape": (8,), "typestr": "<f8", "version": 3}))
    s[...] = 2.0
    assert np.frombuffer(ba).tolist() == [2.0] * 8          # a view, not a copy
    with pytest.raises(BufferError):    # was allowed: the storage then used freed memory
        ba.extend(b"x" * (1 << 20))
    v = s[2:]
    del s
    with pytest.raises(BufferError):    # a view keeps it too
        ba.extend(b"x")
    del v
    gc.collect()
    ba.extend(b"x")                     # released with the last view
    assert len(ba) == 65


# ------------------------------------------ the creation cache and equal dtypes
@pytest.mark.parametrize("make", ["zeros", "empty"])
def test_creation_cache_keeps_flags_that_dtype_equality_ignores(make):
    # before: the cache keyed on the dtype by equality, which ignores
    # align=True and metadata=: a later call got the first call's dtype
    fields = [("a", "u1"), ("b", "f8")]
    plain = np.dtype(fields)
    aligned = np.dtype(fields, align=True)
    fn = getattr(st, make)
    first = fn(3, dtype=plain)
    got = fn(3, dtype=aligned)
    assert got.dtype.isalignedstruct
    assert first.dtype.isalignedstruct is False
    tagged = np.dtype("f8", metadata={"unit": "m"})
    fn(3, dtype=np.dtype("f8"))
    assert fn(3, dtype=tagged).dtype.metadata == {"unit": "m"}
