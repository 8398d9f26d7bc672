"""np.where, np.clip, np.copy, np.isclose (DistArrays of the operand's
distribution, NumPy's values bit for bit), np.allclose and np.array_equal
(bool, one collective), isnan/isfinite ufuncs, on 1..6 ranks."""
import numpy as np
import pytest

import nclx.dap as dap
from fn_helpers import LAYOUTS2, compare, make
from mpi_helpers import collective_assert, global_of, outcome

G = np.arange(-20.0, 22.0).reshape(6, 7) / 3.0


@pytest.mark.parametrize("name,kw", LAYOUTS2, ids=[n for n, _ in LAYOUTS2])
def test_where_clip_copy_isclose(name, kw):
    a = make(G, **kw)
    b = make(G[::-1].copy(), **kw)
    cases = [
        ("where da,da,scalar", lambda x, y: np.where(x > 1, x, 0), None),
        ("where da,scalar,da", lambda x, y: np.where(x > y, -1.5, y), None),
        ("where da,da,da", lambda x, y: np.where(x < y, x, y), None),
        ("clip scalars", lambda x, y: np.clip(x, -2, 3), None),
        ("clip da bounds", lambda x, y: np.clip(x, np.minimum(y, 0), 4.0), None),
        ("clip one side", lambda x, y: np.clip(x, None, 1.0), None),
        ("copy", lambda x, y: np.copy(x), None),
        ("isclose", lambda x, y: np.isclose(x, y * 1.0000001, rtol=1e-6), None),
        ("isnan", lambda x, y: np.isnan(x / np.where(x == 0, 0, 1)), None),
        ("isfinite", lambda x, y: np.isfinite(np.where(x > 5, np.inf, x)), None),
    ]
    bad = []
    for tag, f, _ in cases:
        with np.errstate(all="ignore"):
            want = f(G, G[::-1].copy())
            kind, got = outcome(lambda: f(a, b))
        if kind == "exc":
            bad.append(f"{tag}: {got}")
            continue
        if not isinstance(got, dap.DistArray) or got.distribution != a.distribution:
            bad.append(f"{tag}: not a DistArray of the operand's distribution")
            continue
        err = compare(tag, got, want)
        if err:
            bad.append(err)
    collective_assert(not bad, "; ".join(bad))


def test_copy_is_independent_and_clip_out():
    a = make(G)
    c = np.copy(a)
    c._block[...] = 0
    out = dap.DistArray.from_shape(G.shape, comm=a.comm)
    r = np.clip(a, -1, 1, out=out)
    ok = np.array_equal(global_of(a), G) and r is out and \
        np.array_equal(global_of(out), np.clip(G, -1, 1))
    collective_assert(ok, "copy shares memory or clip(out=) wrong")


@pytest.mark.parametrize("name,kw", LAYOUTS2[:2], ids=[n for n, _ in LAYOUTS2[:2]])
def test_allclose_and_array_equal(name, kw):
    a = make(G, **kw)
    near = make(G + 1e-9, **kw)
    far = G.copy()
    far[-1, -1] += 1.0               # on the last rank only
    f = make(far, **kw)
    nan = G.copy()
    nan[0, 0] = np.nan
    n1, n2 = make(nan, **kw), make(nan.copy(), **kw)
    other = make(G[:, :5].copy())
    got = [np.allclose(a, near), np.allclose(a, f), np.allclose(a, 3.0),
           np.array_equal(a, a), np.array_equal(a, f), np.array_equal(n1, n2),
           np.array_equal(n1, n2, equal_nan=True), np.array_equal(a, other),
           np.allclose(n1, n2, equal_nan=True)]
    want = [np.allclose(G, G + 1e-9), np.allclose(G, far), np.allclose(G, 3.0),
            True, False, False, True, False, True]
    collective_assert(got == want and all(type(x) is bool for x in got), f"{got} != {want}")


def test_bad_operands_raise_on_every_rank():
    a = make(G)
    c = make(G, dist=("c", "n"))
    bad = []
    # mixed distributions are redistributed to the first DistArray's (as a
    # ufunc's operands; were refused)
    for tag, got, want in [("where mixed", np.where(a > 0, a, c), np.where(G > 0, G, G)),
                           ("isclose mixed", np.isclose(a, c), np.isclose(G, G))]:
        ok = global_of(got).tobytes() == want.tobytes() and got.distribution == a.distribution
        bad += [] if ok else [f"{tag}: {global_of(got)!r}"]
    # (the one-argument np.where is np.nonzero: test_functions_nonzero_mpi.py)
    for tag, f in [("clip ndarray bound", lambda: np.clip(a, np.zeros(7), 1))]:
        kind, got = outcome(f)
        if kind != "exc" or not (got.startswith("DapError") or got.startswith("TypeError")):
            bad.append(f"{tag}: {kind} {got}")
    collective_assert(not bad, "; ".join(bad))
