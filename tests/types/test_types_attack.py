"""Hostile use of nclx.types: trusted garbage, threads, fork, hooks that raise,
huge and empty inputs."""
import multiprocessing as mp
import os
import threading

import numpy as np
import pyarrow as pa
import pytest

import nclx
import nclx.hooks as hooks
from nclx.types import Ragged, typeof
from nclx.types.compute import PARALLEL_MIN_VALUES


def big_ragged(seed=0, nlists=50_000):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 12, nlists)
    offsets = np.zeros(nlists + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    return Ragged(offsets, rng.standard_normal(int(offsets[-1])))


def test_trusted_garbage_never_reads_outside():
    values = np.arange(5.0)
    bad = Ragged(np.array([0, 100, 101, 2]), values, validate=False)
    with pytest.raises(ValueError, match="leave the values"):
        bad.sum()
    with pytest.raises(ValueError, match=r"offsets\[3\] = 2 is less than offsets\[2\] = 101"):
        pa.array(bad)
    with pytest.raises(ValueError, match=r"offsets\[3\] = 2 is less"):
        bad.to_awkward()
    past = Ragged(np.array([0, 9]), values, validate=False)
    with pytest.raises(ValueError, match="points past the end of values"):
        pa.array(past)
    assert bad[1].tolist() == []            # NumPy slicing clips
    with pytest.raises(IndexError):
        bad.take(np.array([1]))              # fancy indexing is bounds-checked
    dec = Ragged(np.array([0, 4, 1]), values, validate=False)
    with pytest.raises(ValueError, match="must not decrease"):
        pa.array(dec)
    with pytest.raises(ValueError, match="list 0: offsets 0..4 leave the values"):
        dec.sum()                            # the lists reach past offsets[-1]


def test_long_lists_use_the_kernel_path():
    # lists longer than the fold threshold go through nclx's reduction kernel
    r = Ragged(np.array([0, 1000, 1000, 3000]), np.arange(3000, dtype=np.int64))
    assert r.sum().tolist() == [sum(range(1000)), 0, sum(range(1000, 3000))]
    assert r.max().tolist() == [999, None, 2999]
    f = Ragged(r.offsets, np.linspace(-1, 1, 3000))
    np.testing.assert_allclose(f.sum(), [np.sum(f.values[:1000]), 0, np.sum(f.values[1000:])],
                               rtol=1e-12)


def test_threaded_reduction_is_exact():
    r = big_ragged(nlists=max(50_000, PARALLEL_MIN_VALUES // 5))
    assert len(r.values) >= PARALLEL_MIN_VALUES
    old = nclx.get_num_threads()
    try:
        nclx.set_num_threads(1)
        one = r.sum(), r.max(), r.min()
        nclx.set_num_threads(4)
        four = r.sum(), r.max(), r.min()
    finally:
        nclx.set_num_threads(old)
    for a, b in zip(one, four, strict=True):
        assert np.array_equal(np.ma.getdata(a), np.ma.getdata(b))      # bit for bit
        assert np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b))


def test_many_threads_at_once():
    r = big_ragged(1)
    want = r.sum()
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(np.array_equal(r.sum(), want) and (r * 2).equals(r + r))
        except Exception as exc:   # noqa: BLE001 - reported below
            errors.append(exc)
    ts = [threading.Thread(target=work) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors and len(results) == 30 and all(results)


def _child_sum(conn):
    r = big_ragged(2)
    conn.send(float(r.sum().sum()))
    conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_after_threaded_reduction():
    r = big_ragged(2)
    r.sum()                                   # threads started and joined in the parent
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_child_sum, args=(child,))
    p.start()
    assert parent.poll(60), "the forked child hung"
    assert parent.recv() == float(r.sum().sum())
    p.join(10)
    assert p.exitcode == 0


def test_hook_that_raises_leaves_no_trace():
    r = Ragged.from_list([[1.0, 2.0], [3.0]])

    def boom(call):
        raise RuntimeError("hook says no")
    with hooks.register("python", "binary", boom):
        with pytest.raises(RuntimeError, match="hook says no"):
            r * 2
    with hooks.register("python", "reduce", boom):
        with pytest.raises(RuntimeError, match="hook says no"):
            r.sum()
    assert (r * 2).to_list() == [[2.0, 4.0], [6.0]] and r.sum().tolist() == [3.0, 3.0]


def test_hook_sees_reduction_and_can_replace_it():
    r = Ragged.from_list([[1, 2], [], [3]])
    seen = []

    def spy(call):
        seen.append((call.ufunc.__name__, call.method))
        return call.next()
    with hooks.register("python", "reduce", spy):
        assert r.sum().tolist() == [3, 0, 3]
    assert seen == [("add", "reduceat")]


def test_empty_and_degenerate():
    e = Ragged(np.zeros(1, np.int64), np.zeros(0))
    assert len(e) == 0 and e.to_list() == [] and typeof(e) == "0 * var * float64"
    assert e.sum().tolist() == [] and e.max().tolist() == [] and (e * 2).to_list() == []
    assert pa.array(e).to_pylist() == [] and e.to_awkward().to_list() == []
    allempty = Ragged(np.zeros(4, np.int64), np.zeros(0, np.int32))
    assert allempty.sum().tolist() == [0, 0, 0] and allempty.max().tolist() == [None] * 3
    assert e[0:0].to_list() == [] and e[np.zeros(0, np.int64)].to_list() == []


def test_strided_and_overlapping_values():
    base = np.arange(20.0)
    strided = base[::2]                       # stride 16
    r = Ragged(np.array([0, 3, 10]), strided)
    assert r.sum().tolist() == [0 + 2 + 4, sum(range(6, 20, 2))]
    assert (r * 1).to_list() == r.to_list()
    rev = Ragged(np.array([0, 2, 4]), base[::-1][:4])     # negative stride
    assert rev.sum().tolist() == [19 + 18, 17 + 16]
    # two Raggeds over overlapping windows of one buffer; out= into one of them
    a = Ragged(np.array([0, 2, 4]), base[0:4])
    b = Ragged(np.array([0, 2, 4]), base[1:5])
    want = base[0:4] + base[1:5]              # NumPy's answer: as if the inputs were copied
    np.add(a, b, out=b)
    assert base[1:5].tolist() == want.tolist()
    big_endian = Ragged(np.array([0, 2]), np.arange(2, dtype=">i4"))
    assert big_endian.sum().tolist() == [1]


def test_references_kept_after_calls():
    r = Ragged.from_list([[1, 2], [3]])
    out = r * 2
    del r
    import gc
    gc.collect()
    assert out.to_list() == [[2, 4], [6]]
    arr = pa.array(Ragged.from_list([[5]]))
    gc.collect()
    assert arr.to_pylist() == [[5]]     # Arrow's buffers keep the NumPy memory alive
    ak_arr = Ragged.from_list([[7]]).to_awkward()
    gc.collect()
    assert ak_arr.to_list() == [[7]]
