"""A gt4py.cartesian stencil (pure-Python "numpy" backend) runs on nclx
storages, origin taken from their halo, and gives what it gives on gt4py's
own storages.

gt4py reads a field through ``np.asarray`` (our ``__array_interface__``),
``__gt_dims__`` and ``__gt_origin__`` (in I, J, K order).  tools/test
installs gt4py (tools/requirements-interop.txt); elsewhere these tests skip
with the reason.
"""
import os
import shutil

import numpy as np
import pytest

import nclx.storage as st

# gt4py's dependencies (dace, ...) warn about their own deprecations on import
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def gt(tmp_path_factory):
    try:
        import gt4py.storage  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"gt4py is not installed ({exc}); tools/test installs it")
    # gt4py.cartesian runs `c++ --version` on import (the numpy backend never
    # compiles): give it a harmless command where no C++ compiler exists.
    if not os.environ.get("CXX") and shutil.which("c++") is None:
        os.environ["CXX"] = shutil.which("true") or "/bin/true"
    os.environ.setdefault("GT_CACHE_ROOT", str(tmp_path_factory.mktemp("gt_cache")))
    from gt4py.cartesian import gtscript
    import gt4py.storage as gs

    @gtscript.stencil(backend="numpy")
    def smooth(inp: gtscript.Field[np.float64], out: gtscript.Field[np.float64]):
        with computation(PARALLEL), interval(...):  # noqa: F821 (gtscript names)
            out = inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0] - 4 * inp[0, 0, 0]  # noqa: F841

    return gs, smooth


DATA = np.random.default_rng(7).standard_normal((10, 9, 4))


def _reference(gs, smooth):
    inp = gs.zeros(DATA.shape, np.float64, backend="numpy", aligned_index=(1, 1, 0),
                   dimensions="IJK")
    out = gs.zeros(DATA.shape, np.float64, backend="numpy", aligned_index=(1, 1, 0),
                   dimensions="IJK")
    inp[...] = DATA
    smooth(inp, out, origin=(1, 1, 0), domain=(8, 7, 4))
    return np.asarray(out)


@pytest.mark.parametrize("defaults", [None, "gtx86", "gtcuda", "F"])
def test_stencil_on_nclx_storages_equals_gt4py_storages(gt, defaults):
    gs, smooth = gt
    expected = _reference(gs, smooth)
    kw = dict(halo=((1, 1), (1, 1), (0, 0)), alignment_size=64)
    if defaults:
        kw["defaults"] = defaults
    inp = st.storage(DATA, **kw)
    out = st.zeros(DATA.shape, **kw)
    smooth(inp, out)                     # no origin=, no domain=: both from the halo
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_stencil_on_kji_storages(gt):
    """dims KJI: gt4py transposes by __gt_dims__ and reads __gt_origin__ in IJK order."""
    gs, smooth = gt
    expected = _reference(gs, smooth)
    kji = np.ascontiguousarray(DATA.transpose(2, 1, 0))
    kw = dict(dims="KJI", halo=((0, 0), (1, 1), (1, 1)))
    inp = st.storage(kji, **kw)
    out = st.zeros(kji.shape, **kw)
    smooth(inp, out)
    np.testing.assert_array_equal(np.asarray(out).transpose(2, 1, 0), expected)
