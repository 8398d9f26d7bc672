"""Review 25 (nclx.dap's .npy I/O), on 1-6 ranks:

- an empty array with a long cyclic dimension: every rank asked for the
  cyclic dimension's runs (8 TiB for ``(3, 0, 2**40)``) and raised
  MemoryError, and with a 'u' dimension beside it one rank raised alone
  while the other waited for ever; np.save writes the header;
- a 1-D cyclic save held 4x its block of memory, a cyclic load 7x, a 'u'
  save 11x (the cyclic runs made where only counted; Python lists for MPI's
  datatypes);
- a full disk on the MPI-IO path said "Other I/O error", and no agreed
  OSError carried an errno;
- ``save_npy('d/x.npy/')`` wrote the file ``d/x.npy`` where open() and
  np.save refuse the path; review 25b: ``'d/x.npy/.'`` overwrote ``d/x.npy``
  and ``'d/nosuch/../y.npy'`` wrote ``d/y.npy`` (the normalised name was
  opened, not the path as given)."""
import errno
import gc
import os
import tracemalloc

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from nclx.dap import DapError, npymap
from mpi_helpers import collective_assert, comm, rank, shared_tmpdir, within


@pytest.fixture(scope="module")
def tmp():
    yield from shared_tmpdir("nclx-review25-npy-")


def _np_save_bytes(tmp, name, shape, dtype):
    """The bytes np.save writes for an empty array of ``shape``."""
    path = os.path.join(tmp, f"ref-{name}-{rank}.npy")
    np.save(path, np.empty(shape, dtype))
    with open(path, "rb") as f:
        return f.read()


def _file_bytes(path):
    comm.Barrier()
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "mpiio"])
@pytest.mark.parametrize("shape, dist", [((3, 0, 2 ** 40), "c"), ((0, 3_000_000), ("n", "c")),
                                         ((2 ** 40, 0), ("c", "n"))])
def test_an_empty_array_with_a_long_cyclic_dimension_saves_its_header(tmp, monkeypatch, shape,
                                                                      dist, mapped):
    monkeypatch.setattr(npymap, "MAPPED_WRITES", mapped)
    # a communicator of its own: a hang is agreed on COMM_WORLD (within)
    a = dap.DistArray.from_shape(shape, dist=dist, comm=comm.Dup())
    path = os.path.join(tmp, f"empty-{len(shape)}-{mapped}.npy")
    got = within(a.save_npy, path, limit=30.0)
    ok = got[0] == "ok"
    collective_assert(ok, f"save_npy of {shape} {dist}: {got}")
    want = _np_save_bytes(tmp, "empty", shape, a.dtype)
    collective_assert(_file_bytes(path) == want, f"{shape}: the file is not np.save's")


def test_an_empty_u_and_cyclic_array_does_not_leave_a_rank_waiting(tmp):
    """A 'u' dimension holding indices in several runs on one rank and one
    run on another: before, only the first rank asked for the cyclic runs
    (8 TiB) and raised, the other waited in the agreement for ever."""
    size = comm.size
    # rank 0 holds 0 and P (two runs), every other rank one index (one run)
    mine = np.array([0, size]) if rank == 0 else np.array([rank])
    total = size + 1
    long = 2 ** 40
    buf = np.empty((mine.size, 0, long))
    dims = (dict(dist_type="u", size=total, proc_grid_size=size, proc_grid_rank=rank,
                 indices=mine),
            dict(dist_type="b", size=0, proc_grid_size=1, proc_grid_rank=0, start=0, stop=0),
            dict(dist_type="c", size=long, proc_grid_size=1, proc_grid_rank=0, start=0))
    a = dap.from_distarray(dict(__version__="0.10.0", buffer=buf, dim_data=dims), comm.Dup())
    path = os.path.join(tmp, "empty-u.npy")
    got = within(a.save_npy, path, limit=30.0)
    collective_assert(got[0] == "ok", f"save_npy: {got}")
    want = _np_save_bytes(tmp, "u", (total, 0, long), np.float64)
    collective_assert(_file_bytes(path) == want, "the file is not np.save's")


def _peak(fn):
    gc.collect()
    comm.Barrier()
    tracemalloc.start()
    try:
        fn()
        return comm.allreduce(tracemalloc.get_traced_memory()[1], op=MPI.MAX)
    finally:
        tracemalloc.stop()


N_MEM = 600_000


def test_a_cyclic_save_and_load_hold_about_their_block(tmp):
    path = os.path.join(tmp, "mem-c.npy")
    a = dap.DistArray.from_shape((N_MEM,), dist="c", comm=comm, dtype=np.float64)
    a.save_npy(path)
    dap.load_npy(path, dist="c", comm=comm)            # caches warmed
    block = N_MEM * 8 / comm.size
    save = _peak(lambda: a.save_npy(path)) / block
    load = _peak(lambda: dap.load_npy(path, dist="c", comm=comm)) / block
    # before: 4.0x (save) and 7.0x (load) at 3 ranks; the load's own block is 1x
    collective_assert(save <= 0.5 and load <= 1.5,
                      f"peak memory: save {save:.2f}x, load {load:.2f}x the block")


def test_a_u_save_of_scattered_indices_builds_no_python_lists(tmp):
    size = comm.size
    parts = np.array_split(np.random.default_rng(3).permutation(N_MEM), size)
    du = dap.Distribution.from_dim_data_per_rank(
        [(dict(dist_type="u", size=N_MEM, proc_grid_size=size, proc_grid_rank=q,
               indices=parts[q]),) for q in range(size)])
    a = dap.redistribute(dap.DistArray.from_global(np.arange(float(N_MEM)), comm=comm), du)
    path = os.path.join(tmp, "mem-u.npy")
    a.save_npy(path)
    block = N_MEM * 8 / size
    peak = _peak(lambda: a.save_npy(path)) / block
    # one node: the mapped save stores through the dimension's own indices
    # (before: run tables, about 6.3x at 3 ranks; 11.3x before review 25);
    # a byte per index of the dimension says which a lower coordinate holds
    collective_assert(peak <= 0.2 + size / 8, f"peak memory of a 'u' save: {peak:.2f}x the block")
    if rank == 0:
        back = np.load(path)
        ok = back.tobytes() == np.arange(float(N_MEM)).tobytes()
    else:
        ok = True
    collective_assert(ok, "the 'u' save's file differs")


def _fails_everywhere(fn, *args):
    try:
        fn(*args)
        return None
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return exc


@pytest.mark.parametrize("dist", ["b", "c"])
def test_a_full_disk_names_enospc_with_its_errno_on_every_rank(tmp, monkeypatch, dist):
    """MPI-IO reports a full disk as "Other I/O error": the save reserves
    the file first (as the mapped path does), so ENOSPC is named."""
    monkeypatch.setattr(npymap, "MAPPED_WRITES", False)
    if rank == 0:
        def full(fd, off, n):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(npymap.os, "posix_fallocate", full)
    a = dap.DistArray.from_global(np.arange(8.0 * comm.size), dist=dist, comm=comm)
    path = os.path.join(tmp, f"full-{dist}.npy")
    exc = _fails_everywhere(a.save_npy, path)
    ok = isinstance(exc, DapError) and isinstance(exc, OSError) and exc.errno == errno.ENOSPC \
        and "No space left" in str(exc)
    collective_assert(ok, f"{dist}: {type(exc).__name__} errno "
                          f"{getattr(exc, 'errno', None)}: {exc}")
    size = os.path.getsize(path) if rank == 0 else 0
    collective_assert(size == 0, f"the file holds {size} bytes after the failure")


def test_the_mapped_path_full_disk_carries_its_errno(tmp, monkeypatch):
    if rank == 0:
        def full(fd, off, n):
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        monkeypatch.setattr(npymap.os, "posix_fallocate", full)
    a = dap.DistArray.from_global(np.arange(8.0 * comm.size), comm=comm)
    exc = _fails_everywhere(a.save_npy, os.path.join(tmp, "quota.npy"))
    ok = isinstance(exc, OSError) and exc.errno == errno.EDQUOT and "quota" in str(exc)
    collective_assert(ok, f"{type(exc).__name__} errno {getattr(exc, 'errno', None)}: {exc}")


def _dir_with(tmp, name, existing):
    """A directory every rank sees, holding x.npy (zeros(2)) if ``existing``."""
    d = os.path.join(tmp, name)
    if rank == 0:
        os.makedirs(d, exist_ok=True)
        if existing:
            np.save(os.path.join(d, "x.npy"), np.zeros(2))
    comm.Barrier()
    return d


def _save_refused_as_open_refuses(target):
    """save_npy(target) raises on every rank the DapError of the OSError
    type open(target, 'wb') raises."""
    try:
        with open(target, "wb"):
            pass
        want = None
    except OSError as e:
        want = type(e).__name__
    comm.Barrier()
    a = dap.DistArray.from_global(np.arange(6.0), comm=comm)
    exc = _fails_everywhere(a.save_npy, target)
    ok = want is not None and type(exc).__name__ == f"DapError[{want}]"
    collective_assert(ok, f"save {target}: {type(exc).__name__}: {exc} (open: {want})")


def _left_as_it_was(d, existing):
    listing = sorted(os.listdir(d))
    collective_assert(listing == (["x.npy"] if existing else []), f"left {listing}")
    if existing:
        collective_assert(np.load(os.path.join(d, "x.npy")).tobytes() == np.zeros(2).tobytes(),
                          "the existing file changed")


@pytest.mark.parametrize("exists", [False, True], ids=["new", "a-file"])
def test_a_path_ending_in_a_separator_is_refused_as_open_refuses_it(tmp, exists):
    d = _dir_with(tmp, f"slash-{exists}", exists)
    _save_refused_as_open_refuses(os.path.join(d, "x.npy") + os.sep)
    _left_as_it_was(d, exists)


@pytest.mark.parametrize("tail", ["x.npy/.", "nosuch/../y.npy", "x.npy/./", "x.npy/.."])
def test_a_path_is_opened_as_given_not_normalised(tmp, tail):
    d = _dir_with(tmp, "given-" + tail.replace("/", "_").replace(".", "d"), True)
    target = os.path.join(d, tail)
    _save_refused_as_open_refuses(target)
    load = _fails_everywhere(dap.load_npy, target, "b", comm)
    ok = isinstance(load, DapError) and isinstance(load, OSError)
    collective_assert(ok, f"load {target}: {type(load).__name__}: {load}")
    _left_as_it_was(d, True)
