"""Creating DistArrays on any number of ranks:

- ``DistArray.from_global`` checks that every rank passed the same shape and
  dtype, and every rank raises the same DapError naming the ranks;
- ``from_distarray`` with an invalid export on some ranks raises a DapError
  naming them on every rank instead of hanging the others in a collective;
- 'u' (unstructured) distributions: placed by index value, and indices
  outside ``[0, size)`` rejected on every rank.
"""
import re

import numpy as np
import pytest

from mpi_helpers import comm, raised_everywhere, rank
from nclx import dap

size = comm.size
last = size - 1


# ------------------------------------------------------------------ from_global
def test_from_global_with_the_same_array_everywhere_still_works():
    g = np.arange(23.0)
    a = dap.DistArray.from_global(g, comm=comm, padding=[1])
    out = a.gather()
    if rank == 0:
        assert np.array_equal(out, g)

def test_from_global_rejects_different_shapes_on_every_rank():
    n = 10 + (1 if rank == last and size > 1 else 0)
    if size == 1:
        dap.DistArray.from_global(np.arange(float(n)), comm=comm)
        return
    msg = raised_everywhere(dap.DistArray.from_global, np.arange(float(n)), comm=comm)
    who = "rank 0" if size == 2 else f"ranks 0-{size - 2}"
    assert "DistArray.from_global" in msg and "disagree" in msg
    assert f"{who} passed an array of shape (10,) and dtype float64" in msg
    assert f"rank {last} passed an array of shape (11,) and dtype float64" in msg

def test_from_global_rejects_different_dtypes_on_every_rank():
    dt = np.float32 if rank == last and size > 1 else np.float64
    g = np.arange(12, dtype=dt).reshape(3, 4)
    if size == 1:
        dap.DistArray.from_global(g, comm=comm)
        return
    msg = raised_everywhere(dap.DistArray.from_global, g, comm=comm)
    assert f"rank {last} passed an array of shape (3, 4) and dtype float32 ('<f4')" in msg
    assert "shape (3, 4) and dtype float64 ('<f8')" in msg

def test_from_global_rejects_a_byte_order_difference():
    dt = np.dtype(">i4") if rank == 0 and size > 1 else np.dtype("<i4")
    g = np.arange(8, dtype=dt)
    if size == 1:
        dap.DistArray.from_global(g, comm=comm)
        return
    msg = raised_everywhere(dap.DistArray.from_global, g, comm=comm)
    assert "rank 0 passed an array of shape (8,) and dtype >i4 ('>i4')" in msg

def test_from_global_error_on_one_rank_is_raised_on_every_rank():
    # a ragged list cannot become an array on the last rank
    bad = [[1, 2], [3]] if rank == last else [[1, 2], [3, 4]]
    msg = raised_everywhere(dap.DistArray.from_global, bad, comm=comm)
    assert f"rank {last}: ValueError: " in msg
    if size > 1:
        assert f"rank {last} passed no array" in msg


# --------------------------------------------------------------- from_distarray
def _good_export():
    return dap.DistArray.from_global(np.arange(40.0), comm=comm, padding=[1]).__distarray__()

def test_from_distarray_with_an_invalid_export_on_one_rank_raises_everywhere():
    bad_rank = 1 % size
    export = _good_export()
    if rank == bad_rank:
        dd = dict(export["dim_data"][0])
        dd["size"] = "forty"
        export = dict(export, dim_data=(dd,))
    msg = raised_everywhere(dap.from_distarray, export, comm=comm)
    assert msg.startswith("from_distarray: ")
    assert (f"rank {bad_rank}: DapTypeError: dim_data[0]['size'] must be an integer, not str "
            f"'forty'") in msg
    assert len(re.findall(r"rank \d+: ", msg)) == 1

def test_from_distarray_names_every_failing_rank_and_error_type():
    class Broken:
        def __distarray__(self):
            raise RuntimeError(f"producer on rank {rank} is broken")

    good = _good_export()
    obj = Broken() if rank % 2 == 0 else dict(good, __version__="0.10.0\n")
    msg = raised_everywhere(dap.from_distarray, obj, comm=comm)
    for r in range(size):
        if r % 2 == 0:
            assert f"rank {r}: RuntimeError: producer on rank {r} is broken" in msg
        else:
            assert f"rank {r}: DapError: '__version__' must be 'major.minor.patch'" in msg

def test_from_distarray_of_valid_exports_is_still_zero_copy():
    a = dap.DistArray.from_global(np.arange(30), comm=comm, padding=[2])
    b = dap.from_distarray(a, comm=comm)
    assert b.distribution == a.distribution
    assert np.shares_memory(np.asarray(a.__distarray__()["buffer"]),
                            np.asarray(b.__distarray__()["buffer"]))


# ------------------------------------------------------- 'u' distributions
def _u_dim_data(per_rank, n):
    return [({"dist_type": "u", "size": n, "indices": np.array(ix, dtype=np.int64),
              "proc_grid_rank": r, "proc_grid_size": size, "one_to_one": True},)
            for r, ix in enumerate(per_rank)]

def _u_layout(n, seed=3):
    perm = np.random.default_rng(seed).permutation(n)
    return [perm[r::size] for r in range(size)]

def test_unstructured_from_global_gather_and_import_round_trip():
    n = 17
    per_rank = _u_layout(n)
    d = dap.Distribution.from_dim_data_per_rank(_u_dim_data(per_rank, n))
    g = np.arange(n) * 3 + 1
    a = dap.DistArray.from_global(g, dist=d, comm=comm)
    assert np.array_equal(np.asarray(a.__distarray__()["buffer"]), g[per_rank[rank]])
    out = a.gather(root=last)
    if rank == last:
        assert np.array_equal(out, g)
    export = {"__version__": "0.10.0", "buffer": g[per_rank[rank]],
              "dim_data": _u_dim_data(per_rank, n)[rank]}
    b = dap.from_distarray(export, comm=comm)
    assert b.distribution == d and b.sum() == g.sum()

@pytest.mark.parametrize("bad", [-1, 17, 2**40])
def test_unstructured_index_outside_the_array_is_rejected_on_every_rank(bad):
    n = 17
    per_rank = [list(ix) for ix in _u_layout(n)]
    per_rank[last][0] = bad
    d = dap.Distribution.from_dim_data_per_rank(_u_dim_data(per_rank, n))   # a legal export
    msg = raised_everywhere(dap.DistArray.from_global, np.arange(n), dist=d, comm=comm)
    assert (f"dimension 0, proc_grid_rank {last} (rank {last}): dim_data[0]['indices'][0] is "
            f"{bad}, outside the global range [0, {n})") in msg

def test_gather_rejects_an_unstructured_index_outside_the_array():
    n = 17
    per_rank = [list(ix) for ix in _u_layout(n)]
    per_rank[last][0] = -1          # without the check, root writes it at n - 1
    d = dap.Distribution.from_dim_data_per_rank(_u_dim_data(per_rank, n))
    a = dap.DistArray(np.zeros(len(per_rank[rank])), d, comm)
    raised_everywhere(a.gather, root=0)
