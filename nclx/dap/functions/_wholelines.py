"""Lines moved whole: where the ranks along an axis share at least as many
lines as there are ranks, each rank takes a block of whole lines (one
``Alltoallv``), NumPy works on them in global order, and the results go
back to a block layout along the axis (one ``Alltoallv``).  A rank holds its
part, its lines and the result: about three times its part."""
import numpy as np

from nclx.dap.functions._samplesort import alltoallv
from nclx.dap.maps import map_from_dim_dict

__all__ = ["whole_lines", "lines_go_whole"]


def _split(n, P):
    """Balanced block bounds of ``n`` items over ``P``."""
    return np.array([c * (n // P) + min(c, n % P) for c in range(P + 1)], np.int64)


def lines_go_whole(dist, axis):
    """Whether every group of ranks along ``axis`` shares at least as many
    lines (cells of the other axes) as it has ranks (the same answer on
    every rank: it reads the Distribution only)."""
    lines = 1
    for d, column in enumerate(dist._dims):
        if d != axis:
            lines *= min(map_from_dim_dict(dd).num_owned for dd in column)
    return lines >= dist.grid_shape[axis]


def whole_lines(comm, block, global_idx, fn, bounds):
    """``fn`` (a NumPy function of lines, axis last, returning lines of the
    same length; it may work in place) on lines gathered whole, the results
    cut at ``bounds``.

    ``block`` is this rank's ``(L, m)`` part of the lines (C-contiguous);
    ``global_idx[r]`` the global positions along the axis of rank ``r``'s
    ``m_r`` columns; ``bounds[c]:bounds[c+1]`` the positions rank ``c``
    receives.  Returns this rank's ``(L, bounds[me+1] - bounds[me])``."""
    P, me = comm.Get_size(), comm.Get_rank()
    L, m = block.shape
    rows = _split(L, P)
    widths = [len(g) for g in global_idx]
    # rows [rows[t], rows[t+1]) of the block go to rank t: contiguous, no packing
    recv, _ = alltoallv(comm, block.reshape(-1), np.diff(rows) * m)
    del block
    mine = int(rows[me + 1] - rows[me])
    parts, at = [], 0
    for s in range(P):
        size = mine * widths[s]
        parts.append(recv[at:at + size].reshape(mine, widths[s]))
        at += size
    g = np.concatenate([np.asarray(x, np.int64) for x in global_idx])
    order = np.argsort(g, kind="stable")
    lines = np.concatenate(parts, axis=1) if parts else np.empty((mine, 0), recv.dtype)
    del recv, parts
    if not np.array_equal(order, np.arange(order.size)):
        lines = lines[:, order]
    done = fn(lines)
    del lines
    # send each rank its columns of the done lines, rank after rank
    send = np.concatenate([done[:, bounds[c]:bounds[c + 1]].reshape(-1) for c in range(P)])
    del done
    back, _ = alltoallv(comm, send, mine * np.diff(bounds))
    # from each rank its block of lines, in rank order: the lines in order
    return back.reshape(L, int(bounds[me + 1] - bounds[me]))
