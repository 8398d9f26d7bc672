"""transpose / .T / swapaxes / moveaxis / reshape / ravel of a DistArray
against NumPy on the global array, bit for bit, on any number of ranks:
a view (no data moved) when the distributed dimensions keep their order,
the documented layouts otherwise."""
import numpy as np
import pytest

from mpi_helpers import N, collective_assert, comm, global_of, rank
from nclx import dap
from nclx.dap import Distribution


def _values(shape):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1.5 - 7


def _same(r, want, what):
    full = r.gather(root=None)
    ok = full.dtype == want.dtype and full.shape == want.shape and \
        full.tobytes() == np.ascontiguousarray(want).tobytes()
    collective_assert(ok, f"{what}: {full!r} != {want!r}")


LAYOUTS = [dict(), dict(dist="c"), dict(dist=("b", "n", "c")), dict(dist=("n", "b", "n")),
           dict(padding=[1, 0, 0], dist=("b", "n", "n"))]


@pytest.mark.parametrize("kw", LAYOUTS)
def test_transpose_family_against_numpy(kw):
    g = _values((6, 4, 3))
    a = dap.DistArray.from_global(g, comm=comm, **kw)
    for axes in [None, (0, 2, 1), (2, 0, 1), (1, 0, 2), (-1, 0, -2)]:
        _same(np.transpose(a, axes), np.transpose(g, axes), f"transpose {axes} {kw}")
    _same(a.T, g.T, "T")
    _same(a.transpose(1, 2, 0), g.transpose(1, 2, 0), "method *axes")
    _same(a.transpose((1, 2, 0)), g.transpose(1, 2, 0), "method tuple")
    _same(np.swapaxes(a, 0, -1), np.swapaxes(g, 0, -1), "swapaxes")
    _same(a.swapaxes(1, 2), g.swapaxes(1, 2), "swapaxes method")
    _same(np.moveaxis(a, 0, -1), np.moveaxis(g, 0, -1), "moveaxis")
    _same(np.moveaxis(a, [0, 1], [2, 0]), np.moveaxis(g, [0, 1], [2, 0]), "moveaxis lists")


def test_transpose_keeping_the_grid_order_is_a_view():
    g = _values((8, 3))
    a = dap.DistArray.from_global(g, comm=comm, dist=("b", "n"))
    t = a.T
    want = Distribution.from_shape((3, 8), ("n", "b"), nprocs=N)
    collective_assert(t.distribution == want, f"{t.distribution}")
    collective_assert(np.shares_memory(t._block, a._block), "not a view")
    t._block[...] = -1                           # writes reach the source, as NumPy's view
    collective_assert(np.all(a.owned == -1), "view does not write through")
    back = t.redistribute("c")                   # a strided (transposed) source block moves
    _same(back, np.full((3, 8), -1.0), "redistribute of a view")


def test_transpose_that_reorders_the_grid_moves_to_the_default_layout():
    g = _values((5, 7))
    a = dap.DistArray.from_global(g, comm=comm)          # block over a balanced grid
    t = a.T
    if sum(s > 1 for s in a.distribution.grid_shape) > 1:
        want = Distribution.from_shape((7, 5), nprocs=N)
        collective_assert(t.distribution == want, f"{t.distribution}")
        collective_assert(not np.shares_memory(t._block, a._block), "shares memory")
    _same(t, g.T, "T")


@pytest.mark.parametrize("kw", [dict(), dict(dist="c"), dict(padding=[1, 1])])
def test_reshape_and_ravel_against_numpy(kw):
    g = _values((6, 10))
    try:
        a = dap.DistArray.from_global(g, comm=comm, **kw)
    except dap.DapError:
        a = dap.DistArray.from_global(g, comm=comm)      # padding wider than a block
    for shape in [(60,), (3, 20), (-1, 4), (2, 3, 10), (5, 2, 6), (60, 1)]:
        r = np.reshape(a, shape)
        want = g.reshape(shape)
        _same(r, want, f"reshape {shape}")
        d = ["b"] + ["n"] * (want.ndim - 1)
        collective_assert(r.distribution == Distribution.from_shape(want.shape, d, nprocs=N),
                          "layout: blocks of axis 0")
    _same(a.reshape(4, 15), g.reshape(4, 15), "method")
    _same(np.ravel(a), g.ravel(), "ravel")
    _same(a.ravel(), g.ravel(), "ravel method")
    _same(a.T.ravel(), g.T.ravel(), "ravel of a transpose")


def test_reshape_of_empty_and_one_element_arrays():
    a = dap.DistArray.from_global(np.zeros((0, 3)), comm=comm)
    _same(a.reshape(3, 0), np.zeros((3, 0)), "empty")
    b = dap.DistArray.from_global(np.array([4.0]), comm=comm)
    if N == 1:
        r = b.reshape(())
        collective_assert(r.shape == () and r._block[()] == 4.0, "0-d")
    else:
        with pytest.raises(dap.DapError, match="a 0-d DistArray needs one rank"):
            b.reshape(())


def test_layout_bad_input_raises_on_every_rank():
    a = dap.DistArray.from_global(_values((4, 6)), comm=comm)
    for fn, args, exc, text in [
            (np.reshape, ((5, 5),), ValueError, "cannot reshape array of size 24"),
            (np.reshape, ((-1, -1),), ValueError, "one unknown dimension"),
            (np.transpose, ((0, 0),), ValueError, "repeated axis"),
            (np.transpose, ((1,),), ValueError, "do not match"),
            (np.swapaxes, (0, 2), np.exceptions.AxisError, "out of bounds"),
            (np.moveaxis, ([0], [0, 1]), ValueError, "same number")]:
        with pytest.raises(exc, match=text):
            fn(a, *args)
    with pytest.raises(ValueError, match="order must be one of"):
        np.reshape(a, (24,), order="X")
    # copy=False where elements move (each rank's cyclic rows are not one
    # range of the flat index); where none moves it is a view
    # (test_review14_dap_mpi.py)
    c = dap.DistArray.from_global(_values((2 * N, 3)), comm=comm, dist=("c", "n"))
    if N > 1:
        with pytest.raises(dap.DapError, match="copy=False: this reshape moves elements"):
            np.reshape(c, (-1,), copy=False)


@pytest.mark.parametrize("shape, new", [((4, 6), (24,)), ((4, 6), (3, 8)), ((2, 3, 4), (4, -1)),
                                        ((5, 7), (7, 5)), ((6,), (2, 3))])
@pytest.mark.parametrize("layout", [{}, dict(dist="c")])
def test_reshape_and_ravel_in_fortran_order(shape, new, layout):
    """order='F' (was: DapError): NumPy's elements bit for bit; 'A' and 'K'
    read as 'C'."""
    g = _values(shape)
    if len(shape) == 1:
        layout = {k: v[:1] if isinstance(v, tuple) else v for k, v in layout.items()}
    a = dap.DistArray.from_global(g, comm=comm, **layout)
    got = global_of(np.reshape(a, new, order="F"))
    want = np.reshape(g, new, order="F")
    collective_assert(got.shape == want.shape and got.tobytes() == want.tobytes(),
                      f"{got} != {want}")
    got = global_of(np.ravel(a, order="F"))
    collective_assert(got.tobytes() == np.ravel(g, order="F").tobytes(), "ravel F")
    for order in ("A", "K"):
        got = global_of(np.reshape(a, new, order=order)) if order == "A" else \
            global_of(np.ravel(a, order=order))
        want = np.reshape(g, new, order=order) if order == "A" else np.ravel(g, order=order)
        collective_assert(got.tobytes() == want.tobytes(), f"order {order}")
