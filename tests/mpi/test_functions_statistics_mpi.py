"""np.var/std/average (1e-12 relative: partial sums combine in rank order),
np.count_nonzero and np.argmin/argmax (exact: the global flat index, or
along axis, of the first extreme, NaN first) against NumPy on the gathered
array, warnings as NumPy's, on 1..6 ranks."""
import numpy as np
import pytest

from fn_helpers import LAYOUTS2, caught, compare, make
from mpi_helpers import collective_assert, outcome

rng = np.random.default_rng(4)
F = rng.standard_normal((7, 6)) * 10.0 ** rng.integers(-3, 3, size=(7, 6))
I = rng.integers(-5, 5, size=(7, 6))


@pytest.mark.parametrize("name,kw", LAYOUTS2, ids=[n for n, _ in LAYOUTS2])
def test_var_std_average(name, kw):
    a, i = make(F, **kw), make(I, **kw)
    w = make(np.abs(I) + 1.0, **kw)
    W = np.abs(I) + 1.0
    m = make(F > 0, **kw)
    bad = []
    for tag, f in [("var", lambda x, y, z, q: np.var(x)), ("std", lambda x, y, z, q: np.std(x)),
                   ("var int", lambda x, y, z, q: np.var(y)),
                   ("var ddof=1 axis 0", lambda x, y, z, q: np.var(x, axis=0, ddof=1)),
                   ("std axis 1 keepdims", lambda x, y, z, q: np.std(x, axis=1, keepdims=True)),
                   ("std axis (0,1)", lambda x, y, z, q: np.std(x, axis=(0, 1))),
                   ("var f4", lambda x, y, z, q: np.var(x, dtype=np.float32)),
                   ("var where", lambda x, y, z, q: np.var(x, where=q)),
                   ("std correction", lambda x, y, z, q: np.std(y, axis=0, correction=1)),
                   ("average", lambda x, y, z, q: np.average(x)),
                   ("average axis", lambda x, y, z, q: np.average(x, axis=1)),
                   ("average weights", lambda x, y, z, q: np.average(x, weights=z)),
                   ("average weights axis 0", lambda x, y, z, q: np.average(y, axis=0,
                                                                             weights=z)),
                   ("average returned", lambda x, y, z, q: np.average(x, weights=z,
                                                                       returned=True)[1]),
                   ("average returned axis", lambda x, y, z, q: np.average(x, axis=0,
                                                                           returned=True)[1]),
                   ("count_nonzero", lambda x, y, z, q: np.count_nonzero(y)),
                   ("count_nonzero axis 1", lambda x, y, z, q: np.count_nonzero(y, axis=1)),
                   ("count_nonzero keepdims", lambda x, y, z, q: np.count_nonzero(y, axis=0,
                                                                                   keepdims=True))]:
        want = f(F, I, W, F > 0)
        kind, got = outcome(lambda: f(a, i, w, m))
        if kind == "exc":
            bad.append(f"{tag}: {got}")
            continue
        err = compare(tag, got, want, exact=tag.startswith("count"))
        if err:
            bad.append(err)
    collective_assert(not bad, "; ".join(bad))


@pytest.mark.parametrize("name,kw", LAYOUTS2, ids=[n for n, _ in LAYOUTS2])
def test_argmin_argmax(name, kw):
    ties = np.zeros((7, 6))
    ties[3, 2] = ties[5, 1] = ties[6, 5] = 9.0
    ties[4, 0] = ties[1, 4] = -9.0
    nan = F.copy()
    nan[2, 3] = nan[5, 0] = np.nan
    bad = []
    for gname, g in [("floats", F), ("ties", ties), ("nan", nan), ("ints", I), ("bool", I > 2)]:
        a = make(g, **kw)
        for fn in (np.argmin, np.argmax, np.nanargmin, np.nanargmax):
            if fn in (np.nanargmin, np.nanargmax) and g.dtype.kind != "f":
                continue
            for axis, keepdims in ((None, False), (0, False), (1, False), (-1, True)):
                tag = f"{gname} {fn.__name__}(axis={axis}, keepdims={keepdims})"
                want = fn(g, axis=axis, keepdims=keepdims)
                kind, got = outcome(lambda: fn(a, axis=axis, keepdims=keepdims))
                if kind == "exc":
                    bad.append(f"{tag}: {got}")
                    continue
                err = compare(tag, got, want)
                if err:
                    bad.append(err)
    collective_assert(not bad, "; ".join(bad[:5]))


def test_warnings_and_errors_as_numpy():
    a = make(F)
    bad = []
    for tag, f in [("var ddof too large", lambda x: np.var(x, ddof=100)),
                   ("var axis ddof", lambda x: np.var(x, axis=0, ddof=7)),
                   ("argmin of all ties", lambda x: np.argmin(x * 0)),
                   ("average zero weights", lambda x: np.average(x, weights=x * 0))]:
        want = caught(lambda: f(F))
        got = caught(lambda: f(a))
        if want[1] != got[1] or (want[2] is None) != (got[2] is None) or \
                (want[2] and want[2].split(":")[0] != got[2].split(":")[0]):
            bad.append(f"{tag}: NumPy {want[1:]} got {got[1:]}")
        elif want[2] is None:
            err = compare(tag, got[0], want[0], exact=False)
            if err:
                bad.append(err)
    e = make(np.zeros((0, 3)))
    for fn in (np.argmin, np.argmax):
        want = caught(lambda: fn(np.zeros((0, 3))))[2]
        got = caught(lambda: fn(e))[2]
        if got is None or got.split(":")[0] != want.split(":")[0]:
            bad.append(f"{fn.__name__} of empty: {got} vs {want}")
    collective_assert(not bad, "; ".join(bad))
