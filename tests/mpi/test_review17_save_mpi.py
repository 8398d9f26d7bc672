"""Defects found in the seventeenth look at nclx.dap's .npy saves (each test
failed on the code before its fix, at 2 ranks or more where it says so):

- S1: ``nclx.dap.save_npy(path, x)`` with an ndarray on some ranks and a
  DistArray on others: the ndarray ranks raised at once, alone, and the
  DistArray ranks waited in the save's first agreement until the ndarray
  ranks' next nclx.dap call (for ever if none came).  Now ``comm=`` lets a
  rank without a DistArray join that agreement: every rank raises the same
  DapError at once, naming each rank and what it passed (also against ranks
  in ``da.save_npy(path)`` or ``np.save(path, da)`` on that communicator),
  and with DistArrays on every rank ``comm=`` saves as before.  Before,
  ``comm=`` was a TypeError, and the mixed call without it waited;
- S2: ``np.save(path, ndarray)`` on some ranks never reaches nclx (NumPy
  calls the override only for a DistArray argument), so it cannot be
  refused: ``save_npy(comm=)`` is the route, tested with S1;
- S3: one path naming other files on some ranks (here ``/proc/self/cwd``,
  one absolute name for each rank's own working directory, as a link that
  differs between nodes): each rank wrote its part into its own file,
  silently.  Now every rank raises naming the ranks whose file is not the
  one rank 0 wrote the header into; those ranks write nothing, and rank 0
  empties its file (0 bytes) instead of leaving a header over stale or
  partial data that np.load would take as complete.

Hang tests run the call in a thread on a duplicated communicator and fail
(instead of hanging) when it has not returned within 10 seconds
(``mpi_helpers.within``).
"""
import io
import os
import re

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from npy_helpers import file_bytes, free, same_everywhere
from mpi_helpers import N, collective_assert, rank, shared_tmpdir, within
from nclx.dap import npymap

comm = MPI.COMM_WORLD
last = N - 1
#: 4 rows: at 5 and 6 ranks (grid (N, 1)) some ranks hold empty blocks
G = np.arange(24.0).reshape(4, 6)
HERE = "/proc/self/cwd/x.npy"


@pytest.fixture(scope="module")
def tmp():
    """A directory every rank sees."""
    yield from shared_tmpdir("nclx-review17-")


@pytest.fixture(params=["mapped", "mpiio"])
def writer(request, monkeypatch):
    monkeypatch.setattr(npymap, "MAPPED_WRITES", request.param == "mapped")
    return request.param


def _np_bytes(g):
    """The bytes np.save writes for ``g``."""
    buf = io.BytesIO()
    np.save(buf, g)
    return buf.getvalue()


def _older(path):
    """An older file at ``path`` (rank 0), then a barrier; its bytes."""
    if rank == 0:
        np.save(path, np.arange(7, dtype=np.int16))
    comm.Barrier()
    return file_bytes(path)


# ------------------------------------------------------------------ S1
@pytest.mark.parametrize("dist", [("b", "n"), ("c", "n")], ids=["block", "cyclic"])
@pytest.mark.parametrize("on", ["same", "congruent"])
def test_save_npy_with_comm_writes_np_saves_bytes(tmp, dist, on):
    """DistArrays on every rank, ``comm=`` their communicator (or one of the
    same ranks in the same order): the file np.save writes (before, a
    TypeError for ``comm=``)."""
    sub = comm.Dup()
    other = sub.Dup() if on == "congruent" else sub
    a = dap.DistArray.from_global(G, dist=dist, comm=other)
    path = os.path.join(tmp, f"s1-{on}-{dist[0]}.npy")
    got = within(dap.save_npy, path, a, comm=sub)
    comm.Barrier()
    same = file_bytes(path) == _np_bytes(G) if got[0] == "ok" else False
    collective_assert(got == ("ok", None) and same, f"{got} {same}")
    if other is not sub:
        free(other)
    free(sub)


@pytest.mark.parametrize("who,call", [(w, c) for w in ("last", "first")
                                      for c in ("comm", "method", "np.save")] +
                         [("every", "comm")])
def test_a_mixed_save_npy_call_with_comm_raises_on_every_rank(tmp, who, call):
    """An ndarray on the last rank, on rank 0 or on every rank, passed with
    ``comm=``; the other ranks pass a DistArray with ``comm=``, call
    ``da.save_npy(path)`` or ``np.save(path, da)``: every rank raises the
    same DapError at once, naming each ndarray rank and what each rank
    passed, and the older file is left as it was (before: a TypeError for
    ``comm=``, and the DistArray ranks of the other calls waited).  Ranks in
    ``np.save`` meet the others in its override's agreement, which words the
    report from its own call: there every rank names the ndarray ranks
    alike, in another text than theirs."""
    path = os.path.join(tmp, f"s1-{who}-{call}.npy")
    before = _older(path)
    sub = comm.Dup()
    a = dap.DistArray.from_global(G, dist=("b", "n"), comm=sub)
    plain = who == "every" or rank == {"last": last, "first": 0}[who]

    def go():
        if plain:
            return dap.save_npy(path, G[:2].copy(), comm=sub)
        if call == "comm":
            return dap.save_npy(path, a, comm=sub)
        return a.save_npy(path) if call == "method" else np.save(path, a)

    got = within(go)
    same, every = same_everywhere(got)
    named = [r for r in range(N) if who == "every" or r == {"last": last, "first": 0}[who]]
    msg = got[1] if got[0] == "exc" else ""
    # np.save's ranks meet the others in the override's own agreement first,
    # which each side words from its call: the same lines, not the same text
    ok = (same or call == "np.save") and got[0] == "exc" and all(
        f"rank {r}: DapError: save_npy needs a DistArray on every rank of comm: this rank "
        f"passed a numpy.ndarray of shape (2, 6) and dtype float64" in msg for r in named)
    if call != "np.save":
        ok = ok and msg.startswith("DapError: save_npy: ")
        if len(named) < N:      # the DistArray ranks, described as such
            ok = ok and "passed a DistArray of global shape (4, 6), dist " in msg
    comm.Barrier()
    kept = file_bytes(path) == before
    collective_assert(ok and kept, f"{got} kept={kept} every={every}")
    free(sub)


def test_a_distarray_of_another_communicator_with_comm_raises_on_every_rank(tmp):
    """The last rank's DistArray lives on a communicator of its own, the
    others' on ``comm``: every rank raises naming the last rank (at 1 rank
    that communicator has comm's ranks, and the save goes through)."""
    sub = comm.Dup()
    solo = comm.Split(rank if rank == last else N, 0)
    a = dap.DistArray.from_global(G, dist=("b", "n"), comm=sub)
    if rank == last:
        a = dap.DistArray.from_global(G, dist=("b", "n"), comm=solo)
    path = os.path.join(tmp, "s1-solo.npy")
    got = within(dap.save_npy, path, a, comm=sub)
    same, _ = same_everywhere(got)
    if N == 1:
        comm.Barrier()
        ok = got == ("ok", None) and file_bytes(path) == _np_bytes(G)
    else:
        ok = same and got[0] == "exc" and f"rank {last}: DapError: save_npy(comm=...) needs " \
            f"a DistArray on comm's ranks in comm's order" in got[1]
    collective_assert(ok, f"{got}")
    free(solo)
    free(sub)


# ------------------------------------------------------------------ S3
@pytest.mark.skipif(not os.path.isdir("/proc/self/cwd"), reason="needs /proc/self/cwd")
@pytest.mark.parametrize("there", ["another", "none"])
@pytest.mark.parametrize("dist", [("b", "n"), ("c", "n")], ids=["block", "cyclic"])
def test_one_path_naming_other_files_is_refused_on_every_rank(tmp, writer, dist, there):
    """/proc/self/cwd/x.npy from each rank's own working directory: d0 for
    even ranks, d1 for odd ones, whose file is another of the same length
    (before: each rank wrote its cells into its own file, nothing raised)
    or none (before: rank 0's file was left holding the new header over
    stale or unwritten data).  Every rank raises naming the odd ranks, d0's
    file is left empty, d1's as it was; then, every rank in d0, the save
    through that name, and through a link to d0's file by a link to d0,
    goes through (no false alarm: files are compared, not names)."""
    top = os.path.join(tmp, f"s3-{writer}-{dist[0]}-{there}")
    dirs = [os.path.join(top, f"d{i}") for i in range(2)]
    if rank == 0:
        for i, d in enumerate(dirs):
            os.makedirs(d)
            if i == 0 or there == "another":
                np.save(os.path.join(d, "x.npy"), np.full(G.shape, -1.0))
    comm.Barrier()
    before = file_bytes(os.path.join(dirs[1], "x.npy")) if there == "another" else None
    sub = comm.Dup()
    a = dap.DistArray.from_global(G, dist=dist, comm=sub)
    home = os.getcwd()
    os.chdir(dirs[rank % 2])
    try:
        got = within(a.save_npy, HERE)
    finally:
        os.chdir(home)
    same, every = same_everywhere(got)
    comm.Barrier()
    left = [file_bytes(os.path.join(d, "x.npy")) if os.path.exists(os.path.join(d, "x.npy"))
            else None for d in dirs]
    if N == 1:
        ok = got == ("ok", None) and left[0] == _np_bytes(G)
    else:
        odd = list(range(1, N, 2))
        msg = got[1] if got[0] == "exc" else ""
        lines = dict(re.findall(r"\n  rank (\d+): ([^\n]*)", msg))
        ok = same and got[0] == "exc" and left[0] == b"" and left[1] == before
        if there == "another" or "rank 0 empties" in msg:
            # nclx's check (with no file, on the mapped path: there each
            # rank's cells are one box, cyclic ones too at 5 or more ranks)
            why = "the path names another file" if there == "another" else \
                "the path names no file on this rank (FileNotFoundError"
            ok = ok and sorted(map(int, lines)) == odd and all(
                lines[str(r)].startswith(why) for r in odd) and \
                "\n  rank 0 empties the file it wrote the header into" in msg
        else:
            # MPI-IO's open fails on the odd ranks, and ROMIO's other ranks with it
            ok = ok and all("File does not exist" in lines.get(str(r), "") for r in odd)
    # no false alarm: the name from one directory, and a link to a link of d0
    if rank == 0:
        os.symlink(dirs[0], os.path.join(top, "d0-link"))
        os.symlink(os.path.join(top, "d0-link", "x.npy"), os.path.join(top, "x.npy"))
    comm.Barrier()
    os.chdir(dirs[0])
    try:
        again = [within(a.save_npy, p) for p in (HERE, os.path.join(top, "x.npy"))]
    finally:
        os.chdir(home)
    comm.Barrier()
    ok = ok and again == [("ok", None)] * 2 and \
        file_bytes(os.path.join(dirs[0], "x.npy")) == _np_bytes(G)
    collective_assert(ok, f"{got} {again} left={[None if b is None else len(b) for b in left]} "
                          f"every={every}")
    free(sub)


def test_the_file_check_compares_inodes_across_nodes():
    """The rule for ranks on other nodes than rank 0: the inode alone (a
    network file system's device number is each node's own); on one node,
    device and inode."""
    from nclx.dap.npyheader import other_file
    ref = ("node-a", 2049, 77)
    assert other_file(("node-a", 2049, 77), ref) is None
    assert other_file(("node-b", 51, 77), ref) is None
    assert "another file" in other_file(("node-a", 51, 77), ref)
    text = other_file(("node-b", 51, 78), ref)
    assert "another file" in text and "inode 78 on node node-b" in text
    assert "names no file" in other_file((None, "FileNotFoundError: x"), ref)
