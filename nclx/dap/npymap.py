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
cached on the communicator) and rank 0 could reserve the file's blocks
with ``posix_fallocate`` (:func:`prepare`: a full disk is an ``OSError`` on
every rank, never a ``SIGBUS`` on a store), whatever the layout: block
dimensions and (block-)cyclic ones are strided views of the file, 'u'
dimensions are stored through their own index arrays (:func:`write_cells`;
before, only layouts whose owned cells were one box per rank were mapped,
and a cyclic save through MPI-IO took 65x a block save's time).  Anything
else goes through MPI-IO, and so do all ranks when one of them cannot map
the file (:class:`Unmappable`).  :data:`MAPPED_WRITES` = False turns the
path off.
"""
import errno
import itertools
import mmap
import os
import stat

import numpy as np
from numpy.lib.stride_tricks import as_strided

from nclx.dap.ioselect import _block_dim, _u_held_below
from nclx.dap.npyheader import file_identity, open_file, other_file
from nclx.errors import NclxError

__all__ = ["MAPPED_WRITES", "OtherFile", "Unmappable", "one_node", "prepare", "write_cells"]

#: False: every write goes through MPI-IO.
MAPPED_WRITES = True

_keyval = None


class OtherFile(NclxError):
    """The path names another file than the one rank 0 reserved (replaced
    meanwhile, or a link that differs between the ranks): nothing stored."""


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


def _dim_parts(dist, rank, d, m):
    """The owned cells of dimension ``d`` of ``rank`` (map ``m``) as parts,
    each ``("s", file_first, dims, mem_first)`` -- cells at ``file_first +
    sum(i_k * file_step_k)`` held at ``mem_first + sum(i_k * mem_step_k)``
    for ``dims = [(count_k, file_step_k, mem_step_k), ...]`` (in elements of
    the dimension) -- or ``("u", file_indices, mem_positions)`` (positions
    None: every local cell, in local order).  No index array is made for a
    block or (block-)cyclic dimension, and a 'u' dimension's own indices
    are used as they are."""
    if m.dist_type == "b":
        sel = _block_dim(m, True)
        return [("s", int(f), [(int(n), 1, 1)], int(ms))
                for f, ms, n in zip(sel.file_runs()[0], sel.mem_runs[0], sel.mem_runs[1])]
    if m.dist_type == "c":
        L, k, P, c = m.local_size, m.block_size, m.grid_size, m.grid_rank
        rounds, tail = divmod(L, k)
        parts = [("s", c * k, [(rounds, P * k, k), (k, 1, 1)], 0)] if rounds else []
        if tail:
            parts.append(("s", (rounds * P + c) * k, [(tail, 1, 1)], rounds * k))
        return parts
    coord = dist.coords_from_rank(rank)[d]
    if not m.local_size:
        return []
    if coord == 0:
        return [("u", m.indices, None)]
    # an index a lower grid coordinate holds too is left to it (written once)
    keep = ~_u_held_below(dist, d, coord)[m.indices]
    if keep.all():
        return [("u", m.indices, None)]
    pos = np.flatnonzero(keep)
    return [("u", m.indices[pos], pos)] if pos.size else []


def _stores(dist, rank, block, data_offset):
    """Each store of ``rank``'s owned cells: ``(file_first, file_shape,
    file_strides, mem_first, mem_shape, mem_strides, fancy)`` in bytes,
    ``fancy`` ``[(axis, file_indices, mem_positions)]`` for 'u' parts (the
    axis spans the whole dimension there)."""
    gstrides = _c_strides(dist.shape, block.dtype.itemsize)
    per_dim = [_dim_parts(dist, rank, d, m) for d, m in enumerate(dist.maps(rank))]
    for combo in itertools.product(*per_dim):
        ffirst, mfirst = data_offset, 0
        fshape, fstr, mshape, mstr, fancy = [], [], [], [], []
        for d, part in enumerate(combo):
            gs, ms = gstrides[d], block.strides[d]
            if part[0] == "u":
                fancy.append((len(fshape), part[1], part[2]))
                fshape.append(dist.shape[d]), fstr.append(gs)
                mshape.append(block.shape[d]), mstr.append(ms)
                continue
            _, f0, dims, m0 = part
            ffirst += f0 * gs
            mfirst += m0 * ms
            for n, fstep, mstep in dims:
                fshape.append(n), fstr.append(fstep * gs)
                mshape.append(n), mstr.append(mstep * ms)
        if all(fshape) or not fshape:
            yield ffirst, fshape, fstr, mfirst, mshape, mstr, fancy


def _span(first, shape, strides, itemsize):
    """The first and one past the last byte a store's view spans (strides
    >= 0; a 'u' axis spans its whole dimension, of which the store writes
    the indexed cells only: mapped pages it does not store to are not
    touched)."""
    return first, first + sum((n - 1) * st for n, st in zip(shape, strides)) + itemsize


def write_cells(path, data_offset, dist, rank, block, ref=None):
    """Store ``rank``'s owned cells of ``block`` (its local block of the
    DistArray distributed by ``dist``) into the C-ordered data of the
    ``.npy`` file ``path`` that starts at byte ``data_offset``: block and
    (block-)cyclic dimensions as strided views, 'u' dimensions through
    their own index arrays (no run tables: a scattered 'u' save held 6.3x
    its block before, and block-cyclic and 'u' saves went through MPI-IO).
    Only the span of the file from the first to the last byte stored is
    mapped; only the owned cells' bytes are written.  ``ref``: the identity
    of the file rank 0 reserved (:func:`nclx.dap.npyheader.file_identity`),
    compared with the descriptor's before a byte is stored
    (:class:`OtherFile` otherwise: a file replaced after the caller's check
    by name was written into; review 26)."""
    itemsize = block.dtype.itemsize
    if itemsize == 0:
        return
    stores = list(_stores(dist, rank, block, data_offset))
    if not stores:
        return
    spans = [_span(f, sh, st, itemsize) for f, sh, st, _, _, _, _ in stores]
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    lo = first - first % mmap.ALLOCATIONGRANULARITY
    fd = os.open(path, os.O_RDWR)
    try:
        other = None if ref is None else other_file(file_identity(fd=fd), ref)
        if other is not None:
            raise OtherFile(other)
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
        raw = np.dtype((np.void, itemsize))
        flat = block.view(raw).reshape(-1, order="A")      # memory order (C or F block)
        for ffirst, fshape, fstr, mfirst, mshape, mstr, fancy in stores:
            dst = np.ndarray(fshape, raw, buffer=mm, offset=ffirst - lo, strides=fstr)
            try:
                src = as_strided(flat[mfirst // itemsize:], mshape, mstr, writeable=False)
                _store(dst, src, fancy)
            finally:
                del dst         # the mapping cannot close while an array exports it
    finally:
        mm.close()


def _store(dst, src, fancy):
    if not fancy:
        np.copyto(dst, src, casting="no")
        return
    axes = [a for a, _, _ in fancy]
    front = list(range(len(axes)))
    dst, src = np.moveaxis(dst, axes, front), np.moveaxis(src, axes, front)
    if len(fancy) == 1:
        _, where, held = fancy[0]
        dst[where] = src if held is None else src[held]
        return
    if any(held is not None for _, _, held in fancy):
        src = src[np.ix_(*[np.arange(src.shape[i]) if held is None else held
                           for i, (_, _, held) in enumerate(fancy)])]
    dst[np.ix_(*[where for _, where, _ in fancy])] = src
