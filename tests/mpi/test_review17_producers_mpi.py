"""Review 17 of nclx.dap.from_distarray: a strided memoryview of a whole
array whose dtype ends in padding.

NumPy's PEP 3118 format of such a dtype leaves the trailing padding out,
and NumPy's import of that format refuses it; review 16 recovered the
C-contiguous memoryviews, and a strided one (a view of every other column)
was still refused (DapError[RuntimeError] on every rank)."""
import numpy as np
import pytest

from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert

comm = MPI.COMM_WORLD

DTYPES = {
    "aligned": np.dtype([("a", "<i8"), ("b", "<i2")], align=True),
    "offset": np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f4"],
                        "offsets": [0, 4], "itemsize": 16}),
}


class _Producer:
    def __init__(self, export):
        self.export = export

    def __distarray__(self):
        return self.export


@pytest.mark.parametrize("readonly", [False, True])
@pytest.mark.parametrize("name", sorted(DTYPES))
def test_from_distarray_takes_a_strided_memoryview_of_a_padded_dtype(name, readonly):
    dt = DTYPES[name]
    g = np.zeros((2 * N + 1, 3), dt)
    g["a"] = np.arange(g.size).reshape(g.shape)
    g["b"] = -np.arange(g.size).reshape(g.shape)
    a = dap.DistArray.from_global(g, comm=comm)
    export = a.__distarray__()
    block = np.asarray(a._block)
    wide = np.zeros(block.shape[:-1] + (2 * block.shape[-1],), dt)
    wide[:, ::2] = block
    view = memoryview(wide[:, ::2])
    export = dict(export, buffer=view.toreadonly() if readonly else view)
    try:
        b = dap.from_distarray(_Producer(export), comm=comm)
        got = (b.dtype == dt, bool(np.shares_memory(b._block, wide)),
               b.gather(root=None).tobytes() == g.tobytes(),
               b._block.flags.writeable == (not readonly), wide.flags.writeable)
        ok = all(got)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        ok, got = False, f"{type(exc).__name__}: {exc}"
    collective_assert(ok, f"{name} readonly={readonly}: (dtype, shares memory, bytes, "
                          f"writeable as exported, source still writeable) {got}")


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_gather_of_a_strided_block_sends_every_byte(name):
    """A DistArray over a strided block of a dtype with bytes between or
    after its fields: the move copied the block field by field into a fresh
    buffer, so the gathered padding bytes were np.empty's garbage."""
    dt = DTYPES[name]
    g = np.zeros((2 * N + 1, 3), dt)
    g.view(np.uint8)[...] = 0x5A                      # padding bytes too
    g["a"] = np.arange(g.size).reshape(g.shape)
    a = dap.DistArray.from_global(g, comm=comm)
    block = np.asarray(a._block)
    wide = np.empty(block.shape[:-1] + (2 * block.shape[-1],), dt)
    wide.view(np.uint8)[...] = 0x5A
    wide[:, ::2] = block
    export = dict(a.__distarray__(), buffer=wide[:, ::2])
    try:
        b = dap.from_distarray(_Producer(export), comm=comm)
        got = b.gather(root=None)
        ok = got.tobytes() == g.tobytes()
        what = "" if ok else str(np.flatnonzero(np.frombuffer(got.tobytes(), np.uint8) !=
                                                np.frombuffer(g.tobytes(), np.uint8))[:8])
    except Exception as exc:  # noqa: BLE001 - compared collectively
        ok, what = False, f"{type(exc).__name__}: {exc}"
    collective_assert(ok, f"{name}: gathered bytes differ at {what}")
