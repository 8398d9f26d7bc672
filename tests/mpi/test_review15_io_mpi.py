"""Defects found in the fifteenth look at nclx.dap, at redistribution,
gather, ``from_global(root=)`` and the parallel .npy I/O (each test failed
on the code before its fix, at 2 ranks or more where it says so):

- D1: ``load_npy`` with a path on some ranks and something that is no path
  (None, a number) on others: those raised TypeError at once, the others
  waited in the first agreement for ever (a hang, at 2 ranks or more); now
  a DapError[TypeError] on every rank naming the ranks;
- D2: ``nclx.dap.save_npy(path, da)`` likewise (the same hang); the method
  ``da.save_npy`` still converts its path before the agreement (in
  distarray.py, see the report);
- D7: ``save_npy`` to a path with a NUL character: rank 0's header write
  raised ValueError (only an OSError was caught there) while the others
  waited in the next agreement for ever (a hang, mapped writes or MPI-IO,
  at 2 ranks or more); now a DapError[ValueError] on every rank;
- D3: a .npy header whose descr is a subarray dtype (``('<f8', (2,))``,
  which np.load cannot read either): each rank read into a block of
  another shape and raised its own internal message ("rank r: local block
  has shape (2, 2), the distribution gives (2,)"); now one DapError naming
  the descr on every rank, before any read;
- D8: a format 3.0 header whose length field runs past the end of the file
  was parsed from what was there, and the file then called "truncated"
  (0 bytes of data); now np.load's "EOF: reading array header, expected N
  bytes got M" on every rank;
- D4: ``from_global(..., root=np.int64(0))`` on some ranks and ``root=0`` on
  others was refused as a disagreement (its repr differs), while
  ``gather`` takes both alike (at 2 ranks or more);
- D5: ``from_global(array, root=r)`` of items of 0 bytes (``V0``) raised the
  internal "move: the target block must be contiguous"; now the clear
  message of the every-rank form ("has items of 0 bytes");
- D6: moves of ``np.longdouble`` / ``np.clongdouble`` (x86's 80-bit
  extended type in 16 bytes) went through MPI's LONG_DOUBLE, which copies
  the 10 value bytes only: ``gather``, ``redistribute`` and
  ``from_global(root=)`` left the other 6 bytes of each element as
  ``np.empty`` had them, so the result's bytes were not NumPy's (a copy
  keeps all 16); now moved as 16 bytes.

Hang tests run the call in a thread on a duplicated communicator and fail
(instead of hanging) when it has not returned within 10 seconds
(``mpi_helpers.within``).
"""
import os

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import HUNG as _HUNG, within as _within, N, collective_assert, rank, shared_tmpdir
from nclx.dap import DapError, npymap

comm = MPI.COMM_WORLD
last = N - 1




@pytest.fixture(scope="module")
def tmp():
    """A directory every rank sees."""
    yield from shared_tmpdir("nclx-review15-")


def outcome(fn, *args, **kw):
    """('ok', value) or ('exc', 'Type: whole message') -- never raises."""
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {exc}"


def _same_everywhere(got):
    every = comm.allgather(got)
    return all(g == every[0] for g in every), every


# ------------------------------------------------------------------ D1, D2
@pytest.mark.parametrize("bad", [None, 3.5], ids=["None", "float"])
def test_load_npy_with_no_path_on_one_rank_raises_on_every_rank(tmp, bad):
    path = os.path.join(tmp, "d1.npy")
    if rank == 0:
        np.save(path, np.arange(6.0))
    comm.Barrier()
    sub = comm.Dup()
    got = _within(dap.load_npy, bad if rank == last else path, comm=sub)
    same, every = _same_everywhere(got)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                      f"rank {last}" in got[1] and "path" in got[1] and same, f"{every}")
    if not _HUNG:
        sub.Free()


@pytest.mark.parametrize("form", ["function", "method"])
def test_save_npy_function_with_no_path_on_one_rank_raises_on_every_rank(tmp, form):
    """Also ``da.save_npy(path)``: the method took ``os.fspath`` of the path
    before its agreement (it hung the same way)."""
    path = os.path.join(tmp, "d2.npy")
    sub = comm.Dup()
    a = dap.DistArray.from_global(np.arange(3.0 * N), comm=sub)
    save = dap.save_npy if form == "function" else lambda p, x: x.save_npy(p)
    got = _within(save, None if rank == last else path, a)
    # the same report after each rank's "save_npy(<its path>): "
    same, every = _same_everywhere((got[0], got[1].partition("): ")[2]))
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                      (N == 1 or f"rank {last}" in got[1]) and "path" in got[1] and same,
                      f"{every}")
    if not _HUNG:
        sub.Free()


# ------------------------------------------------------------------ D7
@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "mpiio"])
def test_save_npy_to_a_path_with_a_nul_raises_on_every_rank(tmp, mapped, monkeypatch):
    monkeypatch.setattr(npymap, "MAPPED_WRITES", mapped)
    sub = comm.Dup()
    a = dap.DistArray.from_global(np.arange(3.0 * N), comm=sub)
    got = _within(a.save_npy, os.path.join(tmp, "d7\0.npy"))
    same, every = _same_everywhere(got)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                      "null" in got[1] and same, f"{every}")
    if not _HUNG:
        sub.Free()


# ------------------------------------------------------------------ D3
def _npy(text, data):
    """A format 1.0 .npy file with header dict ``text`` and ``data`` bytes."""
    body = text.encode("latin1")
    pad = 64 - (10 + len(body) + 1) % 64
    return (b"\x93NUMPY\x01\x00" + (len(body) + pad + 1).to_bytes(2, "little") + body
            + b" " * pad + b"\n" + data)


@pytest.mark.parametrize("descr", ["('<f8', (2,))", "('<i2', (3, 2))"])
def test_a_subarray_descr_is_refused_with_one_message_on_every_rank(tmp, descr):
    path = os.path.join(tmp, "d3.npy")
    if rank == 0:
        with open(path, "wb") as f:
            f.write(_npy("{'descr': %s, 'fortran_order': False, 'shape': (4,), }" % descr,
                         b"\1" * 256))
    comm.Barrier()
    got = outcome(dap.load_npy, path, comm=comm)
    same, every = _same_everywhere(got)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                      "subarray" in got[1] and descr.replace(" ", "") in got[1].replace(" ", "")
                      and same, f"{every}")


# ------------------------------------------------------------------ D8
def test_a_format_3_header_longer_than_the_file_is_named_so(tmp):
    path = os.path.join(tmp, "d8.npy")
    text = b"{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"
    if rank == 0:
        with open(path, "wb") as f:        # claims 5000 bytes of header; data: spaces
            f.write(b"\x93NUMPY\x03\x00" + (5000).to_bytes(4, "little") + text + b"\n" +
                    b" " * 3)
    comm.Barrier()
    got = outcome(dap.load_npy, path, comm=comm)
    same, every = _same_everywhere(got)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                      "expected 5000 bytes" in got[1] and same, f"{every}")


# ------------------------------------------------------------------ D4
def test_from_global_root_as_a_numpy_integer_on_some_ranks():
    g = np.arange(30.0).reshape(6, 5)
    root = np.int64(last) if rank % 2 else last
    got = outcome(dap.DistArray.from_global, g if rank == last else None, comm=comm, root=root,
                  dist="c")
    ok = got[0] == "ok"
    if ok:
        full = got[1].gather(root=None)
        ok = full.tobytes() == g.tobytes()
    collective_assert(ok, f"{got}")


# ------------------------------------------------------------------ D5
def test_from_global_root_of_items_of_zero_bytes_names_the_dtype():
    got = outcome(dap.DistArray.from_global, np.zeros(4, "V0") if rank == 0 else None,
                  comm=comm, root=0)
    same, every = _same_everywhere(got)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                      "0 bytes" in got[1] and same, f"{every}")


# ------------------------------------------------------------------ D6
def _long_doubles(dtype, n):
    """``n`` values of ``dtype`` whose bytes beyond an 80-bit value (bytes
    10-15 of each 16-byte real part) are a marker, as NumPy keeps them."""
    g = np.arange(n, dtype=dtype) * 3 + 1
    raw = g.view(np.uint8).reshape(n, -1)
    step = np.dtype(dtype).itemsize // (2 if np.dtype(dtype).kind == "c" else 1)
    for at in range(0, raw.shape[1], step):
        raw[:, at + min(10, step):at + step] = 0xAB
    return g


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble])
def test_long_double_moves_keep_every_byte(dtype):
    g = _long_doubles(dtype, 3 * N + 1)
    a = dap.DistArray.from_global(g, comm=comm)
    checks = {"gather(root=None)": a.gather(root=None).tobytes() == g.tobytes()}
    out = a.gather(root=last)
    checks["gather(root)"] = out is None if rank != last else out.tobytes() == g.tobytes()
    for kw in (dict(dist="c"), dict(dist="c", block_size=[2])):
        b = a.redistribute(**kw)
        want = g[b.distribution.maps(rank)[0].global_from_local(np.arange(b._block.size))]
        checks[f"redistribute {kw}"] = b._block.tobytes() == want.tobytes()
        c = dap.DistArray.from_global(g if rank == 0 else None, comm=comm, root=0, **kw)
        checks[f"from_global(root=0) {kw}"] = c._block.tobytes() == want.tobytes()
    bad = [k for k, v in checks.items() if not v]
    collective_assert(not bad, f"bytes differ from NumPy's: {bad}")


@pytest.mark.parametrize("method", ["packed", "datatype"])
@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble])
def test_halo_exchange_of_long_doubles_keeps_every_byte(dtype, method):
    """A halo cell is a copy of its owner's cell, all of its bytes: the
    exchange also sent long doubles as MPI's LONG_DOUBLE (10 bytes of 16 on
    x86-64), leaving the rest of each padding cell as it was."""
    n = 3 * N + 1
    g = _long_doubles(dtype, n)
    a = dap.DistArray.from_shape((n,), dtype=dtype, comm=comm, padding=[1])
    gi = a.distribution.maps(rank)[0].global_from_local(np.arange(a._block.size))
    owned = np.zeros(a._block.size, bool)
    owned[a.distribution.owned_slices(rank)[0]] = True
    inside = (gi >= 0) & (gi < n)
    a._block[...] = 0
    a._block[owned] = g[gi[owned]]
    dap.exchange_halos(a, method)
    got = a._block[inside & ~owned].tobytes()
    want = g[gi[inside & ~owned]].tobytes()
    collective_assert(got == want, f"rank {rank}: halo cells' bytes differ from their owners'")
