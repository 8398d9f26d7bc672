"""Writes of a ``.npy`` file by ranks that share one node, through a shared
mapping of the file instead of MPI-IO.

Why: ranks on one node that write one file through ``write(2)`` (MPI-IO's
ROMIO on a local file system) are serialised by the kernel: ext4 and xfs
take the file's inode lock for the whole of each buffered write, so four
ranks saving one 1 GB file took four times one rank's copy into the page
cache (docs/benchmarks.md).  Stores into a ``MAP_SHARED`` mapping go into
the same page cache without that lock; every rank of one node sees one page
cache, so the file is complete for any reader once the ranks have unmapped
it (and as durable as after MPI-IO's close: neither syncs).

Used by :func:`nclx.dap.npyfile.write_npy` when every rank of the
communicator is on one node (``MPI_Comm_split_type(COMM_TYPE_SHARED)``,
cached on the communicator), each rank's owned cells form one box of the
global array (block and undistributed dimensions, :func:`is_box`) and rank
0 could reserve the file's blocks with ``posix_fallocate`` (:func:`prepare`:
a full disk is an ``OSError`` on every rank, never a ``SIGBUS`` on a
store).  Anything else goes through MPI-IO, and so do all ranks when one
of them cannot map the file (:class:`Unmappable`).  :data:`MAPPED_WRITES` =
False turns the path off.
"""
import errno
import mmap
import os
import stat

import numpy as np

from nclx.dap.npyheader import open_file
from nclx.errors import NclxError

__all__ = ["MAPPED_WRITES", "Unmappable", "one_node", "is_box", "prepare", "write_box"]

#: False: every write goes through MPI-IO.
MAPPED_WRITES = True

_keyval = None


class Unmappable(NclxError, OSError):
    """The file cannot be mapped shared on this rank (some FUSE and network
    file systems): the ranks then write through MPI-IO."""


def one_node(comm):
    """Whether every rank of ``comm`` runs on one node (collective on the
    first call for a communicator; the answer is cached on it)."""
    global _keyval
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    if _keyval is None:
        _keyval = MPI.Comm.Create_keyval()
    known = comm.Get_attr(_keyval)
    if known is None:
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            known = local.Get_size() == comm.Get_size()
        finally:
            local.Free()
        comm.Set_attr(_keyval, known)
    return bool(known)


def is_box(selections):
    """Whether a rank's owned cells (``selections``: one
    :class:`nclx.dap.iotypes.DimSelection` a dimension) are one box: each
    dimension one run of consecutive global indices held by consecutive
    local positions (block and undistributed dimensions; a 'u' dimension
    whose indices happen to be so)."""
    return all(s.count == 0 or (s.mem_stats()[0] == 1 and s.file_stats()[0] == 1)
               for s in selections)


def prepare(path, header, nbytes):
    """Rank 0's part before the stores: the file ``path`` holding ``header``
    and, after it, room for ``nbytes`` bytes of data, its blocks allocated
    (``posix_fallocate``).  An existing file is not truncated first: it is
    cut or extended to exactly its new length and every data byte of it is
    stored by some rank afterwards (the owned boxes cover the array), so
    its pages are reused instead of freed and faulted in again.  Returns
    True, or False when the file system cannot allocate or ``path`` is no
    regular file (the caller falls back to MPI-IO: the header and the
    length are right for it too); a full disk or quota raises OSError."""
    total = len(header) + nbytes
    fd = open_file(path, os.O_WRONLY | os.O_CREAT, "save_npy")    # a FIFO: DapError
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            # a device or pipe (the null device): no length to cut, nothing
            # to map; the header as an ordinary write puts it, MPI-IO the rest
            os.write(fd, header)
            return False
        if os.pwrite(fd, header, 0) != len(header):
            raise OSError(errno.EIO, f"short write of the header of {path!r}")
        if os.fstat(fd).st_size != total:
            os.ftruncate(fd, total)
        return reserve(fd, total)
    finally:
        os.close(fd)


def reserve(fd, total):
    """Allocate the first ``total`` bytes of the regular file ``fd``
    (``posix_fallocate``): True, or False where the file system cannot; a
    full disk or quota raises OSError with its errno (ENOSPC, EDQUOT) --
    MPI-IO's own report of it names no cause ("Other I/O error")."""
    try:
        os.posix_fallocate(fd, 0, total)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return False
        raise
    return True


def _c_strides(shape, itemsize):
    out, step = [0] * len(shape), itemsize
    for d in reversed(range(len(shape))):
        out[d] = step
        step *= max(int(shape[d]), 1)
    return out


def write_box(path, data_offset, shape, block, selections):
    """Store this rank's owned cells of ``block`` (one box: ``selections``,
    one :class:`nclx.dap.iotypes.DimSelection` a dimension, each a single
    run) into the C-ordered data of the ``.npy`` file ``path`` that starts
    at byte ``data_offset`` and holds an array of ``shape``.  Only the
    pages of the file span from the box's first to its last byte are
    mapped; only the box's bytes are written."""
    counts = [s.count for s in selections]
    if any(c == 0 for c in counts) or block.dtype.itemsize == 0:
        return
    fstart = [int(s.file_runs()[0][0]) for s in selections]
    mstart = [int(s.mem_runs[0][0]) for s in selections]
    strides = _c_strides(shape, block.dtype.itemsize)
    first = data_offset + sum(f * st for f, st in zip(fstart, strides))
    last = first + sum((c - 1) * st for c, st in zip(counts, strides)) + block.dtype.itemsize
    lo = first - first % mmap.ALLOCATIONGRANULARITY
    fd = os.open(path, os.O_RDWR)
    try:
        mm = mmap.mmap(fd, last - lo, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                       offset=lo)
    except OSError as exc:      # a file system that cannot map files shared
        raise Unmappable(exc.errno, f"cannot map {path!r} shared: {exc.strerror}") from exc
    finally:
        os.close(fd)
    try:
        # as raw items: a copy of a structured dtype skips the bytes between
        # its fields, which then kept the older file's bytes (or 0) where
        # np.save writes the array's (found by review)
        raw = np.dtype((np.void, block.dtype.itemsize))
        src = block[tuple(slice(m, m + c) for m, c in zip(mstart, counts))] if counts else \
            block[...]
        src = src.view(raw)
        dst = np.ndarray(counts, raw, buffer=mm, offset=first - lo, strides=strides)
        try:
            np.copyto(dst, src, casting="no")
        finally:
            del dst         # the mapping cannot close while an array exports it
    finally:
        mm.close()
