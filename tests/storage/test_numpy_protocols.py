"""NumPy's ufunc protocol on storages (``__array_ufunc__``): results laid out
like the operands on the device too, in-place methods marking the side they
wrote, and NotImplemented for a foreign operand -- an input, ``out=`` or
``where=`` -- so that type is asked.  (``__array_function__``'s deferral is
tested in tests/test_aware.py.)"""

import numpy as np
import pytest

import nclx.storage as ns
from nclx.storage import Storage
from storage_helpers import emu  # noqa: F401  (emu: a fixture)


@pytest.mark.parametrize("op", ["add", "neg", "compare", "divmod", "reduce_keepdims",
                                "accumulate", "0d"])
def test_device_only_ufunc_results_keep_the_operands_metadata(emu, op):
    """A GPUStorage (device buffer only) computes with the device backend's
    ufuncs; like host storages, a result with the operand's shape must keep
    its dims, halo, layout and strides (and 0-d results be storages too)."""
    values = np.arange(12.0).reshape(3, 4)
    if op == "0d":
        g = ns.storage(np.array(2.0), device="gpu", managed=None)
        h = ns.storage(np.array(2.0))
        assert isinstance(h + 1, Storage), "host reference"
        r = g + 1
        assert isinstance(r, ns.GPUStorage), f"0-d result is {type(r).__name__}"
        return
    g = ns.storage(values, device="gpu", managed=None, halo=((1, 1), (2, 1)), layout=(1, 0),
                   alignment_size=64, dims="JK")
    assert isinstance(g, ns.GPUStorage)
    f = {"add": lambda x: x + 1, "neg": lambda x: -x, "compare": lambda x: x > 3,
         "divmod": lambda x: np.divmod(x, 5)[0], "reduce_keepdims":
         lambda x: np.add.reduce(x, axis=0, keepdims=True), "accumulate": np.add.accumulate}[op]
    r = f(g)
    want = f(values)
    assert isinstance(r, ns.GPUStorage), type(r)
    np.testing.assert_array_equal(np.asarray(r.to_cupy()), want)
    if op == "reduce_keepdims":
        assert r.dims == g.dims and r.halo == ((0, 0), (2, 1))
        return
    assert r.dims == g.dims, f"dims {r.dims} != {g.dims}"
    assert r.halo == g.halo, f"halo {r.halo} != {g.halo}"
    assert r.layout == g.layout, f"layout {r.layout} != {g.layout}"
    if r.dtype == g.dtype:
        assert r.strides == g.strides, f"strides {r.strides} != {g.strides}"


@pytest.mark.parametrize("method", ["at", "out_tuple", "reduce_out", "accumulate_out"])
def test_in_place_ufunc_methods_mark_the_host_modified(emu, method):
    """np.add.at(m, ...) and out= of reduce/accumulate write the host side of
    a managed storage: the device side must see the change afterwards."""
    m = ns.storage(np.zeros((3, 4)), device="gpu")
    m.synchronize()
    want = np.zeros((3, 4))
    if method == "at":
        np.add.at(m, (0, [0, 0, 1]), 1.0)
        np.add.at(want, (0, [0, 0, 1]), 1.0)
    elif method == "out_tuple":
        np.add(m, 2.0, out=(m,))
        want += 2.0
    elif method == "reduce_out":
        np.add.reduce(np.ones((5, 3, 4)), axis=0, out=m)
        want[...] = 5.0
    else:
        np.add.accumulate(np.ones((3, 4)), axis=0, out=m)
        want[...] = np.add.accumulate(np.ones((3, 4)), axis=0)
    np.testing.assert_array_equal(np.asarray(m.to_cupy()), want,
                                  err_msg="the device side did not see the host write")
    np.testing.assert_array_equal(np.asarray(m), want)


class _Foreign:
    """An array type of someone else's, handling every ufunc call."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("foreign", ufunc.__name__, method)


class _Refusing:
    """An array type of someone else's that handles nothing."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return NotImplemented


def _placed(where, s, other):
    """(inputs, kwargs) of np.add with ``other`` as an input, out= or where=."""
    if where == "input":
        return (s, other), {}
    if where == "out":
        return (s, 1.0), {"out": (other,)}
    if where == "out_bare":
        return (s, 1.0), {"out": other}
    return (s, 1.0), {"where": other}


@pytest.mark.parametrize("where", ["input", "out", "out_bare", "where"])
def test_a_foreign_operand_gets_notimplemented_and_numpy_asks_its_type(where):
    """NumPy's protocol: a storage's __array_ufunc__ returns NotImplemented
    when an operand of another array type takes part (an input, an out= or
    a where=), so that type's own __array_ufunc__ is asked next."""
    s = ns.zeros((3,), halo=1)
    inputs, kwargs = _placed(where, s, _Foreign())
    assert s.__array_ufunc__(np.add, "__call__", *inputs, **kwargs) is NotImplemented
    assert np.add(*inputs, **kwargs) == ("foreign", "add", "__call__")
    np.testing.assert_array_equal(np.asarray(s), 0.0)      # nothing computed


@pytest.mark.parametrize("where", ["input", "out", "where"])
def test_when_nobody_handles_the_call_numpy_raises_its_typeerror(where):
    s = ns.zeros((3,))
    inputs, kwargs = _placed(where, s, _Refusing())
    with pytest.raises(TypeError, match="__array_ufunc__"):
        np.add(*inputs, **kwargs)


def test_operators_and_methods_defer_to_a_foreign_operand():
    s = ns.zeros((2, 3))
    f = _Foreign()
    assert s + f == ("foreign", "add", "__call__")
    assert f * s == ("foreign", "multiply", "__call__")
    assert np.add.reduce(s, out=f) == ("foreign", "add", "reduce")
    assert np.add.accumulate(s, out=(f,)) == ("foreign", "add", "accumulate")


def test_storages_ndarrays_and_scalars_are_not_foreign_anywhere():
    """Inputs, out= and where= that are storages, ndarrays, NumPy scalars or
    Python numbers are computed, as NumPy computes them."""
    a = np.arange(6.0).reshape(2, 3)
    s = ns.storage(a, halo=((1, 0), (0, 1)))
    mask = ns.storage(np.array([[True, False, True], [False, True, True]]))
    out = ns.full((2, 3), -1.0)
    got = np.add(s, np.float64(2.5), out=(out,), where=mask)
    want = np.full((2, 3), -1.0)
    np.add(a, 2.5, out=want, where=np.asarray(mask))
    assert got is out
    np.testing.assert_array_equal(np.asarray(out), want)
    plain = np.zeros((2, 3))
    assert np.multiply(s, 2, out=plain, where=np.asarray(mask)) is plain
    np.testing.assert_array_equal(plain, np.where(np.asarray(mask), a * 2, 0.0))


def test_a_storage_only_in_where_still_gives_a_storage_result():
    """NumPy asks a where= storage too: with out= an ndarray the result is
    that ndarray; without out= the fresh result is wrapped as a storage."""
    mask = ns.storage(np.array([True, False, True]))
    out = np.full(3, 7.0)
    assert np.add(np.ones(3), 1.0, out=out, where=mask) is out
    np.testing.assert_array_equal(out, [2.0, 7.0, 2.0])
    with pytest.warns(UserWarning, match="'where' used without 'out'"):
        r = np.add(np.ones(3), 1.0, where=mask)
    assert isinstance(r, ns.CPUStorage) and r.dims == ("I",) and r.halo == ((0, 0),)
