"""Review (issue 25) regressions: NumPy functions on DistArrays at edge
inputs, each against NumPy on the gathered global array, on 1..6 ranks."""
import numpy as np

from fn_helpers import compare, make
from mpi_helpers import collective_assert, outcome


def test_norm_inf_of_empty_vector_is_zero():
    """NumPy's ``norm(x, inf)`` of an empty vector is 0.0 (max with initial=0)."""
    g = np.zeros(0)
    bad = []
    for kw in (dict(), dict(dist=("c",))):
        kind, got = outcome(lambda: np.linalg.norm(make(g, **kw), np.inf))
        want = np.linalg.norm(g, np.inf)
        bad.append(f"{kw}: raised {got}" if kind == "exc" else compare(f"{kw}", got, want))
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))
