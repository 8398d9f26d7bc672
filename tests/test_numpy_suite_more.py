"""Acceptance, wider: more of NumPy's own test modules pass with nclx
installed -- the recycling allocator on too (``install(recycle=True)``) --
with no failure that the same run without nclx does not have.  The modules
exercise what install() routes beyond test_numpy_suite.py's: item selection
(take/put/choose/compress), NumPy's Python functions over many ufuncs and
reductions (function_base, nanfunctions, arraysetops), scalar and NEP 50
promotion, and the allocator policy API itself.  (Review 26 ran about 30,000
of NumPy's tests this way and found no difference; this keeps a part of it.)"""
import pytest

from test_numpy_suite import _ran_alike, _run

MODULES = ["numpy._core.tests.test_item_selection", "numpy.lib.tests.test_function_base",
           "numpy.lib.tests.test_nanfunctions", "numpy.lib.tests.test_arraysetops",
           "numpy._core.tests.test_mem_policy", "numpy._core.tests.test_nep50_promotions"]


@pytest.mark.numpy_suite
def test_more_numpy_modules_pass_with_nclx_installed_and_recycling(tmp_path, monkeypatch):
    run0 = rc0, passed0, failed0, out0 = _run(False, tmp_path, MODULES)
    monkeypatch.setenv("NCLX_SUITE_RECYCLE", "1")
    run1 = rc1, passed1, failed1, out1 = _run(True, tmp_path, MODULES)
    assert "[nclx] installed" in out1, out1[-2000:]
    assert "every NumPy loop restored" in out1, out1[-2000:]
    assert passed1 > 2500, f"too few tests ran with nclx: {passed1}"
    assert _ran_alike(run0, run1), \
        (passed0, sorted(failed0), passed1, sorted(failed1))
    new = failed1 - failed0
    assert not new, f"fail only with nclx installed: {sorted(new)[:20]}"
