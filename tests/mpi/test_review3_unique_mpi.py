"""Review of np.unique's return_index / return_inverse (runs under mpiexec
-n 1..6): NumPy's outcome on the gathered array, on every rank."""
import numpy as np
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, global_of, outcome

comm = MPI.COMM_WORLD


def bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def test_complex_nans_of_both_kinds_find_numpys_one_nan_entry():
    """equal_nan=True folds every complex value holding a NaN (nan+0j sorts
    after 1+nanj) into NumPy's one NaN entry: the inverse points there, its
    first index is the first cell sorting like it (1+nanj) (was an
    IndexError on the ranks holding nan+0j only, the others waiting in the
    Allreduce)."""
    g = np.array([1, complex(np.nan, 0), 2, 3, complex(1, np.nan), 4, complex(np.nan, 1), 2,
                  complex(1, np.nan)])
    a = dap.DistArray.from_global(g, comm=comm)
    want = np.unique(g, return_index=True, return_inverse=True, return_counts=True)
    kind, got = outcome(np.unique, a, return_index=True, return_inverse=True,
                        return_counts=True)
    every = comm.allgather(kind)
    collective_assert(all(k == "ok" for k in every), f"{got}")
    got = (got[0], got[1], global_of(got[2]), got[3])
    ok = all(bits(x) == bits(y) for x, y in zip(got, want))
    collective_assert(ok, f"{got} != {want}")


def test_return_index_gives_the_bits_of_the_cell_at_each_index():
    """With return_index NumPy's entries are the cells at their first index
    (a stable argsort): 0.0 before -0.0 gives 0.0, a NaN's payload and sign
    are the first NaN's, a float16 NaN keeps its bits, and along an axis a
    row of zeros is the first such row (was: the bits the sort happened to
    leave, -0.0 from [3, 2, 0, -0, 0, -0] on one rank)."""
    nan = np.float64(np.nan)
    cases = [np.array([3.0, 2.0, 0.0, -0.0, 0.0, -0.0]),
             np.array([-0.0, 3.0, 0.0, 2.0, -0.0, 0.0]),
             np.array([1.0, (nan.view(np.uint64) + 1).view(np.float64), 2.0, -nan, 4.0, nan]),
             np.array([1.0, np.nan, 0.0, np.nan, 2.0, -0.0], np.float16),
             np.array([1 + 0j, complex(0.0, -0.0), 2, complex(-0.0, 0.0), 0j, 3]),
             np.array([[2.0, 0.0], [0.0, -0.0], [-0.0, 0.0], [2.0, -0.0], [1.0, 1.0]])]
    for g in cases:
        a = dap.DistArray.from_global(g, comm=comm)
        for kw in (dict(equal_nan=True), dict(equal_nan=False), dict(axis=0)):
            want = np.unique(g, return_index=True, **kw)
            kind, got = outcome(np.unique, a, return_index=True, **kw)
            ok = kind == "ok" and all(bits(x) == bits(y) for x, y in zip(got, want))
            collective_assert(ok, f"{g} {kw}: {got} != {want}")


def test_nat_is_the_nan_of_datetimes_and_timedeltas():
    """NaT is NumPy's NaN for 'M' and 'm': with equal_nan=True one entry
    for all of them (was one per rank holding some), with equal_nan=False
    one each, in C order with their own first index and inverse (was an
    index of 2**63-1 and every NaT's inverse on the first)."""
    g = np.array([3, "NaT", 1, 3, "NaT", 2, "NaT", 1, 5, "NaT"], "M8[s]")
    for x in (g, g.view("m8[s]")):
        a = dap.DistArray.from_global(x, comm=comm)
        for en in (True, False):
            want = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                             equal_nan=en)
            kind, got = outcome(np.unique, a, return_index=True, return_inverse=True,
                                return_counts=True, equal_nan=en)
            ok = kind == "ok"
            if comm.allreduce(ok, op=MPI.LAND):
                got = (got[0], got[1], global_of(got[2]), got[3])
                ok = all(bits(p) == bits(q) for p, q in zip(got, want))
            collective_assert(ok, f"{x.dtype} equal_nan={en}: {got} != {want}")
