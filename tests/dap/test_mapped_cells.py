"""The one-node mapped save (nclx.dap.npymap.write_cells) for every layout,
in one process: every rank of a Distribution of up to 6 processes stores
its owned cells into one file, which must then be np.save's bytes.  Block
(padded, periodic), undistributed, cyclic, block-cyclic and 'u' dimensions
(with indices that several grid coordinates hold: the lowest writes), C
and F blocks, a structured dtype with bytes between its fields.  Before,
only layouts whose owned cells were one box per rank were mapped (the
others went through MPI-IO: a cyclic save took 65x a block save's time, a
scattered 'u' save held 6.3x its block)."""
import io
import os
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nclx.dap import Distribution, npymap
from nclx.dap.npyheader import header_bytes

GAPS = np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4],
                 "itemsize": 12})


def _global(shape, dtype):
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = ((np.arange(n) * 7) % 251 + 1).astype(np.uint8)
    return np.frombuffer(raw.tobytes(), dtype).reshape(shape)


def _with_u(dist, u_dims, draw):
    """``dist`` with the dimensions ``u_dims`` made 'u': each grid
    coordinate holds a random subset of the indices, together covering
    them all, some held twice."""
    parts = {}
    for d in u_dims:
        n, g = dist.shape[d], dist.grid_shape[d]
        owner = draw(st.lists(st.integers(0, g - 1), min_size=n, max_size=n))
        extra = draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, g - 1)),
                              max_size=3)) if n else []
        sets = [set(i for i in range(n) if owner[i] == c) for c in range(g)]
        for i, c in extra:
            sets[c].add(i)
        perm = draw(st.randoms(use_true_random=False))
        parts[d] = []
        for s in sets:
            idx = sorted(s)
            perm.shuffle(idx)
            parts[d].append(np.array(idx, dtype=np.int64))
    seq = []
    for r in range(dist.nprocs):
        coords = dist.coords_from_rank(r)
        dd = []
        for d, x in enumerate(dist.dim_data(r)):
            if d in parts:
                dd.append(dict(dist_type="u", size=dist.shape[d], proc_grid_size=dist.grid_shape[d],
                               proc_grid_rank=coords[d], indices=parts[d][coords[d]]))
            else:
                dd.append(x)
        seq.append(tuple(dd))
    return Distribution.from_dim_data_per_rank(seq)


def _block(dist, rank, g, fortran):
    """``rank``'s local block of ``g``: owned cells from ``g``; padding and
    any cell a lower 'u' coordinate holds as well get other bytes (they
    must not reach the file)."""
    maps = dist.maps(rank)
    coords = dist.coords_from_rank(rank)
    block = np.frombuffer(b"\xee" * (int(np.prod(dist.local_shape(rank), dtype=np.int64))
                                     * g.dtype.itemsize), g.dtype).reshape(dist.local_shape(rank))
    block = block.copy(order="F" if fortran else "C")
    pos, glob = [], []
    for d, m in enumerate(maps):
        if m.dist_type == "u":
            p = np.arange(m.local_size)
            held = np.zeros(dist.shape[d], bool)
            for c in range(coords[d]):
                cc = list(coords)
                cc[d] = c
                held[dist.maps(dist.rank_from_coords(cc))[d].indices] = True
            p = p[~held[m.indices]]
            pos.append(p), glob.append(m.indices[p])
        else:
            gi = m.global_indices()
            owned = np.arange(m.local_size)[m._owned_local()] if hasattr(m, "_owned_local") \
                else np.arange(m.local_size)
            pos.append(np.asarray(owned)), glob.append(np.asarray(gi))
    if all(len(p) for p in pos) or not pos:
        raw = block.view(np.dtype((np.void, g.dtype.itemsize)))
        graw = g.view(np.dtype((np.void, g.dtype.itemsize)))
        raw[np.ix_(*pos)] = graw[np.ix_(*glob)]
    return block


def _saved_by_every_rank(tmp_path, dist, g, fortran=False, old=b""):
    path = str(tmp_path / "cells.npy")
    with open(path, "wb") as f:
        f.write(old)
    header = header_bytes(g.dtype, g.shape)
    npymap.prepare(path, header, g.nbytes)
    for r in range(dist.nprocs):
        npymap.write_cells(path, len(header), dist, r, _block(dist, r, g, fortran))
    want = io.BytesIO()
    np.save(want, g)
    with open(path, "rb") as f:
        return f.read(), want.getvalue()


@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=ndim, max_size=ndim)))
    kinds = draw(st.lists(st.sampled_from("bcnu"), min_size=ndim, max_size=ndim))
    nprocs = draw(st.integers(1, 6))
    grid = [1] * ndim
    left = nprocs
    spread = [d for d in range(ndim) if kinds[d] != "n"]
    for i, d in enumerate(spread):   # the distributed dimensions share the processes
        if i == len(spread) - 1:
            grid[d], left = left, 1
        else:
            grid[d] = draw(st.sampled_from([k for k in range(1, left + 1) if left % k == 0]))
            left //= grid[d]
    if left > 1:
        return None
    dist = [("b" if k in "bu" else k) for k in kinds]
    block_size = [draw(st.integers(1, 4)) if k == "c" else 1 for k in kinds]
    padding = [draw(st.integers(0, 1)) if k == "b" and grid[d] > 1 else 0
               for d, k in enumerate(kinds)]
    periodic = [draw(st.booleans()) if p else False for p in padding]
    if any(k == "b" and g > 1 and s < g * (p + 1) for k, g, s, p in zip(kinds, grid, shape, padding)):
        padding = [0] * ndim          # padding must fit the neighbour's block
        periodic = [False] * ndim
    try:
        base = Distribution.from_shape(shape, dist=dist, grid_shape=grid, nprocs=nprocs,
                                       block_size=block_size, padding=padding, periodic=periodic)
    except Exception:                   # a layout from_shape refuses: not this test's
        return None
    u_dims = [d for d, k in enumerate(kinds) if k == "u"]
    return _with_u(base, u_dims, draw) if u_dims else base


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(layouts(), st.booleans(), st.sampled_from([np.dtype("<f8"), np.dtype("u1"), GAPS]))
def test_every_layout_saves_np_saves_bytes(tmp_path_factory, dist, fortran, dtype):
    if dist is None:
        return
    g = _global(dist.shape, dtype)
    got, want = _saved_by_every_rank(tmp_path_factory.mktemp("m"), dist, g, fortran,
                                     old=b"\xab" * 700)
    assert got == want, (dist.shape, [m.dist_type for m in dist.maps(0)], dist.grid_shape)


@pytest.mark.parametrize("kind,kw", [
    ("c", dict(dist=("c",))),
    ("bc", dict(dist=("c",), block_size=(3,))),
    ("bc-2d", dict(dist=("c", "c"), block_size=(2, 3), grid_shape=(2, 3))),
    ("b-padded", dict(dist=("b", "b"), padding=(1, 1), periodic=(True, False), grid_shape=(3, 2))),
])
def test_fixed_layouts(tmp_path, kind, kw):
    shape = (23,) if len(kw["dist"]) == 1 else (13, 17)
    dist = Distribution.from_shape(shape, nprocs=6, **kw)
    g = _global(shape, np.dtype("<i4"))
    got, want = _saved_by_every_rank(tmp_path, dist, g)
    assert got == want


def test_a_scattered_u_save_holds_no_run_tables(tmp_path):
    """tracemalloc peak of one rank's store of 1e6 scattered 'u' float64
    cells: no table per cell beyond the Distribution's own indices (the
    MPI-IO path's run tables were about 6x the block; now 0.5x here)."""
    n, P = 1_000_000, 3
    parts = np.array_split(np.random.default_rng(5).permutation(n), P)
    dist = Distribution.from_dim_data_per_rank(
        [(dict(dist_type="u", size=n, proc_grid_size=P, proc_grid_rank=q, indices=parts[q]),)
         for q in range(P)])
    g = np.arange(float(n))
    path = str(tmp_path / "u.npy")
    header = header_bytes(g.dtype, g.shape)
    npymap.prepare(path, header, g.nbytes)
    blocks = [g[parts[q]] for q in range(P)]
    dist.maps(1)
    tracemalloc.start()
    try:
        npymap.write_cells(path, len(header), dist, 1, blocks[1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one byte per index of the dimension (which indices a lower grid
    # coordinate holds: written by it) and one per local cell, no more
    assert peak < n + 2 * parts[1].size + 65536, peak / blocks[1].nbytes
    for q in (0, 2):
        npymap.write_cells(path, len(header), dist, q, blocks[q])
    assert np.load(path).tobytes() == g.tobytes()


# -- reads: nclx.dap.npyread (cyclic and 'u' layouts on one node) -----------

def _expected_block(dist, rank, g):
    """Every local cell of ``rank`` as a read fills it: from ``g`` where its
    global index (wrapped on a periodic dimension) is in the array, else 0."""
    block = np.zeros(dist.local_shape(rank), g.dtype)
    pos, glob = [], []
    for m in dist.maps(rank):
        i = np.arange(m.local_size)
        if m.dist_type == "b":
            gi = m.start + i
            if m.periodic:
                gi = gi % m.size if m.size else gi
        elif m.dist_type == "c":
            gi = m.global_from_local(i) if i.size else i
        else:
            gi = m.indices
        ok = (gi >= 0) & (gi < m.size)
        pos.append(i[ok]), glob.append(gi[ok])
    if all(len(p) for p in pos) or not pos:
        raw = np.dtype((np.void, g.dtype.itemsize))
        block.view(raw)[np.ix_(*pos)] = g.view(raw)[np.ix_(*glob)]
    return block


def _read_by_every_rank(tmp_path, dist, g, fortran_file):
    from nclx.dap import npyread
    from nclx.dap.npyheader import read_header
    path = str(tmp_path / "r.npy")
    np.save(path, np.asfortranarray(g) if fortran_file else g)
    dtype, shape, fortran, offset = read_header(path)
    assert fortran == (fortran_file and not np.asfortranarray(g).flags.c_contiguous)
    out = []
    for r in range(dist.nprocs):
        block = np.zeros(dist.local_shape(r), dtype)
        npyread.read_cells(path, offset, shape, fortran, block, dist, r)
        out.append(block)
    # the file's items as np.load reads them (a Fortran copy of a structured
    # dtype leaves its own bytes between the fields)
    return out, np.load(path)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(layouts(), st.booleans(), st.sampled_from([np.dtype("<f8"), np.dtype("u1"), GAPS]),
       st.sampled_from([1, 24, 100, 1 << 20]))
def test_every_layout_reads_its_cells(tmp_path_factory, dist, fortran_file, dtype, chunk):
    from nclx.dap import npyread
    if dist is None:
        return
    g = _global(dist.shape, dtype)
    old = npyread.CHUNK
    npyread.CHUNK = chunk            # many chunks: their boundaries, tails and forms
    try:
        got, g = _read_by_every_rank(tmp_path_factory.mktemp("r"), dist, g, fortran_file)
    finally:
        npyread.CHUNK = old
    for r, block in enumerate(got):
        assert block.tobytes() == _expected_block(dist, r, g).tobytes(), \
            (r, dist.shape, [m.dist_type for m in dist.maps(r)], dist.grid_shape, chunk)


@pytest.mark.parametrize("chunk", [8, 64, 1 << 20])
@pytest.mark.parametrize("kw", [dict(dist=("c",)), dict(dist=("c",), block_size=(3,)),
                                dict(dist=("c", "b"), block_size=(2, 1), grid_shape=(3, 2)),
                                dict(dist=("b", "c"), block_size=(1, 4), grid_shape=(2, 3),
                                     padding=(1, 0), periodic=(True, False))])
def test_fixed_layouts_read(tmp_path, kw, chunk, monkeypatch):
    from nclx.dap import npyread
    monkeypatch.setattr(npyread, "CHUNK", chunk)
    shape = (47,) if len(kw["dist"]) == 1 else (29, 13)
    dist = Distribution.from_shape(shape, nprocs=6, **kw)
    g = _global(shape, np.dtype("<i8"))
    for fortran in (False, True):
        got, back = _read_by_every_rank(tmp_path, dist, g, fortran)
        for r, block in enumerate(got):
            assert block.tobytes() == _expected_block(dist, r, back).tobytes(), (r, fortran)


def test_a_file_cut_before_the_cells_is_an_error_not_a_signal(tmp_path):
    from nclx.dap import DapError, npyread
    from nclx.dap.npyheader import read_header
    g = np.arange(1000.0)
    path = str(tmp_path / "cut.npy")
    np.save(path, g)
    dtype, shape, fortran, offset = read_header(path)
    os_size = offset + 400 * 8
    with open(path, "r+b") as f:
        f.truncate(os_size)
    dist = Distribution.from_shape(shape, dist=("c",), nprocs=3)
    block = np.zeros(dist.local_shape(2), dtype)
    with pytest.raises(DapError, match="the file ends before its cells"):
        npyread.read_cells(path, offset, shape, fortran, block, dist, 2)


@pytest.mark.parametrize("shape,kw,fortran,want", [
    ((1000,), dict(dist=("c",)), False, True),                        # a cell a piece
    ((60, 600), dict(dist=("c", "n")), False, False),                 # whole rows: 4800 B pieces
    ((60, 600), dict(dist=("c", "n")), True, True),                   # Fortran: a cell a piece
    ((60, 600), dict(dist=("n", "c")), False, True),
    ((60, 600), dict(dist=("n", "c"), block_size=(1, 600)), False, False),
    ((60, 6), dict(dist=("c", "n"), block_size=(4, 1)), False, True),  # 192 B pieces
    ((60, 600), dict(dist=("b", "b")), False, False),                 # blocks: MPI-IO
    ((60, 600), dict(dist=("c", "b"), grid_shape=(2, 3)), False, False),
    ((0,), dict(dist=("c",)), False, True),
])
def test_which_layouts_are_read_in_chunks(shape, kw, fortran, want):
    from nclx.dap import npyread
    dist = Distribution.from_shape(shape, nprocs=6, **kw)
    assert npyread.wanted(dist, 8, fortran) is want


def test_a_u_dimension_is_read_in_chunks_unless_its_rows_are_long():
    from nclx.dap import npyread
    for inner, want in ((1, True), (600, False)):
        parts = np.array_split(np.random.default_rng(1).permutation(60), 3)
        dist = Distribution.from_dim_data_per_rank(
            [(dict(dist_type="u", size=60, proc_grid_size=3, proc_grid_rank=q, indices=parts[q]),
              dict(dist_type="b", size=inner, proc_grid_size=1, proc_grid_rank=0, start=0,
                   stop=inner)) for q in range(3)])
        assert npyread.wanted(dist, 8, False) is want


# -- review 26b: found by a hostile look at the two paths above --------------

def test_a_chunked_read_of_large_cyclic_rounds_holds_about_a_chunk():
    """Rounds of the outermost cyclic dimension (block_size x grid rows)
    larger than a chunk: before, every chunk was a whole round (here 4 MB
    of rows for a 1.4 MB block) read from the lowest rank's rows on, and
    gathered through a copy of the block's size (a peak over 3x the
    block); now chunks of at most a quarter of the block."""
    import tempfile
    from nclx.dap import npyread
    from nclx.dap.npyheader import read_header
    shape = (64, 16384)
    dist = Distribution.from_shape(shape, dist=("c", "c"), grid_shape=(2, 3),
                                   block_size=(16, 1), nprocs=6)
    assert npyread.wanted(dist, 8, False)
    g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    with tempfile.TemporaryDirectory() as where:
        path = os.path.join(where, "rounds.npy")
        np.save(path, g)
        dtype, shp, fortran, offset = read_header(path)
        for r in (0, 5):
            block = np.zeros(dist.local_shape(r), dtype)
            tracemalloc.start()
            try:
                npyread.read_cells(path, offset, shp, fortran, block, dist, r)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert block.tobytes() == _expected_block(dist, r, g).tobytes()
            assert peak < 0.75 * block.nbytes, (r, peak / block.nbytes)


def test_a_cyclic_dimension_on_one_grid_coordinate_is_whole():
    """('c', 'c') on a (P, 1) grid: the second dimension holds every index
    in order, so the pieces are whole rows (MPI-IO; before, chunked reads
    of rounds of 16 x P rows: 6x the block on the last rank)."""
    from nclx.dap import npyread
    dist = Distribution.from_shape((64, 4096), dist=("c", "c"), grid_shape=(4, 1),
                                   block_size=(16, 1), nprocs=4)
    assert not npyread.wanted(dist, 8, False)


def test_a_file_replaced_before_the_chunked_read_is_refused(tmp_path):
    from nclx.dap import DapError, npyread
    from nclx.dap.npyheader import read_header
    path, other = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    np.save(path, np.arange(400.0))
    np.save(other, np.arange(400, dtype=np.int16).reshape(10, 40))   # longer file
    head = read_header(path)
    os.replace(other, path)             # another process, after the checks
    dist = Distribution.from_shape(head[1], dist=("c",), nprocs=2)
    block = np.zeros(dist.local_shape(0), head[0])
    with pytest.raises(DapError, match="another header"):
        npyread.read_cells(path, head[3], head[1], head[2], block, dist, 0, head=head)
    assert not block.any()              # before: int16 bytes read as float64


def test_a_file_replaced_before_the_mapped_store_is_left_alone(tmp_path):
    from nclx.dap.npyheader import file_identity
    path, other = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    g = np.arange(64.0)
    header = header_bytes(g.dtype, g.shape)
    npymap.prepare(path, header, g.nbytes)
    ref = file_identity(path)
    np.save(other, np.zeros(64, np.uint8))
    before = open(other, "rb").read()
    os.replace(other, path)             # another process, after the check by name
    dist = Distribution.from_shape(g.shape, dist=("c",), nprocs=1)
    with pytest.raises(npymap.OtherFile, match="another file"):
        npymap.write_cells(path, len(header), dist, 0, g, ref)
    assert open(path, "rb").read() == before     # before: float64 bytes over it
