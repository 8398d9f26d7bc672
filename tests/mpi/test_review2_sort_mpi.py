"""Review 2 (issue 25): the sample sort's NaN bits, against NumPy on the
gathered global array, on 1..6 ranks."""
import numpy as np

from fn_helpers import compare, make
from mpi_helpers import collective_assert, outcome


def test_a_nan_of_other_bits_keeps_its_bits():
    """A NaN that is not NumPy's canonical one (``-nan``) in a 1-D block
    array: ``np.sort(kind='stable')`` keeps its bits as NumPy's stable sort
    does (the module doc's promise), ``np.median``/``np.percentile`` give
    that NaN as NumPy's do.  Before: a rank holding one such NaN sorted its
    block with NumPy's default kind, which makes every NaN the canonical
    one (SIMD sorts), so the result had ``+nan``'s bits."""
    g = np.arange(12.0)
    g[5] = -np.nan
    bad = []
    for tag, f in [("sort stable", lambda x: np.sort(x, kind="stable")),
                   ("median", np.median), ("percentile", lambda x: np.percentile(x, 40))]:
        kind, got = outcome(lambda: f(make(g)))
        bad.append(f"{tag}: raised {got}" if kind == "exc" else compare(tag, got, f(g)))
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))
