"""Redistribution (one Alltoallw with derived datatypes) on any number of ranks:

- every pair of layouts (block, cyclic, block-cyclic, 'n', 'u', padding,
  periodic padding, other process grids), non-divisible sizes, empty ranks:
  the result's distribution is ``Distribution.from_shape(...)`` of the same
  arguments and every cell of every block (padding included) holds its
  global value, bit for bit;
- hypothesis over shapes and layouts; structured and big-endian dtypes;
- ``gather(root)`` / ``gather(root=None)``, ``from_global(..., root=r)``;
- ufuncs between differently distributed operands;
- bad input raises a DapError on every rank;
- peak memory: the target block (tracemalloc);
- a > 2 GiB message (slow: runs with NCLX_SLOW=1, at 2 ranks).
"""
import contextlib
import os
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpi_helpers import N, collective_assert, comm, raised_everywhere, rank
from nclx import dap
from nclx.dap import Distribution, movewindows

last = N - 1


def _u_dist(shape, seed=3, dim=0):
    """'u' along ``dim`` (a random partition over N ranks), whole elsewhere."""
    n = shape[dim]
    perm = np.random.default_rng(seed).permutation(n)
    per_rank = []
    for r in range(N):
        dd = []
        for d, s in enumerate(shape):
            if d == dim:
                dd.append({"dist_type": "u", "size": s, "indices": perm[r::N].astype(np.int64),
                           "proc_grid_rank": r, "proc_grid_size": N})
            else:
                dd.append({"dist_type": "b", "size": s, "start": 0, "stop": s,
                           "proc_grid_rank": 0, "proc_grid_size": 1})
        per_rank.append(tuple(dd))
    return Distribution.from_dim_data_per_rank(per_rank)


def _values(shape, dtype=np.float64):
    return (np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) * 7 + 3).astype(dtype)


def _block_ok(a, g, what):
    """Every cell of ``a``'s block (padding included) holds its global value."""
    maps = a.distribution.maps(rank)
    idx = [m.global_from_local(np.arange(m.local_size)) % max(m.size, 1) for m in maps]
    want = g[np.ix_(*idx)] if idx else g
    ok = a._block.shape == want.shape and a._block.tobytes() == want.tobytes()
    return ok, None if ok else f"{what}: block {a._block!r} != {want!r}"


SHAPE = (7, 5)
G2 = (2, max(N // 2, 1)) if N % 2 == 0 else (N, 1)
LAYOUTS = {
    "block": dict(),
    "cyclic": dict(dist="c"),
    "block-cyclic": dict(dist=("c", "c"), block_size=[2, 3]),
    "b,n": dict(dist=("b", "n")),
    "n,c": dict(dist=("n", "c")),
    "grid": dict(grid_shape=G2),
    "padded": dict(padding=[1, 1]),
    "periodic": dict(padding=[1, 0], periodic=[True, False], dist=("b", "n")),
    "b,c padded": dict(dist=("b", "c"), padding=[1, 0], grid_shape=(1, N)),
    "u": "u",
}


def _make(name, g):
    spec = LAYOUTS[name]
    if spec == "u":
        return dap.DistArray.from_global(g, dist=_u_dist(g.shape), comm=comm)
    return dap.DistArray.from_global(g, comm=comm, **spec)


def _target(name, shape):
    spec = LAYOUTS[name]
    if spec == "u":
        d = _u_dist(shape, seed=11)
        return d, dict(dist=d), d
    return spec, spec, Distribution.from_shape(shape, nprocs=N, **spec)


def _feasible(name):
    # padding 1 needs >= 1 element per block along that dimension
    spec = LAYOUTS[name]
    if not isinstance(spec, dict) or "padding" not in spec:
        return True
    try:
        Distribution.from_shape(SHAPE, nprocs=N, **spec)
        return True
    except dap.DapError:
        return False


NAMES = [n for n in LAYOUTS if _feasible(n)]


@contextlib.contextmanager
def _tiny_windows():
    """Moves with index lists in windows of one element a rank and side."""
    saved = movewindows.FLOOR, movewindows.FRACTION
    movewindows.FLOOR, movewindows.FRACTION = 1, 0.0
    try:
        yield
    finally:
        movewindows.FLOOR, movewindows.FRACTION = saved


@pytest.mark.parametrize("windows", ["whole", "tiny"])
@pytest.mark.parametrize("src", NAMES)
def test_every_layout_to_every_layout(src, windows):
    with _tiny_windows() if windows == "tiny" else contextlib.nullcontext():
        _every_layout_from(src)


def _every_layout_from(src):
    g = _values(SHAPE)
    a = _make(src, g)
    for dst in NAMES:
        _spec, kw, want = _target(dst, SHAPE)
        b = a.redistribute(**kw)
        collective_assert(b.distribution == want, f"{src}->{dst}: {b.distribution}")
        collective_assert(*_block_ok(b, g, f"{src}->{dst}"))
        # the source is untouched
        collective_assert(*_block_ok(a, g, f"{src} after ->{dst}"))


def test_function_and_method_agree_and_keywords_reach_from_shape():
    g = _values((9,))
    a = dap.DistArray.from_global(g, comm=comm)
    b = dap.redistribute(a, "c", block_size=[2])
    c = a.redistribute(dist=["c"], block_size=[2])
    want = Distribution.from_shape((9,), "c", block_size=[2], nprocs=N)
    collective_assert(b.distribution == want == c.distribution, "block_size lost")
    collective_assert(*_block_ok(b, g, "function"))
    d = a.redistribute()                       # default: block
    collective_assert(d.distribution == a.distribution and _block_ok(d, g, "")[0], "default")
    collective_assert(not np.shares_memory(d._block, a._block), "the result shares memory")


def test_repeated_moves_reuse_plans_and_move_the_current_values():
    g = _values((9, 4))
    a = dap.DistArray.from_global(g, comm=comm)
    for step in range(3):                      # the same layouts: a kept plan
        a._block[...] += 1
        for kw in (dict(dist="c"), dict(dist="c", block_size=[2, 2]), dict(dist=("n", "b"))):
            b = a.redistribute(**kw)
            collective_assert(*_block_ok(b, g + step + 1, f"step {step} {kw}"))
    f = dap.DistArray.from_global(g.astype(np.float32), comm=comm)    # other dtype, same layout
    collective_assert(*_block_ok(f.redistribute("c"), g.astype(np.float32), "float32"))
    for k in range(1, 20):                     # more layouts than plans kept
        b = a.redistribute("c", block_size=[k, 1])
        collective_assert(*_block_ok(b, g + 3, f"block_size {k}"))


@pytest.mark.parametrize("shape", [(2, 3), (0, 4), (1,), (N + 1,)])
def test_empty_ranks_and_empty_arrays(shape):
    g = _values(shape, np.int32)
    for src in (dict(), dict(dist="c", block_size=[3] * len(shape))):
        a = dap.DistArray.from_global(g, comm=comm, **src)
        for dst in (dict(), dict(dist="c"), dict(dist=["n"] + ["b"] * (len(shape) - 1))):
            if len(shape) == 1 and dst.get("dist") == ["n"] and N > 1:
                continue                      # a 1-d 'n' array needs one rank
            b = a.redistribute(**dst)
            collective_assert(*_block_ok(b, g, f"{shape} {src}->{dst}"))
            out = b.gather(root=None)
            collective_assert(out.shape == g.shape and np.array_equal(out, g), "gather")


@pytest.mark.parametrize("dtype", [np.dtype([("x", "<f8"), ("y", ">i2")]), np.dtype(">f4"),
                                   np.bool_, np.complex128, np.dtype("U3")])
def test_dtypes_without_mpi_types_move_as_bytes(dtype):
    g = _values((6, 4)).astype(np.int64)
    if np.dtype(dtype).names:
        v = np.zeros(g.shape, dtype)
        v["x"], v["y"] = g, g % 100
    else:
        v = g.astype(dtype) if np.dtype(dtype).kind != "U" else g.astype(str).astype(dtype)
    a = dap.DistArray.from_global(v, comm=comm, dist="c")
    b = a.redistribute(_u_dist(v.shape, dim=1))
    collective_assert(*_block_ok(b, v, str(dtype)))
    out = b.gather(root=last)
    if rank == last:
        collective_assert(out.dtype == v.dtype and out.tobytes() == v.tobytes(), "gather bytes")
    else:
        collective_assert(out is None, "non-root got an array")


_dist1 = st.sampled_from(["b", "c", "n"])


def _layout_kw(shape, dd, k, pad):
    """from_shape keywords of a drawn layout: some dimension distributed,
    block size k, padding 1 where every block can hold it."""
    nd = len(shape)
    if all(x == "n" for x in dd) and N > 1:
        dd = ["b"] + list(dd[1:])
    kw = dict(dist=dd, block_size=[k] * nd)
    if pad:
        try:
            Distribution.from_shape(shape, nprocs=N, padding=[1] * nd, **kw)
            kw["padding"] = [1] * nd
        except dap.DapError:
            pass
    return kw


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=3),
       d1=st.lists(_dist1, min_size=3, max_size=3), d2=st.lists(_dist1, min_size=3, max_size=3),
       k=st.integers(1, 3), pad=st.booleans())
def test_hypothesis_random_layouts(shape, d1, d2, k, pad):
    # derandomized: every rank draws the same examples
    nd = len(shape)
    g = _values(tuple(shape))
    kws = [_layout_kw(shape, dd, k, pad) for dd in (d1[:nd], d2[:nd])]
    a = dap.DistArray.from_global(g, comm=comm, **kws[0])
    b = a.redistribute(**kws[1])
    collective_assert(b.distribution == Distribution.from_shape(shape, nprocs=N, **kws[1]),
                      "distribution")
    collective_assert(*_block_ok(b, g, f"{shape} {kws}"))


# ------------------------------------------------------------ gather / from_global
def test_gather_root_and_everywhere():
    g = _values((5, 6))
    a = dap.DistArray.from_global(g, comm=comm, dist=("c", "b"), padding=[0, 1])
    for root in range(N):
        out = a.gather(root=root)
        collective_assert((out is not None and out.tobytes() == g.tobytes()) if rank == root
                          else out is None, f"root {root}")
    out = a.gather(root=None)
    collective_assert(out.tobytes() == g.tobytes(), "root=None")


def test_gather_bad_root_raises_everywhere():
    a = dap.DistArray.from_global(_values((4,)), comm=comm)
    msg = raised_everywhere(a.gather, root=N)
    assert f"root must be a rank in [0, {N}) or None, not {N}" in msg
    if N > 1:
        msg = raised_everywhere(a.gather, root=0 if rank else 1)
        assert "the ranks disagree" in msg


@pytest.mark.parametrize("kw", [dict(), dict(dist="c", padding=[1]), dict(padding=[1],
                                                                          periodic=[True])])
def test_from_global_root(kw):
    g = _values((N + 4,))
    for root in sorted({0, last}):
        a = dap.DistArray.from_global(g if rank == root else None, comm=comm, root=root, **kw)
        want = Distribution.from_shape(g.shape, nprocs=N, **kw)
        collective_assert(a.distribution == want, "distribution")
        collective_assert(*_block_ok(a, g, f"root {root} {kw}"))


def test_from_global_root_u_distribution_and_same_array_on_every_rank():
    g = _values((9, 2))
    d = _u_dist(g.shape)
    a = dap.DistArray.from_global(g, dist=d, comm=comm, root=last)    # everyone passes it
    collective_assert(*_block_ok(a, g, "u"))


def test_from_global_root_errors_on_every_rank():
    g = _values((6, 2))
    msg = raised_everywhere(dap.DistArray.from_global, None, comm=comm, root=0)
    assert "rank 0: DapError: rank 0 is the root (root=0) and passed None" in msg
    if N > 1:
        bad = g if rank == 0 else _values((6, 3))
        msg = raised_everywhere(dap.DistArray.from_global, bad, comm=comm, root=0)
        assert "root 0 passed an array of shape (6, 2)" in msg
        assert f"rank {last}: an array of shape (6, 3)" in msg
        msg = raised_everywhere(dap.DistArray.from_global, g, comm=comm, root=rank % 2)
        assert "disagree" in msg
    msg = raised_everywhere(dap.DistArray.from_global, g, comm=comm, root=N)
    assert f"root must be a rank in [0, {N}) or None, not {N}" in msg
    msg = raised_everywhere(dap.DistArray.from_global, g if rank == 0 else None, comm=comm,
                            root=0, dist="x")
    assert "dist must be" in msg


# ------------------------------------------------------------------- ufuncs
def test_ufunc_between_differently_distributed_operands():
    g = _values((7, 4))
    a = dap.DistArray.from_global(g, comm=comm)
    b = dap.DistArray.from_global(g * 2, comm=comm, dist="c", padding=None)
    u = dap.DistArray.from_global(g + 1, dist=_u_dist(g.shape, dim=1), comm=comm)
    r = a + b * 1.0
    collective_assert(r.distribution == a.distribution, "result follows the first operand")
    collective_assert(*_block_ok(r, g + g * 2, "a + b"))
    r = np.subtract(u, a)            # the first DistArray operand's ('u') layout
    collective_assert(r.distribution == u.distribution, "'u' first")
    collective_assert(*_block_ok(r, np.ones_like(g), "u - a"))
    r = np.multiply(2.0, b)
    collective_assert(r.distribution == b.distribution, "scalar first")
    out = dap.DistArray.from_shape(g.shape, comm=comm)
    msg = raised_everywhere(np.add, b, a, out=out)
    assert "out= must be distributed like the first DistArray operand" in msg
    other = dap.DistArray.from_global(_values((4, 7)), comm=comm)
    msg = raised_everywhere(np.add, a, other)
    assert "global shapes (7, 4) and (4, 7)" in msg


# ---------------------------------------------------------------- bad input
def test_bad_targets_raise_on_every_rank():
    a = dap.DistArray.from_global(_values((6, 4)), comm=comm)
    msg = raised_everywhere(a.redistribute, "x")
    assert msg.startswith("redistribute") and "dist must be 'b', 'c' or 'n'" in msg
    msg = raised_everywhere(a.redistribute, Distribution.from_shape((4, 6), nprocs=N))
    assert "the array has shape (6, 4), the target Distribution (4, 6)" in msg
    msg = raised_everywhere(a.redistribute, Distribution.from_shape((6, 4), nprocs=N),
                            padding=[1, 1])
    assert "['padding'] cannot be given with a Distribution" in msg
    if N > 1:
        msg = raised_everywhere(a.redistribute, "c" if rank == last else "b")
        assert "the ranks disagree" in msg
        msg = raised_everywhere(a.redistribute, "x" if rank == last else "b")   # one rank fails
        assert f"rank {last} of {N} failed" in msg and "dist must be 'b', 'c' or 'n'" in msg
        one = Distribution.from_shape((6, 4), nprocs=1)
        msg = raised_everywhere(a.redistribute, one)
        assert f"spans 1 processes, the communicator {N}" in msg
    # a 'u' layout that gives an index to two coordinates cannot be a target
    dd = [({"dist_type": "u", "size": 6, "indices": np.arange(6) if r == 0 else np.array([1]),
            "proc_grid_rank": r, "proc_grid_size": N}, {}) for r in range(N)]
    dd = [(d0, {"dist_type": "b", "size": 4, "start": 0, "stop": 4, "proc_grid_rank": 0,
                "proc_grid_size": 1}) for d0, _ in dd]
    dup = Distribution.from_dim_data_per_rank(dd)
    if N > 1:
        msg = raised_everywhere(a.redistribute, dup)
        assert f"global index 1 is owned by {N} grid coordinates; a move needs exactly one" in msg


# ------------------------------------------------------------------ memory
def test_peak_memory_is_the_target_block():
    shape = (240, 180)
    a = dap.DistArray.from_global(_values(shape), comm=comm)
    for kw in (dict(dist="c"), dict(dist=("n", "b")), dict(dist="c", block_size=[3, 5])):
        a.redistribute(**kw)              # warm: imports, caches
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        b = a.redistribute(**kw)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        extra = peak - b._block.nbytes
        collective_assert(extra < 64 * 1024, f"{kw}: peak {peak} B, block {b._block.nbytes} B")


# -------------------------------------------------------------------- slow
@pytest.mark.skipif(os.environ.get("NCLX_SLOW") != "1" or N != 2,
                    reason="> 2 GiB messages: run with NCLX_SLOW=1 under mpiexec -n 2 "
                           "(about 9 GB of memory)")
def test_message_over_2_gib():
    """Slow (NCLX_SLOW=1, 2 ranks, ~9 GB): rows of 2**31 + 100 bytes swap
    owners, so each rank sends one message of more than 2 GiB."""
    n = 2**31 + 100
    d_src = Distribution.from_shape((2, n), ("b", "n"), nprocs=2)
    dd = [({"dist_type": "u", "size": 2, "indices": np.array([1 - r]), "proc_grid_rank": r,
            "proc_grid_size": 2}, {"dist_type": "b", "size": n, "start": 0, "stop": n,
                                   "proc_grid_rank": 0, "proc_grid_size": 1}) for r in range(2)]
    d_dst = Distribution.from_dim_data_per_rank(dd)
    block = np.empty((1, n), np.uint8)
    block[0, :1000] = np.arange(1000) % 251 + rank
    block[0, -1000:] = np.arange(1000) % 13 + rank
    a = dap.DistArray(block, d_src, comm)
    b = a.redistribute(d_dst)
    del a, block
    other = 1 - rank
    ok = (np.array_equal(b._block[0, :1000], np.arange(1000) % 251 + other)
          and np.array_equal(b._block[0, -1000:], np.arange(1000) % 13 + other))
    collective_assert(ok, "the > 2 GiB message arrived wrong")
