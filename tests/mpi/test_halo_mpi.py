"""Halo exchange on any number of ranks (tests/test_mpi_suite.py runs this
module under mpiexec -n 1, 2, 3, 4 and 6).

Owned and boundary cells hold a code of their global index, communication
padding starts at -1; after the exchange every cell of every local block
must hold the code of the global cell it mirrors (corners and edges
included, periodic dimensions wrapped), and boundary padding is untouched.
"""
import itertools

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import (collective_assert, exchange_and_check, fill_and_expect, grid2, outcome,
                         as_global)
from nclx.dap.distribution import Distribution
from nclx.dap.validate import normalize_dim_dict

comm = MPI.COMM_WORLD
N = comm.size
rank = comm.rank


def grids(ndim):
    """Every grid of N ranks in ndim dimensions."""
    out = []
    for g in itertools.product(range(1, N + 1), repeat=ndim):
        if int(np.prod(g)) == N:
            out.append(g)
    return out


def code(global_idx):
    return sum(float(g) * 1000.0 ** d for d, g in enumerate(global_idx))


def expected_block(da):
    maps = da.distribution.maps(comm.rank)
    idx = np.meshgrid(*[m.global_from_local(np.arange(m.local_size)) for m in maps],
                      indexing="ij")
    return sum(i.astype(np.float64) * 1000.0 ** d for d, i in enumerate(idx))


def fill(da):
    """Counted cells = code, communication padding = -1."""
    exp = expected_block(da)
    block = np.asarray(da.local)
    block[...] = -1.0
    owned = da.distribution.owned_slices(comm.rank)
    block[owned] = exp[owned]
    return exp


def check(da, exp):
    block = np.asarray(da.local)
    bad = np.argwhere(block != exp)
    msg = None
    if bad.size:
        msg = (f"rank {comm.rank}: {len(bad)} wrong cells, first at local "
               f"{tuple(bad[0])}: {block[tuple(bad[0])]} != {exp[tuple(bad[0])]}")
    collective_assert(bad.size == 0, msg)


CASES = []
for ndim in (1, 2, 3, 4):
    for g in grids(ndim):
        for w in ((0, 1, 2, 3) if ndim < 4 else (1, 2)):
            for periodic in ((False,) * ndim, (True,) * ndim,
                             tuple(d % 2 == 0 for d in range(ndim))):
                CASES.append((ndim, g, w, periodic))


@pytest.mark.parametrize("ndim,grid,w,periodic", CASES,
                         ids=[f"{n}d-g{'x'.join(map(str, g))}-w{w}-p{''.join('1' if p else '0' for p in per)}"
                              for n, g, w, per in CASES])
def test_exchange_fills_every_padding_cell(ndim, grid, w, periodic):
    shape = tuple((5 if ndim < 4 else 3) + 2 * d + 3 * grid[d] for d in range(ndim))
    da = dap.DistArray.from_shape(shape, comm=comm, grid_shape=grid, padding=[w] * ndim,
                                  periodic=list(periodic))
    exp = fill(da)
    dap.exchange_halos(da)
    check(da, exp)
    # the split form, with work on the interior in between, and a second exchange
    np.asarray(da.local)[...] = -1.0
    np.asarray(da.local)[da.distribution.owned_slices(comm.rank)] = \
        exp[da.distribution.owned_slices(comm.rank)]
    req = da.start_halo_exchange()
    inner = np.asarray(da.local)[da.distribution.owned_slices(comm.rank)].sum()   # overlap
    with pytest.raises(dap.DapError, match="in flight"):
        da.start_halo_exchange()           # one exchange of an array at a time
    req.wait()
    req.wait()                                    # idempotent
    assert np.isfinite(inner)
    check(da, exp)
    for method in ("packed", "datatype"):       # both transports, the same cells
        np.asarray(da.local)[...] = -1.0
        np.asarray(da.local)[da.distribution.owned_slices(comm.rank)] = \
            exp[da.distribution.owned_slices(comm.rank)]
        dap.exchange_halos(da, method)
        check(da, exp)


def _dim_column(sizes, pads, periodic, total):
    """Normalised dimension dictionaries of one block dimension with the
    given core sizes and (lo, hi) paddings (outer edges: boundary padding
    unless periodic, counted in size)."""
    P = len(sizes)
    counted = [s + (pads[0][0] if c == 0 and not periodic else 0)
               + (pads[-1][1] if c == P - 1 and not periodic else 0) for c, s in enumerate(sizes)]
    assert sum(counted) == total
    col, lo = [], 0
    for c in range(P):
        comm_lo = pads[c][0] if (periodic or c > 0) else 0
        comm_hi = pads[c][1] if (periodic or c < P - 1) else 0
        start = lo - comm_lo
        stop = lo + counted[c] + comm_hi
        if not periodic and c == 0:
            start = lo
            stop = lo + counted[c] + comm_hi
        col.append(normalize_dim_dict(dict(dist_type="b", size=total, start=start, stop=stop,
                                           padding=tuple(pads[c]), periodic=periodic,
                                           proc_grid_size=P, proc_grid_rank=c)))
        lo += counted[c]
    return col


@pytest.mark.skipif(N != 4, reason="the spec's example padding is for 4 ranks along one dimension")
@pytest.mark.parametrize("second", [None, False, True])
def test_the_specs_example_padding(second):
    """DAP 0.10's example paddings (4, 1) (1, 2) (2, 3) (3, 0), imported from
    an export: rank 0's lower 4 and rank 3's upper 0 are boundary padding."""
    pads = [(4, 1), (1, 2), (2, 3), (3, 0)]
    col = _dim_column([5, 6, 4, 7], pads, False, 5 + 6 + 4 + 7 + 4)
    columns = [col]
    if second is not None:         # a second, undistributed dimension (periodic or not)
        columns.append([normalize_dim_dict(dict(dist_type="b", size=3, start=-1 if second else 0,
                                                stop=4 if second else 3,
                                                padding=(1, 1) if second else (0, 0),
                                                periodic=second, proc_grid_size=1,
                                                proc_grid_rank=0))])
    dist = Distribution(columns)
    export_local = np.zeros(dist.local_shape(comm.rank))
    producer = {"__version__": "0.10.0", "buffer": export_local,
                "dim_data": dist.dim_data(comm.rank)}
    da = dap.from_distarray(producer, comm=comm)
    assert np.shares_memory(np.asarray(da.local), export_local)      # zero-copy import
    assert da.local.halo[0] == pads[comm.rank]
    exp = fill(da)
    boundary_before = export_local.copy()
    da.exchange_halos()
    check(da, exp)
    # boundary padding (rank 0's lower 4 rows) is never written, except where
    # a cell there is communication padding of the second (periodic) dimension
    cols = da.distribution.owned_slices(comm.rank)[1:]
    same = comm.rank != 0 or np.array_equal(export_local[(slice(0, 4),) + cols],
                                            boundary_before[(slice(0, 4),) + cols])
    collective_assert(same, f"rank {comm.rank}: boundary padding was written")


@pytest.mark.parametrize("periodic", [False, True])
def test_asymmetric_widths_across_a_2d_grid(periodic):
    if N == 1 and not periodic:
        pytest.skip("one rank, not periodic: no communication padding at all")
    g = max(grids(2), key=lambda t: min(t))
    cols = []
    for d in range(2):
        P = g[d]
        sizes = [4 + c for c in range(P)]
        if P == 1:
            pads = [(2, 1) if periodic else (0, 0)]
        else:
            inner = [(1 + (c % 2), 2 - (c % 2)) for c in range(P - 1)]   # (hi of c, lo of c+1)
            pads = []
            for c in range(P):
                lo = inner[c - 1][1] if c > 0 else (1 if periodic else 0)
                hi = inner[c][0] if c < P - 1 else (2 if periodic else 0)
                pads.append((lo, hi))
        total = sum(sizes) + (0 if periodic else pads[0][0] + pads[-1][1])
        cols.append(_dim_column(sizes, pads, periodic, total))
    dist = Distribution(cols)
    da = dap.DistArray(np.zeros(dist.local_shape(comm.rank)), dist, comm)
    exp = fill(da)
    dap.exchange_halos(da)
    check(da, exp)


def test_plans_are_cached_and_layout_errors_raise_on_every_rank():
    da = dap.DistArray.from_shape((12, 10), comm=comm, padding=[1, 1], periodic=[True, False])
    da.exchange_halos()
    plan = da._halo_plan
    da.exchange_halos()
    assert da._halo_plan is plan
    # a cyclic dimension has no padding: the padded 'b' beside it exchanges
    # (its neighbours hold the same cyclic rows); refused before the eighth review
    c = dap.DistArray.from_shape((12, 10), comm=comm, dist=("c", "b"), padding=[0, 1])
    exchange_and_check(c, None, "'c' beside a padded 'b'")
    comm.Barrier()


def test_local_block_is_a_storage_with_the_padding_as_halo():
    from nclx.storage import Storage
    da = dap.DistArray.from_shape((16, 9), comm=comm, padding=[2, 1], periodic=[True, True])
    assert isinstance(da.local, Storage)
    assert da.local.halo == tuple(tuple(m.padding) for m in da.distribution.maps(comm.rank))
    export = da.__distarray__()
    assert np.shares_memory(export["buffer"], np.asarray(da.local))


# --------------------------------- empty blocks, widths, asymmetric edges
def test_zero_size_blocks_more_ranks_than_cells():
    """Some ranks hold no row (padding only along the other, periodic dimension)."""
    n0 = max(1, N - 2)
    da = dap.DistArray.from_shape((n0, 9), comm=comm, grid_shape=(N, 1), padding=[0, 2],
                                  periodic=[False, True])
    empties = comm.allgather(da._block.size == 0)
    collective_assert(N < 3 or any(empties), "expected some empty blocks")
    exchange_and_check(da, None, "empty blocks")
    g = np.arange(n0 * 9, dtype=np.int64).reshape(n0, 9) - 20
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[0, 2],
                                  periodic=[False, True])
    checks = [("sum", a.sum, g.sum), ("max", a.max, g.max), ("min", a.min, g.min),
              ("prod", lambda **k: (a % 3 + 1).prod(**k), lambda **k: (g % 3 + 1).prod(**k))]
    bad = []
    for name, f, w in checks:
        for axis in (None, 0, 1):
            kind, got = outcome(lambda: as_global(f(axis=axis)))
            want = w(axis=axis)
            if kind == "exc" or np.asarray(got).tobytes() != np.asarray(want).tobytes():
                bad.append(f"{name}(axis={axis}): {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))

def test_width_equal_to_the_neighbours_whole_block():
    g0, g1 = grid2()
    da = dap.DistArray.from_shape((2 * g0, 3 * g1), comm=comm, grid_shape=(g0, g1),
                                  padding=[2, 3], periodic=[True, True])
    mids = [m.local_size - sum(m.comm_padding) for m in da.distribution.maps(rank)]
    collective_assert(mids == [2, 3], f"blocks {mids}")
    exchange_and_check(da, None, "width == block")
    exchange_and_check(da, "packed", "width == block, packed")

@pytest.mark.parametrize("periodic", [False, True])
def test_very_asymmetric_widths(periodic):
    """Widths 0 / 5 alternating across edges, boundary padding 3 and 0 on the
    outer edges; a second, periodic undistributed dimension with (0, 2)."""
    P = N
    sizes = [5 + c for c in range(P)]
    edge = [(5, 0) if c % 2 == 0 else (0, 4) for c in range(P - 1)]   # (hi of c, lo of c+1)
    pads = []
    for c in range(P):
        lo = edge[c - 1][1] if c > 0 else (1 if periodic else 3)
        hi = edge[c][0] if c < P - 1 else (5 if periodic else 0)
        pads.append((lo, hi))
    total = sum(sizes) + (0 if periodic else pads[0][0] + pads[-1][1])
    col0 = _dim_column(sizes, pads, periodic, total)
    col1 = [normalize_dim_dict(dict(dist_type="b", size=6, start=0, stop=8, padding=(0, 2),
                                    periodic=True, proc_grid_size=1, proc_grid_rank=0))]
    dist = Distribution([col0, col1])
    da = dap.DistArray(np.zeros(dist.local_shape(rank)), dist, comm)
    exchange_and_check(da, None, "asymmetric")
    # rank 0's boundary padding (rows 0-2, not periodic) is never written, except
    # where it is communication padding of the periodic second dimension
    fill_and_expect(da)
    if not periodic and rank == 0:
        da._block[:3, :6] = -5.0
    dap.exchange_halos(da)
    ok = periodic or rank != 0 or (np.all(da._block[:3, :6] == -5.0)
                                   and np.all(da._block[:3, 6:] == -5.0))
    collective_assert(ok, f"boundary padding written: {da._block[:3]}")
