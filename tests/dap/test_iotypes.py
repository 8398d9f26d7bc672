"""The MPI datatypes of parallel .npy I/O (nclx.dap.iotypes), checked on one
process for every rank of a layout: the file view, applied to the bytes of
the whole global array (C or Fortran order), must select exactly the cells
the rank transfers, in increasing file offset; the memory type, applied to
the rank's padded block, must select the same cells in the same order.
Both are read through a send to self on COMM_SELF (the datatypes' own
type maps, no file)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

MPI = pytest.importorskip("mpi4py.MPI")

from nclx.dap import DapError, Distribution          # noqa: E402
from nclx.dap.iotypes import (IOPlan, fill_duplicates, runs, selections,  # noqa: E402
                              view_pieces)


def _through(buf, count, dtype, plan, n):
    """The ``n`` elements a datatype selects from ``buf``, contiguous."""
    out = np.zeros(n, buf.dtype)
    MPI.COMM_SELF.Sendrecv([buf, count, dtype], 0, 0, [out, n, plan.elem], 0, 0)
    return out


def _codes(shape, dtype):
    c = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) * 7 + 3
    dtype = np.dtype(dtype)
    if dtype.names:
        out = np.zeros(shape, dtype)
        out["a"], out["b"] = c % 1000, c
        return out
    return (c % 2 == 1) if dtype.kind == "b" else c.astype(dtype)


def check_layout(dist, order="C", kind=None, write=False, dtype=np.int64):
    g = _codes(dist.shape, dtype)
    file_bytes = np.asfortranarray(g) if order == "F" else np.ascontiguousarray(g)
    kinds = set()
    for r in range(dist.nprocs):
        maps = dist.maps(r)
        gi = [m.global_from_local(np.arange(m.local_size)) for m in maps]
        block = g[np.ix_(*gi)] if dist.ndim else g.copy()
        block = np.ascontiguousarray(block)
        sel = selections(dist, r, write)
        want = g[np.ix_(*[f for f, _, _ in sel])].ravel(order=order)
        plan = IOPlan(dist, r, block, order, write=write, kind=kind)
        try:
            kinds.add(plan.kind)
            assert plan.nelems == want.size
            if plan.count == 0:
                assert want.size == 0
                continue
            flat = file_bytes.ravel(order="K")
            if plan.kind == "contiguous":       # a view from the piece's first byte
                start = plan.disp // g.dtype.itemsize
                got = flat[start:start + want.size]
            else:
                got = _through(flat, 1, plan.filetype, plan, want.size)
            assert np.array_equal(got, want), (r, order, plan.kind, got, want)
            got = _through(plan.buffer(block), plan.count, plan.memtype, plan, want.size)
            assert np.array_equal(got, want), (r, order, plan.kind, "memory", got, want)
        finally:
            plan.free()
    return kinds


def test_runs():
    s, ln = runs([3, 4, 5, 9, 1, 2])
    assert s.tolist() == [3, 9, 1] and ln.tolist() == [3, 1, 2]
    s, ln = runs([])
    assert s.size == 0 and ln.size == 0


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape,kw,kind", [
    ((10,), dict(nprocs=3), "contiguous"),
    ((10, 7), dict(nprocs=4, padding=[1, 2]), "subarray"),
    ((9, 4, 5), dict(nprocs=6, padding=[1, 1, 1], periodic=[True, False, True]), "subarray"),
    ((12, 5), dict(nprocs=4, dist=["c", "b"], grid_shape=[4, 1]), "darray"),
    ((12, 8), dict(nprocs=4, dist=["c", "b"], grid_shape=[2, 2], block_size=[3, 1]), "darray"),
    ((11, 6), dict(nprocs=6, dist=["c", "c"], grid_shape=[3, 2], block_size=[2, 4]), "darray"),
    ((12, 8), dict(nprocs=4, dist=["c", "b"], grid_shape=[2, 2], padding=[0, 1]), "darray"),
    ((11, 7), dict(nprocs=6, dist=["b", "c"], grid_shape=[3, 2]), "indexed"),  # 3 does not divide 11
    ((4, 5), dict(nprocs=6, dist=["c", "b"], grid_shape=[6, 1]), "contiguous"),  # empty ranks
    ((2, 3), dict(nprocs=5, grid_shape=[5, 1]), "contiguous"),                 # empty ranks
])
def test_file_views_and_memory_types_select_each_ranks_cells(shape, kw, kind, order):
    dist = Distribution.from_shape(shape, **kw)
    kinds = check_layout(dist, order, write=True)
    assert kind in kinds or (order == "F" and kind == "contiguous")   # rows: C order only
    check_layout(dist, order)
    # the general composition agrees with MPI's subarray and darray constructors
    check_layout(dist, order, kind="indexed")


def _u_dist(n, per_rank, extra=()):
    """A 1 x 'u' (and optionally a block dimension ``extra`` = (m,)) layout."""
    P = len(per_rank)
    dims = []
    for r, ix in enumerate(per_rank):
        dd = [{"dist_type": "u", "size": n, "indices": np.asarray(ix, np.int64),
               "proc_grid_rank": r, "proc_grid_size": P}]
        for m in extra:
            dd.append({"dist_type": "b", "size": m, "start": 0, "stop": m,
                       "proc_grid_rank": 0, "proc_grid_size": 1})
        dims.append(tuple(dd))
    return Distribution.from_dim_data_per_rank(dims)


@pytest.mark.parametrize("order", ["C", "F"])
def test_unstructured_dimension_is_visited_in_increasing_index(order):
    dist = _u_dist(9, [[7, 0, 3], [8, 1], [2, 6, 5, 4]], extra=(4,))
    assert check_layout(dist, order) == {"indexed"}


def test_unstructured_writes_leave_shared_indices_to_the_lowest_grid_rank():
    dist = _u_dist(6, [[5, 0, 3], [3, 1, 2, 0], [4, 2]])
    assert [f.tolist() for f, _, _ in [selections(dist, r, write=True)[0] for r in range(3)]] == \
        [[0, 3, 5], [1, 2], [4]]
    assert [f.tolist() for f, _, _ in [selections(dist, r)[0] for r in range(3)]] == \
        [[0, 3, 5], [0, 1, 2, 3], [2, 4]]
    check_layout(dist, "C", write=True)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, ">f8", np.complex128,
                                   np.dtype([("a", "<i2"), ("b", ">f4")])])
def test_types_move_elements_as_bytes_of_any_dtype(dtype):
    dist = Distribution.from_shape((7, 5), nprocs=4, dist=["c", "b"], grid_shape=[2, 2],
                                   padding=[0, 1])
    check_layout(dist, "C", kind="indexed", dtype=dtype)
    check_layout(dist, "F", dtype=dtype)


@pytest.mark.parametrize("shape,kw", [
    ((3,), dict(nprocs=1, padding=[2], periodic=[True])),
    ((4, 3), dict(nprocs=2, grid_shape=[2, 1], padding=[2, 3], periodic=[True, True])),
])
def test_a_read_fills_padding_that_wraps_onto_the_same_rank(shape, kw):
    """A periodic dimension on one or two grid ranks holds some global
    indices twice: each is read once, the copies filled afterwards."""
    dist = Distribution.from_shape(shape, **kw)
    g = _codes(shape, np.int64)
    for r in range(dist.nprocs):
        gi = [m.global_from_local(np.arange(m.local_size)) for m in dist.maps(r)]
        want = g[np.ix_(*gi)]
        block = np.zeros_like(want)
        sel = selections(dist, r)
        assert any(dst.size for _, _, (dst, _) in sel)
        block[np.ix_(*[p for _, p, _ in sel])] = g[np.ix_(*[f for f, _, _ in sel])]
        fill_duplicates(block, sel)
        assert np.array_equal(block, want)
    check_layout(dist, "C")
    check_layout(dist, "F")


def test_block_selections_do_not_list_every_index():
    """A block dimension is a few runs whatever its size (2**40 cells here)."""
    from nclx.dap.iotypes import _dim_selections
    dist = Distribution.from_shape((2 ** 40,), nprocs=4, padding=[3], periodic=[True])
    for write in (False, True):
        (s,) = _dim_selections(dist, 0, write)
        assert s.count == 2 ** 38 + (0 if write else 6)
        assert len(s.file_runs()[0]) == (1 if write else 2)


@pytest.mark.parametrize("shape,kw,order,want,kind", [
    ((8, 100), dict(nprocs=4, grid_shape=[4, 1]), "C", 2 * 100 * 8, "contiguous"),  # rows join
    ((8, 100), dict(nprocs=4, grid_shape=[2, 2]), "C", 50 * 8, "subarray"),     # half rows
    ((8, 100), dict(nprocs=4, grid_shape=[2, 2]), "F", 4 * 8, "subarray"),      # half columns
    ((40,), dict(nprocs=4, dist="c"), "C", 8, "darray"),                        # one cell
    ((40,), dict(nprocs=4, dist="c", block_size=[5]), "C", 5 * 8, "darray"),
])
def test_pieces_of_the_view(shape, kw, order, want, kind):
    dist = Distribution.from_shape(shape, **kw)
    block = np.zeros(dist.local_shape(0))
    plan = IOPlan(dist, 0, block, order, write=True)
    try:
        assert (plan.run_bytes, plan.max_piece_bytes, plan.kind) == (want, want, kind)
        assert view_pieces(dist, 0, 8, order, write=True) == (want, want)
    finally:
        plan.free()


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape,kw", [
    ((12, 5), dict(nprocs=3, grid_shape=[3, 1], padding=[1, 0])),       # padded rows
    ((12, 5), dict(nprocs=3, grid_shape=[3, 1], padding=[2, 0], periodic=[True, False])),
    ((30,), dict(nprocs=4, padding=[2])),
    ((5, 3, 4), dict(nprocs=2, grid_shape=[1, 1, 2])),
])
def test_contiguous_views_and_flat_buffers(shape, kw, order):
    """One contiguous piece in the file: a view from its first byte; one
    piece of the block: a flat view of the block (both checked against the
    cells the rank holds)."""
    dist = Distribution.from_shape(shape, **kw)
    g = _codes(shape, np.int64)
    g_file = (np.asfortranarray(g) if order == "F" else g).ravel(order="K")
    for write in (True, False):
        for r in range(dist.nprocs):
            gi = [m.global_from_local(np.arange(m.local_size)) for m in dist.maps(r)]
            block = np.ascontiguousarray(g[np.ix_(*gi)])
            sel = selections(dist, r, write)
            want = g[np.ix_(*[f for f, _, _ in sel])].ravel(order=order)
            plan = IOPlan(dist, r, block, order, write=write)
            try:
                flat = plan.buffer(block)
                if plan.kind == "contiguous":
                    got = g_file[plan.disp // 8:plan.disp // 8 + want.size]
                    assert np.array_equal(got, want)
                got = _through(flat, plan.count, plan.memtype, plan, want.size)
                assert np.array_equal(got, want), (r, write, plan.kind)
            finally:
                plan.free()


def test_a_non_contiguous_block_is_refused():
    dist = Distribution.from_shape((4, 6), nprocs=1)
    with pytest.raises(DapError, match="contiguous"):
        IOPlan(dist, 0, np.zeros((4, 12))[:, ::2])


@given(st.data())
def test_random_layouts(data):
    ndim = data.draw(st.integers(1, 3), "ndim")
    shape = tuple(data.draw(st.lists(st.integers(0, 7), min_size=ndim, max_size=ndim), "shape"))
    kinds = data.draw(st.lists(st.sampled_from("bcn"), min_size=ndim, max_size=ndim), "dist")
    grid = [1 if k == "n" else data.draw(st.integers(1, 3)) for k in kinds]
    bs = [data.draw(st.integers(1, 3)) for _ in kinds]
    pad = [0 if k != "b" or g == 1 or min(n // g for n in [s]) < 1 else
           data.draw(st.integers(0, 1)) for k, g, s in zip(kinds, grid, shape)]
    dist = Distribution.from_shape(shape, dist=kinds, grid_shape=grid, block_size=bs,
                                   padding=pad)
    order = data.draw(st.sampled_from("CF"), "order")
    check_layout(dist, order)
    check_layout(dist, order, kind="indexed")
