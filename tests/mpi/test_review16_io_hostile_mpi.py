"""The hostile pass of the sixteenth look at nclx.dap's parallel .npy I/O
(the defects it found and their regression tests are in
test_review16_io_mpi.py): every dtype NumPy can store without pickling
(unaligned, big-endian, nested, with bytes between or after its fields,
long double) and empty arrays read as np.load reads them and written as
np.save writes them, byte for byte, over an older longer file, through the
shared mapping and through MPI-IO; 0-d arrays; headers that lie about their
shape, dtype or order, or are cut; a file cut while the ranks read it; a
read-only directory.  Every failure raises on every rank, none hangs
(``mpi_helpers.within`` where a rank could be left waiting).
"""
import math
import os

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
from nclx.dap import npyload, npymap

comm = MPI.COMM_WORLD


@pytest.fixture(scope="module")
def tmp():
    """A directory every rank sees."""
    yield from shared_tmpdir("nclx-review16h-")


@pytest.fixture(params=["mapped", "mpiio"])
def writer(request, monkeypatch):
    monkeypatch.setattr(npymap, "MAPPED_WRITES", request.param == "mapped")
    return request.param


DTYPES = ["?", ">i4", "<u8", "f2", ">f8", ">c16", np.longdouble, ">U2", "S5", "V3",
          "M8[ns]", ">m8[s]", [("a", "u1"), ("b", ">f8")],
          np.dtype([("a", "u1"), ("b", "<f8")], align=True),
          [("a", [("x", "<i2"), ("y", "S1")]), ("b", "<i4", (2,))], GAPS]
SHAPES = [(0,), (3, 0), (2 * N + 1,), (2 * N + 1, 3)]


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(np.dtype(d)) for d in DTYPES])
def test_every_dtype_and_shape_matches_numpy_byte_for_byte(tmp, writer, dtype):
    """load_npy's blocks are np.load's cells (every byte, padding too) and
    save_npy's file is np.save's, over an older longer file, for unaligned,
    big-endian, nested, gapped and empty arrays."""
    dt = np.dtype(dtype)
    src, out, ref = (os.path.join(tmp, f"h-{n}.npy") for n in ("src", "out", "ref"))
    bad = []
    for shape in SHAPES:
        n = math.prod(shape) * dt.itemsize
        g = np.frombuffer(((np.arange(n) * 7) % 251).astype(np.uint8).tobytes(),
                          dt).reshape(shape)
        _np_save(src, g)
        _np_save(ref, np.load(src))
        for kw in (dict(dist="c"), dict(padding=[1] + [0] * (len(shape) - 1),
                                        periodic=[True] + [False] * (len(shape) - 1))):
            if shape[0] < 2 * N and "padding" in kw:
                continue                 # a block of 0 cannot be padded
            if rank == 0:
                with open(out, "wb") as f:
                    f.write(b"\xee" * 4096)
            comm.Barrier()
            a = dap.load_npy(src, comm=comm, **kw)
            gi = [m.global_from_local(np.arange(m.local_size)) % max(m.size, 1)
                  for m in a.distribution.maps(rank)]
            if a._block.size and a._block.tobytes() != _raw(g)[np.ix_(*gi)].tobytes():
                bad.append(f"load {shape} {kw}")
            a.save_npy(out)
            comm.Barrier()
            if _file_bytes(out) != _file_bytes(ref):
                bad.append(f"save {shape} {kw}")
    collective_assert(not bad, f"{dt}: {bad}")


def test_a_zero_dimensional_array_round_trips_on_one_rank_and_is_refused_on_more(tmp, writer):
    path, ref = os.path.join(tmp, "h-0d.npy"), os.path.join(tmp, "h-0d-ref.npy")
    g = np.array(2.5, ">f8")
    _np_save(path, g)
    _np_save(ref, g)
    if N == 1:
        a = dap.load_npy(path, comm=comm)
        a.save_npy(path)
        assert a._block.tobytes() == g.tobytes() and _file_bytes(path) == _file_bytes(ref)
    else:
        sub = comm.Dup()
        got = within(dap.load_npy, path, comm=sub)
        same, every = _same_everywhere(got)
        collective_assert(got[0] == "exc" and "at least one distributed dimension" in got[1]
                          and same, f"{every}")
        _free(sub)


def _npy(text, data):
    body = text.encode("latin1")
    pad = 64 - (10 + len(body) + 1) % 64
    return (b"\x93NUMPY\x01\x00" + (len(body) + pad + 1).to_bytes(2, "little") + body
            + b" " * pad + b"\n" + data)


LIES = {
    "shape-longer-than-data": (_npy("{'descr': '<f8', 'fortran_order': False, "
                                    "'shape': (9,), }", b"\1" * 64), "truncated"),
    "negative-extent": (_npy("{'descr': '<f8', 'fortran_order': False, "
                             "'shape': (-1, 2), }", b"\1" * 16), "negative"),
    "bool-extent": (_npy("{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (True, 2), }", b"\1" * 16), "not a tuple of integers"),
    "fortran-order-int": (_npy("{'descr': '<f8', 'fortran_order': 1, 'shape': (2,), }",
                               b"\1" * 16), "fortran_order"),
    "object": (_npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
                    b"\1" * 16), "Python objects"),
    "huge-extent": (_npy("{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (2, 18446744073709551616), }", b"\1" * 16), "truncated"),
    "magic-only": (b"\x93NUMPY\x01\x00", "EOF"),
    "header-cut": (_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                        b"")[:40], "not a .npy file"),
    "empty": (b"", "No data left"),
}


@pytest.mark.parametrize("name", list(LIES))
def test_lying_and_cut_headers_raise_the_same_error_on_every_rank(tmp, name):
    data, match = LIES[name]
    path = os.path.join(tmp, f"lie-{name}.npy")
    if rank == 0:
        with open(path, "wb") as f:
            f.write(data)
    comm.Barrier()
    sub = comm.Dup()
    got = within(dap.load_npy, path, comm=sub)
    same, every = _same_everywhere(got)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and match in got[1]
                      and same, f"{every}")
    _free(sub)


def test_a_file_shorter_on_the_ranks_read_raises_on_every_rank(tmp, monkeypatch):
    """Cut after rank 0 read the header, inside the cells of the last rank."""
    path = os.path.join(tmp, "cut.npy")
    _np_save(path, np.arange(100.0 * N))
    real = npyload.read_header

    def cut(p, m=10000):
        r = real(p, m)
        os.truncate(p, r[3] + 8 * (100 * N - 3))
        return r
    monkeypatch.setattr(npyload, "read_header", cut)
    sub = comm.Dup()
    got = within(dap.load_npy, path, comm=sub)
    collective_assert(got[0] == "exc" and "the file ends before its cells" in got[1], f"{got}")
    _free(sub)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_raises_on_every_rank_and_keeps_the_file(tmp, writer):
    ro = os.path.join(tmp, f"read-only-{writer}")
    path = os.path.join(ro, "x.npy")
    if rank == 0:
        os.makedirs(ro, exist_ok=True)
        np.save(path, np.arange(5, dtype=np.int8))
        os.chmod(path, 0o444)
        os.chmod(ro, 0o555)
    comm.Barrier()
    before = _file_bytes(path)
    sub = comm.Dup()
    a = dap.DistArray.from_global(np.arange(4.0 * N), comm=sub)
    got = [within(a.save_npy, p) for p in (path, os.path.join(ro, "new.npy"))]
    kept = _file_bytes(path) == before
    comm.Barrier()
    if rank == 0:
        os.chmod(ro, 0o755)
    collective_assert(kept and all(g[0] == "exc" and "PermissionError" in g[1] for g in got),
                      f"{got} {kept}")
    _free(sub)
