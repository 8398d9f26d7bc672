"""np.copy / flip / roll / concatenate / stack / vstack / hstack of
DistArrays against NumPy on the global arrays, bit for bit, on any number
of ranks, in the documented layouts (the input's for copy/flip/roll,
padding filled; the default layout of the result's shape for the joins)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpi_helpers import N, collective_assert, comm, raised_everywhere, rank
from nclx import dap
from nclx.dap import Distribution


def _values(shape, dtype=np.float64):
    return (np.arange(int(np.prod(shape))).reshape(shape) * 3 - 5).astype(dtype)


def _same(r, want, what):
    full = r.gather(root=None)
    ok = full.dtype == want.dtype and full.shape == want.shape and \
        full.tobytes() == np.ascontiguousarray(want).tobytes()
    collective_assert(ok, f"{what}: {full!r} != {want!r}")
    maps = r.distribution.maps(rank)        # padding cells hold their global values too
    idx = [m.global_from_local(np.arange(m.local_size)) % max(m.size, 1) for m in maps]
    block_ok = r._block.tobytes() == np.ascontiguousarray(want[np.ix_(*idx)]).tobytes()
    collective_assert(block_ok, f"{what}: block differs (padding?)")


LAYOUTS = [dict(), dict(dist="c"), dict(dist=("c", "b"), block_size=[2, 1]),
           dict(dist=("b", "n"), padding=[1, 0], periodic=[True, False])]


@pytest.mark.parametrize("kw", LAYOUTS)
def test_copy_flip_roll_keep_the_layout(kw):
    g = _values((N + 5, 4))
    a = dap.DistArray.from_global(g, comm=comm, **kw)
    c = np.copy(a)
    collective_assert(c.distribution == a.distribution, "copy layout")
    collective_assert(not np.shares_memory(c._block, a._block), "copy shares memory")
    _same(c, g, "copy")
    for axis in [None, 0, 1, -1, (0, 1)]:
        r = np.flip(a, axis)
        collective_assert(r.distribution == a.distribution, "flip layout")
        _same(r, np.flip(g, axis), f"flip {axis}")
    for shift, axis in [(1, 0), (-3, 1), (7, 0), ((1, 2), (0, 1)), ((1, 1), (0, 0)),
                        (4, None), (-1, None)]:
        r = np.roll(a, shift, axis)
        collective_assert(r.distribution == a.distribution, "roll layout")
        _same(r, np.roll(g, shift, axis), f"roll {shift} {axis}")


def test_joins_against_numpy():
    g1, g2 = _values((3, 4)), _values((N + 2, 4)) + 100
    a = dap.DistArray.from_global(g1, comm=comm, dist="c")
    b = dap.DistArray.from_global(g2, comm=comm, padding=[1, 0] if N < 3 else None)
    r = np.concatenate([a, b])
    collective_assert(r.distribution == Distribution.from_shape(r.shape, nprocs=N), "layout")
    _same(r, np.concatenate([g1, g2]), "concatenate 0")
    _same(np.concatenate([a, a.T.T, a], axis=1), np.concatenate([g1, g1, g1], axis=1), "axis 1")
    wide = np.zeros((a._block.shape[0], 2 * a._block.shape[1]))
    wide[:, ::2] = a._block                    # a strided block: copied for the move
    f = type(a)(wide[:, ::2], a.distribution, comm)
    t = type(a)(np.asfortranarray(a._block), a.distribution, comm)    # a transposed base
    _same(np.concatenate([f, t, f]), np.concatenate([g1, g1, g1]), "non-contiguous sources")
    _same(np.concatenate([a, b], axis=None), np.concatenate([g1, g2], axis=None), "axis None")
    _same(np.concatenate([a, a], dtype=np.float32), np.concatenate([g1, g1], dtype=np.float32),
          "dtype")
    i = dap.DistArray.from_global(g1.astype(np.int32), comm=comm)
    _same(np.concatenate([i, a]), np.concatenate([g1.astype(np.int32), g1]), "result_type")
    for axis in (0, 1, 2, -1):
        _same(np.stack([a, i, a], axis), np.stack([g1, g1.astype(np.int32), g1], axis),
              f"stack {axis}")
    _same(np.vstack([a, b]), np.vstack([g1, g2]), "vstack")
    _same(np.hstack([a, a]), np.hstack([g1, g1]), "hstack")
    v1 = dap.DistArray.from_global(np.arange(5.0), comm=comm)
    v2 = dap.DistArray.from_global(np.arange(5.0) * 2, comm=comm, dist="c")
    _same(np.vstack([v1, v2]), np.vstack([np.arange(5.0), np.arange(5.0) * 2]), "vstack 1-d")
    _same(np.hstack([v1, v2]), np.hstack([np.arange(5.0), np.arange(5.0) * 2]), "hstack 1-d")
    v3 = dap.DistArray.from_global(np.arange(4.0), comm=comm)
    _same(np.vstack([a, v3]), np.vstack([g1, np.arange(4.0)]), "vstack 2-d with 1-d")


def test_join_errors_raise_on_every_rank():
    a = dap.DistArray.from_global(_values((3, 4)), comm=comm)
    b = dap.DistArray.from_global(_values((3, 5)), comm=comm)
    ga, gb = _values((3, 4)), _values((3, 5))
    v = dap.DistArray.from_global(_values((3,)), comm=comm)
    # NumPy's exceptions and texts (found by review: nclx's own wording before)
    for fn, x, y in [(np.concatenate, (a, b), (ga, gb)), (np.stack, (a, b), (ga, gb)),
                     (np.concatenate, (a, v), (ga, _values((3,))))]:
        with pytest.raises(ValueError) as want:
            fn(list(y))
        with pytest.raises(ValueError) as got:
            fn(list(x))
        assert str(got.value) == str(want.value)
    for fn in (np.concatenate, np.stack):
        for casting in ("no", "safe", "same_kind"):
            with pytest.raises(TypeError) as want:
                fn([ga, ga], dtype=np.int8, casting=casting)
            with pytest.raises(TypeError) as got:
                fn([a, a], dtype=np.int8, casting=casting)
            assert str(got.value) == str(want.value)
    msg = raised_everywhere(np.concatenate, [a, np.ones((3, 4))])
    assert "operand 1 is a ndarray, not a DistArray" in msg
    msg = raised_everywhere(np.concatenate, [a, a], out=a)
    assert "out= is not supported" in msg
    with pytest.raises(ValueError, match="shape mismatch"):      # NumPy's broadcast error
        np.roll(a, (1, 2), (0, 1, 0))
    # a generator of DistArrays: NumPy's TypeError (was: a ValueError, "need at
    # least one array", as NumPy's dispatcher had consumed the generator)
    with pytest.raises(TypeError, match="The first input argument needs to be a sequence"):
        np.concatenate(x for x in [a, a])
    with pytest.raises(TypeError, match="must be passed as a \"sequence\""):
        np.stack(x for x in [a, a])


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       dist=st.lists(st.sampled_from(["b", "c", "n"]), min_size=3, max_size=3),
       k=st.integers(1, 3), shift=st.integers(-7, 7), axis=st.integers(0, 2))
def test_hypothesis_flip_roll_concatenate(shape, dist, k, shift, axis):
    # derandomized: every rank draws the same examples
    nd = len(shape)
    dist = dist[:nd] if N == 1 or any(d != "n" for d in dist[:nd]) else ["b"] + dist[1:nd]
    g = _values(tuple(shape))
    a = dap.DistArray.from_global(g, comm=comm, dist=dist, block_size=[k] * nd)
    axis %= nd
    _same(np.flip(a, axis), np.flip(g, axis), "flip")
    _same(np.roll(a, shift, axis), np.roll(g, shift, axis), "roll")
    _same(np.concatenate([a, a], axis), np.concatenate([g, g], axis), "concatenate")
