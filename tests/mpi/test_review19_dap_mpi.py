"""Defects found in the nineteenth look at nclx.dap (each test failed on the
code before its fix, at the rank counts it says):

- R1: ``load_npy``/``save_npy`` of a FIFO hung for ever: rank 0 blocked in
  ``open()`` (a FIFO opens only once the other end is opened) while the
  others waited in a collective.  Now refused on every rank, naming the
  FIFO (MPI-IO reads and writes at offsets, which a pipe cannot serve);
- R2: ranks passing different ``padding=``/``block_size=`` to ``load_npy``
  were told "the ranks disagree on the Distribution" with the same
  shape/dist/grid printed for every rank; now each rank's padding,
  block_size and periodic are named (2+ ranks);
- R3: ``DistArray.from_global`` compared ``dist`` and keywords by repr:
  ``padding=[np.int64(1)]`` on one rank and ``[1]`` on another, or a list
  against a tuple, were refused as a disagreement (``redistribute`` and
  ``load_npy`` take them); now compared by value (2+ ranks);
- R4: one file named ``d/x.npy`` on one rank and ``d/./x.npy`` (or as
  bytes) on another was refused although the docs compare absolute paths
  (2+ ranks);
- R5: a format-3.0 header longer than ``max_header_size`` and longer than
  the file was reported as over the limit ("pass a larger max_header_size")
  where np.load reports the end of file;
- R6: an export with ``'one_to_one': True`` whose 'u' indices several ranks
  hold was imported without complaint (DAP 0.10: such an index "shall be
  located in exactly one local indices buffer"); now refused on every rank
  naming the dimension and ``one_to_one`` (2+ ranks);
- R7: ``np.unique`` of a complex DistArray whose owned cells are a strided
  view (padding): the byte view of the owned cells raised on the ranks
  holding such a block, while the others waited in an Allreduce for ever
  (2 ranks) or all raised where NumPy succeeds (3 ranks);
- R8: ``np.nanquantile``/``np.nanpercentile`` of an empty bool DistArray
  raised NumPy's "boolean subtract" TypeError (a probe on two bools) where
  NumPy gives NaN; ``np.quantile`` of it raised that TypeError where NumPy
  raises IndexError;
- R9: ``cumsum``/``cumprod`` along a distributed axis reported the flags of
  each rank's own cells on that rank alone, those of adding the prefix
  under the ufunc's name ("overflow encountered in add"), and under
  'raise' the ranks raised different errors; now NumPy's "overflow
  encountered in accumulate" on every rank, once (2+ ranks);
- R10: a flag met adding the ranks' partial dot products was reported as
  "... in reduce" (``np.dot``: NumPy says "in dot"; ``np.vdot`` and a
  weighted ``np.histogram``: NumPy reports none, and 'raise' raised where
  NumPy gives inf) (2+ ranks);
- R11: the warnings of ``np.dot``'s, ``np.var``'s/``np.nanstd``'s local
  steps and of a joining cast (``np.concatenate(..., dtype=int64)``) came
  on the ranks whose cells met them only; now on every rank, once (2+
  ranks);
- R12: ``save_npy('')`` named the working directory ("Is a directory:
  '<cwd>'"): the empty path made absolute; now "the path is empty";
- R13: the mean of empty slices along an axis (``np.mean(da, axis=1)`` of
  shape (3, 0)) warned 0 / 0's "invalid value encountered in divide" on the
  ranks holding rows only: a rank with none (4+ ranks) did not warn, and
  under 'raise' the ranks raised alone; now agreed (found by this file's
  R8 test at 5 ranks).
"""
import os
import struct

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank, shared_tmpdir, within
from nclx.dap import npymap

comm = MPI.COMM_WORLD


@pytest.fixture(scope="module")
def tmp():
    yield from shared_tmpdir("nclx-review19-")


def _agreed(got):
    """Every rank's outcome; the test fails on every rank unless all agree."""
    everyone = comm.allgather(got)
    collective_assert(all(g == everyone[0] for g in everyone), f"outcomes differ: {everyone}")
    return everyone[0]


@pytest.mark.parametrize("mapped", [True, False])
@pytest.mark.parametrize("op", ["load", "save"])
def test_r1_fifo_is_refused_on_every_rank(tmp, op, mapped, monkeypatch):
    monkeypatch.setattr(npymap, "MAPPED_WRITES", mapped)
    path = os.path.join(tmp, f"fifo-{op}-{mapped}")
    if rank == 0:
        os.mkfifo(path)
    comm.Barrier()
    sub = comm.Dup()
    try:
        if op == "load":
            got = within(dap.load_npy, path, comm=sub)
        else:
            da = dap.DistArray.from_global(np.arange(8.0), comm=sub)
            got = within(da.save_npy, path)
    finally:
        sub.Free()
    kind, text = _agreed(got[:2])
    assert kind == "exc", got
    assert text.startswith("DapError") and "FIFO" in text and path in text, text
    comm.Barrier()
    if rank == 0:
        os.remove(path)


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: ranks that disagree")
@pytest.mark.parametrize("kw", [{"padding": lambda r: [1 if r == 1 else 0]},
                                {"block_size": lambda r: [2 if r == 1 else 3], "dist": "c"}])
def test_r2_load_names_the_keyword_ranks_disagree_on(tmp, kw):
    path = os.path.join(tmp, "r2.npy")
    if rank == 0:
        np.save(path, np.arange(12.0))
    comm.Barrier()
    args = {k: (v(rank) if callable(v) else v) for k, v in kw.items()}
    with pytest.raises(dap.DapError) as info:
        dap.load_npy(path, comm=comm, **args)
    text = str(info.value)
    key = "padding" if "padding" in kw else "block_size"
    # rank 0's and rank 1's values both appear, by name
    mine = kw[key](0)[0], kw[key](1)[0]
    assert "rank 0" in text and "rank 1" in text, text
    assert f"{key} ({mine[0]},)" in text and f"{key} ({mine[1]},)" in text, text


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: arguments spelled differently")
@pytest.mark.parametrize("root", [None, 0])
@pytest.mark.parametrize("args", [
    lambda r: {"padding": [np.int64(1)] if r == 0 else [1]},
    lambda r: {"padding": [1] if r == 0 else (1,)},
    lambda r: {"dist": ["c"] if r == 0 else ("c",)},
    lambda r: {"dist": "b", "grid_shape": (np.int32(N),) if r == 1 else [N]},
])
def test_r3_from_global_compares_arguments_by_value(root, args):
    g = np.arange(12.0)
    arr = g if root is None or rank == root else None
    da = dap.DistArray.from_global(arr, comm=comm, root=root, **args(rank))
    ref = dap.DistArray.from_global(g, comm=comm, **args(0))
    assert da.distribution._dims == ref.distribution._dims
    np.testing.assert_array_equal(da.gather(root=None), g)


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: one file named two ways")
@pytest.mark.parametrize("op", ["load", "save"])
def test_r4_one_file_named_two_ways(tmp, op):
    names = [os.path.join(tmp, "r4.npy"), os.path.join(tmp, ".", "r4.npy"),
             os.fsencode(os.path.join(tmp, "r4.npy"))]
    mine = names[rank % 3]
    g = np.arange(20.0).reshape(4, 5)
    if op == "load":
        if rank == 0:
            np.save(names[0], g)
        comm.Barrier()
        np.testing.assert_array_equal(dap.load_npy(mine, comm=comm).gather(root=None), g)
    else:
        dap.DistArray.from_global(g, comm=comm).save_npy(mine)
        comm.Barrier()
        np.testing.assert_array_equal(np.load(names[0]), g)


def test_r5_format3_header_longer_than_the_file(tmp):
    path = os.path.join(tmp, "r5.npy")
    text = b"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n"
    if rank == 0:
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x03\x00" + struct.pack("<I", 20000) + text)
    comm.Barrier()
    with pytest.raises(ValueError) as theirs:
        np.load(path)
    with pytest.raises(dap.DapError) as ours:
        dap.load_npy(path, comm=comm)
    assert "EOF: reading array header, expected 20000 bytes got" in str(theirs.value)
    assert "EOF: reading array header, expected 20000 bytes got" in str(ours.value), \
        str(ours.value)
    assert "max_header_size" not in str(ours.value)


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: an index held twice")
def test_r6_one_to_one_with_an_index_held_twice(tmp):
    ex = {"__version__": "0.10.0", "buffer": np.arange(4.0) + 10 * rank,
          "dim_data": ({"dist_type": "u", "size": 4, "proc_grid_size": N,
                        "proc_grid_rank": rank, "indices": np.arange(4),
                        "one_to_one": True},)}
    with pytest.raises(dap.DapError) as info:
        dap.from_distarray(ex, comm)
    text = str(info.value)
    assert "one_to_one" in text and "dimension 0" in text and "global index 0" in text, text


def test_r6_one_to_one_partition_is_imported():
    # a true partition with one_to_one: imported, and reductions work
    n = 3 * N + 1
    mine = np.arange(n)[rank::N]
    ex = {"__version__": "0.10.0", "buffer": mine.astype(float),
          "dim_data": ({"dist_type": "u", "size": n, "proc_grid_size": N,
                        "proc_grid_rank": rank, "indices": mine, "one_to_one": True},)}
    d = dap.from_distarray(ex, comm)
    assert float(d.sum()) == float(np.arange(n).sum())


def test_r7_unique_of_padded_complex_blocks():
    g = (np.arange(4.0 * N).reshape(2, 2 * N) % 5).astype(complex)
    g[0, 0] = complex(-0.0, 0.0)
    sub = comm.Dup()
    try:
        a = dap.DistArray.from_global(g, comm=sub, dist=("n", "b"), padding=[0, 1])
        got = within(lambda: np.unique(a))
    finally:
        sub.Free()
    kind, value = got[:2]
    assert kind == "ok", got
    assert np.asarray(value).tobytes() == np.unique(g).tobytes()


@pytest.mark.parametrize("shape, axis", [((0,), None), ((0, 3), 0), ((3, 0), 1)])
@pytest.mark.parametrize("fn, q", [(np.nanquantile, 0.5), (np.nanpercentile, [50, 90]),
                                   (np.quantile, 0.5)])
def test_r8_quantiles_of_empty_bools(shape, axis, fn, q):
    import warnings
    g = np.zeros(shape, bool)
    a = dap.DistArray.from_global(g, comm=comm)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        try:
            want = ("ok", np.asarray(fn(g, q, axis=axis)))
        except Exception as exc:  # noqa: BLE001 - compared below
            want = (type(exc),)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        try:
            r = fn(a, q, axis=axis)
            got = ("ok", np.asarray(r.gather(root=None) if isinstance(r, dap.DistArray) else r))
        except Exception as exc:  # noqa: BLE001 - compared below
            got = (type(exc),)
    if want[0] == "ok":
        assert got[0] == "ok", got
        assert got[1].dtype == want[1].dtype and got[1].tobytes() == want[1].tobytes()
        assert [type(w.message) for w in ours] == [type(w.message) for w in theirs]
    else:
        # NumPy's error class (a DapError of that class: raised on every rank)
        assert got[0] != "ok" and issubclass(got[0], want[0]), (got, want)


def _warned(fn):
    """(outcome, sorted warning messages) of ``fn()`` under warn-always."""
    import warnings
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            r = fn()
            if isinstance(r, dap.DistArray):
                r = r.gather(root=None)
            out = ("ok", np.asarray(r).tobytes())
        except FloatingPointError as exc:
            out = ("FloatingPointError", str(exc).splitlines()[0].split(": ")[-1])
    return out, sorted({str(w.message) for w in rec})


def _same_as_numpy_on_every_rank(g_args, fn, mode):
    da_args = [dap.DistArray.from_global(x, comm=comm) for x in g_args]
    with np.errstate(all=mode):
        want = _warned(lambda: fn(*g_args))
        got = _warned(lambda: fn(*da_args))
    everyone = comm.allgather(got)
    collective_assert(all(g == want for g in everyone), f"NumPy {want}, ranks {everyone}")


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: one rank's cells overflow")
@pytest.mark.parametrize("fn", [np.cumsum, np.cumprod])
@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_r9_scan_flags_on_every_rank(fn, mode):
    g = np.full(N, 1e308)
    _same_as_numpy_on_every_rank([g], fn, mode)


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: the partials' sum overflows")
@pytest.mark.parametrize("name", ["dot", "vdot", "inner", "histogram"])
@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_r10_flags_of_adding_partials(name, mode):
    g, one = np.full(N, 1e308), np.ones(N)
    fn = {"dot": np.dot, "vdot": np.vdot, "inner": np.inner,
          "histogram": lambda x, y: np.histogram(y, bins=1, weights=x)[0]}[name]
    _same_as_numpy_on_every_rank([g, one], fn, mode)


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: one rank's cells warn")
@pytest.mark.parametrize("name", ["dot", "var", "nanstd", "concatenate"])
def test_r11_local_steps_warn_on_every_rank(name):
    g = np.arange(4.0 * N)
    g[0] = np.inf
    z = np.arange(4.0 * N)
    fn = {"dot": np.dot, "var": lambda x, y: np.var(x), "nanstd": lambda x, y: np.nanstd(x),
          "concatenate": lambda x, y: np.concatenate([x, y], dtype=np.int64,
                                                     casting="unsafe")}[name]
    _same_as_numpy_on_every_rank([g, z], fn, "warn")


def test_r12_empty_path(tmp):
    a = dap.DistArray.from_global(np.arange(4.0), comm=comm)
    with pytest.raises(FileNotFoundError) as info:
        a.save_npy("")
    assert "the path is empty" in str(info.value) and os.getcwd() not in str(info.value)


@pytest.mark.parametrize("dt", [bool, float])
@pytest.mark.parametrize("fn, q", [(np.nanquantile, 2.0), (np.nanpercentile, 200),
                                   (np.quantile, -0.5)])
def test_r8_q_still_checked_for_empty_arrays(dt, fn, q):
    a = dap.DistArray.from_global(np.zeros(0, dt), comm=comm)
    with pytest.raises(ValueError):
        fn(np.zeros(0, dt), q)
    with pytest.raises(ValueError):
        fn(a, q)


@pytest.mark.parametrize("fn", [np.mean, np.nanmean])
@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_r13_mean_of_empty_slices_on_ranks_without_rows(fn, mode):
    g = np.zeros((3, 0), bool)
    _same_as_numpy_on_every_rank([g], lambda x: fn(x, axis=1), mode)
