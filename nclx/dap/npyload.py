"""``load_npy``'s collective read of a ``.npy`` file (:func:`read_npy`):
rank 0 reads the header and broadcasts it, every rank opens the file and
reads its cells -- through an MPI-IO view (:mod:`nclx.dap.npyfile`) or, for
cyclic and 'u' layouts on one node, in chunks (:mod:`nclx.dap.npyread`) --
and the ranks agree on any failure (one DapError on every rank)."""
import numpy as np

from nclx.dap import npymap, npyread
from nclx.dap.collective import describe_error, failure_type
from nclx.dap.iotypes import IOPlan, fill_duplicates, view_pieces
from nclx.dap.maps import check_global_range
from nclx.dap.npyagree import agree as _agree, local_error as _local_error
from nclx.dap.npyfile import _absolute, _as_given, _finish, _hints, _open, _os_failure
from nclx.dap.npyheader import header_again, read_header
from nclx.dap.agreekeys import layout_words
from nclx.dap.redistribute import agree_quick, layout_key
from nclx.dap.validate import DapError

__all__ = ["read_npy"]


def read_npy(comm, path, make_dist, what, max_header_size=10000, error=None):
    """``(block, distribution)`` of this rank, read from the .npy file
    ``path``; ``make_dist(shape)`` gives the Distribution of the stored
    shape.  Every cell of the block is read, padding included (a cell
    outside the global array, boundary padding of an import, stays 0).
    ``error``: this rank's failure so far (no path), raised on every rank."""
    rank = comm.Get_rank()
    # a rank in another operation meets it here (the path is checked below)
    # and on max_header_size (review 22: rank 0's alone applied)
    agree_quick(comm, ("max_header_size", max_header_size), error, "load_npy",
                describe=lambda v: f"max_header_size={v[1]!r}")
    # collective on a communicator's first use (then cached): every rank is here
    one = npymap.one_node(comm)
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
    # with rank 0's npyread settings: every rank reads the same way (one
    # rank's other CHUNK or LONG_PIECE left the ranks in different
    # collectives; review 26)
    head = comm.bcast((path, _absolute(path), _as_given(path), head,
                       (npyread.CHUNKED_READS, npyread.CHUNK, npyread.LONG_PIECE)), root=0)
    root_path, root_abs, root_open, head, (chunks, chunk, long_piece) = head
    if head[0] == "os":     # rank 0's error on rank 0's path, the same on every rank
        raise _os_failure(head[1], f"{what}: rank 0: {head[2]}", root_path)
    if head[0] == "err":
        # a DapError of rank 0's type where that is not one (np.load's
        # EOFError of an empty file: DapError[EOFError])
        raise failure_type(head[1])(f"{what}: {head[1]}")
    dtype, shape, fortran, offset = head[1]
    plan = block = dist = error = hints = None
    chunked = False
    try:
        # by absolute name: 'd/x.npy', 'd/./x.npy' and b'd/x.npy' name one
        # file (before, the strings too: refused; found by review)
        if root_abs != _absolute(path):
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
        # cyclic and 'u' layouts on one node: chunks read with pread
        # (nclx.dap.npyread; MPI-IO took 50-200x NumPy's time there); the
        # same answer on every rank once _open has checked the layouts agree
        chunked = one and chunks and npyread.wanted(dist, dtype.itemsize, fortran, chunk,
                                                    long_piece)
        if not chunked:
            plan = IOPlan(dist, rank, block, "F" if fortran else "C")
            # the same hints on every rank, from rank 0's view (every rank holds the Distribution)
            mean, largest = view_pieces(dist, 0, dtype.itemsize, "F" if fortran else "C")
            hints = _hints([(mean, largest, mean == largest)])
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _open's agreement
        error = exc
    try:
        # every rank opens rank 0's path (a rank passing another fails at the agreement)
        fh = _open(comm, root_open, False, hints, error, what,
                   None if dist is None else (layout_key(dist), layout_words(dist)))
        data = dtype.itemsize > 0 and int(np.prod(shape, dtype=np.int64)) > 0
        if chunked:
            _read_chunked(comm, fh, what, head[1], root_open, block, dist, data, chunk)
            return block, dist
        _finish(comm, fh, what, plan, block, offset, data, write=False,
                error=header_again(fh, head[1], _local_error))
        if data:
            fill_duplicates(block, plan.selections)
    finally:
        if plan is not None:
            plan.free()
    return block, dist


def _read_chunked(comm, fh, what, head, path, block, dist, data, chunk):
    """The header again through this rank's handle, the close, the chunked
    reads, then one agreement: an error on some ranks is raised on every
    rank (as :func:`_finish`'s)."""
    error = header_again(fh, head, _local_error)
    try:
        fh.Close()
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
        error = error or _local_error(exc)
    if error is None and data:
        try:
            # the header checked again through the descriptor read from (a
            # file replaced after the handle's check: review 26)
            npyread.read_cells(path, head[3], head[1], head[2], block, dist, comm.Get_rank(),
                               head=head, chunk=chunk)
        except Exception as exc:  # noqa: BLE001 - raised on every rank by _agree
            error = exc
    _agree(comm, error, what)
