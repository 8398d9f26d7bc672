"""Parallel .npy I/O (nclx.dap.load_npy / save_npy) on any number of ranks.

Round trips both ways: ``save_npy`` then ``np.load`` on rank 0 gives the
global array bit for bit (dtype included), ``np.save`` (C or Fortran order)
then ``load_npy`` gives, on every rank, the block ``DistArray.from_global``
would have built (padding included, filled by the halo exchange), for
block, cyclic, block-cyclic, undistributed and 'u' dimensions, several
grids, empty ranks, 0-size arrays and many dtypes.  Bad input (a missing
file, a bad header, an object dtype, a truncated file, a layout that does
not fit, an unwritable path, ranks passing different paths) raises on
every rank.  The >2 GiB case runs with NCLX_SLOW=1.
"""
import errno
import io
import os
import shutil
import tempfile

import numpy as np
import pytest

import nclx.dap as dap
from nclx.dap import npymap
from mpi_helpers import shared_tmpdir, collective_assert, comm, outcome, rank, within, N
from nclx.dap import DapError, Distribution

SLOW = os.environ.get("NCLX_SLOW") == "1"


@pytest.fixture(params=["mapped", "mpiio"])
def writer(request):
    """Writes through the shared mapping where the layout allows (the
    default on one node: nclx.dap.npymap), or through MPI-IO always."""
    old = npymap.MAPPED_WRITES
    npymap.MAPPED_WRITES = request.param == "mapped"
    yield request.param
    npymap.MAPPED_WRITES = old


@pytest.fixture(scope="module")
def tmp():
    """A directory every rank sees."""
    yield from shared_tmpdir("nclx-npyio-")


def _global(shape, dtype):
    c = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) * 3 + 1
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return c % 3 == 1
    if dtype.kind == "c":
        return (c - 2j * c).astype(dtype)
    if dtype.kind == "U":
        return c.astype(dtype)
    if dtype.names:
        out = np.zeros(shape, dtype)
        for i, name in enumerate(dtype.names):
            out[name] = c + i
        return out
    return c.astype(dtype)


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _np_save(path, g, fortran=False):
    if rank == 0:
        np.save(path, np.asfortranarray(g) if fortran else g)
    comm.Barrier()


def round_trip(tmp, name, g, dist=None, fortran=False, **kw):
    """save_npy -> np.load and np.save -> load_npy, compared everywhere."""
    path = os.path.join(tmp, name)
    ref = dap.DistArray.from_global(g, dist=dist, comm=comm, **kw)
    ref.save_npy(path)
    ok, msg = True, None
    if rank == 0:
        back = np.load(path)
        ok = _same(back, g)
        msg = f"{name}: np.load of save_npy's file: {back!r} != {g!r}"
    collective_assert(ok, msg)
    _np_save(path, g, fortran)
    da = dap.load_npy(path, dist=dist, comm=comm, **kw)
    ok = da.distribution == ref.distribution and _same(da._block, ref._block)
    collective_assert(ok, f"{name}: load_npy block {da._block!r} != {ref._block!r}")
    return da


LAYOUTS = [
    ("1d-b-periodic", (13,), dict(padding=[1], periodic=[True])),
    ("1d-c", (13,), dict(dist="c")),
    ("1d-bc3", (17,), dict(dist="c", block_size=[3])),
    ("2d-bb-pad", (9, 8), dict(padding=[1, 1])),
    ("2d-cn", (7, 5), dict(dist=["c", "n"])),
    ("2d-bc", (7, 11), dict(dist=["b", "c"], block_size=[1, 2])),
    ("2d-grid-n1", (6 * N, 5), dict(grid_shape=[N, 1], padding=[2, 0], periodic=[True, False])),
    ("2d-grid-1n", (3, 4 * N), dict(grid_shape=[1, N], dist=["n", "c"])),
    ("3d-bnc", (5, 3, 6), dict(dist=["b", "n", "c"], block_size=[1, 1, 2])),
    ("3d-bbb", (4, 5, 3), dict(padding=None)),
    ("empty-ranks", (2, 3), dict(grid_shape=[N, 1])),
    # pieces of >= 4096 bytes: independent I/O (npyfile.HINTS), not ROMIO's defaults
    ("long-rows", (2 * N + 1, 600), dict(grid_shape=[N, 1], padding=[1, 0], periodic=[True, False])),
    ("long-grid", (7, 1100 * N), dict(grid_shape=[1, N])),
    ("zero-rows", (0, 4), dict()),
    ("zero-cols", (3, 0), dict(dist=["c", "b"])),
]


@pytest.mark.parametrize("fortran", [False, True], ids=["C", "F"])
@pytest.mark.parametrize("name,shape,kw", LAYOUTS, ids=[x[0] for x in LAYOUTS])
def test_round_trips_of_every_layout(tmp, name, shape, kw, fortran, writer):
    round_trip(tmp, f"{name}-{fortran}.npy", _global(shape, np.float64), fortran=fortran, **kw)


DTYPES = [np.bool_, np.int8, np.uint16, np.int64, np.float32, np.float64, ">f8", ">i4",
          np.complex128, "<U3", np.dtype([("x", "<f8"), ("y", ">i2")])]


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(np.dtype(d)) for d in DTYPES])
def test_round_trips_of_every_dtype_as_stored(tmp, dtype, writer):
    g = _global((5, 7), dtype)
    da = round_trip(tmp, "dt.npy", g, dist=["c", "b"], padding=[0, 1], fortran=True)
    collective_assert(da.dtype == np.dtype(dtype), f"dtype {da.dtype} != {np.dtype(dtype)}")


def _u_dist(n, m=None, seed=5):
    """A 'u' first dimension (a random partition of range(n); the last rank
    also holds index 0, shared) and an optional undistributed second one."""
    perm = np.random.default_rng(seed).permutation(n)
    dims = []
    for r in range(N):
        ix = perm[r::N]
        if r == N - 1 and N > 1 and 0 not in ix:
            ix = np.append(ix, 0)
        dd = [{"dist_type": "u", "size": n, "indices": np.asarray(ix, np.int64),
               "proc_grid_rank": r, "proc_grid_size": N}]
        if m is not None:
            dd.append({"dist_type": "b", "size": m, "start": 0, "stop": m,
                       "proc_grid_rank": 0, "proc_grid_size": 1})
        dims.append(tuple(dd))
    return Distribution.from_dim_data_per_rank(dims)


@pytest.mark.parametrize("fortran", [False, True], ids=["C", "F"])
def test_round_trips_of_unstructured_dimensions(tmp, fortran, writer):
    round_trip(tmp, "u1.npy", _global((11,), np.int32), dist=_u_dist(11))
    round_trip(tmp, "u2.npy", _global((11, 3), np.complex64), dist=_u_dist(11, 3),
               fortran=fortran)


def test_a_zero_dimensional_array_needs_one_rank(tmp):
    path = os.path.join(tmp, "scalar.npy")
    _np_save(path, np.array(2.5))
    if N == 1:
        da = dap.load_npy(path, comm=comm)
        assert da.shape == () and da._block[()] == 2.5
        da.save_npy(path)
        assert np.load(path) == np.array(2.5) and np.load(path).shape == ()
    else:
        with pytest.raises(DapError, match="processes need at least one distributed dimension"):
            dap.load_npy(path, comm=comm)


def test_save_npy_truncates_an_older_larger_file_and_takes_path_likes(tmp):
    import pathlib
    path = pathlib.Path(tmp) / "over.npy"
    _np_save(path, np.zeros(1000))
    g = _global((3, 2), np.int16)
    dap.save_npy(path, dap.DistArray.from_global(g, comm=comm))
    ok = True
    if rank == 0:
        ok = _same(np.load(path), g) and os.path.getsize(path) == 128 + g.nbytes
    collective_assert(ok, "the old file's tail is still there")


@pytest.mark.filterwarnings("ignore:Stored array in format")
@pytest.mark.parametrize("names,version", [(["a", "b"], (1, 0)),
                                           ([f"f{i}" for i in range(4000)], (2, 0)),
                                           (["α", "b"], (3, 0))],
                         ids=["format-1.0", "format-2.0", "format-3.0"])
def test_header_formats(tmp, names, version):
    dtype = np.dtype([(n, "i1") for n in names])
    g = _global((N + 1,), dtype)
    path = os.path.join(tmp, "hdr.npy")
    a = dap.DistArray.from_global(g, comm=comm)
    a.save_npy(path)
    ok = True
    if rank == 0:
        with open(path, "rb") as f:
            ok = np.lib.format.read_magic(f) == version
        ok = ok and _same(np.load(path, max_header_size=10 ** 6), g)
    collective_assert(ok, f"{names[:3]}: header or data differ")
    _np_save(path, g)
    kind, value = outcome(dap.load_npy, path, comm=comm, max_header_size=10 ** 6)
    ok = kind == "ok" and _same(value._block, a._block)
    collective_assert(ok, f"load_npy: {value}")


@pytest.mark.parametrize("layout", ["F", "strided"])
def test_save_of_imported_blocks_in_other_memory_layouts(tmp, layout):
    """A Fortran-ordered block is described by its strides; a strided view
    (neither C nor F contiguous) is copied first."""
    g = _global((3 * N, 5), np.float32)
    ref = dap.DistArray.from_global(g, comm=comm, padding=[1, 0], periodic=[True, False])
    block = ref._block
    if layout == "F":
        buf = np.asfortranarray(block)
    else:
        buf = np.zeros((block.shape[0], 2 * block.shape[1]), block.dtype)[:, ::2]
        buf[...] = block
    export = {"__version__": "0.10.0", "buffer": buf, "dim_data": ref.__distarray__()["dim_data"]}
    path = os.path.join(tmp, f"imported-{layout}.npy")
    dap.from_distarray(export, comm=comm).save_npy(path)
    ok = True
    if rank == 0:
        ok = _same(np.load(path), g)
    collective_assert(ok, f"{layout}: np.load of save_npy's file differs")


def test_np_save_of_a_distarray_is_save_npy(tmp):
    g = _global((5, 3), np.int32)
    a = dap.DistArray.from_global(g, comm=comm, dist=["c", "b"])
    np.save(os.path.join(tmp, "via-np-save"), a)          # .npy appended, as NumPy does
    ok = True
    if rank == 0:
        ok = _same(np.load(os.path.join(tmp, "via-np-save.npy")), g)
    collective_assert(ok, "np.save(path, da) wrote another array")
    _raises_everywhere("TypeError", "needs a path", np.save, io.BytesIO(), a)


# --------------------------------------------------------------------- errors
def _raises_everywhere(exc_type, match, fn, *args, **kw):
    try:
        fn(*args, **kw)
        kind, value = "ok", "no exception"
    except Exception as exc:  # noqa: BLE001 - compared collectively
        kind, value = "exc", f"{type(exc).__name__}: {exc}"
    ok = kind == "exc" and value.startswith(exc_type + ":") and match in value
    collective_assert(ok, f"expected {exc_type} ({match!r}), got {kind} {value}")


def test_a_missing_file_raises_oserror_everywhere(tmp):
    # a DapError that is also a FileNotFoundError, as docs/dap.md says of every
    # load_npy error (review 21: a plain FileNotFoundError before)
    _raises_everywhere("DapError[FileNotFoundError]", "No such file", dap.load_npy,
                       os.path.join(tmp, "missing.npy"), comm=comm)
    with pytest.raises(FileNotFoundError) as info:
        dap.load_npy(os.path.join(tmp, "missing.npy"), comm=comm)
    assert isinstance(info.value, dap.DapError)
    assert info.value.errno == errno.ENOENT
    assert info.value.filename == os.path.join(tmp, "missing.npy")


@pytest.mark.parametrize("case,match", [
    ("magic", "not a .npy file"),
    ("header", "not a .npy file"),
    ("object", "holds Python objects"),
    ("void0", "has items of 0 bytes"),        # was a StorageTypeError from the storage layer
    ("truncated", "truncated"),
    ("large-header", "max_header_size"),
])
def test_bad_files_raise_daperror_everywhere(tmp, case, match):
    path = os.path.join(tmp, f"bad-{case}.npy")
    if rank == 0:
        if case == "magic":
            open(path, "wb").write(b"PK\x03\x04 not numpy at all")
        elif case == "header":
            open(path, "wb").write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'   \n")
        elif case == "object":
            np.save(path, np.array([1, "a", None], dtype=object), allow_pickle=True)
        elif case == "void0":
            np.save(path, np.zeros(4, "V0"))
        elif case == "truncated":
            np.save(path, np.arange(100.0))
            os.truncate(path, os.path.getsize(path) - 8)
        else:
            np.save(path, np.zeros(3, [(f"f{i}", "i1") for i in range(1000)]))
    comm.Barrier()
    _raises_everywhere("DapError", match, dap.load_npy, path, comm=comm)


def test_a_distribution_that_does_not_fit_the_file(tmp):
    path = os.path.join(tmp, "fit.npy")
    _np_save(path, np.zeros((4, 6)))
    other = Distribution.from_shape((4, 5), nprocs=N)
    _raises_everywhere("DapError", "the file holds shape (4, 6), the Distribution has (4, 5)",
                       dap.load_npy, path, dist=other, comm=comm)
    _raises_everywhere("DapError", "cannot be given with a Distribution",
                       dap.load_npy, path, dist=Distribution.from_shape((4, 6), nprocs=N),
                       comm=comm, padding=[1, 1])
    _raises_everywhere("DapError", "padding[0] = 9", dap.load_npy, path, comm=comm,
                       padding=[9, 0], periodic=[True, False])


def test_a_path_that_differs_on_one_rank(tmp):
    paths = [os.path.join(tmp, "p0.npy"), os.path.join(tmp, "p1.npy")]
    mine = paths[1] if rank == N - 1 and N > 1 else paths[0]
    a = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
    if N == 1:
        a.save_npy(mine)
        return
    _raises_everywhere("DapError", f"rank {N - 1} writes", a.save_npy, mine)
    _np_save(paths[0], np.arange(3.0))
    _raises_everywhere("DapError", f"rank {N - 1} reads", dap.load_npy, mine, comm=comm)


def test_an_unwritable_path_raises_everywhere(tmp):
    a = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
    # a DapError that is also the failing rank's OSError (review 12)
    _raises_everywhere("DapError[FileNotFoundError]", "save_npy", a.save_npy,
                       os.path.join(tmp, "no-such-dir", "x.npy"))
    _raises_everywhere("DapError[IsADirectoryError]", "save_npy", a.save_npy, tmp)  # a directory
    _raises_everywhere("DapError", "needs a DistArray", dap.save_npy, "x.npy", np.zeros(3))


def test_saving_unstructured_indices_that_leave_holes(tmp):
    perm = np.random.default_rng(1).permutation(3 * N)
    dims = [({"dist_type": "u", "size": 3 * N + 1, "indices": np.sort(perm[r::N]),
              "proc_grid_rank": r, "proc_grid_size": N},) for r in range(N)]
    d = Distribution.from_dim_data_per_rank(dims)
    a = dap.DistArray(np.zeros(3), d, comm)
    _raises_everywhere("DapError", f"no rank holds global index {3 * N}", a.save_npy,
                       os.path.join(tmp, "holes.npy"))


# ------------------------------------------------------------------ > 2 GiB
SLOW_REASON = "writes and reads a 2 GiB + 1 MiB file: NCLX_SLOW=1"
BIG, SMALL = 2 ** 31 + 2 ** 20, 16


@pytest.fixture(scope="module")
def big():
    """Rank 0 holds 2**31 + 2**20 int8 cells (one piece over 2 GiB, counts
    beyond a C int: mpi4py 4's large-count calls), the others 16 each; the
    file lives in memory where Linux offers it (/dev/shm): the tests' 60 s
    hang guard, not the disk, is what these are about."""
    n = BIG + SMALL * (N - 1)
    stops = [BIG + SMALL * r for r in range(N)]
    dims = [({"dist_type": "b", "size": n, "start": 0 if r == 0 else stops[r - 1],
              "stop": stops[r], "proc_grid_rank": r, "proc_grid_size": N},) for r in range(N)]
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    where = comm.bcast(tempfile.mkdtemp(prefix="nclx-npyio-big-", dir=shm) if rank == 0 else None)
    yield (os.path.join(where, "big.npy"), Distribution.from_dim_data_per_rank(dims), n,
           0 if rank == 0 else stops[rank - 1], stops[rank])
    comm.Barrier()
    if rank == 0:
        shutil.rmtree(where, ignore_errors=True)


def _spots(lo, hi):
    """Local positions to check: both ends and 1000 in between."""
    rng = np.random.default_rng(rank)
    return np.unique(np.concatenate(([0, hi - lo - 1], rng.integers(0, hi - lo, 1000))))


@pytest.mark.skipif(not SLOW, reason=SLOW_REASON)
def test_a_part_over_2_gib_saved(big):
    path, d, n, lo, hi = big
    period = np.arange(251).astype(np.int8)       # global cell i holds i % 251
    block = np.resize(np.roll(period, -(lo % 251)), hi - lo)
    dap.DistArray(block, d, comm).save_npy(path)
    ok = True
    if rank == 0:
        m = np.load(path, mmap_mode="r")
        ok = m.shape == (n,) and all(
            np.array_equal(m[s:s + 40], (np.arange(s, s + 40) % 251).astype(np.int8))
            for s in (0, 2 ** 31 - 5, n - 40))
        del m
    collective_assert(ok, "np.load of the big file differs")


@pytest.mark.skipif(not SLOW, reason=SLOW_REASON)
def test_a_part_over_2_gib_loaded(big):
    path, d, n, lo, hi = big
    back = dap.load_npy(path, dist=d, comm=comm)
    at = _spots(lo, hi)
    ok = back._block.shape == (hi - lo,) and np.array_equal(
        back._block[at], ((lo + at) % 251).astype(np.int8))
    collective_assert(ok, "load_npy of the big file differs")


# -- one node: writes through a shared mapping (nclx.dap.npymap) -------------

def _spy_box_writes(monkeypatch):
    calls = []
    real = npymap.write_cells
    monkeypatch.setattr(npymap, "write_cells", lambda *a, **kw: (calls.append(a[0]), real(*a, **kw)))
    return calls


@pytest.mark.parametrize("name,shape,kw,box", [
    ("rows", (4 * N + 1, 300), dict(grid_shape=[N, 1]), True),
    ("grid-padded", (9, 8), dict(padding=[1, 1]), True),
    ("cyclic", (13,), dict(dist="c"), True),
    ("block-cyclic", (29, 3), dict(dist=("c", "n"), block_size=[4, 1]), True),
    ("u", None, None, True),
])
def test_one_node_writes_go_through_the_mapping(tmp, monkeypatch, name, shape, kw, box):
    """Every rank of the MPI tests shares this node: every layout is stored
    through the mapping (before, only layouts whose owned cells were one
    box per rank; the others went through MPI-IO); the file
    is allocated in full (posix_fallocate: a full disk cannot SIGBUS a
    store) and np.load reads the global array."""
    calls = _spy_box_writes(monkeypatch)
    path = os.path.join(tmp, f"map-{name}.npy")
    if shape is None:
        g, da = _global((11,), np.int32), None
        da = dap.DistArray.from_global(g, dist=_u_dist(11), comm=comm)
    else:
        g = _global(shape, np.float64)
        da = dap.DistArray.from_global(g, comm=comm, **kw)
    da.save_npy(path)
    ok, msg = (len(calls) == 1) == box, f"{name}: mapped writes {calls}, expected box={box}"
    if ok and rank == 0:
        st = os.stat(path)
        back = np.load(path)
        ok = _same(back, g) and (not box or st.st_blocks * 512 >= st.st_size)
        msg = f"{name}: np.load {back!r} != {g!r}, or {st.st_blocks} blocks for {st.st_size} B"
    collective_assert(ok, msg)


# (a cyclic dimension on one process holds every index in order: on one
# rank the cyclic layouts are whole rows, read through MPI-IO)
@pytest.mark.parametrize("name,shape,kw,chunked", [
    ("rows", (4 * N + 1, 30), dict(grid_shape=[N, 1]), False),
    ("cyclic", (13 * N + 3,), dict(dist="c"), N > 1),
    ("block-cyclic", (29, 3), dict(dist=("c", "n"), block_size=[4, 1]), N > 1),
    ("block-cyclic-F", (29, 5), dict(dist=("n", "c"), block_size=[1, 2]), N > 1),
    ("u", None, None, True),
])
def test_one_node_cyclic_and_u_loads_read_chunks(tmp, monkeypatch, name, shape, kw, chunked):
    """Loads of cyclic and 'u' layouts read the file in chunks (nclx.dap.
    npyread: MPI-IO took 50-200x NumPy's time there); block layouts keep
    MPI-IO.  Every cell equals the file's, C and Fortran files."""
    from nclx.dap import npyread
    calls = []
    real = npyread.read_cells
    monkeypatch.setattr(npyread, "read_cells",
                        lambda *a, **kw: (calls.append(a[0]), real(*a, **kw)))
    monkeypatch.setattr(npyread, "CHUNK", 256)         # several chunks
    if shape is None:
        g, dist = _global((11,), np.int32), _u_dist(11)
        kw = {}
    else:
        g, dist = _global(shape, np.float64), None
    path = os.path.join(tmp, f"chunks-{name}.npy")
    for fortran in (False, True):
        _np_save(path, g, fortran)
        back = dap.load_npy(path, dist=dist if dist is not None else kw.get("dist"), comm=comm,
                            **{k: v for k, v in kw.items() if k != "dist"})
        want = dap.DistArray.from_global(g, dist=dist if dist is not None else kw.get("dist"),
                                         comm=comm, **{k: v for k, v in kw.items() if k != "dist"})
        ok = _same(back._block, want._block)
        collective_assert(ok, f"{name} (fortran={fortran}): {back._block!r} != {want._block!r}")
    collective_assert((len(calls) == 2) == chunked, f"{name}: chunked reads {calls}")


def test_a_full_disk_on_rank_0_raises_everywhere(tmp, monkeypatch):
    """posix_fallocate failing with ENOSPC (the disk or quota full) is an
    error on every rank before any rank stores a byte."""
    import errno
    calls = _spy_box_writes(monkeypatch)
    if rank == 0:
        def full(fd, off, n):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(npymap.os, "posix_fallocate", full)
    a = dap.DistArray.from_global(np.arange(8.0 * N), comm=comm)
    _raises_everywhere("DapError[OSError]", "No space left", a.save_npy,
                       os.path.join(tmp, "full.npy"))
    collective_assert(not calls, f"stored {calls} after the failed reservation")


def test_a_file_system_without_fallocate_falls_back_to_mpi_io(tmp, monkeypatch):
    import errno
    calls = _spy_box_writes(monkeypatch)
    if rank == 0:
        def unsupported(fd, off, n):
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        monkeypatch.setattr(npymap.os, "posix_fallocate", unsupported)
    g = _global((5 * N, 3), np.int16)
    round_trip(tmp, "nofalloc.npy", g)
    collective_assert(not calls, f"mapped writes {calls} without a reservation")


def test_a_store_failing_on_one_rank_raises_everywhere(tmp, monkeypatch):
    if rank == N - 1:
        def broken(*a):
            raise MemoryError("cannot map the file here")
        monkeypatch.setattr(npymap, "write_cells", broken)
    a = dap.DistArray.from_global(np.arange(8.0 * N), comm=comm)
    _raises_everywhere("DapError[MemoryError]", "cannot map the file here", a.save_npy,
                       os.path.join(tmp, "broken.npy"))
    ok = comm.allreduce(1) == N          # and the ranks go on together
    collective_assert(ok, "the ranks fell out of step")


def test_ranks_that_disagree_on_chunked_reads_take_rank_0s_way(tmp, monkeypatch):
    """CHUNKED_READS set on some ranks only: rank 0's value decides for
    every rank (before it was read on each rank, a mixed setting would have
    left some in MPI-IO's collective read and the others not)."""
    from nclx.dap import npyread
    calls = []
    real = npyread.read_cells
    monkeypatch.setattr(npyread, "read_cells",
                        lambda *a, **kw: (calls.append(a[0]), real(*a, **kw)))
    path = os.path.join(tmp, "mixed-chunks.npy")
    g = np.arange(9.0 * N + 2)
    _np_save(path, g)
    du = _u_dist(g.size)          # read in chunks at any rank count
    want = dap.DistArray.from_global(g, dist=du, comm=comm)
    for zero in (True, False):
        calls.clear()
        monkeypatch.setattr(npyread, "CHUNKED_READS", zero if rank == 0 else not zero)
        sub = comm.Dup()           # within(): the call's collectives on a communicator of its own
        back = within(dap.load_npy, path, dist=du, comm=sub)
        ok = back[0] == "ok" and _same(back[1]._block, want._block) and bool(calls) == zero
        collective_assert(ok, f"rank 0 {zero}: {back} {calls}")
        if back[0] != "hang":
            sub.Free()


@pytest.mark.parametrize("name,value", [("CHUNK", 1), ("LONG_PIECE", 8), ("LONG_PIECE", 1 << 20)])
def test_ranks_with_other_chunk_settings_read_alike(tmp, monkeypatch, name, value):
    """npyread.CHUNK or LONG_PIECE changed on the last rank only: rank 0's
    decide (before, that rank took the other path and every rank waited
    for ever in mismatched collectives; review 26b)."""
    from nclx.dap import npyread
    path = os.path.join(tmp, f"other-{name}.npy")
    g = np.arange(64.0 * N).reshape(8 * N, 8)
    _np_save(path, g)
    if rank == N - 1:
        monkeypatch.setattr(npyread, name, value)
    want = dap.DistArray.from_global(g, dist=("n", "c"), comm=comm)
    sub = comm.Dup()
    back = within(dap.load_npy, path, dist=("n", "c"), comm=sub)
    ok = back[0] == "ok" and _same(back[1]._block, want._block)
    collective_assert(ok, f"{name}={value} on the last rank: {back}")
    if back[0] != "hang":
        sub.Free()


def test_a_chunked_read_failing_on_one_rank_raises_everywhere(tmp, monkeypatch):
    from nclx.dap import npyread
    path = os.path.join(tmp, "broken-read.npy")
    _np_save(path, np.arange(8.0 * N + 3))
    if rank == N - 1:
        def broken(*a, **kw):
            raise MemoryError("cannot read the chunk here")
        monkeypatch.setattr(npyread, "read_cells", broken)
    _raises_everywhere("DapError[MemoryError]", "cannot read the chunk here", dap.load_npy,
                       path, dist=_u_dist(8 * N + 3), comm=comm)
    ok = comm.allreduce(1) == N          # and the ranks go on together
    collective_assert(ok, "the ranks fell out of step")


def test_ranks_that_disagree_on_mapped_writes_agree_on_mpi_io(tmp, monkeypatch):
    """MAPPED_WRITES set on some ranks only: every rank takes MPI-IO."""
    calls = _spy_box_writes(monkeypatch)
    monkeypatch.setattr(npymap, "MAPPED_WRITES", rank % 2 == 0)
    g = _global((4 * N, 6), np.float32)
    round_trip(tmp, "disagree.npy", g)
    collective_assert(bool(calls) == (N == 1), f"mapped writes {calls}")


@pytest.mark.parametrize("old_shape", [(6 * N, 5), (6 * N, 7), (3 * N, 5)],
                         ids=["same-size", "older-larger", "older-smaller"])
def test_a_mapped_save_over_an_older_file_leaves_none_of_its_bytes(tmp, old_shape):
    """The mapped path reuses an existing file (cut or extended to its new
    length) instead of truncating it: every byte of the new file is the
    new array's, whatever the old file held."""
    path = os.path.join(tmp, "over.npy")
    old = dap.DistArray.from_global(np.full(old_shape, -1.0), comm=comm, grid_shape=[N, 1])
    old.save_npy(path)
    g = _global((6 * N, 5), np.float64)
    dap.DistArray.from_global(g, comm=comm, grid_shape=[N, 1]).save_npy(path)
    ok, msg = True, None
    if rank == 0:
        buf = io.BytesIO()
        np.save(buf, g)
        with open(path, "rb") as f:
            got = f.read()
        ok, msg = got == buf.getvalue(), f"the file differs from np.save's ({len(got)} B)"
    collective_assert(ok, msg)


def test_a_rank_that_cannot_map_the_file_sends_every_rank_through_mpi_io(tmp, monkeypatch):
    """A file system that cannot map files shared (some FUSE and network
    ones) on one rank: every rank writes through MPI-IO and the file is
    right (was: an OSError raised on every rank)."""
    import errno
    if rank == N - 1:
        def refuse(*a, **kw):
            raise OSError(errno.ENODEV, "No such device")
        monkeypatch.setattr(npymap.mmap, "mmap", refuse)
    g = _global((4 * N, 6), np.float64)
    path = os.path.join(tmp, "unmappable.npy")
    dap.DistArray.from_global(g, comm=comm, grid_shape=[N, 1]).save_npy(path)
    ok, msg = True, None
    if rank == 0:
        back = np.load(path)
        ok, msg = _same(back, g), f"np.load {back!r} != {g!r}"
    collective_assert(ok, msg)
