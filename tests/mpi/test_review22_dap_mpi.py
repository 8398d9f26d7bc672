"""Defects found in the twenty-second look at nclx.dap (each test failed on
the code before its fix at 2 and 3 ranks; at 1 rank the calls cannot differ
and the tests check the call's own result):

- D1: ``np.sum`` on some ranks and ``np.mean`` on others (axis=, dtype=,
  keepdims, out= forms too) gave each rank its own answer, no error: the
  mean's inner sum carried np.sum's agreement key ("add.reduce").  Now the
  key names the caller (np.mean) and every rank raises a DapError.
- D2: ``np.mean(a, where=m)`` on some ranks, ``np.sum(a, where=m)`` on
  others: the ranks stepped out of sync and the next call hung.  Now a
  DapError on every rank at that call, and the next ``np.max`` works.
- D3: the registry's agreement compared dtypes by ``.str`` only: two
  record dtypes of one size with other fields (both ``|V16``) passed as
  one -- per-rank dtypes and garbage values (np.concatenate, np.copy,
  np.flip, np.reshape) or a hang (np.concatenate([x or y, x])).  Now a
  DapError on every rank (DistArrays, ndarray arguments and out=).
- D4: ``np.sum(a, axis=0, out=<DistArray of another distribution>)`` on
  one rank only: that rank raised alone (out's distribution was checked
  after the collective), the others returned.  Now checked before it:
  every rank raises (np.sum, np.max, np.mean, a.sum).
- D6: ``load_npy(max_header_size=...)`` differing between ranks: rank 0's
  alone applied.  Now a DapError on every rank naming max_header_size and
  each rank's value.
"""
import os

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, error_of, rank, shared_tmpdir, within

comm = MPI.COMM_WORLD


def _da(g, c=comm):
    return dap.DistArray.from_global(g, comm=c)


def _value(r):
    return r.gather(root=None) if isinstance(r, dap.DistArray) else np.asarray(r)


def _split(mine, other):
    """Rank 0 calls ``mine``, the others ``other`` (at 1 rank: ``mine`` alone)."""
    return mine if rank == 0 else other


# ------------------------------------------------------------------ D1
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": 1}, {"dtype": np.float64},
                                {"keepdims": True}, {"axis": (0, 1)}])
def test_d1_sum_and_mean_refused_on_every_rank(kw):
    g = np.arange(24.0).reshape(6, 4)
    a = _da(g)
    fn = _split(np.sum, np.mean)
    kind, msg = error_of(lambda: fn(a, **kw))
    if N == 1:
        collective_assert(kind == "ok", f"{kind}: {msg}")
        return
    collective_assert(kind == "DapError" and "different calls" in msg, f"{kind}: {msg}")
    # the ranks are still in step
    collective_assert(np.max(a) == 23.0, "np.max after the refused call")


def test_d1_sum_and_mean_with_out_refused_on_every_rank():
    g = np.arange(24.0).reshape(6, 4)
    a = _da(g)
    out = np.empty(())
    fn = _split(np.mean, np.sum)
    kind, msg = error_of(lambda: fn(a, out=out))
    if N == 1:
        collective_assert(kind == "ok" and out == g.mean(), f"{kind}: {msg} {out}")
        return
    collective_assert(kind == "DapError" and "different calls" in msg, f"{kind}: {msg}")


def test_d1_same_calls_still_agree():
    # np.mean and the method (and np.sum, a.sum) are one call each
    g = np.arange(24.0).reshape(6, 4)
    a = _da(g)
    m = (np.mean if rank % 2 else dap.DistArray.mean)(a, axis=0)
    s = (np.sum if rank % 2 else dap.DistArray.sum)(a, axis=1)
    collective_assert(np.array_equal(_value(m), g.mean(axis=0)) and
                      np.array_equal(_value(s), g.sum(axis=1)), "mean / sum")


# ------------------------------------------------------------------ D2
def test_d2_mean_where_and_sum_where_refused_and_in_step():
    c = comm.Dup()
    try:
        g = np.arange(24.0).reshape(6, 4)
        a = _da(g, c)
        m = a > 3
        fn = _split(np.mean, np.sum)
        got = within(lambda: fn(a, where=m))
        if N == 1:
            collective_assert(got[0] == "ok" and got[1] == g.mean(where=g > 3), str(got))
        else:
            collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                              "different calls" in got[1], str(got))
        after = within(lambda: np.max(a))
        collective_assert(after == ("ok", 23.0), str(after))
    finally:
        c.Free()


# ------------------------------------------------------------------ D3
_AB = np.dtype([("a", "<f8"), ("b", "<i8")])
_BA = np.dtype([("b", "<i8"), ("a", "<f8")])


def _records(dt):
    g = np.zeros(6, dt)
    g["a"], g["b"] = np.arange(6), np.arange(6)
    return g


@pytest.mark.parametrize("call", [lambda z, x: np.concatenate([z, z]),
                                  lambda z, x: np.copy(z), lambda z, x: np.flip(z),
                                  lambda z, x: np.reshape(z, (3, 2)),
                                  lambda z, x: np.concatenate([z, x])])
def test_d3_record_dtypes_of_one_size_refused(call):
    c = comm.Dup()
    try:
        x, y = _da(_records(_AB), c), _da(_records(_BA), c)
        z = _split(x, y)
        got = within(lambda: call(z, x))           # the call itself (no gather) refused
        if N == 1:
            collective_assert(got[0] == "ok" and _value(got[1]).dtype == _AB, str(got))
        else:
            collective_assert(got[0] == "exc" and got[1].startswith("DapError: np.") and
                              "disagree" in got[1], str(got)[:300])
    finally:
        c.Free()


def test_d3_record_ndarray_argument_and_out_described_apart():
    from nclx.dap import registry
    x, y = np.zeros(3, _AB), np.zeros(3, _BA)       # the same bytes, both |V16
    collective_assert(registry._describe(x, dap.DistArray, []) !=
                      registry._describe(y, dap.DistArray, []), "ndarray arguments")
    collective_assert(registry._Out(x).text != registry._Out(y).text, "out= ndarrays")
    dx, dy = _da(_records(_AB)), _da(_records(_BA))
    collective_assert(registry._describe(dx, dap.DistArray, []) !=
                      registry._describe(dy, dap.DistArray, []), "DistArrays")


# ------------------------------------------------------------------ D4
@pytest.mark.parametrize("fn", [np.sum, np.max, np.mean, dap.DistArray.sum])
@pytest.mark.parametrize("shape", [(4,), (5,)])
def test_d4_wrong_out_on_one_rank_refused_everywhere(fn, shape):
    c = comm.Dup()
    try:
        a = _da(np.arange(24.0).reshape(6, 4), c)
        bad = dap.DistArray.from_shape(shape, comm=c)
        if bad.distribution == np.sum(a, axis=0).distribution:
            bad = dap.DistArray.from_shape((5,), comm=c)
        got = within(lambda: fn(a, axis=0, out=bad if rank == 0 else None))
        collective_assert(got[0] == "exc" and got[1].startswith("DapError") and
                          ("out=" in got[1] or N > 1 and rank > 0), str(got))
        after = within(lambda: np.max(a))
        collective_assert(after == ("ok", 23.0), str(after))
    finally:
        c.Free()


# ------------------------------------------------------------------ D6
@pytest.fixture(scope="module")
def tmp():
    """A directory every rank sees."""
    yield from shared_tmpdir("nclx-review22-")


def test_d6_max_header_size_agreed(tmp):
    path = os.path.join(tmp, "d6.npy")          # a header of about 11000 bytes
    if rank == 0:
        np.save(path, np.zeros(4, [("f%04d" % i, "<f8") for i in range(600)]))
    comm.Barrier()
    mine = 20000 if rank == 0 else 10000 + rank
    kind, msg = error_of(lambda: dap.load_npy(path, max_header_size=mine, comm=comm))
    if N == 1:
        collective_assert(kind == "ok", f"{kind}: {msg}")
    else:
        collective_assert(kind == "DapError" and "max_header_size=20000" in msg and
                          all(f"max_header_size={10000 + r}" in msg for r in range(1, N)),
                          f"{kind}: {msg}")
    same = dap.load_npy(path, max_header_size=20000, comm=comm)
    collective_assert(same.shape == (4,), "the same max_header_size loads")
