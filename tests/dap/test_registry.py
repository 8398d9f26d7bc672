"""The DistArray function registry: no implicit gather, explicit refusals."""
import numpy as np
import pytest

import nclx.dap as dap
from nclx.dap import registry


def _da():
    return dap.DistArray.from_global(np.arange(12.).reshape(3, 4))


def test_unregistered_function_raises_naming_it_and_the_way_out():
    with pytest.raises(TypeError, match=r"np\.trapezoid is not implemented.*gather"):
        np.trapezoid(_da())


def test_asarray_refuses_instead_of_wrapping_in_an_object_array():
    with pytest.raises(TypeError, match="not implemented for nclx.dap.DistArray"):
        np.asarray(_da())


def test_registered_reduction_runs():
    assert np.sum(_da()) == 66.0
    assert np.amax(_da()) == 11.0


def test_registering_twice_is_refused():
    with pytest.raises(ValueError, match="already implemented"):
        dap.implements(np.sum)(lambda a: a)


def test_implemented_lists_names():
    names = dap.implemented()
    assert "np.sum" in names and names["np.sum"] is np.sum


def test_foreign_types_defer():
    class Other:
        pass
    assert registry.dispatch(dap.DistArray, np.sum, (dap.DistArray, Other), (), {}) \
        is NotImplemented


def test_the_docs_count_the_registry():
    """docs/dap.md and the README say how many NumPy functions a DistArray
    implements: the registry's count."""
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parents[2]
    n = len(dap.implemented())
    doc = re.search(r"(\d+) functions, in `nclx/dap/functions/`", (root / "docs/dap.md").read_text())
    readme = re.search(r"where nclx implements the function \((\d+) of them",
                       (root / "README.md").read_text())
    assert doc and readme and int(doc.group(1)) == n and int(readme.group(1)) == n
