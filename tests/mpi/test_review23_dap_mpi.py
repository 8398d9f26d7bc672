"""Review 23 (nclx.dap):

- a reduction whose ranks passed different arguments raised "the ranks made
  different calls (the operation, axis, dtype, keepdims, initial or the
  array's layout differ between ranks)" on every rank: it did not say which.
  The DapError now names the differing argument and each rank's value
  (nclx.dap.keydiff; one more Allgather on that error path only).
- warnings of DistArray ufuncs and reductions named a line of nclx (the
  default filter then showed the first of a message only): they name the
  caller's line, on every rank (nclx._callsite).
At 1 rank nothing can differ: the calls must succeed there."""
import sys
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, error_of, rank

comm = MPI.COMM_WORLD
G = np.arange(24.0).reshape(4, 6)


@pytest.mark.parametrize("call, field, values", [
    (lambda a: np.sum(a, axis=rank % 2), "axis", ("(0,)", "(1,)")),
    (lambda a: np.sum(a, keepdims=rank % 2 == 1), "keepdims", ("False", "True")),
    (lambda a: np.sum(a, axis=0, dtype=np.float32 if rank % 2 else np.float64), "dtype",
     ("float64", "float32")),
    (lambda a: (np.mean if rank % 2 else np.sum)(a, axis=0), "called by", ()),
], ids=["axis", "keepdims", "dtype", "caller"])
def test_mismatch_names_the_argument_and_values(call, field, values):
    a = dap.DistArray.from_global(G, comm=comm)
    kind, msg = error_of(lambda: call(a))
    if comm.size == 1:
        collective_assert(kind == "ok", f"{kind}: {msg}")
        return
    ok = kind == "DapError" and "the ranks made different calls" in msg and \
        f"{field}: " in msg and all(v in msg for v in values) and \
        ("on rank 1" in msg or "on ranks 1, 3" in msg or "on ranks 1," in msg)
    collective_assert(ok, f"{kind}: {msg}")
    everyone = comm.allgather(msg)
    collective_assert(all(m == everyone[0] for m in everyone), f"messages differ: {everyone}")


def test_warnings_name_the_callers_line_on_every_rank():
    a = dap.DistArray.from_global(np.ones(2 * comm.size), comm=comm)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("default")
        first = sys._getframe().f_lineno + 1
        a / 0
        a / 0
        np.add.reduce(a * 1e308)
    got = [(r.filename, r.lineno - first, str(r.message)) for r in w]
    want = [(__file__, 0, "divide by zero encountered in divide"),
            (__file__, 1, "divide by zero encountered in divide"),
            (__file__, 2, "overflow encountered in reduce")]
    collective_assert(got == want, f"{got}")


# -- imported 'u' dimensions holding an index twice or not at all -------------

def _imported(indices, size):
    ex = {"__version__": "0.10.0", "buffer": indices.astype(float) + 100.0 * rank,
          "dim_data": ({"dist_type": "u", "size": size, "proc_grid_size": comm.size,
                        "proc_grid_rank": rank, "indices": indices},)}
    return dap.from_distarray(ex, comm)


WHOLE = [
    ("median", np.median), ("percentile", lambda a: np.percentile(a, [0, 50, 100])),
    ("quantile", lambda a: np.quantile(a, 0.5)), ("nanmedian", np.nanmedian),
    ("histogram", lambda a: np.histogram(a, bins=3)), ("dot", lambda a: np.dot(a, a)),
    ("vdot", lambda a: np.vdot(a, a)), ("inner", lambda a: np.inner(a, a)),
    ("norm", np.linalg.norm), ("unique", np.unique), ("argmax", np.argmax),
    ("argmin", np.argmin), ("nanargmax", np.nanargmax),
]


@pytest.mark.parametrize("name, fn", WHOLE, ids=[n for n, _ in WHOLE])
def test_functions_refuse_u_dimensions_with_gaps(name, fn):
    # rank r holds 3r and 3r+1 of 3 * size: 3r+2 is held by no rank (any rank count)
    a = _imported(np.array([3 * rank, 3 * rank + 1]), 3 * comm.size)
    kind, msg = error_of(lambda: fn(a))
    collective_assert(kind == "DapError" and "is owned by 0 grid coordinates" in msg and
                      "dimension 0 ('u')" in msg, f"{kind}: {msg}")


@pytest.mark.parametrize("name, fn", WHOLE, ids=[n for n, _ in WHOLE])
def test_functions_refuse_u_dimensions_held_twice(name, fn):
    # rank r holds 2r .. 2r+3 of 2 * size + 2: the ranks overlap (from 2 ranks)
    a = _imported(np.arange(4) + 2 * rank, 2 * comm.size + 2)
    kind, msg = error_of(lambda: fn(a))
    if comm.size == 1:
        collective_assert(kind == "ok", f"{kind}: {msg}")
    else:
        collective_assert(kind == "DapError" and "is owned by 2 grid coordinates" in msg,
                          f"{kind}: {msg}")


def test_save_npy_writes_an_index_held_twice_from_the_lowest_coordinate(tmp_path_factory):
    """Documented (nclx/dap/iotypes.py): a 'u' index held by several ranks
    is written by the lowest grid coordinate; review 23 briefly refused it
    (tests/mpi/test_npyio_mpi.py's shared index 0 then failed at 3 ranks)."""
    import os
    import shutil
    import tempfile
    d = comm.bcast(tempfile.mkdtemp(prefix="nclx_r23_") if rank == 0 else None, root=0)
    path = os.path.join(d, "dup.npy")
    idx = np.arange(4) + 2 * rank
    a = _imported(idx, 2 * comm.size + 2)
    kind, msg = error_of(lambda: a.save_npy(path))
    collective_assert(kind == "ok", f"{kind}: {msg}")
    comm.Barrier()
    got = np.load(path)
    want = np.concatenate([np.arange(2.0), np.arange(2, 2 * comm.size + 2) + 0.0])
    # cell 2r, 2r+1 (r >= 1) are held by ranks r - 1 and r: rank r - 1 writes
    for g in range(2 * comm.size + 2):
        owner = min(g // 2, comm.size - 1) if g < 2 else max(0, (g - 2) // 2)
        want[g] = g + 100.0 * owner
    collective_assert(got.tobytes() == want.tobytes(), f"{got} != {want}")
    comm.Barrier()
    if rank == 0:
        shutil.rmtree(d, ignore_errors=True)


# -- halo exchange arguments ---------------------------------------------------

@pytest.mark.parametrize("first", [True, False], ids=["first exchange", "cached plan"])
def test_bad_method_on_one_rank_raises_everywhere_or_there_without_a_hang(first):
    a = dap.DistArray.from_global(np.arange(4.0 * comm.size), comm=comm, padding=[1])
    if not first:
        dap.exchange_halos(a)
    bad = rank == comm.size - 1
    kind, msg = error_of(lambda: dap.exchange_halos(a, method="Packed" if bad else None))
    if first or bad:
        collective_assert(kind == "DapError" and "method='Packed'" in msg, f"{kind}: {msg}")
    else:
        # a later exchange does not agree: the others completed theirs
        collective_assert(kind == "ok", f"{kind}: {msg}")
    comm.Barrier()


def test_halo_exchange_of_a_non_distarray_is_a_type_error():
    for obj in (np.zeros(3), [1.0, 2.0]):
        with pytest.raises(TypeError, match="halo exchange of a .*: it needs a DistArray"):
            dap.exchange_halos(obj)


def test_mismatched_initial_is_shown_as_a_value():
    """Before (review 23b): the cast value's raw bytes, b'\\x00...\\xf0?'."""
    a = dap.DistArray.from_global(G, comm=comm)
    kind, msg = error_of(lambda: np.max(a, initial=[1.0, -1e300, 7.5][rank % 3]))
    if comm.size == 1:
        collective_assert(kind == "ok", f"{kind}: {msg}")
        return
    ok = kind == "DapError" and "initial=np.float64(1.0)" in msg and \
        "initial=np.float64(-1e+300)" in msg and "\\x" not in msg
    collective_assert(ok, f"{kind}: {msg}")
