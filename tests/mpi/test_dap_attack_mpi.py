"""Attack tests of nclx.dap halo exchange, reductions and the heat example
(run by tests/test_mpi_suite.py under mpiexec -n 1, 2, 3, 4 and 6).

Every test ends on all ranks together: results and exceptions are caught
on each rank and compared with one collective (``collective_assert``), so
a test that fails on one rank fails on every rank instead of leaving the
others waiting in the next test's collectives.  Scenarios that leave ranks
waiting (an error on one rank inside a collective step) are in
tests/dap/test_dap_attack_subprocess.py; a hang guard ends this process
after HANG_GUARD_S seconds should one of these regress into a hang.

Each failing test here is a defect (see the docstrings); none is xfailed.
"""
import faulthandler
import gc
import itertools
import os
import sys
import threading
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx
import nclx.dap as dap
from nclx.dap.distribution import Distribution, dims_create
from nclx.dap.validate import normalize_dim_dict

comm = MPI.COMM_WORLD
N = comm.size
rank = comm.rank
HANG_GUARD_S = 60


# ------------------------------------------------------------------ helpers
@pytest.fixture(autouse=True)
def hang_guard(request):
    capman = request.config.pluginmanager.getplugin("capturemanager")

    def hung():
        try:
            if capman is not None:
                capman.suspend_global_capture(in_=True)
            sys.stderr.write(f"\nHANG GUARD: rank {rank}/{N} spent more than {HANG_GUARD_S} s in "
                             f"{request.node.nodeid}\n")
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            sys.stderr.flush()
        finally:
            os._exit(70)

    timer = threading.Timer(HANG_GUARD_S, hung)
    timer.daemon = True
    timer.start()
    try:
        yield
        comm.Barrier()
    finally:
        timer.cancel()


def collective_assert(ok, message):
    """Every rank fails together, with every failing rank's message."""
    everyone = comm.allgather((bool(ok), None if ok else f"rank {rank}: {message}"))
    failed = [m for good, m in everyone if not good]
    assert not failed, "\n".join(failed[:8])


def outcome(fn, *args, **kw):
    """('ok', value) or ('exc', 'Type: message') -- never raises."""
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def global_of(result):
    """The global array of a DistArray result, on every rank of its communicator."""
    full = result.gather(root=0)
    return result.comm.bcast(full, root=0)


def as_global(r):
    return global_of(r) if isinstance(r, dap.DistArray) else np.asarray(r)


def same_bits_everywhere(value):
    a = np.asarray(value)
    vals = comm.allgather((a.dtype.str, a.shape, a.tobytes()))
    return all(v == vals[0] for v in vals)


def global_codes(da):
    """Integer code of the global index of every cell of this rank's block."""
    maps = da.distribution.maps(rank)
    idx = np.meshgrid(*[m.global_from_local(np.arange(m.local_size)) for m in maps],
                      indexing="ij")
    return sum(i.astype(np.int64) * 100 ** d for d, i in enumerate(idx))


def counted_mask(da):
    m = np.zeros(da._block.shape, bool)
    m[da.distribution.owned_slices(rank)] = True
    return m


STRUCT = np.dtype([("x", "<f8"), ("y", "<i2")])


def convert(codes, dtype):
    """Values of a dtype from integer codes (different codes, different values)."""
    dtype = np.dtype(dtype)
    if dtype == STRUCT:
        out = np.zeros(codes.shape, STRUCT)
        out["x"] = codes
        out["y"] = codes % 1000
        return out
    if dtype.kind == "b":
        return codes % 2 == 1
    if dtype.kind == "c":
        return (codes - 1j * codes).astype(dtype)
    if dtype.kind in "SU":
        return np.array([str(c % 1000) for c in codes.ravel()], dtype).reshape(codes.shape)
    if dtype.kind == "M":
        return codes.astype(dtype)
    if dtype == np.float16:
        return (codes % 2048).astype(dtype)
    return codes.astype(dtype)


def fill_and_expect(da):
    """Counted cells: their global value; communication padding: a wrong value.
    Returns the block every cell should hold after an exchange."""
    codes = global_codes(da)
    exp = convert(codes, da.dtype)
    block = da._block
    mask = counted_mask(da)
    block[...] = convert(codes + 7, da.dtype)
    block[mask] = exp[mask]
    return exp


def check_block(da, exp, what=""):
    block = da._block
    ok = block.shape == exp.shape and bool(np.all(block == exp))
    msg = None
    if not ok:
        bad = np.argwhere(block != exp)
        msg = (f"{what}: {len(bad)} wrong cells of {block.size}, first at local "
               f"{tuple(bad[0])}: {block[tuple(bad[0])]!r} != {exp[tuple(bad[0])]!r}")
    return ok, msg


def exchange_and_check(da, method=None, what=""):
    exp = fill_and_expect(da)
    kind, value = outcome(dap.exchange_halos, da, method)
    if kind == "exc":
        collective_assert(False, f"{what}: exchange_halos raised {value}")
    ok, msg = check_block(da, exp, what)
    collective_assert(ok, msg)


def import_view(da, buf):
    """A DistArray over ``buf`` (same layout as ``da``) through from_distarray."""
    export = {"__version__": "0.10.0", "buffer": buf, "dim_data": da.__distarray__()["dim_data"]}
    return dap.from_distarray(export, comm=comm)


def grid2():
    return dims_create(N, 2)


# --------------------------------------------------------- halo: dtypes
HALO_DTYPES = [
    ("i1", None), ("i1", "packed"), ("i1", "datatype"),
    ("?", None), ("?", "packed"), ("?", "datatype"),
    ("c16", None), ("c16", "packed"),
    ("f2", None), ("f2", "packed"),
    (">f8", None), (">i4", None),
    ("M8[s]", None),
    # defects: strings travel as one MPI character per element (silently wrong),
    # structured dtypes have no transport, non-native byte order / datetime
    # cannot use the packed transport (the one non-C-contiguous blocks get)
    ("U3", None), ("S3", None), ("struct", None),
    (">f8", "packed"), ("M8[s]", "packed"),
]


@pytest.mark.parametrize("dtype,method", HALO_DTYPES,
                         ids=[f"{d}-{m}" for d, m in HALO_DTYPES])
def test_halo_exchange_of_every_dtype_fills_every_padding_cell(dtype, method):
    dt = STRUCT if dtype == "struct" else np.dtype(dtype)
    g0, g1 = grid2()
    da = dap.DistArray.from_shape((4 * g0 + 3, 3 * g1 + 2), dtype=dt, comm=comm,
                                  grid_shape=(g0, g1), padding=[1, 2], periodic=[True, False])
    exchange_and_check(da, method, f"{dtype} method={method}")


# ------------------------------------------- halo: non-C-contiguous blocks
@pytest.mark.parametrize("dtype", ["f8", "c16", "?", "i1", ">f8"])
def test_fortran_ordered_blocks_imported_through_from_distarray(dtype):
    """A Fortran-ordered block (packed transport); '>f8' fails: the packed
    transport cannot describe a non-native byte order."""
    grid = dims_create(N, 3)
    base = dap.DistArray.from_shape((3 * grid[0] + 2, 2 * grid[1] + 3, 2 * grid[2] + 1),
                                    dtype=dtype, comm=comm, grid_shape=grid,
                                    padding=[1, 2, 1], periodic=[True, False, True])
    buf = np.asfortranarray(base._block)
    da = import_view(base, buf)
    collective_assert(np.shares_memory(da._block, buf) and not buf.flags.c_contiguous,
                      "not a zero-copy Fortran-ordered import")
    exchange_and_check(da, None, f"F-ordered {dtype}")


def test_strided_view_block_imported_through_from_distarray():
    g0, g1 = grid2()
    base = dap.DistArray.from_shape((5 * g0, 4 * g1 + 1), comm=comm, grid_shape=(g0, g1),
                                    padding=[2, 1], periodic=[True, True])
    shape = base._block.shape
    big = np.zeros((shape[0], shape[1] * 3))
    buf = big[:, 1::3]
    da = import_view(base, buf)
    exchange_and_check(da, None, "strided view")
    collective_assert(np.all(big[:, 0::3] == 0) and np.all(big[:, 2::3] == 0),
                      "cells between the strided view's columns were written")


# ------------------------------------ halo: empty blocks, widths, asymmetry
def test_zero_size_blocks_more_ranks_than_cells():
    """Some ranks hold no row (padding only along the other, periodic dimension)."""
    n0 = max(1, N - 2)
    da = dap.DistArray.from_shape((n0, 9), comm=comm, grid_shape=(N, 1), padding=[0, 2],
                                  periodic=[False, True])
    empties = comm.allgather(da._block.size == 0)
    collective_assert(N < 3 or any(empties), "expected some empty blocks")
    exchange_and_check(da, None, "empty blocks")
    g = np.arange(n0 * 9, dtype=np.int64).reshape(n0, 9) - 20
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[0, 2],
                                  periodic=[False, True])
    checks = [("sum", a.sum, g.sum), ("max", a.max, g.max), ("min", a.min, g.min),
              ("prod", lambda **k: (a % 3 + 1).prod(**k), lambda **k: (g % 3 + 1).prod(**k))]
    bad = []
    for name, f, w in checks:
        for axis in (None, 0, 1):
            kind, got = outcome(lambda: as_global(f(axis=axis)))
            want = w(axis=axis)
            if kind == "exc" or np.asarray(got).tobytes() != np.asarray(want).tobytes():
                bad.append(f"{name}(axis={axis}): {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))


def test_width_equal_to_the_neighbours_whole_block():
    g0, g1 = grid2()
    da = dap.DistArray.from_shape((2 * g0, 3 * g1), comm=comm, grid_shape=(g0, g1),
                                  padding=[2, 3], periodic=[True, True])
    mids = [m.local_size - sum(m.comm_padding) for m in da.distribution.maps(rank)]
    collective_assert(mids == [2, 3], f"blocks {mids}")
    exchange_and_check(da, None, "width == block")
    exchange_and_check(da, "packed", "width == block, packed")


def _dim_column(sizes, pads, periodic, total):
    """Normalised dimension dictionaries of one block dimension with the
    given core sizes and (lo, hi) paddings (as in test_halo_mpi.py)."""
    P = len(sizes)
    counted = [s + (pads[0][0] if c == 0 and not periodic else 0)
               + (pads[-1][1] if c == P - 1 and not periodic else 0) for c, s in enumerate(sizes)]
    assert sum(counted) == total
    col, lo = [], 0
    for c in range(P):
        comm_lo = pads[c][0] if (periodic or c > 0) else 0
        comm_hi = pads[c][1] if (periodic or c < P - 1) else 0
        start = lo - comm_lo
        stop = lo + counted[c] + comm_hi
        col.append(normalize_dim_dict(dict(dist_type="b", size=total, start=start, stop=stop,
                                           padding=tuple(pads[c]), periodic=periodic,
                                           proc_grid_size=P, proc_grid_rank=c)))
        lo += counted[c]
    return col


@pytest.mark.parametrize("periodic", [False, True])
def test_very_asymmetric_widths(periodic):
    """Widths 0 / 5 alternating across edges, boundary padding 3 and 0 on the
    outer edges; a second, periodic undistributed dimension with (0, 2)."""
    P = N
    sizes = [5 + c for c in range(P)]
    edge = [(5, 0) if c % 2 == 0 else (0, 4) for c in range(P - 1)]   # (hi of c, lo of c+1)
    pads = []
    for c in range(P):
        lo = edge[c - 1][1] if c > 0 else (1 if periodic else 3)
        hi = edge[c][0] if c < P - 1 else (5 if periodic else 0)
        pads.append((lo, hi))
    total = sum(sizes) + (0 if periodic else pads[0][0] + pads[-1][1])
    col0 = _dim_column(sizes, pads, periodic, total)
    col1 = [normalize_dim_dict(dict(dist_type="b", size=6, start=0, stop=8, padding=(0, 2),
                                    periodic=True, proc_grid_size=1, proc_grid_rank=0))]
    dist = Distribution([col0, col1])
    da = dap.DistArray(np.zeros(dist.local_shape(rank)), dist, comm)
    exchange_and_check(da, None, "asymmetric")
    # rank 0's boundary padding (rows 0-2, not periodic) is never written, except
    # where it is communication padding of the periodic second dimension
    fill_and_expect(da)
    if not periodic and rank == 0:
        da._block[:3, :6] = -5.0
    dap.exchange_halos(da)
    ok = periodic or rank != 0 or (np.all(da._block[:3, :6] == -5.0)
                                   and np.all(da._block[:3, 6:] == -5.0))
    collective_assert(ok, f"boundary padding written: {da._block[:3]}")


# ------------------------------------------------------ halo: split form
def test_two_distarrays_exchanged_concurrently():
    g0, g1 = grid2()
    a = dap.DistArray.from_shape((4 * g0 + 1, 3 * g1 + 2), comm=comm, grid_shape=(g0, g1),
                                 padding=[1, 1], periodic=[True, True])
    b = dap.DistArray.from_shape((4 * g0 + 1, 3 * g1 + 2), dtype=np.int32, comm=comm,
                                 grid_shape=(g0, g1), padding=[1, 1], periodic=[True, True])
    c = dap.DistArray.from_shape((3 * N + 2,), dtype=np.complex128, comm=comm, padding=[2],
                                 periodic=[True])
    ea, eb, ec = fill_and_expect(a), fill_and_expect(b), fill_and_expect(c)
    ra = a.start_halo_exchange()
    rb = b.start_halo_exchange()
    rc = dap.start_halo_exchange(c, "packed")
    rc.wait()
    rb.wait()
    ra.wait()
    oks = [check_block(x, e, n) for x, e, n in ((a, ea, "a"), (b, eb, "b"), (c, ec, "c"))]
    collective_assert(all(o for o, _ in oks), "; ".join(m for o, m in oks if not o))


def test_exchange_after_deleting_the_plan_and_after_deleting_an_array():
    g0, g1 = grid2()
    a = dap.DistArray.from_shape((3 * g0 + 2, 3 * g1 + 2), comm=comm, grid_shape=(g0, g1),
                                 padding=[1, 1], periodic=[True, False])
    exchange_and_check(a, None, "first")
    del a._halo_plan                   # every rank: the plan is rebuilt and agreed again
    exchange_and_check(a, None, "after del of the plan")
    exchange_and_check(a, "packed", "packed after del of the plan")
    del a
    gc.collect()
    b = dap.DistArray.from_shape((3 * g0 + 2, 3 * g1 + 2), comm=comm, grid_shape=(g0, g1),
                                 padding=[1, 1], periodic=[True, False])
    exchange_and_check(b, None, "a new array after del of the old one")


@pytest.mark.parametrize("how", ["request dropped", "exception before wait"])
def test_an_exchange_whose_request_was_lost_does_not_lock_the_array(how):
    """Defect: start_halo_exchange() whose HaloRequest is dropped (or lost to an
    exception before wait()) leaves ``plan.in_flight`` set for ever: every
    later exchange of that DistArray raises 'in flight; wait() for it', and
    there is no request left to wait on."""
    a = dap.DistArray.from_shape((4 * N + 2,), comm=comm, padding=[1], periodic=[True])
    fill_and_expect(a)
    if how == "request dropped":
        req = a.start_halo_exchange()
        del req
    else:
        try:
            req = a.start_halo_exchange()
            raise RuntimeError("the interior computation failed")
        except RuntimeError:
            pass
        del req
    gc.collect()
    comm.Barrier()
    exp = fill_and_expect(a)
    kind, value = outcome(a.exchange_halos)
    ok, msg = (check_block(a, exp, how) if kind == "ok" else (False, f"{how}: then {value}"))
    collective_assert(ok, msg)


def test_wait_after_the_distarray_was_collected_completes_the_exchange():
    """Defect: the HaloRequest does not keep its DistArray alive; collecting
    the DistArray runs the plan's finalizer, which frees the persistent
    requests while they are active, so ``req.wait()`` returns at once (the
    requests are MPI_REQUEST_NULL) before the padding has arrived."""
    n = 1 << 16                         # large enough for a rendezvous message
    a = dap.DistArray.from_shape((n * max(N, 2),), comm=comm, padding=[n // 2], periodic=[True])
    exp = fill_and_expect(a).astype(np.float64)
    block = a._block
    req = a.start_halo_exchange()
    del a
    gc.collect()
    req.wait()
    ok = bool(np.all(block == exp))
    msg = None if ok else f"{int(np.sum(block != exp))} padding cells not filled after wait()"
    comm.Barrier()                       # let the freed requests finish
    collective_assert(ok, msg)


def test_user_messages_on_the_same_communicator_are_not_taken_by_the_exchange():
    """Defect: halo messages travel on the user's communicator with tags
    0..3**ndim-1 (tag 0 is mpi4py's default), not on a duplicate, so a user
    message in flight with the same source and tag is matched by the
    exchange (and the user receives halo data)."""
    if N == 1:
        pytest.skip("needs a neighbour (a message to self with the same tag deadlocks)")
    bad = []
    for method in ("datatype", "packed"):
        a = dap.DistArray.from_shape((4 * N,), comm=comm, padding=[1], periodic=[True])
        exp = fill_and_expect(a)
        mine = np.array([-777.0 - rank])
        sreq = comm.Isend(mine, dest=(rank + 1) % N, tag=0)
        kind, value = outcome(dap.exchange_halos, a, method)
        if kind == "exc":
            bad.append(f"{method}: exchange raised {value}")
        got = np.empty(1)
        comm.Recv(got, source=(rank - 1) % N, tag=0)
        sreq.Wait()
        ok, msg = check_block(a, exp, method)
        if not ok:
            bad.append(msg)
        if got[0] != -777.0 - (rank - 1) % N:
            bad.append(f"{method}: the user's message holds {got[0]}, not {-777.0 - (rank - 1) % N}")
    collective_assert(not bad, "; ".join(bad))


def test_exchange_does_not_follow_a_replaced_block():
    """Defect (private attribute, but nothing prevents it): the plan cache key is
    (shape, strides, dtype), not the buffer, so after ``da._block`` is
    replaced by an array of the same layout the persistent requests keep
    filling the old buffer and the new block's padding is never written."""
    a = dap.DistArray.from_shape((4 * N + 2,), comm=comm, padding=[1], periodic=[True])
    exchange_and_check(a, None, "first")
    a._block = a._block.copy()
    exp = fill_and_expect(a)
    dap.exchange_halos(a)
    ok, msg = check_block(a, exp, "replaced block")
    collective_assert(ok, msg)


def test_a_block_reshaped_on_one_rank_before_the_first_exchange_raises_everywhere():
    a = dap.DistArray.from_shape((4 * N + 2, 3), comm=comm, padding=[1, 0], periodic=[True, False])
    if rank == N - 1:
        a._block = np.zeros((a._block.shape[0] + 1, 3))
    kind, value = outcome(a.exchange_halos)
    collective_assert(kind == "exc" and "DapError" in value and f"rank {N - 1}" in value,
                      f"{kind} {value}")


# ----------------------------------------------------------- reductions
def grids3():
    g = dims_create(N, 3)
    return sorted({g, g[::-1]})


RED3 = [(g, name) for g in grids3() for name in ("sum", "prod", "max", "min", "any", "all",
                                                    "mean")]


def _data(name, shape, seed=5):
    rng = np.random.default_rng(seed)
    ints = rng.integers(-50, 50, size=shape)
    floats = rng.uniform(0.5, 1.5, size=shape)
    if name in ("any", "all"):
        return [ints > -30, floats > 0.6]
    if name == "prod":
        return [np.where(ints > 0, 1, -1).astype(np.int64), floats]
    if name == "sum":
        return [ints, floats, ints > 0, ints.astype(np.int8)]
    if name == "mean":
        return [ints, floats, ints > 0]
    return [ints, floats, ints.astype(np.uint8)]


@pytest.mark.parametrize("grid,name", RED3, ids=[f"{'x'.join(map(str, g))}-{n}" for g, n in RED3])
def test_3d_reductions_with_keepdims_equal_numpy(grid, name):
    """Integer and boolean results bit for bit (dtype included); float
    results within 1e-12 relative and the same bits on every rank."""
    shape = (7, 5, 6)
    bad = []
    for g in _data(name, shape):
        a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=[1, 0, 1],
                                      periodic=[True, False, False])
        for axis in (None, 1, -1, (0, 2), (0, 1, 2)):
            for keepdims in (False, True):
                want = getattr(g, name)(axis=axis, keepdims=keepdims)
                kind, got = outcome(lambda: as_global(getattr(a, name)(axis=axis,
                                                                       keepdims=keepdims)))
                tag = f"{g.dtype} {name}(axis={axis}, keepdims={keepdims})"
                if kind == "exc":
                    bad.append(f"{tag} raised {got}")
                    continue
                got, want = np.asarray(got), np.asarray(want)
                if got.dtype != want.dtype or got.shape != want.shape:
                    bad.append(f"{tag}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
                elif want.dtype.kind == "f":
                    if not np.allclose(got, want, rtol=1e-12, atol=0):
                        bad.append(f"{tag}: {got} != {want}")
                elif got.tobytes() != want.tobytes():
                    bad.append(f"{tag}: {got} != {want}")
                if not same_bits_everywhere(got):
                    bad.append(f"{tag}: not the same bits on every rank")
    collective_assert(not bad, "; ".join(bad[:6]))


def test_where_and_initial_on_several_ranks_and_axes():
    grid = dims_create(N, 3)
    rng = np.random.default_rng(9)
    g = rng.integers(-9, 10, size=(6, 5, 4))
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=[1, 1, 0],
                                  periodic=[False, True, False])
    m = a > 0
    gm = g > 0
    cases = [
        ("sum where", lambda: a.sum(where=m), lambda: g.sum(where=gm)),
        ("sum initial", lambda: a.sum(initial=100), lambda: g.sum(initial=100)),
        ("sum axis 0 initial", lambda: a.sum(axis=0, initial=100), lambda: g.sum(axis=0, initial=100)),
        ("sum axis (0,2) where initial keepdims",
         lambda: a.sum(axis=(0, 2), where=m, initial=-7, keepdims=True),
         lambda: g.sum(axis=(0, 2), where=gm, initial=-7, keepdims=True)),
        ("add.reduce axis 1 where initial", lambda: np.add.reduce(a, axis=1, where=m, initial=3),
         lambda: np.add.reduce(g, axis=1, where=gm, initial=3)),
        ("prod axis (1,2) initial", lambda: (a % 2 + 1).prod(axis=(1, 2), initial=2),
         lambda: (g % 2 + 1).prod(axis=(1, 2), initial=2)),
        ("max where initial", lambda: a.max(where=m, initial=-100),
         lambda: g.max(where=gm, initial=-100)),
        ("min axis 2 initial", lambda: a.min(axis=2, initial=-3), lambda: g.min(axis=2, initial=-3)),
        ("max initial above all", lambda: a.max(initial=50), lambda: g.max(initial=50)),
        ("sum where=False initial", lambda: a.sum(where=False, initial=4),
         lambda: g.sum(where=False, initial=4)),
        ("any where", lambda: a.any(where=m), lambda: g.any(where=gm)),
    ]
    bad = []
    for name, f, w in cases:
        kind, got = outcome(lambda: as_global(f()))
        want = np.asarray(w())
        if kind == "exc" or np.asarray(got).dtype != want.dtype \
                or np.asarray(got).tobytes() != want.tobytes():
            bad.append(f"{name}: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))


def test_dtype_overflows_wrap_like_numpy():
    g = (np.arange(6 * N + 5, dtype=np.int64) * 37 + 90).reshape(-1, 1) * np.ones((1, 3), np.int64)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[1, 0])
    cases = [("sum int8", dict(dtype=np.int8)), ("sum uint8 axis 0", dict(axis=0, dtype=np.uint8)),
             ("sum int16", dict(dtype=np.int16))]
    bad = []
    for name, kw in cases:
        kind, got = outcome(lambda: as_global(a.sum(**kw)))
        want = np.asarray(g.sum(**kw))
        if kind == "exc" or got.dtype != want.dtype or got.tobytes() != want.tobytes():
            bad.append(f"{name}: {got!r} != {want!r}")
    kind, got = outcome(lambda: as_global(a.prod(dtype=np.int16)))
    want = np.asarray(g.prod(dtype=np.int16))
    if kind == "exc" or got.tobytes() != want.tobytes():
        bad.append(f"prod int16: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))


def test_out_of_the_wrong_distribution_is_a_dap_error_on_every_rank():
    """sum(axis, out=) checks the distribution; mean(axis, out=) does not
    (defect: it writes the local block into any DistArray whose local shape
    happens to match, here a cyclic one, and returns it)."""
    g = np.arange(4.0 * 7 * max(N, 1)).reshape(4, 7 * max(N, 1))
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(1, N))
    right = a.sum(axis=0) * 0.0
    kinds = {}
    for name in ("sum", "mean"):
        wrong = dap.DistArray.from_shape(right.shape, dist="c", comm=right.comm)
        same_local = wrong._block.shape == right._block.shape
        kind, value = outcome(getattr(a, name), axis=0, out=wrong)
        kinds[name] = (kind, value, same_local)
        # and the right distribution works, writing into out
        kind2, value2 = outcome(getattr(a, name), axis=0, out=right)
        want = getattr(g, name)(axis=0)
        ok2 = kind2 == "ok" and value2 is right and np.allclose(global_of(right), want, rtol=1e-12)
        collective_assert(ok2, f"{name}(axis=0, out=right): {kind2} {value2}")
    bad = [f"{name}(axis=0, out=<cyclic DistArray>) gave {k} {v}"
           for name, (k, v, _s) in kinds.items() if not (k == "exc" and "DapError" in v)]
    collective_assert(not bad, "; ".join(bad))


def test_float_sums_are_deterministic_across_runs_ranks_and_result_groups():
    grid = dims_create(N, 3)
    rng = np.random.default_rng(17)
    g = rng.standard_normal((9, 8, 7)) * 10.0 ** rng.integers(-6, 6, size=(9, 8, 7))
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=[1, 1, 1],
                                  periodic=[True, False, True])
    bad = []
    for axis in (None, 0, (1, 2), (0, 2)):
        first = as_global(a.sum(axis=axis))
        for _ in range(3):
            if as_global(a.sum(axis=axis)).tobytes() != first.tobytes():
                bad.append(f"sum(axis={axis}) changed between runs")
        if not same_bits_everywhere(first):
            bad.append(f"sum(axis={axis}) differs between ranks / result groups")
        scale = np.abs(g).sum(axis=axis)
        if not np.all(np.abs(first - g.sum(axis=axis)) <= 1e-12 * scale):
            bad.append(f"sum(axis={axis}) far from NumPy's")
    collective_assert(not bad, "; ".join(bad))


EMPTY = [((0,), None), ((0, 4), None), ((0, 4), 0), ((0, 4), 1), ((4, 0), 0), ((4, 0), 1),
         ((3, 0, 2), (0, 2))]


@pytest.mark.parametrize("shape,axis", EMPTY, ids=[f"{s}-{a}" for s, a in EMPTY])
def test_empty_global_arrays(shape, axis):
    bad = []
    for dt in (np.float64, np.int64, bool):
        g = np.zeros(shape, dt)
        a = dap.DistArray.from_global(g, comm=comm)
        for name in ("sum", "prod", "any", "all", "max", "min", "mean"):
            if dt is bool and name in ("max", "min"):
                continue            # test_bool_max_min_and_bitwise_reductions
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = outcome(lambda: np.asarray(getattr(g, name)(axis=axis)))
                kind, got = outcome(lambda: as_global(getattr(a, name)(axis=axis)))
            if want[0] == "exc":
                if kind != "exc" or want[1].split(":")[0] != got.split(":")[0]:
                    bad.append(f"{dt.__name__} {name}: NumPy raised {want[1]}, got {kind} {got}")
                continue
            w = want[1]
            if kind == "exc":
                bad.append(f"{dt.__name__} {name}: raised {got}")
            elif got.dtype != w.dtype or got.shape != w.shape or \
                    not np.array_equal(got, w, equal_nan=w.dtype.kind == "f"):
                bad.append(f"{dt.__name__} {name}: {got!r} != {w!r}")
    collective_assert(not bad, "; ".join(bad[:6]))


def test_nan_on_one_rank_propagates_everywhere():
    g = np.arange(5.0 * N + 3)
    g[-1] = np.nan                     # on the last rank only
    a = dap.DistArray.from_global(g, comm=comm)
    res = [a.sum(), a.max(), a.min(), a.prod(), a.mean()]
    collective_assert(all(np.isnan(r) for r in res), f"{res}")
    b = dap.DistArray.from_global(np.where(np.isnan(g), 1.0, g), comm=comm)
    collective_assert(b.max() == np.nanmax(g), f"{b.max()}")


def test_bool_max_min_and_bitwise_reductions():
    """Defect: boolean maximum/minimum/bitwise_and/bitwise_or combine with
    MPI.MAX/MIN/BAND/BOR on MPI.C_BOOL, which MPI does not define for a
    logical type ('Invalid MPI_Op' on every rank with >= 2 ranks)."""
    g = np.array([True, False, True, True, False] * N)
    a = dap.DistArray.from_global(g, comm=comm)
    cases = [("max", lambda x: x.max()), ("min", lambda x: x.min()),
             ("max axis 0", lambda x: np.maximum.reduce(x, axis=0)),
             ("bitwise_and", lambda x: np.bitwise_and.reduce(x, axis=None)),
             ("bitwise_or", lambda x: np.bitwise_or.reduce(x, axis=None))]
    bad = []
    for name, f in cases:
        kind, got = outcome(lambda: as_global(f(a)))
        want = np.asarray(f(g))
        if kind == "exc" or got.dtype != want.dtype or got.tobytes() != want.tobytes():
            bad.append(f"{name}: {kind} {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))


@pytest.mark.parametrize("dtype", ["c16", "c8", "f2"])
def test_complex_and_float16_elementwise_and_reductions(dtype):
    """Defect: DistArray ufuncs and reductions always call nclx.ufuncs'
    ufunc of the same name (nclx.aware.nclx_ufunc), which has loops only for
    bool, the integers, float32 and float64: complex and float16 DistArrays
    raise UFuncTypeError on every rank, on one rank too (docs/dap.md promises
    'float (and complex) sums and products')."""
    g = (np.arange(3 * N + 4) % 5 + 1).astype(dtype)
    if np.dtype(dtype).kind == "c":
        g = g + (1j * (np.arange(3 * N + 4) % 3)).astype(dtype)
    a = dap.DistArray.from_global(g, comm=comm, padding=[1])
    cases = [("a * 2 + 1", lambda x: x * 2 + 1), ("negative", np.negative),
             ("sum", lambda x: x.sum()), ("prod", lambda x: (x * 0 + 1).prod()),
             ("mean", lambda x: x.mean()), ("max", lambda x: x.max())]
    bad = []
    for name, f in cases:
        kind, got = outcome(lambda: as_global(f(a)))
        want = np.asarray(f(g))
        if kind == "exc":
            bad.append(f"{name}: {got}")
        elif got.dtype != want.dtype or not np.allclose(got, want, rtol=1e-3 if dtype == "f2" else 1e-6):
            bad.append(f"{name}: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))


def test_non_associative_ufunc_reduce_is_exact_or_refused():
    """Defect: np.subtract.reduce (and divide, power, ...) of a DistArray
    reduces each rank's block then combines the partial results with the
    same ufunc in a tree -- a silently wrong answer with >= 2 ranks
    (a0 - a1 - (b0 - b1) != a0 - a1 - b0 - b1).  Either NumPy's value or a
    DapError naming the ufunc."""
    g = np.arange(1, 3 * N + 2, dtype=np.int64)
    a = dap.DistArray.from_global(g, comm=comm)
    bad = []
    for uf in (np.subtract, np.floor_divide):
        kind, got = outcome(uf.reduce, a, axis=None)
        want = uf.reduce(g)
        if not ((kind == "exc" and "DapError" in got) or (kind == "ok" and got == want)):
            bad.append(f"{uf.__name__}.reduce: {kind} {got!r}, NumPy {want!r}")
    collective_assert(not bad, "; ".join(bad))


def test_garbage_in_communication_padding_does_not_affect_axis_reductions():
    """Defect: an axis reduction reduces the whole local extent along the kept
    axes, communication padding included (reduce.py _counted), so stale
    values there raise FloatingPointError under np.errstate(over='raise')
    although the global array's reduction is finite (every rank has padding
    here: the dimension is periodic)."""
    g = np.arange(6.0 * N * 4).reshape(6 * N, 4)
    a = dap.DistArray.from_global(g, comm=comm, padding=[1, 0], periodic=[True, False])
    a._block[~counted_mask(a)] = 1e308
    with np.errstate(over="raise"):
        kind, got = outcome(lambda: as_global(a.sum(axis=1)))
    ok = kind == "ok" and np.array_equal(got, g.sum(axis=1))
    collective_assert(ok, f"sum(axis=1): {kind} {got}")


def test_checked_mode_covers_distarray_arithmetic():
    """Defect: nclx.checked() does not apply to DistArrays: their kernels are
    nclx.ufuncs' ufuncs, which never walk the checked kernel chain, so
    integer overflow wraps silently -- elementwise (every rank overflows
    here) and in the cross-rank combine (MPI.SUM of partial sums that each
    fit)."""
    g = np.full(3 * N + 1, 2**61, dtype=np.int64)
    a = dap.DistArray.from_global(g, comm=comm)
    with nclx.checked():
        kind, got = outcome(lambda: (a * 8).owned.copy())
    bad = [] if kind == "exc" and "OverflowError" in got else [f"a * 8: {kind} {got}"]
    # each rank's partial fits in int64, the total does not
    h = np.zeros(2 * max(N, 2), dtype=np.int64)
    h[0] = h[-1] = 2**62
    b = dap.DistArray.from_global(h, comm=comm)
    with nclx.checked():
        kind, got = outcome(b.sum)
    if not (kind == "exc" and ("OverflowError" in got or "DapError" in got)):
        bad.append(f"sum (2**62 + 2**62): {kind} {got!r}")
    collective_assert(not bad, "; ".join(bad))


# ------------------------------------------------------------------ heat
@pytest.mark.parametrize("n,steps,periodic", [(3, 0, False), (4, 3, False), (4, 2, True),
                                              (5, 0, True)])
def test_heat_with_fewer_cells_than_ranks_and_zero_steps(n, steps, periodic):
    from nclx.examples.heat import run, serial
    kind, value = outcome(run, n, steps, periodic, comm, report=None)
    if kind == "exc":
        collective_assert(False, f"run({n}, {steps}): {value}")
    u, times = value
    full = u.gather(root=0)
    ok, msg = len(times) == steps, f"{len(times)} step times"
    if rank == 0 and ok:
        want = serial(n, steps, periodic)
        err = float(np.max(np.abs(full - want)))
        ok, msg = err <= 1e-12, f"max error {err}"
    ok, msg = comm.bcast((ok, msg), root=0)
    collective_assert(ok, msg)
