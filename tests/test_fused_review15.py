"""Review 15 of nclx.evaluate and @nclx.fuse: each test failed before its fix."""
import functools
import warnings

import numpy as np
import pytest

import nclx

N = 100_000


def _outcome(thunk):
    """(result's type, dtype, shape, bits; exception type and message; warnings)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            r = thunk()
        except Exception as exc:              # noqa: BLE001 -- compared with eager NumPy's
            return None, (type(exc), str(exc)), [(w.category, str(w.message)) for w in seen]
    got = None
    if r is not None:
        got = (type(r), np.asarray(r).dtype, np.shape(r), np.asarray(r).tobytes(),
               np.asarray(r).dtype.metadata)
    return got, None, [(w.category, str(w.message)) for w in seen]


def _as_eager(fused, plain, *args):
    assert _outcome(lambda: fused(*args)) == _outcome(lambda: plain(*args))


# -- a reduction's axis that NumPy refuses ------------------------------------

def _sum_float_axis(x):
    return np.sum(x * 2.0, axis=0.0)


def _method_sum_float_axis(x):
    return (x * 2.0).sum(-1.0)


def _reduce_np_float_axis(x):
    return np.multiply.reduce(x * 0.5, np.float32(0))


def _sum_bool_axis(x):
    return np.sum(x + 1.0, axis=False)


def _sum_tuple_float_axis(x):
    return np.add.reduce(x - 1.0, axis=(0.0,))


@pytest.mark.parametrize("fn", [_sum_float_axis, _method_sum_float_axis, _reduce_np_float_axis,
                                _sum_bool_axis, _sum_tuple_float_axis])
def test_a_reduction_over_an_axis_numpy_refuses_raises_as_numpy(fn):
    """NumPy hands a reduction's axis to __array_ufunc__ unchecked: the
    probe took 0.0, -1.0, np.float32(0), False as axis 0, and the fused
    call returned a sum where eager NumPy raises TypeError."""
    x = np.linspace(-1, 1, N)
    f = nclx.fuse(fn)
    _as_eager(f, fn, x)
    assert "axis" in f.explain(x)


def test_evaluate_sum_over_a_float_axis_raises_as_numpy():
    x = np.linspace(-1, 1, N)
    for ex in ("sum(x * 2, 0.0)", "prod(x * 0.5, -1.0)"):
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            nclx.evaluate(ex, {"x": x}, {})


def test_integer_axes_still_fuse():
    x = np.linspace(-1, 1, N)

    def f(x):
        return np.sum(x * 2.0, axis=np.int8(0))
    fz = nclx.fuse(f)
    assert fz.explain(x) == "fused"
    _as_eager(fz, f, x)


# -- arrays in tuples, dtypes with metadata ----------------------------------

T = (np.array(2.0),)


def _times_t(x):
    return x * T[0]


def test_a_tuple_global_holding_an_array_is_not_frozen():
    """A tuple's array was keyed by its dtype and ndim alone: rebinding the
    global to another tuple, or changing the array in place, served the
    first trace's constant."""
    global T
    x = np.linspace(-1, 1, N)
    f = nclx.fuse(_times_t)
    before = T
    try:
        _as_eager(f, _times_t, x)
        T = (np.array(3.0),)
        _as_eager(f, _times_t, x)
        T[0][()] = 4.0
        _as_eager(f, _times_t, x)
        assert "tuple" in f.explain(x)
    finally:
        T = before


def test_defaults_and_partials_holding_an_array_in_a_tuple_are_not_frozen():
    x = np.linspace(-1, 1, N)

    def d(x, k=(np.array(2.0),)):
        return x * k[0]

    def h(x, k):
        return x * k[0]
    p = functools.partial(h, k=(np.array(2.0),))
    for fn, held in ((d, d.__defaults__[0][0]), (p, p.keywords["k"][0])):
        f = nclx.fuse(fn)
        _as_eager(f, fn, x)
        held[()] = 6.0
        _as_eager(f, fn, x)


DT = np.dtype(np.float64)


def _times_dt(x):
    return np.asarray(2.0, dtype=DT) * x


def test_a_dtype_with_metadata_is_kept_as_eager():
    """np.asarray(2.0, dtype=dt) * x keeps dt's metadata eagerly; the plan's
    result dtype is made from a type character and lost it (and dtypes
    equal but for metadata shared a plan)."""
    global DT
    x = np.linspace(-1, 1, N)
    f = nclx.fuse(_times_dt)
    before = DT
    try:
        for DT in (np.dtype(np.float64), np.dtype(np.float64, metadata={"unit": "m"}),
                   np.dtype(np.float64)):
            _as_eager(f, _times_dt, x)
        assert f(x).dtype.metadata is None

        def inline(x):
            return np.asarray(2.0, dtype=np.dtype(np.float64, metadata={"k": 1})) * x
        _as_eager(nclx.fuse(inline), inline, x)
    finally:
        DT = before


# -- a probe's __dict__ -------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x: x * (2.0 if hasattr(x, "__dict__") else 3.0),
    lambda x: x * len(vars(x)),
    lambda x: x * (2.0 if "_nclx_tape" in dir(x) else 3.0),
], ids=["hasattr", "vars", "dir"])
def test_a_probes_dict_is_not_seen(fn):
    """An ndarray has no __dict__; the probe's (nclx's own attributes) was
    handed out: hasattr() and dir() took the other branch, vars() returned
    instead of raising TypeError."""
    x = np.linspace(-1, 1, N)
    _as_eager(nclx.fuse(fn), fn, x)


# -- NumPy scalar subclasses --------------------------------------------------

class _NoUfuncs(np.float64):
    __array_ufunc__ = None


def test_a_numpy_scalar_subclass_does_not_share_its_base_types_plan():
    """A np.float64 subclass was keyed as the np.float64 of its bits: after
    a call with np.float64(2.0), evaluate("a * k") with a subclass that
    refuses ufuncs returned the product where NumPy raises TypeError."""
    a = np.linspace(-1, 1, N)
    for k in (np.float64(2.0), _NoUfuncs(2.0)):
        for ex in ("a * k", "k * a + 1"):
            with np.errstate(all="ignore"):
                want = _outcome(lambda: eval(ex, {}, {"a": a, "k": k}))   # noqa: S307
                assert _outcome(lambda: nclx.evaluate(ex, {"a": a, "k": k}, {})) == want
    assert _outcome(lambda: nclx.evaluate("a * k", {"a": a, "k": _NoUfuncs(2.0)}, {}))[1][0] \
        is TypeError


# -- code reached through a closure cell, a default or a partial -------------

def _logged(g):
    @functools.wraps(g)
    def wrapper(*args):
        return g(*args)
    return wrapper


def _branch_on_type(x):
    if type(x) is np.ndarray:
        return x * 2.0
    return x * 3.0


def _log_or_zero(x):
    try:
        return np.log(x)
    except FloatingPointError:
        return x * 0.0


def _default_holds(x, h=_branch_on_type):
    return h(x)


def _exact_default(x, t=type):
    return x * (2.0 if t(x) is np.ndarray else 3.0)


def _exact_cell():
    t = type

    def f(x):
        return x * (2.0 if t(x) is np.ndarray else 3.0)
    return f


@pytest.mark.parametrize("fn", [_logged(_branch_on_type), functools.partial(_branch_on_type),
                                _default_holds, _exact_default, _exact_cell()],
                         ids=["decorated", "partial", "default", "type-default", "type-cell"])
def test_type_reached_through_a_cell_default_or_partial_runs_eagerly(fn):
    """The type() scan followed global functions only: a decorated function
    (its wrapper calls it through a closure cell), a partial, a function
    held in a default, and type itself bound in a cell or default were
    traced on probes, whose type is no ndarray: the other branch."""
    x = np.linspace(-1, 1, N)
    f = nclx.fuse(fn)
    _as_eager(f, fn, x)
    assert "type()" in f.explain(x)


@pytest.mark.parametrize("fn", [_logged(_log_or_zero), functools.partial(_log_or_zero)],
                         ids=["decorated", "partial"])
def test_a_handler_reached_through_a_cell_or_partial_runs_eagerly(fn):
    x = np.linspace(-1, 1, N)
    f = nclx.fuse(fn)
    with np.errstate(all="raise"):
        _as_eager(f, fn, x)


K = 2.0


def _times_k(x):
    return x * K


def test_the_globals_of_a_decorated_function_are_keyed():
    """A decorator's wrapper reads the function it wraps from a closure
    cell: the key held that function by identity, not its globals, so
    rebinding a global it reads served the old plan."""
    global K
    x = np.linspace(-1, 1, N)
    fns = [_logged(_times_k), functools.partial(_logged(_times_k)),
           functools.partial(lambda g, x: g(x), _times_k)]
    fused = [nclx.fuse(fn) for fn in fns]
    before = K
    try:
        for K in (2.0, 3.0, 2.0):
            for f, fn in zip(fused, fns):
                _as_eager(f, fn, x)
        assert fused[0].explain(x) == "fused"
    finally:
        K = before


def test_a_recursive_closure_still_fuses():
    def outer():
        def f(x, n=2):
            return x * 2.0 if n == 0 else f(x, n - 1)
        return f
    f = outer()
    x = np.linspace(-1, 1, N)
    assert nclx.fuse(f).explain(x) == "fused"
    _as_eager(nclx.fuse(f), f, x)
