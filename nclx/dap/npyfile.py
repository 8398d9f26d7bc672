"""NumPy's ``.npy`` format read and written collectively through MPI-IO:
rank 0 reads or writes the header, every rank its own part of the data
(:mod:`nclx.dap.iotypes`: a file view over the global array, a memory type
over the local block), with collective ``Read_all`` / ``Write_all``.

Every step that can fail on some ranks only (the header, the plan, each
MPI-IO call) is followed by an agreement (one allgather of the ranks'
errors, as :func:`nclx.dap.collective.agree`), so a failure is raised on
every rank as one DapError -- its message alone when every rank failed
alike, else naming the failing ranks -- never leaving the others waiting in
the next collective.
"""
import ast
import io
import os
import struct

import numpy as np

from nclx.dap.collective import describe_error
from nclx.dap.iotypes import IOPlan, check_covered, fill_duplicates
from nclx.dap.maps import check_global_range
from nclx.dap.validate import DapError

__all__ = ["header_bytes", "read_header", "read_npy", "write_npy"]

_FMT = np.lib.format

#: ROMIO hints for views whose contiguous pieces are long (>= LONG_PIECE
#: bytes on every rank): independent I/O, no collective buffering (which
#: sends every byte through aggregator ranks, one per node by default) and
#: no data sieving.  Measured on one node, page cache (bench_npyio): 2-5x
#: faster for a block-block grid than ROMIO's defaults.  Views of short
#: pieces (cyclic layouts) keep ROMIO's defaults (collective buffering).
#: Other file systems may want others: change the dict.
HINTS = {"romio_cb_read": "disable", "romio_cb_write": "disable",
         "romio_ds_read": "disable", "romio_ds_write": "disable"}
LONG_PIECE = 4096


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
    return _header_3_0(d)


def _header_3_0(d):
    """Format 3.0 (NEP 1's 2.0 layout, UTF-8 text): numpy.lib.format has no
    public writer for it; the text is the one np.save writes."""
    text = "{" + "".join(f"{k!r}: {d[k]!r}, " for k in sorted(d)) + "}"
    text += " " * (_FMT.GROWTH_AXIS_MAX_DIGITS - len(repr(d["shape"][0]))) if d["shape"] else ""
    body = text.encode("utf8")
    pad = _FMT.ARRAY_ALIGN - ((_FMT.MAGIC_LEN + 4 + len(body) + 1) % _FMT.ARRAY_ALIGN)
    return _FMT.magic(3, 0) + struct.pack("<I", len(body) + pad + 1) + body + b" " * pad + b"\n"


def _read_header_3_0(f, max_header_size):
    """(shape, fortran_order, dtype) of a format 3.0 header (no public reader)."""
    (hlen,) = struct.unpack("<I", f.read(4))
    if hlen > max_header_size:
        raise ValueError(f"header length {hlen} is over max_header_size={max_header_size}")
    try:
        d = ast.literal_eval(f.read(hlen).decode("utf8"))
    except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot parse the header: {exc}") from None
    if not isinstance(d, dict) or set(d) != set(_FMT.EXPECTED_KEYS):
        raise ValueError(f"the header is not a dict with keys {sorted(_FMT.EXPECTED_KEYS)}")
    shape, fortran = d["shape"], d["fortran_order"]
    if not (isinstance(shape, tuple) and all(isinstance(x, int) and x >= 0 for x in shape)):
        raise ValueError(f"shape is not a tuple of sizes: {shape!r}")
    if not isinstance(fortran, bool):
        raise ValueError(f"fortran_order is not a bool: {fortran!r}")
    return shape, fortran, _FMT.descr_to_dtype(d["descr"])


def read_header(path, max_header_size=10000):
    """``(dtype, shape, fortran_order, data_offset)`` of a .npy file (format
    1.0, 2.0 or 3.0); DapError for a bad header (or one over
    ``max_header_size`` bytes, as np.load), an object dtype or a file
    shorter than its data, OSError when it cannot be opened."""
    with open(path, "rb") as f:
        try:
            version = _FMT.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = _FMT.read_array_header_1_0(f, max_header_size)
            elif version == (2, 0):
                shape, fortran, dtype = _FMT.read_array_header_2_0(f, max_header_size)
            elif version == (3, 0):
                shape, fortran, dtype = _read_header_3_0(f, max_header_size)
            else:
                raise ValueError(f"format version {version} is not 1.0, 2.0 or 3.0")
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 - ValueError, tokenize.TokenError, ...
            if "max_header_size" in str(exc) or "is large" in str(exc):
                raise DapError(f"the header is longer than max_header_size={max_header_size} "
                               f"bytes (np.load's safety limit): pass a larger max_header_size "
                               f"if the file is trusted") from None
            raise DapError(f"not a .npy file: {describe_error(exc)}") from None
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


def _agree(comm, error, what, value=None):
    """Every rank's ``value`` (one allgather), or the same DapError on every
    rank if any passed an ``error``: its message alone when every rank
    failed alike, else each failing rank with its message."""
    msg = None
    if error is not None:
        msg = str(error) if isinstance(error, DapError) else describe_error(error)
    parts = comm.allgather((msg, None if msg else value))
    failed = [(r, m) for r, (m, _) in enumerate(parts) if m is not None]
    if not failed:
        return [v for _, v in parts]
    if len(failed) == len(parts) and len({m for _, m in failed}) == 1:
        text = failed[0][1]
    else:
        head = f"rank {failed[0][0]}" if len(failed) == 1 else f"{len(failed)} ranks"
        text = f"{head} of {len(parts)} failed:" + "".join(
            f"\n  rank {r}: {m}" for r, m in failed[:16])
    raise DapError(f"{what}: {text}") from error


def _step(comm, what, fn):
    """Run ``fn`` on every rank, then agree: its result, or the same
    DapError on every rank if it raised on any."""
    error = result = None
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
        error = _local_error(exc)
    _agree(comm, error, what)
    return result


def _transfer(comm, path, what, plan, buf, offset, data, write, header=None, size=0,
              hints=None):
    """Open, (size and header), view, Read_all/Write_all, close: each step agreed."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    amode = (MPI.MODE_WRONLY | MPI.MODE_CREATE) if write else MPI.MODE_RDONLY
    info = MPI.Info.Create()
    for key, value in (hints or {}).items():
        info.Set(key, value)
    try:
        fh = _step(comm, what, lambda: MPI.File.Open(comm, path, amode, info))
    finally:
        info.Free()
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


def read_npy(comm, path, make_dist, what, max_header_size=10000):
    """``(block, distribution)`` of this rank, read from the .npy file
    ``path``; ``make_dist(shape)`` gives the Distribution of the stored
    shape.  Every cell of the block is read, padding included (a cell
    outside the global array, boundary padding of an import, stays 0)."""
    rank = comm.Get_rank()
    head = None
    if rank == 0:
        try:
            head = ("ok", read_header(path, max_header_size))
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
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
        error = exc
    try:
        run_bytes = _agree(comm, error, what, None if plan is None else plan.run_bytes)
        data = dtype.itemsize > 0 and int(np.prod(shape, dtype=np.int64)) > 0
        _transfer(comm, path, what, plan, block, offset, data, write=False,
                  hints=HINTS if min(run_bytes) >= LONG_PIECE else None)
        if data:
            fill_duplicates(block, plan.selections)
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
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
        error = exc
    try:
        parts = _agree(comm, error, what, (path, block.dtype, None if header is None else
                                            len(header), None if plan is None else plan.run_bytes))
        for r, (p, dt, _, _) in enumerate(parts):
            if p != parts[0][0] or dt != parts[0][1]:
                raise DapError(f"{what}: rank {r} writes {p!r} from a {dt} block, rank 0 "
                               f"{parts[0][0]!r} from a {parts[0][1]} block")
        hlen = parts[0][2]
        nbytes = int(np.prod(dist.shape, dtype=np.int64)) * block.dtype.itemsize
        long_pieces = min(p[3] for p in parts) >= LONG_PIECE
        _transfer(comm, path, what, plan, block, hlen, nbytes > 0, write=True, header=header,
                  size=hlen + nbytes, hints=HINTS if long_pieces else None)
    finally:
        if plan is not None:
            plan.free()
