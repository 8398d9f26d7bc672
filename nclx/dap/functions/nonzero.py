"""Where a DistArray's cells are nonzero: ``np.nonzero``, ``np.flatnonzero``,
``np.argwhere`` and one-argument ``np.where``.

NumPy's answer is global indices in C order, so the cells are first put in
that order: :func:`._flatten.flat_block` gives each rank one range of the
C-order flattened array (nothing moves for a 1-D block array; otherwise one
``Alltoallv``).  Each rank finds its range's nonzero cells (global flat
indices, ascending, and ascending from rank to rank), one ``allgather``
tells every rank how many each found, and one ``Alltoallv`` moves the
indices to the result's layout: 1-D DistArrays of ``np.intp``, block
distributed (balanced, no padding) over ``da``'s communicator; for
``np.argwhere`` one ``(count, ndim)`` DistArray, rows block distributed.
The values are NumPy's on the gathered array, bit for bit."""
import numpy as np

from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.functions._flatten import flat_block
from nclx.dap.functions._layout import agree_call, block_bounds, from_owned
from nclx.dap.functions._samplesort import alltoallv
from nclx.dap.layout import ravel
from nclx.dap.registry import implements


def _found(a, what):
    """This rank's share of the result (global flat indices, ascending) and
    the result's 1-D block Distribution."""
    comm = a.comm
    rank, P = comm.Get_rank(), comm.Get_size()
    part, target = flat_block(a, what)
    error = local = None
    try:
        local = np.flatnonzero(part).astype(np.intp) + np.intp(block_bounds(target, 0)[rank])
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(comm, error, what, ())
    counts = np.array(comm.allgather(int(local.size)), np.int64)
    result = Distribution.from_shape((int(counts.sum()),), "b", nprocs=P)
    starts = np.concatenate(([0], np.cumsum(counts)))
    cuts = np.clip(block_bounds(result, 0) - starts[rank], 0, counts[rank])
    mine, _ = alltoallv(comm, local, np.diff(cuts))
    return mine, result


def _zero_d(a):
    """NumPy's answer for a 0-d array (its error, where it refuses)."""
    np.nonzero(np.zeros((), a.dtype))
    return ravel(a)


@implements(np.nonzero)
def nonzero(a):
    """``np.nonzero``: a tuple of ``a.ndim`` 1-D DistArrays of global indices
    (see the module doc)."""
    if not a.shape:
        return nonzero(_zero_d(a))
    flat, dist = _found(a, "np.nonzero")
    return tuple(from_owned(DistArray, dist, a.comm, idx, np.intp)
                 for idx in np.unravel_index(flat, a.shape))


@implements(np.flatnonzero)
def flatnonzero(a):
    """``np.flatnonzero``: a 1-D DistArray of indices into the flattened array."""
    flat, dist = _found(ravel(a) if not a.shape else a, "np.flatnonzero")
    return from_owned(DistArray, dist, a.comm, flat, np.intp)


@implements(np.argwhere)
def argwhere(a):
    """``np.argwhere``: a ``(count, a.ndim)`` DistArray, rows block
    distributed; of a 0-d array NumPy's ``(count, 0)``."""
    nd = a.ndim
    flat, dist = _found(ravel(a) if not a.shape else a, "np.argwhere")
    rows = Distribution.from_shape((dist.shape[0], nd), ("b", "n"), nprocs=a.comm.Get_size())
    owned = np.stack(np.unravel_index(flat, a.shape), axis=-1) if nd else \
        np.zeros((flat.shape[0], 0), np.intp)
    return from_owned(DistArray, rows, a.comm, owned.astype(np.intp, copy=False), np.intp)
