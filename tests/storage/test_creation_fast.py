"""empty() / zeros() through the cached C path (nclx/storage/_fastalloc.pyx):
the recipe cache and its recent-arguments memo never give one call's
storage for another's arguments, host memory lives as long as any view of
it, and the path holds under threads."""
import functools
import gc
import inspect
import threading
import tracemalloc

import numpy as np
import pytest

import nclx.storage as st
from nclx.storage.alloc import plan
from storage_helpers import assert_refused


def _expected_strides(shape, dtype, layout, alignment, aligned_index):
    return plan(shape, layout, np.dtype(dtype), alignment, aligned_index).strides


def test_docstring_lists_the_gdp3_keywords_and_unknown_ones_are_refused():
    for k in ("aligned_index", "alignment_size", "defaults", "device", "dims", "halo",
              "layout", "managed"):
        assert f"``{k}``" in st.empty.__doc__
    assert list(inspect.signature(st.zeros).parameters) == ["shape", "dtype", "kwargs"]
    for _ in range(2):            # not cached after the first refusal
        with pytest.raises(st.StorageTypeError, match="'origin'"):
            st.zeros((3, 4), origin=(1, 1))
    st.zeros((3, 4), halo=1)
    with pytest.raises(st.StorageTypeError, match="'origin'"):
        st.zeros((3, 4), halo=1, origin=(1, 1))


@pytest.mark.parametrize("good,bad,keyword", [
    (dict(halo=1), dict(halo=True), "halo"),
    (dict(halo=((1, 1), (0, 0))), dict(halo=((1.0, 1), (0, 0))), "halo"),
    (dict(alignment_size=8), dict(alignment_size=8.0), "alignment_size"),
    (dict(aligned_index=(1, 0)), dict(aligned_index=(True, 0)), "aligned_index"),
])
def test_a_cached_value_does_not_admit_an_equal_one_of_another_type(good, bad, keyword):
    for _ in range(3):            # cached, then met again by the memo
        st.empty((4, 5), **good)
    with pytest.raises((ValueError, TypeError), match=keyword):
        st.empty((4, 5), **bad)
    with pytest.raises((ValueError, TypeError), match="shape"):
        st.empty((4, 5.0), **good)


def test_many_argument_sets_each_get_their_own_storage():
    # more sets than the memo holds, met twice each in changing order
    sets = []
    for dtype in (np.float64, "f4", np.dtype("i2"), "u1"):
        for halo in (0, 1, ((2, 0), (1, 1))):
            for layout in ((0, 1), (1, 0)):
                sets.append((dtype, dict(halo=halo, layout=layout, alignment_size=16)))
    rng = np.random.default_rng(0)
    for i in np.concatenate([rng.permutation(len(sets)) for _ in range(3)]):
        dtype, kw = sets[i]
        for make in (st.empty, st.zeros):
            s = make((6, 7), dtype, **kw)
            assert s.dtype == np.dtype(dtype)
            assert s.layout == kw["layout"]
            h = kw["halo"]
            want = ((h, h),) * 2 if isinstance(h, int) else h
            assert s.halo == want
            assert s.strides == _expected_strides((6, 7), dtype, kw["layout"], 16,
                                                  tuple(lo for lo, _ in want))
            if make is st.zeros:
                assert not np.asarray(s).any()


@pytest.mark.parametrize("kw", [{}, dict(layout=(1, 0)), dict(halo=1, alignment_size=64)],
                         ids=["C", "F", "padded"])
def test_host_memory_lives_as_long_as_a_view(kw):
    s = st.zeros((33, 17), np.int64, **kw)
    a = np.asarray(s)
    inner = s.domain_view
    del s
    gc.collect()
    junk = [np.full(561, 7, np.int64) for _ in range(200)]   # reuse freed memory, if any
    a[...] = np.arange(a.size).reshape(a.shape)
    assert np.asarray(inner).sum() == a[tuple(slice(lo, n - hi) for (lo, hi), n in
                                              zip(((1, 1),) * 2 if kw.get("halo") else
                                                  ((0, 0),) * 2, a.shape))].sum()
    assert a.sum() == a.size * (a.size - 1) // 2
    del junk


def test_padded_host_blocks_are_traced_in_numpys_tracemalloc_domain():
    tracemalloc.start()
    try:
        s = st.empty((300, 301), halo=2, alignment_size=64)
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)])
        traced = sum(t.size for t in snap.traces)
        assert traced >= s.nbytes
        del s
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)])
        assert sum(t.size for t in snap.traces) < traced
    finally:
        tracemalloc.stop()


def test_the_aligned_element_is_aligned_whichever_allocator_served_it():
    # no padding (NumPy's allocator is tried) but an alignment above malloc's
    for n in range(1, 40):
        for align in (32, 64, 128):
            s = st.empty((3, 8 * n), np.float64, alignment_size=align, aligned_index=(1, 0))
            a = np.asarray(s)
            assert (a.ctypes.data + a.strides[0]) % align == 0


def test_threads_creating_storages_at_once():
    errors = []
    barrier = threading.Barrier(6)

    def work(t):
        try:
            barrier.wait()
            for i in range(400):
                h = (t + i) % 3
                s = (st.zeros if i % 2 else st.empty)((5 + t, 6), halo=h,
                                                      alignment_size=2 ** (i % 5 + 3))
                assert s.shape == (5 + t, 6) and s.halo == ((h, h), (h, h))
                assert s.alignment_size == 2 ** (i % 5 + 3)
        except BaseException as e:      # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not any(th.is_alive() for th in threads)
    assert not errors, errors[:3]


def test_new_storage_refuses_a_class_that_is_not_a_storage():
    from nclx.storage._fastalloc import new_storage
    for cls in (dict, np.ndarray, type("NotAStorage", (), {})):
        with pytest.raises(TypeError, match="StorageBase"):
            new_storage(cls, None, np.zeros(3), None, ("I",), ((0, 0),), (0,), 1, None)


def test_recipes_are_opaque_and_host_field_always_gives_a_block():
    from nclx.storage import _fastalloc
    from nclx.storage.creation import _RECIPES
    st.empty((7, 3), np.int32)
    rc = next(iter(_RECIPES.values()))
    field, raw, off = _fastalloc.host_field(rc, True)
    assert type(raw.base).__name__ == "HostBlock" and raw.base is field.base
    assert 0 <= off < max(rc.plan.alignment, 1) and not field.any()
    assert np.shares_memory(field, raw)


def test_a_kwargs_dict_changed_after_the_call_does_not_change_the_cache():
    from nclx.storage.creation import _CREATOR
    create = _CREATOR.create
    kw = {"halo": 1}
    assert create((6, 6), np.float64, kw, False).halo == ((1, 1), (1, 1))
    kw["halo"] = 2
    assert create((6, 6), np.float64, kw, False).halo == ((2, 2), (2, 2))
    assert st.empty((6, 6), halo=1).halo == ((1, 1), (1, 1))


@pytest.mark.parametrize("shape,kw", [((2 ** 62, 4), {}), ((2 ** 62, 4), dict(alignment_size=64)),
                                      ((2 ** 31, 2 ** 31, 4), dict(halo=1))])
def test_a_field_too_big_to_address_names_the_shape(shape, kw):
    for make in (st.empty, st.zeros):
        with pytest.raises(st.StorageError, match=r"shape=\(.*more than this machine"):
            make(shape, **kw)


def test_creation_cache_never_shares_or_skips_validation():
    """Creating the same storage again (the cached recipe) gives fresh memory
    and the same layout as the validating path; a bad value that equals a
    cached good one (a float, a bool, a list) is still refused."""
    kw = {"halo": ((1, 1), (0, 2)), "layout": (1, 0), "alignment_size": 64,
          "aligned_index": (1, 0)}
    a = st.zeros((4, 5), **kw)
    b = st.zeros((4, 5), **kw)
    c = st.empty((np.int64(4), np.int64(5)), halo=[[1, 1], [0, 2]], layout=[1, 0],
                 alignment_size=np.int64(64), aligned_index=[1, 0])
    assert not np.shares_memory(np.asarray(a), np.asarray(b))
    for x in (b, c):
        assert (x.strides, x.halo, x.layout, x.aligned_index) == \
            (a.strides, a.halo, a.layout, a.aligned_index)
    a[...] = 1.0
    np.testing.assert_array_equal(np.asarray(b), 0.0)
    for key, value in (("alignment_size", 64.0), ("alignment_size", True),
                       ("aligned_index", (1.0, 0))):
        bad = {**kw, key: value}
        assert_refused(functools.partial(st.zeros, (4, 5), **bad), key, value)
    assert_refused(lambda: st.zeros((4.0, 5), **kw), "shape", (4.0, 5))


def test_a_creator_whose_resolver_returns_no_recipe_raises():
    from nclx.storage._fastalloc import Creator
    from nclx.storage.core import CPU_BUFFER, CPUStorage
    bad = Creator(lambda *a: None, None, CPUStorage, CPU_BUFFER)
    with pytest.raises(TypeError):
        bad.empty((3,))
