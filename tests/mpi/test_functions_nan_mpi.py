"""nansum/nanprod/nanmin/nanmax (one reduction each, NumPy's values: sums
within 1e-12 relative), nanmean/nanvar/nanstd (1e-12 relative) with NumPy's
warnings ("All-NaN slice encountered", "Mean of empty slice", "Degrees of
freedom <= 0 for slice."), on 1..6 ranks."""
import numpy as np
import pytest

from fn_helpers import LAYOUTS2, caught, compare, make
from mpi_helpers import collective_assert

rng = np.random.default_rng(8)
G = rng.uniform(0.5, 2.0, size=(6, 7))
G[1, 2] = G[4, 6] = G[5, 0] = np.nan
ALLNAN = G.copy()
ALLNAN[:, 3] = np.nan           # an all-NaN column
ALLNAN[2, :] = np.nan           # and row

FUNCS = [np.nansum, np.nanprod, np.nanmin, np.nanmax, np.nanmean, np.nanvar, np.nanstd]


@pytest.mark.parametrize("name,kw", LAYOUTS2, ids=[n for n, _ in LAYOUTS2])
def test_nan_reductions_equal_numpy(name, kw):
    bad = []
    for gname, g in [("some NaN", G), ("all-NaN slices", ALLNAN)]:
        a = make(g, **kw)
        for fn in FUNCS:
            for axis, keepdims in ((None, False), (0, False), (1, True)):
                tag = f"{gname} {fn.__name__}(axis={axis}, keepdims={keepdims})"
                want = caught(lambda: fn(g, axis=axis, keepdims=keepdims))
                got = caught(lambda: fn(a, axis=axis, keepdims=keepdims))
                if got[2] is not None or want[1] != got[1]:
                    bad.append(f"{tag}: NumPy warned {want[1]}, got {got[1:]}")
                    continue
                exact = fn in (np.nanmin, np.nanmax)
                err = compare(tag, got[0], want[0], exact=exact)
                if err:
                    bad.append(err)
    collective_assert(not bad, "; ".join(bad[:4]))


def test_nan_keywords_and_integer_input():
    a = make(G)
    i = make(np.arange(42).reshape(6, 7))
    m = make(G > 1.0)
    bad = []
    cases = [("nansum dtype f4", lambda x, y, w: np.nansum(x, dtype=np.float32)),
             ("nansum where", lambda x, y, w: np.nansum(x, where=w)),
             ("nansum initial", lambda x, y, w: np.nansum(x, axis=0, initial=10.0)),
             ("nanmax initial", lambda x, y, w: np.nanmax(x, initial=5.0)),
             ("nanvar ddof", lambda x, y, w: np.nanvar(x, axis=1, ddof=1)),
             ("nanmean int", lambda x, y, w: np.nanmean(y, axis=0)),
             ("nanmin int", lambda x, y, w: np.nanmin(y)),
             ("nansum int", lambda x, y, w: np.nansum(y, axis=1))]
    for tag, f in cases:
        want = caught(lambda: f(G, np.arange(42).reshape(6, 7), G > 1.0))
        got = caught(lambda: f(a, i, m))
        if got[2] is not None or want[1] != got[1]:
            bad.append(f"{tag}: NumPy {want[1:]}, got {got[1:]}")
            continue
        err = compare(tag, got[0], want[0], exact=tag.startswith(("nanmax", "nanmin")) or
                      "int" in tag)
        if err:
            bad.append(err)
    collective_assert(not bad, "; ".join(bad))


def test_nanargmin_of_an_all_nan_slice_raises_everywhere():
    a = make(ALLNAN)
    bad = []
    for fn in (np.nanargmin, np.nanargmax):
        for axis in (None, 0, 1):
            want = caught(lambda: fn(ALLNAN, axis=axis))
            got = caught(lambda: fn(a, axis=axis))
            if (want[2] is None) != (got[2] is None) or (want[2] and want[2] != got[2]):
                bad.append(f"{fn.__name__}(axis={axis}): NumPy {want[2]}, got {got[2]}")
            elif want[2] is None:
                err = compare(f"{fn.__name__}(axis={axis})", got[0], want[0])
                if err:
                    bad.append(err)
    collective_assert(not bad, "; ".join(bad))
