"""Defects found in the sixteenth look at nclx.dap's parallel .npy I/O
(each test failed on the code before its fix, at 2 ranks or more where it
says so), and the hostile checks of that look:

- E1: ``load_npy(path, max_header_size="x")`` raised np.load's own
  "'>' not supported between instances of 'int' and 'str'" from rank 0's
  header read; a value on one rank only was not looked at (rank 0's
  decides).  Now a TypeError/ValueError naming ``max_header_size`` and the
  value, as a DapError on every rank, before any file is opened;
- E2: np.save's UserWarnings: for a dtype carrying metadata ("metadata on
  a dtype is not saved") rank 0 alone warned, so under an 'error' filter on
  another rank than 0 the file was written and that rank raised nothing (at
  2 ranks or more); "Stored array in format 2.0/3.0" (a header over 65535
  bytes, non-latin-1 field names) was given by no rank.  Now every rank
  gives np.save's warnings, and where any rank raises one every rank
  raises, the older file untouched;
- E3: a structured dtype with bytes between its fields (an aligned or
  offset layout): the shared-mapping writes stored the fields only, so the
  file kept the older file's bytes (or 0) where np.save writes the
  array's; the same for the copy of a strided imported block, and for the
  padding cells a periodic dimension wraps onto its own rank after a read
  (their gap bytes stayed 0);
- E4: the file replaced between rank 0's read of its header and the
  ranks' open (or a path naming another file on some rank, here through
  /proc/self/cwd): the data was read with the first header's layout, values
  silently wrong.  Now every rank checks the header of the file it opened.

``nclx.dap.save_npy(path, x)`` with a plain ndarray on some ranks and a
DistArray on others was not changed (see the report): the ndarray ranks
raise at once without a collective, and the DistArray ranks' first
agreement names the operation, so they are released, with a DapError, by
the ndarray ranks' next nclx.dap call on that communicator
(``test_a_mixed_save_npy_call_is_released_by_the_next_call``).

Hang tests run the call in a thread on a duplicated communicator and fail
(instead of hanging) when it has not returned within 10 seconds
(``mpi_helpers.within``).
"""
import builtins
import math
import os
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from npy_helpers import GAPS
from npy_helpers import file_bytes as _file_bytes
from npy_helpers import free as _free
from npy_helpers import np_save as _np_save
from npy_helpers import raw as _raw
from npy_helpers import same_everywhere as _same_everywhere
from mpi_helpers import N, collective_assert, rank, shared_tmpdir, within
from nclx.dap import DapError, npyload, npymap

comm = MPI.COMM_WORLD
last = N - 1
META = "metadata on a dtype is not saved to an npy/npz"
#: bytes between the fields only: from_distarray refuses a buffer whose dtype
#: ends in padding (NumPy's PEP 3118 format of it has another item size)
INNER = np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4],
                  "itemsize": 8})


@pytest.fixture(scope="module")
def tmp():
    """A directory every rank sees."""
    yield from shared_tmpdir("nclx-review16-")


@pytest.fixture(params=["mapped", "mpiio"])
def writer(request, monkeypatch):
    monkeypatch.setattr(npymap, "MAPPED_WRITES", request.param == "mapped")
    return request.param


def _gapped(n, dtype=GAPS):
    """``n`` items of ``dtype`` whose every byte (those between the fields
    too) is a known nonzero value, as np.save writes them."""
    raw = ((np.arange(n * dtype.itemsize) * 7) % 251 + 1).astype(np.uint8)
    return np.frombuffer(raw.tobytes(), dtype)


# ------------------------------------------------------------------ E1
@pytest.mark.parametrize("bad,kind", [("x", "TypeError"), (None, "TypeError"),
                                      (True, "TypeError"), (2.5, "ValueError"),
                                      (math.nan, "ValueError")],
                         ids=["str", "None", "bool", "fraction", "nan"])
def test_a_bad_max_header_size_is_named_on_every_rank(tmp, bad, kind):
    path = os.path.join(tmp, "e1.npy")
    _np_save(path, np.arange(6.0))
    for p in (path, os.path.join(tmp, "e1-missing.npy")):   # checked before any open
        try:
            dap.load_npy(p, comm=comm, max_header_size=bad)
            got = ("ok", "")
        except Exception as exc:  # noqa: BLE001 - compared collectively
            got = (isinstance(exc, DapError) and isinstance(exc, getattr(builtins, kind)),
                   str(exc))
        collective_assert(got[0] is True and f"{kind}: max_header_size" in got[1] and
                          repr(bad) in got[1], f"{p}: {got}")


def test_a_bad_max_header_size_on_one_rank_raises_on_every_rank(tmp):
    path = os.path.join(tmp, "e1b.npy")
    _np_save(path, np.arange(6.0))
    sub = comm.Dup()
    got = within(dap.load_npy, path, comm=sub, max_header_size="x" if rank == last else 10000)
    same, every = _same_everywhere(got)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError[TypeError]") and
                      f"rank {last}" in got[1] and "max_header_size" in got[1] and same,
                      f"{every}")
    _free(sub)


@pytest.mark.parametrize("good", [20000, np.int64(20000), 1e5, 10 ** 30])
def test_integral_max_header_sizes_are_taken(tmp, good):
    path = os.path.join(tmp, "e1c.npy")
    g = np.arange(6.0)
    _np_save(path, g)
    got = dap.load_npy(path, comm=comm, max_header_size=good).gather(root=None)
    collective_assert(got.tobytes() == g.tobytes(), f"{got}")


# ------------------------------------------------------------------ E2
WARNED = {
    "metadata": np.dtype(np.float64, metadata={"unit": "m"}),
    "format-2.0": np.dtype([(f"f{i}", "i1") for i in range(4000)]),
    "format-3.0": np.dtype([("\u03b1", "<i2"), ("b", "u1")]),
    "metadata-and-3.0": np.dtype([("\u03b1", "<i2")], metadata={"unit": "m"}),
}


def _warned_global(name):
    return np.zeros(3 * N + 1, WARNED[name])


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [(w.category.__name__, str(w.message)) for w in seen]


@pytest.mark.parametrize("name", list(WARNED))
def test_every_rank_gives_np_saves_warnings(tmp, writer, name):
    """np.save's UserWarnings (dtype metadata not saved, "Stored array in
    format 2.0/3.0"), once each, on every rank; before, rank 0 alone gave
    the metadata one and no rank the format ones."""
    path, ref = os.path.join(tmp, "e2.npy"), os.path.join(tmp, "e2-ref.npy")
    g = _warned_global(name)
    sub = comm.Dup()
    a = dap.DistArray.from_global(g, comm=sub)
    mine = _warnings_of(lambda: a.save_npy(path))
    numpys = comm.bcast(_warnings_of(lambda: np.save(ref, g)) if rank == 0 else None, root=0)
    same = _file_bytes(path) == _file_bytes(ref)       # collectives: on every rank
    collective_assert(numpys and mine == numpys and same, f"{mine} != {numpys} ({same})")
    sub.Free()


@pytest.mark.parametrize("who", ["every", "first", "last"])
@pytest.mark.parametrize("name", ["metadata", "format-3.0"])
def test_np_saves_warnings_under_an_error_filter_raise_on_every_rank(tmp, writer, name, who):
    """An 'error' filter on every rank, on rank 0 only or on the last rank
    only: every rank raises (a DapError that is a UserWarning), no rank
    hangs, and the older file at the path is left as it was."""
    path = os.path.join(tmp, f"e2-{who}.npy")
    _np_save(path, np.arange(50, dtype=np.int16))
    before = _file_bytes(path)
    sub = comm.Dup()
    a = dap.DistArray.from_global(_warned_global(name), comm=sub)
    strict = who == "every" or rank == {"first": 0, "last": last}.get(who)

    def save():
        with warnings.catch_warnings():
            warnings.simplefilter("error" if strict else "ignore")
            try:
                a.save_npy(path)
            except UserWarning as exc:
                return "UserWarning", isinstance(exc, DapError), str(exc)
        return "ok", False, ""

    got = within(save)
    text = META if name == "metadata" else "Stored array in format 3.0"
    ok = got[0] == "ok" and got[1][:2] == ("UserWarning", True) and text in got[1][2]
    if who != "every" and N > 1:
        ok = ok and f"rank {0 if who == 'first' else last}" in got[1][2]
    comm.Barrier()
    kept = _file_bytes(path) == before                 # a collective: on every rank
    collective_assert(ok and kept, f"{got} {kept}")
    _free(sub)


# ------------------------------------------------------------------ E3
@pytest.mark.parametrize("kw", [dict(), dict(dist="c"),
                                dict(padding=[1], periodic=[True])],
                         ids=["block", "cyclic", "periodic"])
def test_a_gapped_structured_dtype_is_saved_byte_for_byte(tmp, writer, kw):
    src, out, ref = (os.path.join(tmp, f"e3-{n}.npy") for n in ("src", "out", "ref"))
    g = _gapped(4 * N + 1)
    _np_save(src, g)
    _np_save(ref, np.load(src))
    if rank == 0:
        with open(out, "wb") as f:          # an older file, longer, of other bytes
            f.write(b"\xee" * 4096)
    comm.Barrier()
    a = dap.load_npy(src, comm=comm, **kw)
    a.save_npy(out)
    comm.Barrier()
    collective_assert(_file_bytes(out) == _file_bytes(ref), "the bytes between fields differ")


def test_a_strided_imported_block_of_a_gapped_dtype_is_saved_byte_for_byte(tmp):
    src, out = os.path.join(tmp, "e3s-src.npy"), os.path.join(tmp, "e3s-out.npy")
    _np_save(src, _gapped(3 * N + 2, INNER))
    a = dap.load_npy(src, comm=comm)
    n = a._block.shape[0]
    buf = np.zeros(2 * n, INNER)[::2]           # neither C nor F contiguous: copied
    _raw(buf)[...] = _raw(a._block)
    b = dap.from_distarray({"__version__": "0.10.0", "buffer": buf,
                            "dim_data": a.__distarray__()["dim_data"]}, comm=comm)
    b.save_npy(out)
    comm.Barrier()
    collective_assert(_file_bytes(out) == _file_bytes(src), "the bytes between fields differ")


@pytest.mark.parametrize("order", ["C", "F"])
def test_padding_wrapped_onto_its_own_rank_keeps_every_byte(tmp, order):
    """A periodic dimension on one grid rank: its padding cells are copies of
    cells read on the same rank (fill_duplicates)."""
    path = os.path.join(tmp, f"e3p-{order}.npy")
    g = _gapped(5 * (2 * N)).reshape(5, 2 * N)
    if rank == 0:
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(GAPS),
                                                     "fortran_order": order == "F",
                                                     "shape": g.shape})
            f.write(_raw(g).T.tobytes() if order == "F" else _raw(g).tobytes())
    comm.Barrier()
    a = dap.load_npy(path, comm=comm, grid_shape=[1, N], padding=[1, 0],
                     periodic=[True, False])
    gi = [m.global_from_local(np.arange(m.local_size)) % m.size
          for m in a.distribution.maps(rank)]
    want = _raw(g)[np.ix_(*gi)]
    collective_assert(a._block.tobytes() == want.tobytes(), "padding cells' bytes differ")


# ------------------------------------------------------------------ E4
@pytest.mark.parametrize("dist", ["b", "c"])       # an MPI-IO view; chunked reads (npyread)
def test_a_file_replaced_after_its_header_was_read_raises_on_every_rank(tmp, monkeypatch, dist):
    path, other = os.path.join(tmp, "e4.npy"), os.path.join(tmp, "e4-new.npy")
    _np_save(path, np.arange(40.0))
    _np_save(other, np.arange(40, dtype=np.int64).reshape(5, 8))   # as long, another header
    real = npyload.read_header

    def replaced(p, m=10000):           # another process replaces it (np.save + rename)
        r = real(p, m)
        os.replace(other, p)
        return r
    monkeypatch.setattr(npyload, "read_header", replaced)
    try:
        dap.load_npy(path, dist=dist, comm=comm)
        got = ("ok", "")
    except Exception as exc:  # noqa: BLE001 - compared collectively
        got = (type(exc).__name__, str(exc))
    collective_assert(got[0] == "DapError" and "another header" in got[1] and
                      "<i8" in got[1] and "(5, 8)" in got[1], f"{got}")


@pytest.mark.skipif(not os.path.isdir("/proc/self/cwd"), reason="needs /proc/self/cwd")
@pytest.mark.parametrize("there", ["another", "none"])
def test_a_path_naming_another_file_on_one_rank_raises_on_every_rank(tmp, there):
    """/proc/self/cwd/x.npy: one absolute name, each rank's own working
    directory (as a link that differs between nodes); the last rank's holds
    another file (before: read with rank 0's header, silently) or none."""
    mine = os.path.join(tmp, f"e4-{there}{rank}")
    os.makedirs(mine, exist_ok=True)
    if rank == 0 or N == 1:
        np.save(os.path.join(mine, "x.npy"), np.arange(24.0).reshape(4, 6))
    elif rank != last or there == "another":
        np.save(os.path.join(mine, "x.npy"), np.arange(24, dtype=np.int64))
    comm.Barrier()
    before = os.getcwd()
    os.chdir(mine)
    try:
        try:
            a = dap.load_npy("/proc/self/cwd/x.npy", comm=comm)
            got = ("ok", a.gather(root=None).tobytes() == np.arange(24.0).tobytes())
        except Exception as exc:  # noqa: BLE001 - compared collectively
            msg = str(exc)      # MPI-IO's words for a missing file on that rank
            got = (type(exc).__name__.partition("[")[0], f"rank {last}" in msg and (
                "another header" in msg if there == "another" else
                "does not exist" in msg or "No such file" in msg), msg)
    finally:
        os.chdir(before)
    collective_assert(got == ("ok", True) if N == 1 else got[:2] == ("DapError", True), f"{got}")


# ------------------------------------------------------------------ mixed calls
def test_a_mixed_save_npy_call_is_released_by_the_next_call(tmp):
    """An ndarray on the last rank, a DistArray on the others: the last rank
    raises at once; the others wait in their first agreement until the last
    rank's next nclx.dap call on the communicator, then every rank raises
    a DapError naming the mismatch (no hang)."""
    sub = comm.Dup()
    a = dap.DistArray.from_global(np.arange(4.0 * N), comm=sub)
    path = os.path.join(tmp, "mixed.npy")

    def go():
        if rank != last:
            return dap.save_npy(path, a)
        with pytest.raises(DapError, match="needs a DistArray"):
            dap.save_npy(path, np.zeros(3))
        return float(np.sum(a))

    got = within(go)
    if N == 1:
        ok = got == ("ok", 6.0)
    else:
        ok = got[0] == "exc" and "the ranks made different calls" in got[1]
    collective_assert(ok, f"{got}")
    _free(sub)
