"""Helpers shared by the multi-rank tests (tests/mpi, run under mpiexec).

Results and exceptions are caught on each rank and compared with one
collective (``collective_assert``), so a test that fails on one rank fails on
every rank.  The halo helpers give every cell of a block the code of its
global index (``global_codes``), in any dtype (``convert``), fill the
communication padding with wrong values and check an exchange put the right
ones there (``exchange_and_check``).
"""
import atexit
import os
import shutil
import tempfile
import threading

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from nclx.dap import DapError
from nclx.dap.distribution import dims_create

comm = MPI.COMM_WORLD
N = comm.size
rank = comm.rank


def collective_assert(ok, message):
    """Every rank fails together, with every failing rank's message."""
    everyone = comm.allgather((bool(ok), None if ok else f"rank {rank}: {message}"))
    failed = [m for good, m in everyone if not good]
    assert not failed, "\n".join(failed[:8])

def outcome(fn, *args, **kw):
    """('ok', value) or ('exc', 'Type: message') -- never raises."""
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

#: True once a call given to :func:`within` has not returned on some rank
HUNG = []


@atexit.register
def _leave_after_a_hang():
    """A rank left inside a collective would make MPI_Finalize wait for
    ever: exit without it (the failure is reported already)."""
    if HUNG:
        os._exit(1)


def _whole_outcome(fn, *args, **kw):
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {exc}"


def within(fn, *args, limit=10.0, **kw):
    """('ok', value) or ('exc', 'Type: whole message') of ``fn(*args,
    **kw)`` run in a thread, or ('hang', ...) where it has not returned
    within ``limit`` seconds: a hang fails the test instead of hanging the
    suite.  The ranks agree on a hang on COMM_WORLD, so ``fn`` must run its
    collectives on a communicator of its own (``comm.Dup()``)."""
    box = []
    t = threading.Thread(target=lambda: box.append(_whole_outcome(fn, *args, **kw)),
                         daemon=True)
    t.start()
    t.join(limit)
    got = box[0] if box else ("hang", f"still inside after {limit} s")
    if any(g == "hang" for g in comm.allgather(got[0])):
        HUNG.append(True)
    return got


def result_bits(fn, *args, **kw):
    """What ``fn(*args, **kw)`` gives, warnings silenced, for comparing with
    NumPy: ('ok', result type name, dtype str, shape, bytes) -- a DistArray
    result gathered on every rank first -- or (exception type name, message)."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared with NumPy's
        return type(exc).__name__, str(exc)
    if isinstance(r, dap.DistArray):
        r = r.gather(root=None)
    a = np.asarray(r)
    return "ok", type(r).__name__, a.dtype.str, a.shape, a.tobytes()

def error_of(fn):
    """('ok', '') or (exception type name, whole message) of ``fn()``."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return type(exc).__name__, str(exc)
    return "ok", ""

def global_of(result):
    """The global array of a DistArray result, on every rank of its communicator."""
    full = result.gather(root=0)
    return result.comm.bcast(full, root=0)

def as_global(r):
    return global_of(r) if isinstance(r, dap.DistArray) else np.asarray(r)

def same_bits_everywhere(value):
    a = np.asarray(value)
    vals = comm.allgather((a.dtype.str, a.shape, a.tobytes()))
    return all(v == vals[0] for v in vals)


def shared_tmpdir(prefix):
    """Generator for a module fixture: a directory every rank sees (rank 0
    makes it, the path is broadcast), removed once every rank is done."""
    d = comm.bcast(tempfile.mkdtemp(prefix=prefix) if rank == 0 else None, root=0)
    yield d
    comm.Barrier()
    if rank == 0:
        shutil.rmtree(d, ignore_errors=True)


def raised_everywhere(fn, *args, **kw):
    """Call ``fn`` expecting a DapError on this rank; return its message."""
    with pytest.raises(DapError) as info:
        fn(*args, **kw)
    return str(info.value)


# ------------------------------------------------------------------ halo cells
def global_codes(da):
    """Integer code of the global index of every cell of this rank's block."""
    maps = da.distribution.maps(rank)
    idx = np.meshgrid(*[m.global_from_local(np.arange(m.local_size)) for m in maps],
                      indexing="ij")
    return sum(i.astype(np.int64) * 100 ** d for d, i in enumerate(idx))

def counted_mask(da):
    m = np.zeros(da._block.shape, bool)
    m[da.distribution.owned_slices(rank)] = True
    return m

STRUCT = np.dtype([("x", "<f8"), ("y", "<i2")])

def convert(codes, dtype):
    """Values of a dtype from integer codes (different codes, different values)."""
    dtype = np.dtype(dtype)
    if dtype == STRUCT:
        out = np.zeros(codes.shape, STRUCT)
        out["x"] = codes
        out["y"] = codes % 1000
        return out
    if dtype.kind == "b":
        return codes % 2 == 1
    if dtype.kind == "c":
        return (codes - 1j * codes).astype(dtype)
    if dtype.kind in "SU":
        return np.array([str(c % 1000) for c in codes.ravel()], dtype).reshape(codes.shape)
    if dtype.kind == "M":
        return codes.astype(dtype)
    if dtype == np.float16:
        return (codes % 2048).astype(dtype)
    return codes.astype(dtype)

def fill_and_expect(da):
    """Counted cells: their global value; communication padding: a wrong value.
    Returns the block every cell should hold after an exchange."""
    codes = global_codes(da)
    exp = convert(codes, da.dtype)
    block = da._block
    mask = counted_mask(da)
    block[...] = convert(codes + 7, da.dtype)
    block[mask] = exp[mask]
    return exp

def check_block(da, exp, what=""):
    block = da._block
    ok = block.shape == exp.shape and bool(np.all(block == exp))
    msg = None
    if not ok:
        bad = np.argwhere(block != exp)
        msg = (f"{what}: {len(bad)} wrong cells of {block.size}, first at local "
               f"{tuple(bad[0])}: {block[tuple(bad[0])]!r} != {exp[tuple(bad[0])]!r}")
    return ok, msg

def exchange_and_check(da, method=None, what=""):
    exp = fill_and_expect(da)
    kind, value = outcome(dap.exchange_halos, da, method)
    if kind == "exc":
        collective_assert(False, f"{what}: exchange_halos raised {value}")
    ok, msg = check_block(da, exp, what)
    collective_assert(ok, msg)

def import_view(da, buf):
    """A DistArray over ``buf`` (same layout as ``da``) through from_distarray."""
    export = {"__version__": "0.10.0", "buffer": buf, "dim_data": da.__distarray__()["dim_data"]}
    return dap.from_distarray(export, comm=comm)

def grid2():
    return dims_create(N, 2)
