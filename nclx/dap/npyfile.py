"""NumPy's ``.npy`` format read and written collectively through MPI-IO:
rank 0 reads or writes the header, every rank its own part of the data
(:mod:`nclx.dap.iotypes`: a file view over the global array, a memory type
over the local block), with collective ``Read_all`` / ``Write_all``.  This
module holds the write (one node: stores into a shared mapping,
:mod:`nclx.dap.npymap`) and the helpers both use; the read is
:mod:`nclx.dap.npyload` (one node, short pieces: :mod:`nclx.dap.npyread`).

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
open / view / read / close; a write one allgather more.  After the open a
rank of a read reads the header again through its own handle, a rank of a
save names the file its path names (no collective), so a file replaced since
rank 0 read or wrote the header, or a name that is another file on some
rank, is an error on every rank, not silently wrong cells or files.
"""
import errno
import os
import stat

import numpy as np

from nclx.dap import npymap
from nclx.dap.collective import agreed_error_type
from nclx.dap.iotypes import IOPlan, check_covered, raw_items
from nclx.dap.maps import check_global_range
from nclx.dap.npyagree import Failure as _Failure, agree as _agree, failed as _failed
from nclx.dap.npyagree import gather as _gather, local_error as _local_error, report as _report
from nclx.dap.npyheader import (empty_file, file_identity, header_bytes, open_file, other_file,
                                read_header)
from nclx.dap.redistribute import agree_quick, layout_key
from nclx.dap.validate import DapError

__all__ = ["describe_save", "header_bytes", "read_header", "write_npy"]


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


def _open(comm, path, write, hints, error, what, same=None, check=None):
    """``MPI.File.Open`` (write-only or read-only) on every rank, agreed together with this rank's
    earlier ``error`` (a rank that failed before opens too, so that one
    agreement covers both): the handle, or the same DapError everywhere
    (the handles closed when every rank had one, else left: closing is
    collective).  Every rank's ``same`` (the layout of a read) must be
    equal, or ``check``, given the list of every rank's ``same()`` (called
    after the open), returns None (else the report raised)."""
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
    if check is not None:
        same = same()
    text, opened = _gather(comm, error, (fh is not None, same))
    if text is None and check is not None:
        text = check([s for _, s in opened])
    elif text is None and any(s != opened[0][1] for _, s in opened):
        # ``same`` (the layout of a read) differs between ranks: no rank may go on
        # shape, dist and grid, and (where those agree) the keywords' part
        text = "the ranks disagree on the Distribution (every rank must pass the same " \
               "dist and keywords):" + "".join(f"\n  rank {r}: {s[0][:3]}, dimensions {s[1]}"
                                               for r, (_, s) in enumerate(opened[:16]))
    if text is not None:
        if all(o for o, _ in opened):
            fh.Close()
        if isinstance(text, _Failure):
            raise _failed(what, text, error)
        raise DapError(f"{what}: {text}") from error
    return fh


def _finish(comm, fh, what, plan, buf, offset, data, write, error=None):
    """View, Read_all/Write_all and close, then one agreement: an error MPI
    returns from one of them on some ranks (or this rank's earlier
    ``error``: it transfers nothing) is raised on every rank, after the
    close."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
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
    """``path`` made absolute against this rank's working directory and
    normalised (the file's name as the ranks compare it: ``d/./x.npy`` is
    ``d/x.npy``; links are not resolved); a trailing separator stays."""
    try:
        text = os.fsdecode(path)
        out = os.path.abspath(text)
    except (TypeError, ValueError, OSError):     # not a path (the open raises), no cwd
        return path
    # a trailing separator stays: 'x.npy/' names a directory, whose open
    # fails as open() and np.save fail (before, abspath dropped it and
    # save_npy wrote the file 'x.npy'; review 25)
    return out + os.sep if text.endswith(os.sep) and not out.endswith(os.sep) else out


def _as_given(path):
    """``path`` made absolute against this rank's working directory, not
    normalised: the name opened, so that the kernel resolves ``..`` after a
    link or a missing directory, and a trailing ``/.``, as open() and
    np.save do (before, the normalised name was opened: ``d/x.npy/.``
    overwrote ``d/x.npy`` and ``d/nosuch/../y.npy`` wrote ``d/y.npy``;
    review 25)."""
    try:
        text = os.fsdecode(path)
        return text if os.path.isabs(text) else os.path.join(os.getcwd(), text)
    except (TypeError, ValueError, OSError):
        return path


def _os_failure(code, message, path):
    """A DapError that is also the OSError subclass of ``code`` (a missing
    file: DapError[FileNotFoundError]), as every other load_npy/save_npy
    failure is a DapError (before review 21, a plain FileNotFoundError here:
    ``except DapError`` missed it), with errno, strerror and filename."""
    cls = agreed_error_type(type(OSError(code, message)).__name__)
    exc = cls(f"[Errno {code}] {message}: {path!r}")
    if isinstance(exc, OSError):
        exc.errno, exc.strerror, exc.filename = code, message, path
    return exc


def write_npy(comm, path, block, dist, what):
    """Write the global array whose parts are the ranks' ``block``s
    (distributed by ``dist``) as the .npy file ``path``, in C order.  Once
    rank 0 wrote the header, every rank's path must name that file
    (:func:`nclx.dap.npyheader.other_file`, in the next agreement), else
    every rank raises naming the others, which write nothing (before, each
    wrote its own file: found by review); a save failing after the header
    leaves that file empty, not a header over stale or partial data."""
    rank = comm.Get_rank()
    block = np.asarray(block)
    plan = header = error = written = None
    mappable = False
    try:
        # no path on one rank (None, a number): raised on every rank by the
        # agreement below (before, it raised alone before the agreement and
        # the others waited in it for ever: found by review)
        try:
            path = os.fspath(path)
        except TypeError:
            kind, path = type(path).__name__, None
            raise TypeError(f"the path must be a str, bytes or os.PathLike object, "
                            f"not {kind}") from None
        if not path:
            # made absolute it would name the working directory (before,
            # "Is a directory: '<cwd>'"; found by review)
            raise FileNotFoundError(errno.ENOENT, "the path is empty", path)
        check_global_range(dist)
        check_covered(dist)
        # on every rank (rank 0 writes it): np.save's warnings (dtype
        # metadata, format 2.0 or 3.0) on every rank, or their exception
        # under an 'error' filter, agreed below before the file is touched;
        # before, rank 0 alone warned (found by review)
        header = header_bytes(block.dtype, dist.shape)
        if not (block.flags.c_contiguous or block.flags.f_contiguous):
            # mpi4py needs one contiguous buffer; copied as raw items: a
            # structured dtype's copy skips the bytes between its fields,
            # which np.save writes as they are (before, lost: found by review)
            block = np.ascontiguousarray(raw_items(block)).view(block.dtype)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
        error = exc
    try:
        # a rank in another operation meets it here (the path is checked below)
        # and the layout: ranks holding the array in different layouts would
        # leave cells unwritten; a rank of save_npy(comm=) with no DistArray too
        agree_quick(comm, ("save_npy", layout_key(dist)), None, "save_npy", describe_save)
        try:
            # collective on a communicator's first save (then cached): after
            # agree_quick, every rank is in this save
            mappable = npymap.one_node(comm) and npymap.MAPPED_WRITES
            if error is None and not mappable:
                # MPI-IO's types (a mapped write needs none: a 'u' dimension's
                # run tables held several times the block); here, where a
                # failure is agreed on (review 25)
                plan = IOPlan(dist, rank, block, "C", write=True)
        except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
            error = error or exc
        parts = _agree(comm, error, what, ((path, _absolute(path), _as_given(path)), block.dtype,
                                            None if header is None else
                                            len(header), None if plan is None else
                                            (plan.run_bytes, plan.max_piece_bytes,
                                             plan.kind in ("contiguous", "empty")),
                                            mappable))
        for r, (p, dt, _, _, _) in enumerate(parts):
            if p[1] != parts[0][0][1] or dt != parts[0][1]:      # by absolute name
                raise DapError(f"{what}: rank {r} writes {p[0]!r} ({p[1]!r}) from a {dt} block, "
                               f"rank 0 {parts[0][0][0]!r} ({parts[0][0][1]!r}) from a "
                               f"{parts[0][1]} block")
        path = parts[0][0][2]             # rank 0's as given, absolute (every rank names it)
        nbytes = int(np.prod(dist.shape, dtype=np.int64)) * block.dtype.itemsize
        # every rank on one node: stores into a shared mapping
        # (nclx.dap.npymap: no inode lock between the ranks)
        planned = mapped = nbytes > 0 and all(p[4] for p in parts)
        hints = None if any(p[3] is None for p in parts) else _hints([p[3] for p in parts])
        error = None
        if rank == 0:           # the header, truncating an older file (or, mapped, reusing it)
            try:
                if mapped:
                    mapped = npymap.prepare(path, header, nbytes)
                    written = file_identity(path)
                else:
                    with os.fdopen(open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                                             "save_npy"), "wb") as f:
                        f.write(header)
                        f.flush()
                        written = file_identity(fd=f.fileno())
                        if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                            # a full disk raises here with its errno (MPI-IO's
                            # Write_all says "Other I/O error"; review 25)
                            npymap.reserve(f.fileno(), len(header) + nbytes)
            except Exception as exc:  # noqa: BLE001 - raised on every rank by the agreement
                # an OSError, or a ValueError (a NUL in the path: before,
                # raised on rank 0 alone while the others waited; found by review)
                error = exc
        if planned:         # rank 0's reservation decides (and its error raises everywhere)
            mapped, ref = _agree(comm, error, what, (mapped, written))[0]
        if mapped and not _write_mapped(comm, path, parts[0][2], dist, block, ref, what):
            return
        if plan is None:            # the mapping was refused: MPI-IO after all
            try:
                plan = IOPlan(dist, rank, block, "C", write=True)
            except Exception as exc:  # noqa: BLE001 - raised on every rank by _open
                error = error or exc
        fh = _open(comm, path, True, hints, error, what,
                   same=lambda: (file_identity(path), written), check=_one_file)
        _finish(comm, fh, what, plan, block, parts[0][2], nbytes > 0, write=True)
    except Exception:
        if written is not None:           # rank 0, after every rank's agreement
            empty_file(path, written)
        raise
    finally:
        if plan is not None:
            plan.free()


def _write_mapped(comm, path, offset, dist, block, ref, what):
    """Stores into a shared mapping of ``path`` where it names rank 0's file
    ``ref``, then one agreement: whether some rank could not map the file
    (every rank then writes through MPI-IO)."""
    unmappable = False
    error = other = other_file(file_identity(path), ref)
    try:
        if other is None:
            npymap.write_cells(path, offset, dist, comm.Get_rank(), block, ref)
    except npymap.OtherFile as exc:     # replaced since the check by name just above
        error = other = str(exc)
    except npymap.Unmappable:
        unmappable = True           # every rank writes through MPI-IO
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    text, values = _gather(comm, error, (unmappable, other is not None))
    if text is not None:
        if any(o for _, o in values):
            text = _Failure(text + _LEFT, text.first, text.oserr)
        raise _failed(what, text, error if isinstance(error, Exception) else None)
    return any(u for u, _ in values)


def describe_save(value):
    """A rank's value in save_npy's first agreement, in words."""
    if value[1][0] == "passed":                 # npyio.save_npy(comm=): no DistArray
        return value[1][1]
    shape, dist, grid, digest = value[1]
    return f"a DistArray of global shape {shape}, dist {dist}, grid {grid} ({digest[:10]})"


_LEFT = "\n  rank 0 empties the file it wrote the header into; no rank wrote into another"


def _one_file(values):
    """:func:`_open`'s check of a save: every rank's ``(file, rank 0's header file)``."""
    ref = values[0][1]
    failed = [(r, m) for r, m in ((r, other_file(v[0], ref)) for r, v in enumerate(values))
              if m is not None]
    text = _report(failed, len(values))
    return None if text is None else _Failure(text + _LEFT, text.first)
