"""The parts of a reduction's result (nclx.dap.reduce): the value on every
rank, or an axis reduction's block, Distribution and communicator."""
import numpy as np

from nclx.dap.distribution import Distribution
from nclx.dap.validate import normalize_dim_dict

__all__ = ["result_distribution"]


def result_distribution(dist, kept, keepdims):
    """The Distribution of an axis reduction's result (the ``kept`` axes of
    ``dist``): known on every rank before the collective, so an ``out=``
    of another is refused there (review 22)."""
    columns = []
    for d in range(dist.ndim):
        if d in kept:
            columns.append([dist._dims[d][c] for c in range(dist.grid_shape[d])])
        elif keepdims:
            columns.append([normalize_dim_dict(dict(dist_type="b", size=1, start=0, stop=1,
                                                    proc_grid_size=1, proc_grid_rank=0), d)])
    return Distribution(columns)


def _result(dist, kept, keepdims, value, result_comm):
    """(value, None, None) for a reduction over every axis, else the parts of
    the result's DistArray (block, Distribution, communicator)."""
    if not kept:
        result = value.reshape(()) if not keepdims else value.reshape((1,) * dist.ndim)
        # a 0-d array's reduction is a scalar, keepdims or not (NumPy's)
        return (result[()] if not keepdims or dist.ndim == 0 else result), None, None
    # the counted cells along the kept axes go back into a block with their padding
    rdist = result_distribution(dist, kept, keepdims)
    rrank = result_comm.Get_rank()
    full = np.zeros(rdist.local_shape(rrank), dtype=value.dtype)
    counted = value.reshape(tuple(value.shape[kept.index(d)] if d in kept else 1
                                  for d in range(dist.ndim))) if keepdims else value
    full[rdist.owned_slices(rrank)] = counted
    return full, rdist, result_comm
