"""Distribution and DistArray on one rank (COMM_SELF / a 1-process COMM_WORLD);
'u' (unstructured) indices outside ``[0, size)`` are rejected, naming the
index, by the operations that place them in a global array
(``check_global_range``, ``DistArray.from_global``, ``gather``)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx
import nclx.dap as dap
from nclx.dap import DapError, Distribution
from nclx.dap.maps import check_global_range
from test_validate import block, unstructured


@pytest.mark.parametrize("nprocs, ndims, want", [(4, 2, (2, 2)), (6, 2, (3, 2)), (8, 3, (2, 2, 2)),
                                                 (12, 2, (4, 3)), (7, 2, (7, 1)), (1, 3, (1, 1, 1))])
def test_dims_create_is_balanced_like_mpi(nprocs, ndims, want):
    assert dap.dims_create(nprocs, ndims) == want
    assert dap.dims_create(nprocs, ndims) == tuple(MPI.Compute_dims(nprocs, ndims))


def test_block_splits_are_balanced():
    d = Distribution.from_shape((10,), nprocs=4)
    assert [d.local_shape(r) for r in range(4)] == [(3,), (3,), (2,), (2,)]
    assert list(d.owner_ranks(np.arange(10))) == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]


def test_padded_periodic_and_cyclic_distributions():
    d = Distribution.from_shape((8, 9), dist=("b", "c"), grid_shape=(2, 3), padding=(2, 0),
                                periodic=(True, False), block_size=(None, 2))
    dd = d.dim_data(4)              # grid coordinate (1, 1)
    assert d.coords_from_rank(4) == (1, 1) and d.rank_from_coords((1, 1)) == 4
    assert (dd[0]["start"], dd[0]["stop"], dd[0]["padding"]) == (2, 10, (2, 2))
    assert dd[1]["block_size"] == 2 and dd[1]["start"] == 2
    assert d.local_shape(4) == (8, 3)
    assert d.owner_ranks([0, 7], [8, 2]).tolist() == [1, 4]
    with pytest.raises(IndexError, match="global index 9 is outside dimension 1"):
        d.owner_ranks([0], [9])


def test_from_dim_data_per_rank_round_trips_and_checks_neighbours():
    d = Distribution.from_shape((12,), nprocs=3, padding=[1])
    assert Distribution.from_dim_data_per_rank([d.dim_data(r) for r in range(3)]) == d
    bad = [d.dim_data(r) for r in range(3)]
    bad[1][0]["padding"] = (1, 2)
    bad[1][0]["stop"] += 1
    with pytest.raises(DapError, match=r"padding between grid coordinates 1 \(ranks \[1\]\) and 2 \(ranks \[2\]\) differs|not adjacent"):
        Distribution.from_dim_data_per_rank(bad)
    bad = [d.dim_data(r) for r in range(3)]
    bad[2][0]["proc_grid_rank"] = 1
    with pytest.raises(DapError, match="C-order grid coordinate is 2"):
        Distribution.from_dim_data_per_rank(bad)
    with pytest.raises(DapError, match="holds 3 processes but dim_data was given for 2"):
        Distribution.from_dim_data_per_rank([d.dim_data(0), d.dim_data(1)])


def test_bad_from_shape_arguments_are_rejected():
    with pytest.raises(DapError, match="dist must be"):
        Distribution.from_shape((4,), dist=["x"])
    with pytest.raises(DapError, match="holds 4 processes, not 2"):
        Distribution.from_shape((4, 4), grid_shape=(2, 2), nprocs=2)
    with pytest.raises(DapError, match="wider than the smallest block"):
        Distribution.from_shape((4,), nprocs=4, padding=[2])


def test_distarray_on_one_rank_round_trips_and_computes():
    g = np.arange(24.0).reshape(4, 6)
    a = dap.DistArray.from_global(g, dist=("b", "c"), comm=MPI.COMM_SELF)
    assert np.array_equal(a.gather(), g)
    r = a * 2 + 1
    assert isinstance(r, dap.DistArray) and np.array_equal(r.gather(), g * 2 + 1)
    assert a.sum() == g.sum() and a.max() == 23.0 and a.min() == 0.0
    assert np.array_equal(np.sqrt(a).gather(), np.sqrt(g))
    out = dap.DistArray.from_shape(g.shape, dist=("b", "c"), comm=MPI.COMM_SELF)
    np.add(a, a, out=out)
    assert np.array_equal(out.gather(), 2 * g)
    export = dap.validate(a.__distarray__())
    assert export["buffer"] is a._block and np.shares_memory(export["buffer"], np.asarray(a.local))


def test_distarray_ufuncs_reach_the_python_hook_chain():
    seen = []
    a = dap.DistArray.from_global(np.arange(5), comm=MPI.COMM_SELF)
    with nclx.hooks.register("python", "binary", lambda c: (seen.append(c.ufunc.__name__), c.next())[1]):
        a + 1
    assert seen == ["add"]


def test_from_distarray_imports_without_copying():
    class Producer:
        def __init__(self):
            self.buf = np.arange(6, dtype=np.int32)

        def __distarray__(self):
            return {"__version__": "0.10.0", "buffer": self.buf,
                    "dim_data": ({"dist_type": "b", "size": 6, "start": 0, "stop": 6,
                                  "proc_grid_size": 1, "proc_grid_rank": 0},)}

    p = Producer()
    a = dap.from_distarray(p, comm=MPI.COMM_SELF)
    assert np.shares_memory(a.local, p.buf)
    a.local[0] = 99
    assert p.buf[0] == 99 and a.sum() == 99 + 15


def test_differently_distributed_operands_are_redistributed_to_the_first():
    a = dap.DistArray.from_global(np.arange(6), comm=MPI.COMM_SELF)
    b = dap.DistArray.from_global(np.arange(6), dist="c", comm=MPI.COMM_SELF, block_size=[2])
    r = b + a
    assert r.distribution == b.distribution
    assert np.array_equal(r.gather(), np.arange(6) * 2)
    with pytest.raises(DapError, match="cannot combine"):
        a + np.arange(6)


# ------------------------------------------------ 'u' maps in a global array


def _u_distribution(per_rank_indices, size):
    grid = len(per_rank_indices)
    return dap.Distribution.from_dim_data_per_rank(
        [(unstructured(np.array(ix, dtype=np.int64), size=size, rank=r, grid=grid),)
         for r, ix in enumerate(per_rank_indices)])


def test_distribution_range_check_names_dimension_grid_rank_and_ranks():
    d = dap.Distribution.from_dim_data_per_rank(
        [(block(2, 0, 1, 0, 2), unstructured(np.array([0, 1, 2]), size=3)),
         (block(2, 1, 2, 1, 2), unstructured(np.array([0, 1, 2]), size=3))])
    check_global_range(d)
    d = _u_distribution([[0, 1], [2, 6], [3, 4, 5]], size=6)
    with pytest.raises(DapError, match=r"dimension 0, proc_grid_rank 1 \(rank 1\): "
                                       r"dim_data\[0\]\['indices'\]\[1\] is 6, outside the global "
                                       r"range \[0, 6\)"):
        check_global_range(d)


def test_from_global_places_unstructured_indices_by_value():
    d = _u_distribution([[4, 0, 3, 1, 2]], size=5)
    g = np.arange(5.0) * 10
    a = dap.DistArray.from_global(g, dist=d)
    assert np.asarray(a.local).tolist() == [40.0, 0.0, 30.0, 10.0, 20.0]
    assert a.gather().tolist() == g.tolist()


@pytest.mark.parametrize("indices, bad, pos", [([0, 1, -1, 3, 4], -1, 2),
                                               ([0, 1, 2, 3, 5], 5, 4)])
def test_from_global_rejects_unstructured_indices_outside_the_array(indices, bad, pos):
    d = _u_distribution([indices], size=5)
    with pytest.raises(DapError, match=rf"rank 0.*dim_data\[0\]\['indices'\]\[{pos}\] is {bad}, "
                                       rf"outside the global range \[0, 5\)"):
        dap.DistArray.from_global(np.arange(5.0), dist=d)


def test_from_global_with_a_distribution_checks_the_shape_and_keywords():
    d = _u_distribution([[4, 0, 3, 1, 2]], size=5)
    with pytest.raises(DapError, match=r"shape \(6,\).*\(5,\)"):
        dap.DistArray.from_global(np.arange(6.0), dist=d)
    with pytest.raises(DapError, match="padding"):
        dap.DistArray.from_global(np.arange(5.0), dist=d, padding=[1])


def test_gather_rejects_unstructured_indices_outside_the_array():
    d = _u_distribution([[0, 1, -1, 3, 4]], size=5)
    a = dap.DistArray(np.arange(5.0), d)
    with pytest.raises(DapError, match=r"\['indices'\]\[2\] is -1"):
        a.gather()


def test_rank_lookups_do_not_depend_on_earlier_calls():
    """Rank lookups cache plain ints only: a float rank raises whether or
    not the same int rank was asked for before, and a 0-d integer array
    reads as its int (a regression: the coordinate cache keyed on any
    hashable, so 2.0 hit rank 2's entry and np.array(1) was unhashable)."""
    import numpy as np
    import pytest
    from nclx.dap.distribution import Distribution

    d = Distribution.from_shape((8, 6), nprocs=4, grid_shape=(2, 2))
    with pytest.raises(TypeError):
        d.coords_from_rank(2.0)
    assert d.coords_from_rank(2) == (1, 0)
    assert d.coords_from_rank(np.array(1)) == (0, 1)
    assert d.coords_from_rank(np.int64(3)) == (1, 1)
    for bad in (2.0, np.float32(2), 1 + 0j):
        with pytest.raises(TypeError):
            d.coords_from_rank(bad)
    assert d.local_shape(2) == d.local_shape(np.int64(2)) == (4, 3)
    with pytest.raises(TypeError):
        d.local_shape(2.0)
    assert d.owned_slices(np.int64(1)) == d.owned_slices(1)


def test_pickles_carry_the_dimension_dictionaries_only():
    """Maps, layouts, keys and the partition check are caches: a pickle of a
    'u' Distribution that has been used holds its indices once, and the
    indices of the copy stay read-only like the original's."""
    import pickle

    from nclx.dap.redistribute import Layout, check_partition, layout_key
    n = 50_000
    perm = np.random.default_rng(0).permutation(n)
    d = Distribution.from_dim_data_per_rank(
        [({"dist_type": "u", "size": n, "indices": perm[r::2], "proc_grid_rank": r,
           "proc_grid_size": 2},) for r in range(2)])
    fresh = len(pickle.dumps(d))
    Layout.of(d)
    check_partition(d, "test")
    layout_key(d)
    for m in d.maps(0):
        m.order
    used = pickle.dumps(d)
    assert len(used) < fresh + 1024
    e = pickle.loads(used)
    assert e == d and e.maps(1)[0].global_indices().tobytes() == perm[1::2].tobytes()
    assert not e.dim_data(0)[0]["indices"].flags.writeable
    assert not d.dim_data(0)[0]["indices"].flags.writeable


def test_maps_share_the_distributions_own_indices():
    """Found by review: every map of a 'u' dimension copied and sorted its
    (already checked, read-only) indices again: a layout kept 2x the index
    bytes.  The map now holds the Distribution's own array; a caller's
    array, even an owned read-only int64 one, is still copied."""
    import tracemalloc

    from nclx.dap.redistribute import Layout
    n = 200_000
    perm = np.random.default_rng(1).permutation(n)
    mine = perm[0::2].copy()
    mine.flags.writeable = False                 # owned, read-only, int64: still the caller's
    d = Distribution.from_dim_data_per_rank(
        [({"dist_type": "u", "size": n, "indices": mine if r == 0 else perm[1::2],
           "proc_grid_rank": r, "proc_grid_size": 2},) for r in range(2)])
    own = [d.dim_data(r)[0]["indices"] for r in range(2)]
    assert not np.shares_memory(own[0], mine)
    tracemalloc.start()
    lay = Layout.of(d)
    kept = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    for r in range(2):
        assert np.shares_memory(lay.maps[0][r].indices, own[r])
    assert kept < 1.2 * n * 8, kept            # the sorted tables only (n * 8 bytes)
    mine.flags.writeable = True
    mine[:] = 0                                  # the caller's array changes afterwards
    assert d.maps(0)[0].global_indices().tobytes() == perm[0::2].tobytes()


def test_range_maps_have_a_local_size():
    """Found by review: np.stack's RangeMap had no local_size, which the
    windowed moves read (np.stack([a]) of a 'u' array raised)."""
    from nclx.dap.movetypes import RangeMap
    assert RangeMap(3, 4, 3).local_size == 1 and RangeMap(0, 0, 0).local_size == 0
