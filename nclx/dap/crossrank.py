"""The cross-rank rules of a DAP import (:meth:`nclx.dap.distribution.
Distribution.from_dim_data_per_rank`): every rank's ``dim_data`` laid on
the C-order process grid, one grid size, dist_type, size and block_size per
dimension, block ranges tiling each dimension and communication padding
matched by the neighbour; each error names the dimension, the key and the
ranks."""
import math
from collections.abc import Mapping

import numpy as np

from nclx.dap.maps import map_from_dim_dict
from nclx.dap.validate import DapError, DapTypeError, normalize_dim_dict

__all__ = ["per_dim_of", "same_dim_dict"]


def same_dim_dict(a, b):
    """Two (normalised) dimension dictionaries are equal (indices compared
    by value)."""
    if a.keys() != b.keys():
        return False
    return all(np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k]
               for k in a)


def per_dim_of(seq):
    """The dimension dictionaries by dimension and grid coordinate of
    ``seq`` (one ``dim_data`` tuple per rank), the cross-rank rules
    checked."""
    seq = list(seq)
    if not seq:
        raise DapError("from_dim_data_per_rank needs the dim_data of at least one rank")
    for r, dim_data in enumerate(seq):
        # before, a rank's dim_data of another type (None, a dict, a string)
        # or a dimension that is no dict raised Python's TypeError or
        # ValueError naming neither the rank nor the dimension (found by review)
        if not isinstance(dim_data, (tuple, list)):
            raise DapTypeError(f"rank {r}: dim_data must be a tuple of dimension dictionaries, "
                               f"not {type(dim_data).__name__}")
        for d, dd in enumerate(dim_data):
            if dd is not None and not isinstance(dd, Mapping):
                raise DapTypeError(f"rank {r}: dim_data[{d}] must be a dict, not "
                                   f"{type(dd).__name__}")
    ndim = len(seq[0])
    norm = []
    for r, dim_data in enumerate(seq):
        if len(dim_data) != ndim:
            raise DapError(f"rank {r} has {len(dim_data)} dimensions, rank 0 has {ndim}")
        try:
            norm.append([normalize_dim_dict(dict(dd), d) if dd else None
                         for d, dd in enumerate(dim_data)])
        except DapError as exc:     # the rank named too
            raise type(exc)(f"rank {r}: {exc}") from None
    grid = []
    for d in range(ndim):
        sizes = {dd["proc_grid_size"] for dds in norm for dd in [dds[d]] if dd}
        if len(sizes) > 1:
            raise DapError(f"dimension {d}: ranks disagree on 'proc_grid_size' ("
                           + _by_value(norm, d, "proc_grid_size") + ")")
        grid.append(sizes.pop() if sizes else 1)
    # Python's exact product: sizes near 2**63 whose int64 product
    # (np.prod) wrapped to the rank count passed, and [None] * size then
    # raised a bare MemoryError (found by review)
    if math.prod(grid) != len(seq):
        raise DapError(f"the process grid {tuple(grid)} holds {math.prod(grid)} processes "
                       f"but dim_data was given for {len(seq)}")
    per_dim = [[None] * g for g in grid]
    owner = [[None] * g for g in grid]         # the first rank at each coordinate
    for r, dds in enumerate(norm):
        coords = np.unravel_index(r, grid) if grid else ()
        for d in range(ndim):
            dd = dds[d]
            c = int(coords[d])
            if dd is None:
                raise DapError(f"rank {r}: dim_data[{d}] is empty; give its size")
            if dd["proc_grid_rank"] != c:
                raise DapError(f"rank {r}: dim_data[{d}]['proc_grid_rank'] is "
                               f"{dd['proc_grid_rank']}, its C-order grid coordinate is {c}")
            if per_dim[d][c] is None:
                per_dim[d][c], owner[d][c] = dd, r
            elif not same_dim_dict(per_dim[d][c], dd):
                first = per_dim[d][c]
                keys = sorted(k for k in first.keys() | dd.keys()
                              if k not in first or k not in dd or not same_dim_dict(
                                  {k: first[k]}, {k: dd[k]}))
                raise DapError(f"rank {r}: dim_data[{d}] differs from rank {owner[d][c]}'s at "
                               f"grid coordinate {c} of dimension {d} (in "
                               f"{', '.join(map(repr, keys))})")
    for d, col in enumerate(per_dim):
        # one dist_type, size and block_size per dimension (before, a
        # dimension 'b' on some grid coordinates and 'c' or 'u' on others
        # raised AttributeError or KeyError, or gathered wrong values, and
        # cyclic coordinates with different block sizes were taken: a
        # gather returned uninitialised memory; found by review)
        for key in ("dist_type", "size", "block_size"):
            values = {dd.get(key) for dd in col}
            if len(values) > 1:
                raise DapError(f"dimension {d}: the ranks disagree on {key!r} ("
                               + _by_value(norm, d, key) + ")")
        if col[0]["dist_type"] == "b":
            _check_block_column(d, col, grid)
    total = math.prod(col[0]["size"] for col in per_dim)
    if total > _INTP_MAX:
        raise DapError(f"the global shape {tuple(col[0]['size'] for col in per_dim)} holds "
                       f"{total} elements, more than an array can index ({_INTP_MAX})")
    return per_dim


_INTP_MAX = int(np.iinfo(np.intp).max)


def _by_value(norm, d, key):
    """The ranks grouped by the value of ``key`` in their dimension ``d``
    (``norm``: every rank's normalised dimension dictionaries), for messages."""
    groups = {}
    for r, dds in enumerate(norm):
        groups.setdefault(repr(dds[d].get(key) if dds[d] else None), []).append(r)
    return "; ".join(f"rank{'s' if len(rs) > 1 else ''} "
                     f"{', '.join(map(str, rs[:8]))}{', ...' if len(rs) > 8 else ''}: {v}"
                     for v, rs in groups.items())


def _check_block_column(d, col, grid):
    """The cross-rank rules of block dimension ``d`` (``col``: its
    dictionaries by grid coordinate; ``grid``: the process grid, to name
    the MPI ranks): one ``periodic`` for the dimension, owned ranges tiling
    [0, size), and communication padding matched by the neighbour and no
    wider than its owned block -- between neighbours and, periodic, across
    the wrap (before, ``periodic`` and the wrap's padding went unchecked:
    a halo exchange then waited; found by review)."""
    maps = [map_from_dim_dict(dd) for dd in col]
    owned = [(m.start + m.comm_padding[0], m.stop - m.comm_padding[1]) for m in maps]
    size = col[0]["size"]

    def ranks(c):
        at = [r for r in range(int(np.prod(grid))) if np.unravel_index(r, grid)[d] == c]
        return f"{at[:8]}{' ...' if len(at) > 8 else ''}"

    periodic = [bool(dd.get("periodic", False)) for dd in col]
    if len(set(periodic)) > 1:
        c = periodic.index(not periodic[0])
        raise DapError(f"dimension {d}: the ranks disagree on 'periodic' (grid coordinate 0, "
                       f"ranks {ranks(0)}: {periodic[0]}; grid coordinate {c}, ranks "
                       f"{ranks(c)}: {periodic[c]})")
    if owned[0][0] != 0 or owned[-1][1] != size:
        raise DapError(f"dimension {d}: the owned block ranges {owned} do not cover [0, {size})")
    pairs = [(c - 1, c) for c in range(1, len(col))]
    if periodic[0]:
        pairs.append((len(col) - 1, 0))          # the wrap (one rank: onto itself)
    for a, b in pairs:
        if b == a + 1 and owned[b][0] != owned[a][1]:
            raise DapError(f"dimension {d}: owned ranges of grid coordinates {a} (ranks "
                           f"{ranks(a)}) and {b} (ranks {ranks(b)}) are {owned[a]} and "
                           f"{owned[b]}: not adjacent")
        right, left = maps[a].comm_padding[1], maps[b].comm_padding[0]
        if right != maps[b].padding[0] or left != maps[a].padding[1]:
            raise DapError(f"dimension {d}: communication padding between grid coordinates "
                           f"{a} (ranks {ranks(a)}) and {b} (ranks {ranks(b)}) differs "
                           f"({col[a]['padding'][1]} vs {col[b]['padding'][0]})")
        if right > owned[b][1] - owned[b][0] or left > owned[a][1] - owned[a][0]:
            raise DapError(f"dimension {d}: communication padding between grid coordinates "
                           f"{a} (ranks {ranks(a)}) and {b} (ranks {ranks(b)}) is wider than "
                           f"the neighbour's owned block")
