"""Hypothesis (derandomized: every rank draws the same examples, and each
check is collective, so every rank fails and shrinks alike): argmin/argmax/
nanargmin/nanargmax, count_nonzero and the float sum's same bits everywhere
on random small 2-D arrays with ties and NaN, any layout, on 1..6 ranks."""
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from fn_helpers import compare, make
from mpi_helpers import N, collective_assert, outcome

LAYOUTS = [dict(), dict(dist=("c", "n")), dict(grid_shape=(1, N)),
           dict(padding=[1, 0], periodic=[True, False])]


@st.composite
def arrays(draw):
    rows, cols = draw(st.integers(1, 9)), draw(st.integers(1, 5))
    vals = draw(st.lists(st.sampled_from([-2.0, 0.0, 1.5, 3.0, np.nan]), min_size=rows * cols,
                         max_size=rows * cols))
    return np.array(vals).reshape(rows, cols), draw(st.sampled_from(range(len(LAYOUTS))))


@settings(derandomize=True, database=None, max_examples=12, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(arrays())
def test_arg_extremes_and_counts_equal_numpy(case):
    g, layout = case
    a = make(g, **LAYOUTS[layout])
    bad = []
    for fn in (np.argmin, np.argmax, np.nanargmin, np.nanargmax, np.count_nonzero):
        for axis in (None, 0, 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = outcome(fn, g, axis=axis)
                got = outcome(fn, a, axis=axis)
            tag = f"{fn.__name__}(axis={axis}) of {g.tolist()} layout {layout}"
            if want[0] == "exc" or got[0] == "exc":
                if want[0] != got[0] or want[1].split(":")[0] != got[1].split(":")[0]:
                    bad.append(f"{tag}: NumPy {want}, got {got}")
                continue
            err = compare(tag, got[1], want[1])
            if err:
                bad.append(err)
    s = outcome(np.sum, a)
    if s[0] == "exc":
        bad.append(f"sum: {s[1]}")
    else:
        err = compare("sum", s[1], np.sum(g), exact=False)
        if err:
            bad.append(err)
    collective_assert(not bad, "; ".join(bad[:3]))
