"""zeros_like/ones_like/full_like/empty_like of a DistArray (same
distribution and communicator) and NEP 35 creation with like=da
(np.zeros/ones/full/empty/arange: a DistArray of the default distribution),
NumPy's values and dtypes bit for bit, on 1..6 ranks."""
import numpy as np
import pytest

import nclx.dap as dap
from fn_helpers import LAYOUTS2, compare, make
from mpi_helpers import collective_assert, outcome

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
    kind, got = outcome(np.zeros_like, a, shape=(3, 3))
    if kind != "exc" or "DapError" not in got:
        bad.append(f"zeros_like(shape=...): {kind} {got}")
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
