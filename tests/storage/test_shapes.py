"""Extreme shapes: huge storages (1e7 elements, host and managed), and
empty, 0-d and all-ones-shaped storages through every part of the API,
compared with NumPy where NumPy has a counterpart."""
import copy
import functools
import pickle
import warnings

import numpy as np
import pytest

import nclx.storage as ns
from nclx.storage import NoSuchBufferError, Storage
from storage_helpers import emu  # noqa: F401  (emu: a fixture)


def test_huge_storages():
    n = 10 ** 7
    s = ns.zeros((n,), halo=3, alignment_size=256, aligned_index=(3,))
    assert (np.asarray(s).ctypes.data + 3 * 8) % 256 == 0     # aligned_index on a boundary
    s[...] = 1.0
    r = s + 1.0
    assert isinstance(r, Storage) and r.halo == ((3, 3),) and r.strides == s.strides
    assert float(np.sum(r)) == 2.0 * n
    s += r
    assert float(np.max(s)) == 3.0 and float(np.min(s)) == 3.0
    v = s[::1000]
    assert v.shape == (n // 1000,) and np.shares_memory(np.asarray(v), np.asarray(s))
    v[...] = 0.0
    assert float(np.sum(s)) == 3.0 * n - 3.0 * (n // 1000)
    c = copy.deepcopy(s)
    p = pickle.loads(pickle.dumps(s, protocol=5))
    for x in (c, p):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(s))
        assert x.strides == s.strides and x.halo == s.halo
    b = ns.empty((100, 100, 1000), dtype=np.float32, layout=(2, 1, 0), alignment_size=128,
                 halo=((1, 1), (2, 2), (3, 3)))
    b[...] = 2.0
    assert b.strides[0] == 4 and float(np.sum(b, dtype=np.float64)) == 2.0 * n
    w = ns.as_storage(np.asarray(b), layout=(2, 1, 0))
    assert np.shares_memory(np.asarray(w), np.asarray(b))
    t = np.add.reduce(b, axis=2)
    assert t.shape == (100, 100)


def test_huge_managed_storage(emu):
    n = 10 ** 7
    m = ns.ones((n,), device="gpu", dtype=np.float64)
    m.synchronize()
    emu.reset_counters()
    d = m.to_cupy()
    d[...] = 2.0
    assert float(np.sum(m)) == 2.0 * n
    assert emu.d2h_calls == 1 and emu.d2h_bytes >= 8 * n
    m[::2] = 5.0
    m.synchronize()
    assert float(np.sum(np.asarray(m.to_cupy()))) == 3.5 * n


EMPTY_SHAPES = [(), (0,), (3, 0), (0, 0, 0), (2, 0, 5), (1, 1, 1, 1)]


KINDS = ["cpu", "gt4py", "cuda", "gpu"]


def _make(kind, shape, dtype=np.float64, fill=None, **kw):
    if kind != "cpu":
        kw.update(device="gpu", managed=None if kind == "gpu" else kind)
    s = ns.empty(shape, dtype, **kw)
    if fill is not None:
        s[...] = fill
    return s


def _host_view(x):
    return np.asarray(x.to_cupy() if isinstance(x, Storage) and x._host is None else x)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_empty_and_0d_storages_everywhere(emu, kind, shape):
    """Every part of the API on empty, 0-d and all-ones-shaped storages,
    compared with NumPy where NumPy has a counterpart."""
    ref = np.full(shape, 3.0)
    s = _make(kind, shape, fill=3.0)
    host = kind != "gpu"
    assert s.shape == shape and s.size == ref.size and s.nbytes == ref.nbytes
    assert s.ndim == ref.ndim and s.halo == ((0, 0),) * len(shape)
    repr(s)
    gdi = s.__gt_data_interface__
    assert (None in gdi) == host and ("gpu" in gdi) == (kind != "cpu")
    if host:
        np.testing.assert_array_equal(np.asarray(s), ref)
        assert s.__array_interface__["shape"] == shape
        assert memoryview(s.data).nbytes == ref.nbytes
    else:
        with pytest.raises(NoSuchBufferError):
            np.asarray(s)
        np.testing.assert_array_equal(np.asarray(s.to_cupy()), ref)
    if kind != "cpu":
        assert s.__cuda_array_interface__["shape"] == shape
    else:
        assert not hasattr(s, "__cuda_array_interface__")
    # creation functions of the same shape
    for f, want in ((ns.zeros, np.zeros(shape)), (ns.ones, np.ones(shape))):
        np.testing.assert_array_equal(_host_view(f(shape, **({} if kind == "cpu" else
                                                           {"device": "gpu"}))), want)
    for f, want in ((ns.zeros_like, np.zeros(shape)), (ns.ones_like, np.ones(shape)),
                    (functools.partial(ns.full_like, fill_value=5), np.full(shape, 5.0))):
        t = f(s)
        assert type(t) is type(s) and t.shape == shape
        np.testing.assert_array_equal(_host_view(t), want)
    assert ns.empty_like(s).shape == shape
    np.testing.assert_array_equal(_host_view(ns.storage(s)), ref)
    # len / iteration / truth / conversion, as NumPy
    for fn in (len, lambda x: list(iter(x)), bool, float):
        try:
            want = fn(ref)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                fn(s)
        else:
            got = fn(s)
            if fn is bool or fn is float or fn is len:
                assert got == want
            else:
                assert len(got) == len(want)
    # indexing
    for key in ((), Ellipsis, None, (Ellipsis, None), 0, (slice(None, None, -1),)):
        try:
            want = ref[key]
        except IndexError:
            with pytest.raises(IndexError):
                s[key]
            continue
        got = s[key]
        np.testing.assert_array_equal(_host_view(got), want)
    s[...] = 4.0
    ref[...] = 4.0
    np.testing.assert_array_equal(_host_view(s), ref)
    # ufuncs and reductions
    for fn in (lambda x: x + 1, lambda x: -x, lambda x: x == x, lambda x: x * x,  # noqa: PLR0124
               lambda x: np.sum(x), lambda x: np.sum(x, axis=None, keepdims=True),
               lambda x: np.add.accumulate(x) if x.ndim else x + 0,
               lambda x: np.maximum.reduce(x, axis=None)):
        try:
            want = fn(ref)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                fn(s)
            continue
        got = fn(s)
        np.testing.assert_array_equal(_host_view(got), want)
        assert np.asarray(_host_view(got)).dtype == np.asarray(want).dtype
    if host:
        with warnings.catch_warnings(record=True) as w_np, np.errstate(all="warn"):
            warnings.simplefilter("always")
            want = np.mean(ref)
        with warnings.catch_warnings(record=True) as w_st, np.errstate(all="warn"):
            warnings.simplefilter("always")
            got = np.mean(s)
        np.testing.assert_array_equal(got, want)
        assert [str(x.message) for x in w_st] == [str(x.message) for x in w_np]
    # views, copies, transfers
    for t in (s.T, s.transpose(), np.transpose(s) if host else s.T, s.domain_view,
              s.copy(), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert type(t) is type(s)
        np.testing.assert_array_equal(_host_view(t), ref.T if t.shape != ref.shape else ref)
    for method in ("synchronize", "device_to_host", "host_to_device", "set_host_modified",
                   "set_device_modified", "set_synchronized"):
        getattr(s, method)()
    s.synchronize()
    np.testing.assert_array_equal(_host_view(s), ref)
