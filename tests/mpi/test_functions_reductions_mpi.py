"""np.sum/prod/max/amax/min/amin/any/all/mean through the registry with
their keywords (axis, dtype, out, keepdims, initial, where), against NumPy
on the gathered array, with NumPy's "Mean of empty slice" warning."""
import numpy as np
import pytest

from fn_helpers import LAYOUTS2, caught, compare, make
from mpi_helpers import collective_assert, global_of, outcome

G = (np.arange(42).reshape(6, 7) % 5 - 2).astype(np.int64)
H = np.arange(42.0).reshape(6, 7) / 7.0


@pytest.mark.parametrize("name,kw", LAYOUTS2, ids=[n for n, _ in LAYOUTS2])
def test_reductions_with_keywords(name, kw):
    a, h = make(G, **kw), make(H, **kw)
    m = make(G > 0, **kw)
    M = G > 0
    bad = []
    cases = [
        ("sum", lambda x, f, w: np.sum(x), True),
        ("sum axis dtype", lambda x, f, w: np.sum(x, axis=0, dtype=np.int8), True),
        ("sum keepdims initial", lambda x, f, w: np.sum(x, axis=1, keepdims=True, initial=3),
         True),
        ("sum where", lambda x, f, w: np.sum(f, where=w), False),
        ("prod axis", lambda x, f, w: np.prod(x + 3, axis=1), True),
        ("max", lambda x, f, w: np.max(x), True), ("amax axis", lambda x, f, w: np.amax(f, 0), True),
        ("min where initial", lambda x, f, w: np.min(x, where=w, initial=10), True),
        ("amin keepdims", lambda x, f, w: np.amin(f, axis=(0, 1), keepdims=True), True),
        ("any", lambda x, f, w: np.any(w), True), ("all axis", lambda x, f, w: np.all(w, axis=0), True),
        ("any where", lambda x, f, w: np.any(x, axis=1, where=w), True),
        ("mean", lambda x, f, w: np.mean(f), False),
        ("mean int axis", lambda x, f, w: np.mean(x, axis=0), False),
        ("mean f4 keepdims", lambda x, f, w: np.mean(f, axis=1, dtype=np.float32, keepdims=True),
         False),
        ("mean where", lambda x, f, w: np.mean(f, where=w), False),
        ("mean where axis", lambda x, f, w: np.mean(x, axis=1, where=w), False),
    ]
    for tag, f, exact in cases:
        want = f(G, H, M)
        kind, got = outcome(lambda: f(a, h, m))
        if kind == "exc":
            bad.append(f"{tag}: {got}")
            continue
        err = compare(tag, got, want, exact=exact)
        if err:
            bad.append(err)
    collective_assert(not bad, "; ".join(bad))


def test_out_and_empty_mean_warning():
    a = make(H)
    out = np.sum(a, axis=0) * 0.0
    r = np.sum(a, axis=0, out=out)
    ok = r is out and np.allclose(global_of(out), H.sum(axis=0), rtol=1e-12)
    z = np.zeros(())
    r2 = np.max(a, out=z)
    ok = ok and r2 is z and z[()] == H.max()
    collective_assert(ok, "out=")
    none = make(G > 100)
    want = caught(lambda: np.mean(H, where=G > 100))
    got = caught(lambda: np.mean(a, where=none))
    collective_assert(want[1] == got[1] and np.isnan(got[0]), f"{want} vs {got}")
