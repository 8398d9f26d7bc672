"""nclx.dap leftovers of the sixteenth review (each test failed on the code
before its fix, at 1, 2 and 3 ranks):

- G1: structured dtypes with bytes between or after their fields (an
  offset layout, an aligned one): NumPy's copy of such an item copies its
  fields only, and ``DistArray.from_global`` (the every-rank form) cut its
  blocks with such a copy, so ``from_global(a).gather()`` held other bytes
  than ``a`` where gather and redistribute keep every byte; the halo
  exchange packed and unpacked its cells with such copies too, so the
  halo cells' gap bytes were not the owner's.  Now both copy items as raw
  bytes (both exchange forms, both transports);
- G2: ``nclx.dap.from_distarray`` refused a buffer whose structured dtype
  ends in padding (DapError[RuntimeError]: NumPy's PEP 3118 format of that
  dtype leaves the trailing padding out and NumPy's import of it refuses
  the item size): an ndarray buffer, or a C-contiguous memoryview of one,
  is now taken with its dtype exactly;
- G3: max/min/nanmax/nanmin (and ``np.maximum.reduce``) of an EMPTY complex
  DistArray into a real out=: NumPy warns its ComplexWarning before its
  "zero-size array to reduction operation ... which has no identity"
  ValueError; nclx raised the ValueError only (the probe that counts
  NumPy's ComplexWarnings was refused by NumPy and counted none).
"""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank
from nclx.dap.distribution import dims_create

comm = MPI.COMM_WORLD
CW = np.exceptions.ComplexWarning

#: bytes between the fields and after them (offsets, itemsize)
OFFSET = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"], "offsets": [0, 8],
                   "itemsize": 24})
#: NumPy's aligned layout: 7 bytes between the fields
ALIGNED = np.dtype([("a", "u1"), ("b", "<f8")], align=True)
#: bytes after the fields only (a nested record inside, with its own gap)
NESTED = np.dtype({"names": ["r", "c"], "formats": [ALIGNED, "u1"], "offsets": [0, 16],
                   "itemsize": 20})
DTYPES = {"offset": OFFSET, "aligned": ALIGNED, "nested": NESTED}


def _raw(a):
    return a.view(np.dtype((np.void, a.dtype.itemsize)))


def _gapped(shape, dtype):
    """An array whose every byte (gaps included) is a nonzero pattern."""
    n = int(np.prod(shape, dtype=np.int64))
    raw = ((np.arange(n * dtype.itemsize) * 7) % 251 + 1).astype(np.uint8)
    return np.frombuffer(raw.tobytes(), dtype).reshape(shape)


def _wanted(g, da):
    """The raw bytes every cell of this rank's block must hold: the global
    cell it mirrors (periodic indices wrapped)."""
    idx = [m.global_from_local(np.arange(m.local_size)) % n
           for m, n in zip(da.distribution.maps(rank), g.shape)]
    return _raw(g)[np.ix_(*idx)].tobytes()


LAYOUTS = {
    "1d": ((3 * N + 2,), {"padding": [2], "periodic": [True]}),
    "2d": ((2 * N + 3, 5), {"dist": ("b", "b"), "grid_shape": dims_create(N, 2),
                            "padding": [1, 1], "periodic": [True, False]}),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("root", [None, 0, "last"])
@pytest.mark.parametrize("name", list(DTYPES))
def test_from_global_keeps_every_byte(name, root, layout):
    shape, kw = LAYOUTS[layout]
    g = _gapped(shape, DTYPES[name])
    r = N - 1 if root == "last" else root
    a = dap.DistArray.from_global(g if r is None or rank == r else None, comm=comm, root=r,
                                  **kw)
    wrong = []
    if a._block.tobytes() != _wanted(g, a):
        wrong.append("the block (padding included) is not the global array's bytes")
    if a.gather(root=None).tobytes() != g.tobytes():
        wrong.append("from_global(a).gather() is not a byte for byte")
    back = a.redistribute(dist=("b",) + ("n",) * (len(shape) - 1))
    if back.gather(root=None).tobytes() != g.tobytes():
        wrong.append("redistributed and gathered: not a byte for byte")
    collective_assert(not wrong, f"{name} root={root} {layout}: " + "; ".join(wrong))


def _scribbled(g, kw):
    """A DistArray of ``g``'s layout whose counted cells hold ``g``'s bytes
    (written raw, so independent of from_global) and whose communication
    padding holds 0xEE in every byte."""
    a = dap.DistArray.from_shape(g.shape, dtype=g.dtype, comm=comm, **kw)
    a._block.view(np.uint8)[...] = 0xEE
    want = np.frombuffer(_wanted(g, a), np.dtype((np.void, g.dtype.itemsize)))
    own = a.distribution.owned_slices(rank)
    _raw(a._block)[own] = want.reshape(a._block.shape)[own]
    return a, want


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("form", ["exchange_halos", "start-wait", "packed", "datatype"])
@pytest.mark.parametrize("name", list(DTYPES))
def test_halo_cells_hold_every_byte_of_the_owners(name, form, layout):
    shape, kw = LAYOUTS[layout]
    g = _gapped(shape, DTYPES[name])
    a, want = _scribbled(g, kw)
    for _ in range(2):              # the cached plan's second exchange too
        if form == "exchange_halos":
            a.exchange_halos()
        elif form == "start-wait":
            a.start_halo_exchange().wait()
        else:
            dap.exchange_halos(a, method=form)
        ok = a._block.tobytes() == want.tobytes()
        collective_assert(ok, f"{name} {form} {layout}: halo cells differ from their owners' "
                              f"bytes")
        _raw(a._block)[...] = want.reshape(a._block.shape)
        own = a.distribution.owned_slices(rank)
        keep = _raw(a._block)[own].copy()
        a._block.view(np.uint8)[...] = 0xEE
        _raw(a._block)[own] = keep


class _Producer:
    """A DAP producer exporting another object's buffer."""

    def __init__(self, export):
        self.export = export

    def __distarray__(self):
        return self.export


@pytest.mark.parametrize("kind", ["ndarray", "memoryview", "read-only memoryview"])
@pytest.mark.parametrize("name", ["offset", "aligned", "nested"])
def test_from_distarray_takes_a_dtype_ending_in_padding(name, kind):
    g = _gapped((2 * N + 1, 3), DTYPES[name])
    a = dap.DistArray.from_global(g, comm=comm, padding=[1, 0])
    export = a.__distarray__()
    if kind != "ndarray":
        view = memoryview(export["buffer"])
        export = dict(export, buffer=view.toreadonly() if kind.startswith("read") else view)
    try:
        b = dap.from_distarray(_Producer(export), comm=comm)
        got = (b.dtype == g.dtype and b.dtype.itemsize == g.dtype.itemsize,
               bool(np.shares_memory(b._block, a._block)),
               b.gather(root=None).tobytes() == g.tobytes(),
               b._block.flags.writeable == (kind != "read-only memoryview"))
        ok = all(got)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        ok, got = False, f"{type(exc).__name__}: {exc}"
    collective_assert(ok, f"{name} {kind}: (dtype, shares memory, bytes, writeable) {got}")


def _outcome(fn, x, out):
    """(warnings as (category, message) in order, (error type, message))."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            fn(x, out=out)
            err = None
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            err = (type(exc).__name__, str(exc))
    return [(w.category.__name__, str(w.message)) for w in seen], err


EXTREMES = {"max": np.max, "min": np.min, "nanmax": np.nanmax, "nanmin": np.nanmin,
            "maximum.reduce": lambda x, **k: np.maximum.reduce(x, axis=None, **k),
            "method max": lambda x, **k: x.max(**k)}


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3 * N, 0)])
@pytest.mark.parametrize("odt", ["f8", "i8"])
@pytest.mark.parametrize("fname", list(EXTREMES))
def test_empty_complex_extreme_into_real_out_warns_as_numpy(fname, odt, shape):
    fn = EXTREMES[fname]
    g = np.zeros(shape, np.complex128)
    want = _outcome(fn, g, np.zeros((), odt))
    got = _outcome(fn, dap.DistArray.from_global(g, comm=comm), np.zeros((), odt))
    collective_assert(want == got, f"{fname} {shape} into {odt}: NumPy {want}, nclx {got}")


@pytest.mark.parametrize("fname", ["max", "nanmin", "method max"])
def test_empty_complex_axis_extreme_into_real_distarray_out(fname):
    fn = EXTREMES[fname]
    g = np.zeros((0, 2 * N + 1), np.complex64)
    want = _outcome(lambda x, out: fn(x, axis=0, out=out), g, np.zeros(g.shape[1], "f4"))
    da = dap.DistArray.from_global(g, dist=("n", "b"), comm=comm)
    out = np.zeros_like(da.sum(axis=0), dtype="f4")
    got = _outcome(lambda x, out: fn(x, axis=0, out=out), da, out)
    collective_assert(want == got, f"{fname}: NumPy {want}, nclx {got}")


@pytest.mark.parametrize("fname", ["max", "nanmax"])
def test_empty_complex_extreme_complexwarning_as_error_on_every_rank(fname):
    fn = EXTREMES[fname]
    da = dap.DistArray.from_global(np.zeros((0,), np.complex128), comm=comm)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CW)
        try:
            fn(da, out=np.zeros((), "f8"))
            got = "no error"
        except CW:
            got = "ComplexWarning"
        except Exception as exc:  # noqa: BLE001 - compared collectively
            got = f"{type(exc).__name__}: {exc}"
    collective_assert(got == "ComplexWarning", f"{fname}: {got} (NumPy raises its "
                                               f"ComplexWarning)")
    # the communicator is usable afterwards: nobody was left in a collective
    assert float(dap.DistArray.from_global(np.arange(4.0), comm=comm).sum()) == 6.0
