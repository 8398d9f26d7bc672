"""Review 15 of nclx.storage: hostile inputs (huge shapes with a zero extent,
subarray dtypes, structured dtypes NumPy's array interface cannot describe,
non-canonical digit dims) and the behaviour pinned for the ones that held."""
import os
import threading

import numpy as np
import pytest

import nclx.storage as st

IMAX = np.iinfo(np.intp).max


# -- shapes whose element count is 0 but whose extents overflow strides -------
@pytest.mark.parametrize("shape, kw", [
    ((0, 2**62, 2**62), {}),
    ((0, 2**63, 2), {}),
    ((2**62, 0, 2**62), {"alignment_size": 64}),
    ((0, 2**40, 2**40), {"layout": (1, 0, 2), "halo": ((0, 0), (1, 1), (0, 0))}),
])
def test_an_empty_field_whose_strides_overflow_names_the_shape(shape, kw):
    """NumPy refuses np.empty((0, 2**62, 2**62)) ("array is too big"); nclx
    raised a bare OverflowError from C ("Python int too large to convert to
    C long") naming nothing."""
    with pytest.raises(ValueError):
        np.empty(shape)
    for make in (st.empty, st.zeros):
        with pytest.raises(st.StorageError, match=r"shape=\(.*more than this machine"):
            make(shape, **kw)
    with pytest.raises(st.StorageError, match=r"shape="):
        st.storage(shape=shape)


def test_a_flat_buffer_described_by_an_overflowing_empty_shape_names_the_shape():
    """as_storage(buffer, shape=(0, huge, huge)): NumPy's "Maximum allowed
    dimension exceeded" came through, naming no keyword."""
    with pytest.raises(st.StorageError, match=r"shape=\(0, "):
        st.as_storage(bytearray(16), shape=(0, 2**62, 2**62), dtype=np.float64)
    with pytest.raises(st.StorageError, match=r"shape=\(0, "):
        st.as_storage(bytearray(16), shape=(0, 2**63), dtype=np.int8)
    # a legitimately empty description still wraps
    assert st.as_storage(bytearray(16), shape=(0, 4), dtype=np.float64).shape == (0, 4)


def test_largest_addressable_fields_are_still_planned_not_refused():
    """The limit is NumPy's: an empty field at the edge is fine."""
    s = st.empty((0, IMAX // 8), np.float64)
    assert s.shape == (0, IMAX // 8) and s.size == 0 and s.nbytes == 0
    np.empty((0, IMAX // 8))    # NumPy accepts it too


# -- subarray dtypes ------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda dt, **kw: st.empty((3, 4), dt, **kw),
    lambda dt, **kw: st.zeros((3, 4), dt, **kw),
    lambda dt, **kw: st.ones((3, 4), dt, **kw),
    lambda dt, **kw: st.full((3, 4), 1.0, dt, **kw),
    lambda dt, **kw: st.empty_like(np.zeros((3, 4)), dt, **kw),
    lambda dt, **kw: st.storage(np.zeros((3, 4)), dtype=dt, **kw),
])
def test_a_subarray_dtype_is_refused_by_name(make):
    """np.empty((3, 4), ('f8', (2,))) is a (3, 4, 2) float64 array: the
    storage's shape grew a dimension its dims, halo, layout and aligned
    index knew nothing of (dims ('I', 'J') on a 3-d storage, a 1-entry halo
    on a 2-d one), or storage() failed to broadcast."""
    dt = np.dtype(("f8", (2,)))
    with pytest.raises(st.StorageTypeError, match=r"dtype=.*subarray"):
        make(dt, dims="IJ", halo=((1, 1), (0, 0)))
    with pytest.raises(st.StorageTypeError, match=r"dtype=.*subarray"):
        make(dt)


def test_subarray_dtypes_inside_a_structure_and_arrays_of_subarray_type_are_fine():
    """Only a top-level subarray adds dimensions; a field's does not, and an
    ndarray never has a top-level subarray dtype (NumPy expands it)."""
    dt = np.dtype([("v", "<f8", (3,)), ("n", "<i2")])
    s = st.zeros((2, 3), dt, halo=1)
    assert s.shape == (2, 3) and s.dtype == dt and s.dims == ("I", "J")
    w = st.as_storage(np.zeros(3, ("f8", (2,))))
    assert w.shape == (3, 2) and w.dims == ("I", "J")


# -- structured dtypes and np.asarray ----------------------------------------------
def test_structured_dtypes_the_interface_describes_keep_it():
    """Packed structures (nested, big-endian, titled) go through
    __array_interface__ with their dtype (gt4py and others read it)."""
    for dt in (np.dtype([("x", [("a", "i1"), ("b", "<f8")]), ("y", "<i2", (3,))]),
               np.dtype([("a", ">i4"), ("b", ">f8")]),
               np.dtype({"names": ["a", "b"], "formats": ["<f8", "<i4"], "titles": ["A", "B"]}),
               np.dtype(">f8"), np.dtype("U3")):
        s = st.zeros(3, dt)
        assert "descr" in s.__array_interface__
        assert np.asarray(s).dtype == dt


# -- dims -----------------------------------------------------------------------
@pytest.mark.parametrize("dims", [("01", "1"), ("I", "007"), ("0", "00"), ("I", "J", "K", "+1"),
                                  ("I", "1" * 5000)])
def test_a_digit_dim_must_be_written_as_its_number(dims):
    """'01' and '1' name one data dimension (gt4py orders them by int()):
    both were accepted as two distinct dims, and a preset or __gt_origin__
    ordered the pair arbitrarily.  A 5000-digit dim raised int()'s bare
    ValueError from the preset and __gt_origin__."""
    shape = (2,) * len(dims)
    with pytest.raises(st.StorageError, match=r"dims=.*"):
        st.empty(shape, dims=dims)
    with pytest.raises(st.StorageError, match=r"dims=.*"):
        st.as_storage(np.zeros(shape), dims=dims)
    with pytest.raises(st.StorageError, match=r"dims=.*"):
        st.empty(shape, dims=dims, defaults="gtx86")


def test_canonical_digit_dims_still_work():
    s = st.zeros((2, 2, 2, 2, 2), dims=("I", "J", "K", "10", "0"), defaults="gtx86")
    assert s.dims == ("I", "J", "K", "10", "0")
    assert s.layout == (0, 1, 2, 4, 3)


# -- behaviour that held up (pinned) ---------------------------------------------
def test_negative_and_non_contiguous_wraps_are_views_with_numpys_values():
    a = np.arange(48.0).reshape(6, 8)
    for view in (a[::-1], a[:, ::-2], a[::2, ::-3].T, a[3:3], a[1, ::-1]):
        s = st.as_storage(view)
        assert np.shares_memory(np.asarray(s), a) or view.size == 0
        assert np.asarray(s).tobytes() == view.tobytes()
        c = st.storage(view)
        assert not np.shares_memory(np.asarray(c), a)
        assert np.asarray(c).tobytes() == view.tobytes()


def test_read_only_and_0d_inputs():
    ro = np.arange(6.0)
    ro.flags.writeable = False
    s = st.as_storage(ro)
    assert s.__array_interface__["data"][1] is True
    with pytest.raises(ValueError):
        s[0] = 1.0
    c = st.storage(ro)
    c[0] = 5.0
    assert ro[0] == 0.0
    z = np.array(2.5)
    s0 = st.as_storage(z)
    assert s0.shape == () and np.shares_memory(np.asarray(s0), z) and float(s0) == 2.5


def test_views_outlive_their_storage():
    s = st.zeros((5, 7), halo=1, alignment_size=64)
    s[...] = 3.0
    v, a, inner = s[1:3], np.asarray(s), s.domain_view
    del s
    junk = [st.full((5, 7), 9.0, halo=1, alignment_size=64) for _ in range(20)]
    assert float(v[0, 0]) == 3.0 and a.sum() == 105.0
    assert np.asarray(inner).sum() == 45.0
    del junk


def test_threads_creating_hostile_and_valid_storages_at_once():
    errors, results = [], []

    def work(i):
        try:
            for k in range(200):
                try:
                    st.empty((0, 2**62, 2**62))
                except st.StorageError:
                    pass
                s = st.zeros((3, 4 + i), halo=1, alignment_size=64)
                s[...] = i
                results.append(float(np.asarray(s).sum()) == i * 3 * (4 + i))
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and all(results) and len(results) == 800


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_child_writes_and_reads_parent_allocations():
    s = st.full((4, 4), 2.0, halo=1, alignment_size=64)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover - child
        try:
            s[...] += 1.0
            t = st.zeros((4, 4), halo=1, alignment_size=64)
            ok = float(np.asarray(s).sum()) == 48.0 and float(np.asarray(t).sum()) == 0.0
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"1"
    assert float(np.asarray(s).sum()) == 32.0
