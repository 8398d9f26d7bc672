"""nclx.dap maps: against a brute-force oracle and MPI's Create_darray."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from nclx.dap import BlockMap, CyclicMap, DapTypeError, UnstructuredMap, map_from_dim_dict, num_owned_indices
from nclx.dap.validate import cyclic_owned_count
from test_validate import WORKED


def cyclic(size, rank, grid, k=1):
    return dict(dist_type="c", size=size, start=rank * k, block_size=k,
                proc_grid_rank=rank, proc_grid_size=grid)


def test_worked_example_owned_indices_partition_the_size():
    owned = []
    for rank, ((start, stop), pad) in enumerate(WORKED):
        m = map_from_dim_dict(dict(dist_type="b", size=24, start=start, stop=stop, padding=pad,
                                   proc_grid_rank=rank, proc_grid_size=4))
        assert isinstance(m, BlockMap)
        owned.append(m.global_indices())
        assert m.num_owned == len(owned[-1])
        assert list(m.global_from_local([0, stop - start - 1])) == [start, stop - 1]
        assert np.array_equal(m.local_from_global(m.global_indices()),
                              np.arange(m.comm_padding[0], stop - start - m.comm_padding[1]))
    assert [o.size for o in owned] == [9, 5, 5, 5]
    assert np.array_equal(np.sort(np.concatenate(owned)), np.arange(24))
    m1 = map_from_dim_dict(dict(dist_type="b", size=24, start=8, stop=16, padding=(1, 2),
                                proc_grid_rank=1, proc_grid_size=4))
    assert not m1.owns(8) and m1.local_from_global(8) == 0      # comm padding: held, not owned
    with pytest.raises(IndexError, match="global index 16 is not held by grid rank 1"):
        m1.local_from_global([9, 16])


def test_periodic_padding_wraps_around():
    m = map_from_dim_dict(dict(dist_type="b", size=10, start=-1, stop=6, padding=(1, 1),
                               periodic=True, proc_grid_rank=0, proc_grid_size=2))
    assert list(m.global_from_local([0, 1, 6])) == [9, 0, 5]
    assert list(m.global_indices()) == [0, 1, 2, 3, 4]
    assert m.local_from_global(9) == 0 and not m.owns(9) and not m.owns(5)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 60), grid=st.integers(1, 7), k=st.integers(1, 9), data=st.data())
def test_cyclic_maps_match_a_brute_force_oracle(size, grid, k, data):
    rank = data.draw(st.integers(0, grid - 1))
    owner = (np.arange(size) // k) % grid            # oracle: block b -> rank b % P
    mine = np.flatnonzero(owner == rank)
    m = map_from_dim_dict(cyclic(size, rank, grid, k)) if rank * k <= size or mine.size else None
    assume(m is not None)     # no valid export for an empty rank beyond the data
    assert isinstance(m, CyclicMap)
    assert np.array_equal(m.global_indices(), mine)
    assert m.num_owned == mine.size == cyclic_owned_count(size, grid, rank, k)
    assert np.array_equal(m.owns(np.arange(-2, size + 2)), np.isin(np.arange(-2, size + 2), mine))
    if mine.size:
        assert np.array_equal(m.local_from_global(mine), np.arange(mine.size))


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 9), min_size=1, max_size=6), pad=st.integers(0, 2))
def test_block_maps_match_a_brute_force_oracle(sizes, pad):
    grid = len(sizes)
    size = sum(sizes)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    total = 0
    for rank in range(grid):
        lo, hi = bounds[rank], bounds[rank + 1]
        left = pad if rank > 0 and sizes[rank - 1] >= pad else 0
        right = pad if rank < grid - 1 and sizes[rank + 1] >= pad else 0
        dd = dict(dist_type="b", size=size, start=int(lo - left), stop=int(hi + right),
                  padding=(left, right), proc_grid_rank=rank, proc_grid_size=grid)
        m = map_from_dim_dict(dd)
        assert np.array_equal(m.global_indices(), np.arange(lo, hi))
        assert np.array_equal(m.global_from_local(np.arange(hi + right - lo + left)),
                              np.arange(lo - left, hi + right))
        total += num_owned_indices(dd)
    assert total == size


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), unique=True, max_size=20))
def test_unstructured_maps_match_a_brute_force_oracle(indices):
    idx = np.array(indices, dtype=np.int64)
    m = map_from_dim_dict(dict(dist_type="u", size=100, indices=idx, proc_grid_rank=0,
                               proc_grid_size=1))
    assert isinstance(m, UnstructuredMap)
    assert np.array_equal(m.global_indices(), idx)
    probe = np.arange(-55, 55)
    assert np.array_equal(m.owns(probe), np.isin(probe, idx))
    if idx.size:
        assert np.array_equal(m.local_from_global(idx), np.arange(idx.size))
        missing = [g for g in probe if g not in set(indices)][0]
        with pytest.raises(IndexError, match=f"global index {missing} "):
            m.local_from_global([idx[0], missing])


def test_bad_indices_raise_clear_errors():
    m = map_from_dim_dict(cyclic(10, 1, 3, 2))
    with pytest.raises(IndexError, match="local index 4 is outside"):
        m.global_from_local(4)
    with pytest.raises(IndexError, match="global index 0 is not owned by grid rank 1"):
        m.local_from_global(0)
    with pytest.raises(DapTypeError, match="integers"):
        m.global_from_local([0.5])
    with pytest.raises(Exception, match="buffer length is unknown"):
        map_from_dim_dict({})
    assert map_from_dim_dict({}, length=4).num_owned == 4


def _darray_global_indices(gsizes, distribs, dargs, psizes, rank):
    """Global C-order flat indices MPI assigns to ``rank``, in its local order."""
    from mpi4py import MPI
    nprocs = int(np.prod(psizes))
    t = MPI.DOUBLE.Create_darray(nprocs, rank, gsizes, distribs, dargs, psizes, MPI.ORDER_C).Commit()
    try:
        out = np.empty(t.Get_size() // 8)
        t.Pack(np.arange(int(np.prod(gsizes)), dtype="f8"), out, 0, MPI.COMM_SELF)
    finally:
        t.Free()
    return out.astype(np.int64)


LAYOUTS = [
    ((10,), ("c",), (1,), (3,)), ((10,), ("c",), (2,), (3,)), ((17,), ("c",), (4,), (4,)),
    ((10,), ("b",), (None,), (3,)), ((7, 9), ("b", "c"), (None, 2), (2, 2)),
    ((6, 5), ("c", "c"), (1, 3), (3, 2)), ((4, 6, 5), ("b", "c", "c"), (None, 1, 2), (2, 2, 1)),
    ((5, 4, 7), ("c", "b", "c"), (2, None, 3), (1, 2, 2)),
]


@pytest.mark.parametrize("gsizes, kinds, blocks, psizes", LAYOUTS)
def test_maps_agree_with_mpi_create_darray(gsizes, kinds, blocks, psizes):
    from mpi4py import MPI
    distribs = [MPI.DISTRIBUTE_BLOCK if k == "b" else MPI.DISTRIBUTE_CYCLIC for k in kinds]
    dargs = [MPI.DISTRIBUTE_DFLT_DARG if b is None else b for b in blocks]
    for rank in range(int(np.prod(psizes))):
        coords = np.unravel_index(rank, psizes)
        per_dim = []
        for n, kind, b, p, c in zip(gsizes, kinds, blocks, psizes, coords):
            c = int(c)
            if kind == "b":                 # MPI's BLOCK: ceil(n / p) per rank
                w = -(-n // p)
                dd = dict(dist_type="b", size=n, start=min(c * w, n), stop=min((c + 1) * w, n),
                          proc_grid_rank=c, proc_grid_size=p)
            else:
                dd = cyclic(n, c, p, b)
                if c * b > n:
                    dd["start"] = n
            per_dim.append(map_from_dim_dict(dd).global_indices())
        mine = np.ravel_multi_index(np.ix_(*per_dim), gsizes).ravel() if all(d.size for d in per_dim) else np.zeros(0, np.int64)
        assert np.array_equal(mine, _darray_global_indices(gsizes, distribs, dargs, psizes, rank))
