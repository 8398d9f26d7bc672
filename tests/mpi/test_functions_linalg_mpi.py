"""np.linalg.norm (axis=None: default, 'fro' for 2-D, ord 2/1/inf/-inf/0/3
for 1-D; along axes: tests/mpi/test_review9_dap_mpi.py) and 1-D dot/vdot/inner of DistArrays against NumPy on the gathered
array: 1e-12 relative for float sums (partial results combine in rank
order), exact for integers and the max/min norms, on 1..6 ranks."""
import numpy as np
import pytest

from fn_helpers import LAYOUTS1, LAYOUTS2, compare, make
from mpi_helpers import collective_assert, outcome

rng = np.random.default_rng(2)
V = rng.standard_normal(23)
W = rng.standard_normal(23)
C = V + 1j * W
IV = rng.integers(-9, 9, size=23)
M = rng.standard_normal((5, 6))


@pytest.mark.parametrize("name,kw", LAYOUTS1, ids=[n for n, _ in LAYOUTS1])
def test_vector_norms_and_products(name, kw):
    v, w, c, iv = make(V, **kw), make(W, **kw), make(C, **kw), make(IV, **kw)
    bad = []
    cases = [("norm", lambda x, y, z, i: np.linalg.norm(x), False),
             ("norm complex", lambda x, y, z, i: np.linalg.norm(z), False),
             ("norm int", lambda x, y, z, i: np.linalg.norm(i), False),
             ("norm ord 2", lambda x, y, z, i: np.linalg.norm(x, 2), False),
             ("norm ord 1", lambda x, y, z, i: np.linalg.norm(x, 1), False),
             ("norm ord inf", lambda x, y, z, i: np.linalg.norm(x, np.inf), True),
             ("norm ord -inf", lambda x, y, z, i: np.linalg.norm(x, -np.inf), True),
             ("norm ord 0", lambda x, y, z, i: np.linalg.norm(i, 0), True),
             ("norm ord 3", lambda x, y, z, i: np.linalg.norm(x, 3), False),
             ("norm keepdims", lambda x, y, z, i: np.linalg.norm(x, keepdims=True), False),
             ("dot", lambda x, y, z, i: np.dot(x, y), False),
             ("dot int", lambda x, y, z, i: np.dot(i, i), True),
             ("vdot complex", lambda x, y, z, i: np.vdot(z, z * 2), False),
             ("inner", lambda x, y, z, i: np.inner(x, y), False)]
    for tag, f, exact in cases:
        want = f(V, W, C, IV)
        kind, got = outcome(lambda: f(v, w, c, iv))
        if kind == "exc":
            bad.append(f"{tag}: {got}")
            continue
        err = compare(tag, got, want, exact=exact)
        if err:
            bad.append(err)
    collective_assert(not bad, "; ".join(bad))


@pytest.mark.parametrize("name,kw", LAYOUTS2, ids=[n for n, _ in LAYOUTS2])
def test_matrix_norms(name, kw):
    m = make(M, **kw)
    bad = []
    for tag, f in [("norm", lambda x: np.linalg.norm(x)),
                   ("fro", lambda x: np.linalg.norm(x, "fro")),
                   ("axis 0", lambda x: np.linalg.norm(x, axis=0)),
                   ("axis 1 ord 1", lambda x: np.linalg.norm(x, 1, axis=1)),
                   ("ord inf of 2-D", lambda x: np.linalg.norm(x, np.inf))]:
        kind, got = outcome(lambda: f(m))
        err = f"{tag}: {got}" if kind == "exc" else compare(tag, got, f(M), exact=False)
        if err:
            bad.append(err)
    for tag, f in [("ord 2 of 2-D", lambda x: np.linalg.norm(x, 2)),
                   ("dot 2-D", lambda x: np.dot(x, x))]:
        kind, got = outcome(lambda: f(m))
        if kind != "exc" or "DapError" not in got:
            bad.append(f"{tag}: {kind} {got}")
    collective_assert(not bad, "; ".join(bad))
