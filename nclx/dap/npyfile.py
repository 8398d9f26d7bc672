"""NumPy's ``.npy`` format read and written collectively through MPI-IO:
rank 0 reads or writes the header, every rank its own part of the data
(:mod:`nclx.dap.iotypes`: a file view over the global array, a memory type
over the local block), with collective ``Read_all`` / ``Write_all``.

Every step that can fail on some ranks only (the header, the plan, each
MPI-IO call) is followed by an agreement (:func:`nclx.dap.collective.agree`),
so a failure is raised on every rank as one DapError naming the failing
ranks, never leaving the others waiting in the next collective.
"""
import io
import os

import numpy as np

from nclx.dap.collective import agree, allgather_checked, describe_error
from nclx.dap.iotypes import IOPlan, check_covered
from nclx.dap.maps import check_global_range
from nclx.dap.validate import DapError

__all__ = ["header_bytes", "read_header", "read_npy", "write_npy"]

_FMT = np.lib.format


def _check_dtype(dtype):
    if dtype.hasobject:
        raise DapError(f"dtype {dtype} holds Python objects: only fixed-width dtypes can be "
                       f"read or written by MPI-IO (np.save pickles object arrays)")


def header_bytes(dtype, shape):
    """The .npy header NumPy's ``np.save`` writes for a C-order array of
    ``dtype`` and ``shape``: format 1.0, 2.0 when it exceeds 65535 bytes,
    3.0 for field names that need UTF-8."""
    _check_dtype(dtype)
    d = {"descr": _FMT.dtype_to_descr(dtype), "fortran_order": False,
         "shape": tuple(int(s) for s in shape)}
    for writer in (_FMT.write_array_header_1_0, _FMT.write_array_header_2_0):
        buf = io.BytesIO()
        try:
            writer(buf, d)
            return buf.getvalue()
        except ValueError:          # 1.0: the header does not fit in 65535 bytes
            continue
        except UnicodeEncodeError:  # field names beyond latin-1: format 3.0
            break
    buf = io.BytesIO()
    # no public writer for 3.0 (UTF-8 headers); np.save uses this one too
    _FMT._write_array_header(buf, d, (3, 0))
    return buf.getvalue()


def read_header(path):
    """``(dtype, shape, fortran_order, data_offset)`` of a .npy file (any
    format version); DapError for a bad header, an object dtype or a file
    shorter than its data, OSError when it cannot be opened."""
    with open(path, "rb") as f:
        try:
            version = _FMT.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = _FMT.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = _FMT.read_array_header_2_0(f)
            else:       # (3, 0), the only other one read_magic accepts: no public reader
                shape, fortran, dtype = _FMT._read_array_header(f, version)
        except ValueError as exc:
            raise DapError(f"not a .npy file: {exc}") from None
        offset = f.tell()
    _check_dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    have = os.path.getsize(path) - offset
    if have < nbytes:
        raise DapError(f"the file is truncated: {have} bytes of data, its header announces "
                       f"{nbytes} (shape {shape}, dtype {dtype})")
    return dtype, tuple(shape), bool(fortran), offset


def _local_error(exc):
    """An MPI error as an OSError with the first line of MPI's message (its
    error stack follows on other lines); other exceptions as they are."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    if isinstance(exc, MPI.Exception):
        return OSError(f"{MPI.Get_error_string(exc.Get_error_class())} "
                       f"({str(exc).splitlines()[0]})")
    return exc


def _step(comm, what, fn):
    """Run ``fn`` on every rank, then agree: its result, or the same
    DapError on every rank if it raised on any."""
    error = result = None
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree
        error = _local_error(exc)
    agree(comm, error, what)
    return result


def _transfer(comm, path, what, plan, buf, offset, data, write, header=None, size=0):
    """Open, (size and header), view, Read_all/Write_all, close: each step agreed."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    amode = (MPI.MODE_WRONLY | MPI.MODE_CREATE) if write else MPI.MODE_RDONLY
    fh = _step(comm, what, lambda: MPI.File.Open(comm, path, amode))
    done = False
    try:
        if write:
            _step(comm, what, lambda: fh.Set_size(size))     # truncates an older file
            _step(comm, what, lambda: fh.Write_at(0, header) if comm.Get_rank() == 0 else None)
        if data:
            _step(comm, what, lambda: fh.Set_view(offset, plan.elem, plan.filetype))
            spec = [buf, plan.count, plan.memtype]
            _step(comm, what, lambda: fh.Write_all(spec) if write else fh.Read_all(spec))
        done = True
    finally:
        if done:
            _step(comm, what, fh.Close)
        else:           # every rank is here (the failed step's agreement raised on all)
            try:
                fh.Close()
            except Exception:  # noqa: BLE001 - the agreed error is the one to report
                pass


def read_npy(comm, path, make_dist, what):
    """``(block, distribution)`` of this rank, read from the .npy file
    ``path``; ``make_dist(shape)`` gives the Distribution of the stored
    shape.  The block's padding is not filled (zeros)."""
    rank = comm.Get_rank()
    head = None
    if rank == 0:
        try:
            head = ("ok", read_header(path))
        except OSError as exc:
            head = ("os", exc.errno, exc.strerror or str(exc))
        except Exception as exc:  # noqa: BLE001 - sent to every rank
            head = ("err", describe_error(exc) if not isinstance(exc, DapError) else str(exc))
    head = comm.bcast((path, head), root=0)
    root_path, head = head
    if head[0] == "os":
        raise OSError(head[1], f"{what}: {head[2]}", path)
    if head[0] == "err":
        raise DapError(f"{what}: {head[1]}")
    dtype, shape, fortran, offset = head[1]
    plan = block = dist = error = None
    try:
        if root_path != path:
            raise DapError(f"rank {rank} reads {path!r}, rank 0 {root_path!r}")
        dist = make_dist(shape)
        if dist.shape != shape:
            raise DapError(f"the file holds shape {shape}, the Distribution has {dist.shape}")
        if dist.nprocs != comm.Get_size():
            raise DapError(f"the Distribution spans {dist.nprocs} processes, the communicator "
                           f"{comm.Get_size()}")
        check_global_range(dist)
        block = np.zeros(dist.local_shape(rank), dtype)
        plan = IOPlan(dist, rank, block, "F" if fortran else "C")
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree
        error = exc
    try:
        agree(comm, error, what)
        data = dtype.itemsize > 0 and int(np.prod(shape, dtype=np.int64)) > 0
        _transfer(comm, path, what, plan, block, offset, data, write=False)
    finally:
        if plan is not None:
            plan.free()
    return block, dist


def write_npy(comm, path, block, dist, what):
    """Write the global array whose parts are the ranks' ``block``s
    (distributed by ``dist``) as the .npy file ``path``, in C order."""
    rank = comm.Get_rank()
    block = np.asarray(block)
    plan = header = error = None
    try:
        check_global_range(dist)
        check_covered(dist)
        if rank == 0:
            header = header_bytes(block.dtype, dist.shape)
        else:
            _check_dtype(block.dtype)
        if not (block.flags.c_contiguous or block.flags.f_contiguous):
            block = np.ascontiguousarray(block)     # mpi4py needs one contiguous buffer
        plan = IOPlan(dist, rank, block, "C", write=True)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by allgather_checked
        error = exc
    try:
        parts = allgather_checked(comm, (path, block.dtype, None if header is None else
                                          len(header)), error, what)
        for r, (p, dt, _) in enumerate(parts):
            if p != parts[0][0] or dt != parts[0][1]:
                raise DapError(f"{what}: rank {r} writes {p!r} from a {dt} block, rank 0 "
                               f"{parts[0][0]!r} from a {parts[0][1]} block")
        hlen = parts[0][2]
        nbytes = int(np.prod(dist.shape, dtype=np.int64)) * block.dtype.itemsize
        _transfer(comm, path, what, plan, block, hlen, nbytes > 0, write=True, header=header,
                  size=hlen + nbytes)
    finally:
        if plan is not None:
            plan.free()
