"""NumPy's ``.npy`` format read and written collectively through MPI-IO:
rank 0 reads or writes the header, every rank its own part of the data
(:mod:`nclx.dap.iotypes`: a file view over the global array, a memory type
over the local block), with collective ``Read_all`` / ``Write_all``.

A failure on some ranks only (the header, the plan, an MPI-IO call) is
raised on every rank as one DapError -- its message alone when every rank
failed alike, else naming the failing ranks -- and never leaves the others
waiting in a collective: the ranks agree (one allgather of their errors, as
:func:`nclx.dap.collective.agree`) before the header is written, after the
file is opened (with any earlier error: a rank that failed opens too) and
once at the end, for errors MPI returns from the view, the transfer or
the close.  (An MPI call that fails its argument checks on one rank before
its own internal collective begins would leave the others inside it: no
agreement can reach them there; the datatypes given to MPI are tested.)
Few synchronisations: a read is one broadcast, two allgathers and MPI's own
open / view / read / close; a write one allgather more.
"""
import ast
import io
import math
import os
import struct

import numpy as np

from nclx.dap import npymap
from nclx.dap.collective import describe_error, failure_type
from nclx.dap.iotypes import IOPlan, check_covered, fill_duplicates, view_pieces
from nclx.dap.maps import check_global_range
from nclx.dap.redistribute import agree_quick, layout_key
from nclx.dap.validate import DapError

__all__ = ["header_bytes", "read_header", "read_npy", "write_npy"]

_FMT = np.lib.format

#: ROMIO hints for views whose contiguous pieces are long (>= LONG_PIECE
#: bytes on every rank): independent I/O, no collective buffering (which
#: sends every byte through aggregator ranks, one per node by default) and
#: no data sieving.  Measured on one node, page cache (bench_npyio, 256 MB
#: on 4 ranks of a 2-core machine, grid (2, 2)): 1.6-7x faster than ROMIO's
#: defaults.  Views of short pieces (cyclic layouts) keep ROMIO's defaults
#: (collective buffering).  Other file systems may want others: change the
#: dict.
HINTS = {"romio_cb_read": "disable", "romio_cb_write": "disable",
         "romio_ds_read": "disable", "romio_ds_write": "disable"}
LONG_PIECE = 4096


def _hints(views):
    """:data:`HINTS` when every view ``(mean, largest, contiguous)`` has
    long pieces, else None (ROMIO's defaults).  Also None when a strided
    view has a piece of 2 GiB or more: ROMIO's paths without data sieving
    assert that each piece fits a C int (a contiguous view takes MPI-IO's
    contiguous path, which does not)."""
    if all(mean >= LONG_PIECE and (contiguous or largest < 2 ** 31)
           for mean, largest, contiguous in views):
        return HINTS
    return None


def _check_dtype(dtype):
    if dtype.hasobject:
        raise DapError(f"dtype {dtype} holds Python objects: only fixed-width dtypes can be "
                       f"read or written by MPI-IO (np.save pickles object arrays)")
    if dtype.itemsize == 0:
        raise DapError(f"dtype {dtype.str} has items of 0 bytes: a DistArray cannot hold them "
                       f"(np.load reads such a file)")


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
    shorter than its data, OSError when it cannot be opened, np.load's
    EOFError for an empty file."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise EOFError("No data left in file")        # np.load's, for an empty file
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
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in shape):
        raise DapError(f"not a .npy file: shape {shape!r} is not a tuple of integers")
    _check_dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize     # Python ints: no int64 wrap-around
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


def _gather(comm, error, value=None):
    """One allgather of (this rank's error, ``value``): ``(text, values)``,
    ``text`` None when no rank failed, else its message alone when every
    rank failed alike, or each failing rank with its message."""
    msg = None
    if error is not None:
        msg = str(error) if isinstance(error, DapError) else describe_error(error)
    parts = comm.allgather((msg, value))
    failed = [(r, m) for r, (m, _) in enumerate(parts) if m is not None]
    values = [v for _, v in parts]
    if not failed:
        return None, values
    if len(failed) == len(parts) and len({m for _, m in failed}) == 1:
        return _Failure(failed[0][1], failed[0][1]), values
    head = f"rank {failed[0][0]}" if len(failed) == 1 else f"{len(failed)} ranks"
    return _Failure(f"{head} of {len(parts)} failed:" + "".join(
        f"\n  rank {r}: {m}" for r, m in failed[:16]), failed[0][1]), values


class _Failure(str):
    """A failure report; ``first``: the lowest failing rank's message
    ('TypeName: message'), whose type the agreement raises as."""

    def __new__(cls, text, first):
        self = super().__new__(cls, text)
        self.first = first
        return self


def _failed(what, text, error):
    """The exception every rank raises for the report ``text``: a DapError
    that is also the lowest failing rank's exception type (an OSError for a
    path no rank could write, as MPI-IO's error; before: a plain DapError,
    found by review)."""
    err = failure_type(text.first)(f"{what}: {text}")
    err.__cause__ = error
    return err


def _agree(comm, error, what, value=None):
    """Every rank's ``value``, or the same DapError on every rank if any
    passed an ``error`` (:func:`_gather`)."""
    text, values = _gather(comm, error, value)
    if text is not None:
        raise _failed(what, text, error)
    return values


def _open(comm, path, write, hints, error, what, same=None):
    """``MPI.File.Open`` (write-only or read-only) on every rank, agreed together with this rank's
    earlier ``error`` (a rank that failed before opens too, so that one
    agreement covers both): the handle, or the same DapError everywhere
    (the handles closed when every rank had one, else left: closing is
    collective)."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    fh = None
    amode = MPI.MODE_WRONLY if write else MPI.MODE_RDONLY
    info = MPI.Info.Create()
    try:
        for key, value in (hints or {}).items():
            info.Set(key, value)
        fh = MPI.File.Open(comm, path, amode, info)
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = error or _local_error(exc)
    finally:
        info.Free()
    text, opened = _gather(comm, error, (fh is not None, same))
    if text is None and any(s != opened[0][1] for _, s in opened):
        # ``same`` (the layout of a read) differs between ranks: no rank may go on
        text = "the ranks disagree on the Distribution (every rank must pass the same " \
               "dist and keywords):" + "".join(f"\n  rank {r}: {s[:3]}"
                                               for r, (_, s) in enumerate(opened[:16]))
    if text is not None:
        if all(o for o, _ in opened):
            fh.Close()
        if isinstance(text, _Failure):
            raise _failed(what, text, error)
        raise DapError(f"{what}: {text}") from error
    return fh


def _finish(comm, fh, what, plan, buf, offset, data, write):
    """View, Read_all/Write_all and close, then one agreement: an error MPI
    returns from one of them on some ranks is raised on every rank, after
    the close."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    error = None
    if data:
        try:
            fh.Set_view(offset + plan.disp, plan.elem, plan.filetype)
        except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
            error = _local_error(exc)
        spec = [plan.buffer(buf), plan.count, plan.memtype] if error is None else \
            [buf, 0, MPI.BYTE]
        status = MPI.Status()
        try:
            fh.Write_all(spec, status) if write else fh.Read_all(spec, status)
        except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
            error = error or _local_error(exc)
        if error is None:
            # a read past the end of the file (shortened after its header was
            # read, or another file of the name on this rank) returns short:
            # before, those cells silently stayed 0 (found by review)
            want = spec[1] * spec[2].Get_size()
            got = status.Get_count(MPI.BYTE)
            if got != want:
                error = DapError(f"rank {comm.Get_rank()} {'wrote' if write else 'read'} {got} "
                                 f"of its {want} bytes: the file ends before its cells "
                                 f"(truncated or rewritten meanwhile?)")
    try:
        fh.Close()
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
        error = error or _local_error(exc)
    _agree(comm, error, what)


def _absolute(path):
    """``path`` made absolute against this rank's working directory (the
    file's name as the ranks compare it; links are not resolved)."""
    try:
        return os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):          # not a path: the open raises
        return path


def read_npy(comm, path, make_dist, what, max_header_size=10000):
    """``(block, distribution)`` of this rank, read from the .npy file
    ``path``; ``make_dist(shape)`` gives the Distribution of the stored
    shape.  Every cell of the block is read, padding included (a cell
    outside the global array, boundary padding of an import, stays 0)."""
    rank = comm.Get_rank()
    # a rank in another operation meets it here (the path is checked below)
    agree_quick(comm, "load_npy", None, "load_npy")
    head = None
    if rank == 0:
        try:
            head = ("ok", read_header(path, max_header_size))
        except OSError as exc:
            head = ("os", exc.errno, exc.strerror or str(exc))
        except Exception as exc:  # noqa: BLE001 - sent to every rank
            head = ("err", describe_error(exc) if not isinstance(exc, DapError) else str(exc))
    # the ranks' paths must name one file: a relative path resolves against
    # each rank's working directory (before, only the strings were
    # compared: ranks read or wrote other files; found by review)
    head = comm.bcast((path, _absolute(path), head), root=0)
    root_path, root_abs, head = head
    if head[0] == "os":     # rank 0's error on rank 0's path, the same on every rank
        raise OSError(head[1], f"{what}: rank 0: {head[2]}", root_path)
    if head[0] == "err":
        # a DapError of rank 0's type where that is not one (np.load's
        # EOFError of an empty file: DapError[EOFError])
        raise failure_type(head[1])(f"{what}: {head[1]}")
    dtype, shape, fortran, offset = head[1]
    plan = block = dist = error = hints = None
    try:
        if root_path != path or root_abs != _absolute(path):
            raise DapError(f"rank {rank} reads {path!r} ({_absolute(path)!r}), rank 0 "
                           f"{root_path!r} ({root_abs!r})")
        dist = make_dist(shape)
        if dist.shape != shape:
            raise DapError(f"the file holds shape {shape}, the Distribution has {dist.shape}")
        if dist.nprocs != comm.Get_size():
            raise DapError(f"the Distribution spans {dist.nprocs} processes, the communicator "
                           f"{comm.Get_size()}")
        check_global_range(dist)
        block = np.zeros(dist.local_shape(rank), dtype)
        plan = IOPlan(dist, rank, block, "F" if fortran else "C")
        # the same hints on every rank, from rank 0's view (every rank holds the Distribution)
        mean, largest = view_pieces(dist, 0, dtype.itemsize, "F" if fortran else "C")
        hints = _hints([(mean, largest, mean == largest)])
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _open's agreement
        error = exc
    try:
        # every rank opens rank 0's path (a rank passing another fails at the agreement)
        fh = _open(comm, root_abs, False, hints, error, what,
                   None if dist is None else layout_key(dist))
        data = dtype.itemsize > 0 and int(np.prod(shape, dtype=np.int64)) > 0
        _finish(comm, fh, what, plan, block, offset, data, write=False)
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
        # a rank in another operation meets it here (the path is checked below)
        # and the layout: ranks holding the array in different layouts would
        # leave cells unwritten
        agree_quick(comm, ("save_npy", layout_key(dist)), None, "save_npy")
        parts = _agree(comm, error, what, ((path, _absolute(path)), block.dtype,
                                            None if header is None else
                                            len(header), None if plan is None else
                                            (plan.run_bytes, plan.max_piece_bytes,
                                             plan.kind in ("contiguous", "empty")),
                                            plan is not None and npymap.MAPPED_WRITES
                                            and npymap.is_box(plan.selections)))
        for r, (p, dt, _, _, _) in enumerate(parts):
            if p != parts[0][0] or dt != parts[0][1]:
                raise DapError(f"{what}: rank {r} writes {p[0]!r} ({p[1]!r}) from a {dt} block, "
                               f"rank 0 {parts[0][0][0]!r} ({parts[0][0][1]!r}) from a "
                               f"{parts[0][1]} block")
        path = parts[0][0][1]             # every rank's, absolute
        nbytes = int(np.prod(dist.shape, dtype=np.int64)) * block.dtype.itemsize
        # every rank's cells one box, every rank on one node: stores into a
        # shared mapping (nclx.dap.npymap: no inode lock between the ranks)
        planned = mapped = nbytes > 0 and all(p[4] for p in parts) and npymap.one_node(comm)
        hints = _hints([p[3] for p in parts])
        error = None
        if rank == 0:           # the header, truncating an older file (or, mapped, reusing it)
            try:
                if mapped:
                    mapped = npymap.prepare(path, header, nbytes)
                else:
                    with open(path, "wb") as f:
                        f.write(header)
            except OSError as exc:
                error = exc
        if planned:         # rank 0's reservation decides (and its error raises everywhere)
            mapped = _agree(comm, error, what, mapped)[0]
        if mapped:
            unmappable = False
            try:
                npymap.write_box(path, parts[0][2], dist.shape, block, plan.selections)
            except npymap.Unmappable:
                unmappable = True           # every rank writes through MPI-IO below
            except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
                error = exc
            if not any(_agree(comm, error, what, unmappable)):
                return
        fh = _open(comm, path, True, hints, error, what)
        _finish(comm, fh, what, plan, block, parts[0][2], nbytes > 0, write=True)
    finally:
        if plan is not None:
            plan.free()
