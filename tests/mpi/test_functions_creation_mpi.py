"""zeros_like/ones_like/full_like/empty_like of a DistArray (same
distribution and communicator) and NEP 35 creation with like=da
(np.zeros/ones/full/empty/arange: a DistArray of the default distribution),
NumPy's values and dtypes bit for bit, on 1..6 ranks; the ``_like``
functions with another ``shape=`` (the default distribution over the
operand's communicator)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from fn_helpers import LAYOUTS2, compare, make
from mpi_helpers import collective_assert, error_of, outcome, result_bits

comm = MPI.COMM_WORLD
P = comm.Get_size()
rank = comm.Get_rank()

G = np.arange(35, dtype=np.int32).reshape(5, 7)


@pytest.mark.parametrize("name,kw", LAYOUTS2, ids=[n for n, _ in LAYOUTS2])
def test_like_functions_keep_the_distribution(name, kw):
    a = make(G, **kw)
    cases = [("zeros_like", lambda x: np.zeros_like(x)),
             ("ones_like f4", lambda x: np.ones_like(x, dtype=np.float32)),
             ("full_like", lambda x: np.full_like(x, 7)),
             ("full_like float", lambda x: np.full_like(x, 2.5, dtype=float)),
             ("empty_like", lambda x: np.empty_like(x))]
    bad = []
    for tag, f in cases:
        kind, got = outcome(f, a)
        want = f(G)
        if kind == "exc" or not isinstance(got, dap.DistArray) or \
                got.distribution != a.distribution or got.comm is not a.comm:
            bad.append(f"{tag}: {kind} {got!r}")
            continue
        if tag == "empty_like":
            if got.dtype != want.dtype or got.shape != want.shape:
                bad.append(f"{tag}: {got.dtype}{got.shape}")
            continue
        err = compare(tag, got, want)
        if err:
            bad.append(err)
    # another shape= (was refused): test_like_with_another_shape_is_numpys
    collective_assert(not bad, "; ".join(bad))


ARANGES = [(10,), (3, 17), (2, 11, 1.5), (5, -4, -2), (0.1, 1.0, 0.1), (0, 0), (7, 3)]


def test_creation_with_like():
    like = make(np.zeros(3))
    bad = []
    cases = [("zeros", lambda **k: np.zeros((4, 6), **k)),
             ("zeros int", lambda **k: np.zeros(9, dtype=np.int16, **k)),
             ("ones", lambda **k: np.ones((7,), **k)),
             ("full", lambda **k: np.full((3, 5), 2.5, **k)),
             ("full int", lambda **k: np.full(6, 4, **k)),
             ("empty", lambda **k: np.empty((2, 3), **k))]
    cases += [(f"arange{args}", lambda _a=args, **k: np.arange(*_a, **k)) for args in ARANGES]
    cases += [("arange f4", lambda **k: np.arange(1, 2, 0.1, dtype=np.float32, **k))]
    for tag, f in cases:
        want = f()
        kind, got = outcome(lambda: f(like=like))
        if kind == "exc" or not isinstance(got, dap.DistArray):
            bad.append(f"{tag}: {kind} {got!r}")
            continue
        want_dist = dap.Distribution.from_shape(want.shape, nprocs=got.comm.Get_size())
        if got.distribution != want_dist:
            bad.append(f"{tag}: not the default distribution")
        if tag == "empty":
            continue
        err = compare(tag, got, want)
        if err:
            bad.append(err)
    collective_assert(not bad, "; ".join(bad))


@pytest.mark.parametrize("shape", [(5, 3), 7, (2, 0), (3, 4), [4, np.int32(2)], ()])
@pytest.mark.parametrize("fn,args", [(np.zeros_like, ()), (np.ones_like, ()),
                                     (np.full_like, (2.5,)), (np.empty_like, ())],
                         ids=["zeros_like", "ones_like", "full_like", "empty_like"])
def test_like_with_another_shape_is_numpys(fn, args, shape):
    """Was refused ("a DistArray keeps its shape"): NumPy makes the shape
    asked; the result has the default distribution over the operand's
    communicator."""
    g = np.arange(12.0).reshape(3, 4)
    x = dap.DistArray.from_global(g, comm=comm)
    if shape == () and P > 1:
        pytest.skip("a 0-d DistArray lives on one process")
    for dtype in (None, "i4", "U3"):
        want, got = result_bits(fn, g, *args, shape=shape, dtype=dtype), \
            result_bits(fn, x, *args, shape=shape, dtype=dtype)
        if fn is np.empty_like:        # the content is undefined: dtype and shape
            want, got = want[:4], got[:4]
        collective_assert(got == want, f"dtype={dtype}: {got!r:.200} != NumPy's {want!r:.200}")
    r = fn(x, *args, shape=shape)
    d = dap.Distribution.from_shape(np.empty(shape, "V0").shape, nprocs=P)
    collective_assert(r.distribution == d and r.comm is x.comm, f"{r.distribution}")


@pytest.mark.parametrize("shape", [(-1, 3), (2.0, 3), 2.5, "ab"])
def test_shapes_numpy_refuses_are_refused_alike(shape):
    """Found with the shape= work: ``np.zeros((2.0, 3), like=da)`` made a
    (2, 3) DistArray where NumPy raises TypeError (int() read the floats)."""
    x = dap.DistArray.from_global(np.arange(12.0).reshape(3, 4), comm=comm)
    for fn in (lambda s, like: np.zeros(s, like=like), lambda s, like: np.ones(s, like=like),
               lambda s, like: np.full(s, 1.0, like=like)):
        got = error_of(lambda: fn(shape, x))
        want = error_of(lambda: fn(shape, None))
        collective_assert(got == want, f"{got} != NumPy's {want}")
    got = error_of(lambda: np.zeros_like(x, shape=shape))
    want = error_of(lambda: np.zeros_like(np.ones((3, 4)), shape=shape))
    collective_assert(got == want, f"{got} != NumPy's {want}")


@pytest.mark.skipif(P < 2, reason="a sub-communicator of some ranks needs 2 ranks")
def test_like_creation_uses_the_like_array_s_communicator():
    """np.zeros(n, like=da) built on COMM_WORLD: with da on a sub-communicator
    the ranks outside it never joined the constructor's agreement (a hang).
    Now the DistArray whose __array_function__ NumPy calls gives its own."""
    sub = comm.Split(rank % 2, rank)
    try:
        x = dap.DistArray.from_global(np.arange(4.0 * sub.Get_size()), comm=sub)
        if rank % 2 == 0:               # only this half creates (the others go on)
            for build, want in [(lambda: np.zeros(5, like=x), np.zeros(5)),
                               (lambda: np.full((2, 3), 7, like=x), np.full((2, 3), 7)),
                               (lambda: np.arange(2, 11, 3, like=x), np.arange(2, 11, 3))]:
                r = build()
                g = r.gather(root=None)
                assert r.comm is sub and g.tobytes() == want.tobytes() and g.dtype == want.dtype
        comm.Barrier()
    finally:
        sub.Free()
