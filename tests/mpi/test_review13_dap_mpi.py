"""Defects found in the thirteenth look at nclx.dap (each test failed on the
code before its fix): a reduction of complex values with a real ``dtype=``
warned "Casting complex values to real" twice on its first call (the
result-dtype probe warned too); unique of complex values kept other NaN and
zero bits than NumPy 2.3+; axis reductions into a DistArray out= of another
dtype assigned the result (values where NumPy raises, one rank raising
alone under errstate); load_npy of a file shortened meanwhile gave zeros;
a relative path naming other files on other ranks was read and written;
np.clip applied an ndarray where= to each block (some ranks raised, others
returned); np.mean(where=ndarray) raised "truth value ... ambiguous"; a
DistArray given only as out= raised AttributeError."""
import os
import re
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
import nclx.dap.reduce as dap_reduce
from mpi_helpers import collective_assert, error_of, shared_tmpdir

comm = MPI.COMM_WORLD


def _warned(fn, *args, **kw):
    """(result or the exception's type, the warnings) of ``fn(*args, **kw)``."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            r = type(exc)
    return r, [(w.category, str(w.message)) for w in got]


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.std, np.var, np.prod],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_complex_to_real_dtype_warns_as_numpy_first_call_and_later(fn, axis):
    g = (np.arange(12.0) + 1j).reshape(3, 4)
    d = dap.DistArray.from_global(g, comm=comm)
    ref, ref_w = _warned(fn, g, axis=axis, dtype=np.uint8)
    for round_ in range(2):
        if round_ == 0:
            dap_reduce._DTYPES.clear()          # the first call of its kind
        r, w = _warned(fn, d, axis=axis, dtype=np.uint8)
        r = r.gather(root=None) if isinstance(r, dap.DistArray) else r
        collective_assert(w == ref_w, f"round {round_}: warned {w}, NumPy {ref_w}")
        if isinstance(ref, type):
            collective_assert(r is ref, f"round {round_}: {r!r}, NumPy raised {ref!r}")
            continue
        collective_assert(np.asarray(r).tobytes() == np.asarray(ref).tobytes()
                          and np.asarray(r).dtype == np.asarray(ref).dtype,
                          f"round {round_}: {r!r} against NumPy's {ref!r}")


_SPECIAL = [0.0, -0.0, np.nan, -np.nan, 1.0, -1.0,
            np.array([0x7FF8000000000123], np.int64).view(np.float64)[0]]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dist", ["b", "c"])
def test_unique_of_complex_keeps_numpys_bits_for_equal_values(dtype, seed, dist):
    """NumPy 2.3+'s values-only unique keeps the first cell in C order of
    equal values with other bits (both zeros, every NaN): the DistArray's
    result had the sorted-first NaN and either zero."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    parts = rng.choice(np.array(_SPECIAL), size=(n, 2))
    g = (parts[:, 0] + 0j).astype(dtype)
    g.imag = parts[:, 1]
    d = dap.DistArray.from_global(g, comm=comm, dist=(dist,))
    ref = np.unique(g)
    got = np.unique(d)
    collective_assert(got.dtype == ref.dtype and got.tobytes() == ref.tobytes(),
                      f"{got!r} against NumPy's {ref!r} for {g!r}")


def _compare(fn, g, d, dt, kw):
    """NumPy's (bits, dtype, warnings) or error type against the DistArray's,
    for an out= like the result, of dtype ``dt``."""
    seen = []
    for arr in (d, g):
        like = fn(arr, **kw)
        o = np.zeros_like(like, dtype=dt)

        def call(arr=arr, o=o):
            r = fn(arr, out=o, **kw)
            collective_assert(r is o, "out is returned")
            r = r.gather(root=None) if isinstance(r, dap.DistArray) else r
            return r.tobytes(), r.dtype
        seen.append(_warned(call))
    return seen


# NumPy accumulates a max/min in such an out= itself (its first element cast,
# then kept): documented in docs/dap.md; prod's NaN into complex likewise
_OUT_FNS = [np.sum, np.mean, np.std, np.var, np.nansum, np.nanmean, np.nanstd, np.nanvar,
            np.argmax, np.any]


@pytest.mark.parametrize("fn", _OUT_FNS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", [np.int32, np.float32, np.bool_, np.complex64, np.uint8,
                                np.float16])
@pytest.mark.parametrize("dist", [("b", "n"), ("n", "b"), ("c", "b")])
def test_distarray_out_of_another_dtype_gets_numpys_steps(fn, dt, dist):
    """An axis reduction into a DistArray out= of another dtype: NumPy's
    values, warnings ("in reduce", not "in cast") and errors (np.std into an
    integer out= raises, the mean divided in out=): before, the result in its
    own dtype was assigned."""
    g = np.arange(30.0).reshape(5, 6) * 1.5 - 5      # exact sums in any order
    g[1, 2] = np.nan
    g[2, 3] = 1e39            # beyond float32 and float16 (its square is not beyond float64)
    g[:, 5] = np.nan
    d = dap.DistArray.from_global(g, comm=comm, dist=dist)
    for axis in (0, 1):
        mine, ref = _compare(fn, g, d, dt, {"axis": axis})
        collective_assert(mine == ref, f"{fn.__name__} axis={axis} into {np.dtype(dt)}: "
                                       f"{mine} against NumPy's {ref}")


def test_a_flag_met_on_one_rank_raises_on_every_rank():
    """The cast into out= meets a NaN on one rank only: under
    np.errstate(invalid='raise') every rank raises (the flags are agreed)."""
    g = np.arange(float(4 * max(comm.size, 2))).reshape(-1, 4)
    g[0, 1] = np.nan
    d = dap.DistArray.from_global(g, comm=comm, dist=("n", "b"))
    o = np.zeros_like(np.sum(d, axis=0), dtype=np.int32)
    try:
        with np.errstate(invalid="raise"):
            np.sum(d, axis=0, out=o)
        mine = "ok"
    except FloatingPointError as exc:
        mine = str(exc)
    got = comm.allgather(mine)
    collective_assert(got == ["invalid value encountered in reduce"] * comm.size, got)


tmpdir = pytest.fixture(scope="module")(lambda: (yield from shared_tmpdir("nclx-review13-")))


@pytest.mark.parametrize("dist", ["b", "c"])       # an MPI-IO view; chunked reads (npyread)
def test_load_npy_of_a_file_shortened_meanwhile_raises_on_every_rank(tmpdir, monkeypatch, dist):
    from nclx.dap import npyload
    path = os.path.join(tmpdir, "shrink.npy")
    if comm.rank == 0:
        np.save(path, np.arange(1000.0))
    comm.Barrier()
    real = npyload.read_header

    def shortened(p, m=10000):          # another process truncates it after the header
        r = real(p, m)
        with open(p, "r+b") as f:
            f.truncate(r[3] + 80)
        return r
    monkeypatch.setattr(npyload, "read_header", shortened)
    got = comm.allgather(error_of(lambda: dap.load_npy(path, dist=dist, comm=comm)))
    collective_assert(all(k == "DapError" and "the file ends before its cells" in m
                          for k, m in got), got)


def test_a_relative_path_naming_other_files_is_refused_on_every_rank(tmpdir):
    mine = os.path.join(tmpdir, f"cwd{comm.rank}")
    os.makedirs(mine, exist_ok=True)
    np.save(os.path.join(mine, "x.npy"), np.arange(10.0) + comm.rank)
    np.save(os.path.join(mine, "y.npy"), np.zeros(100))        # an older file
    comm.Barrier()
    before = os.getcwd()
    os.chdir(mine)
    try:
        if comm.size > 1:
            load = error_of(lambda: dap.load_npy("x.npy", dist="b", comm=comm))
            save = error_of(lambda: dap.DistArray.from_global(np.arange(40.0), comm=comm)
                            .save_npy("y.npy"))
        else:       # one rank: one working directory, one file
            load = ("DapError", "x.npy") if np.array_equal(
                dap.load_npy("x.npy", dist="b", comm=comm).gather(root=None),
                np.arange(10.0)) else ("ok", "")
            dap.DistArray.from_global(np.arange(40.0), comm=comm).save_npy("y.npy")
            save = ("DapError", "y.npy") if np.array_equal(np.load("y.npy"),
                                                           np.arange(40.0)) else ("ok", "")
    finally:
        os.chdir(before)
    got = comm.allgather((load, save))
    collective_assert(all(lk == "DapError" and "x.npy" in lm and sk == "DapError" and
                          "y.npy" in sm for (lk, lm), (sk, sm) in got), got)
    if comm.size > 1:
        older = np.load(os.path.join(mine, "y.npy"))
        collective_assert(older.tobytes() == np.zeros(100).tobytes(), "an older file was written")


def test_clip_takes_where_as_a_ufunc_of_the_distarray():
    g = np.arange(37.0)
    g[5] = np.nan
    m = np.arange(37) % 3 == 0
    a = dap.DistArray.from_global(g, comm=comm, dist=("b",))
    got = comm.allgather(error_of(lambda: np.clip(a, 3, 5, where=m)))
    collective_assert(all(k == "DapError" and "where=" in msg for k, msg in got), got)
    w = dap.DistArray.from_global(m, comm=comm, dist=("c",))       # another distribution
    out = dap.DistArray.from_global(np.full(37, -1.0), comm=comm, dist=("b",))
    r = np.clip(a, 3, 5, where=w, out=out)
    ref = np.clip(g, 3, 5, where=m, out=np.full(37, -1.0))
    collective_assert(r is out and out.gather(root=None).tobytes() == ref.tobytes(),
                      "clip where= a DistArray")
    for args, kw in (((3, 5), {"dtype": np.float32}), ((None, None), {}), ((), {"min": 4}),
                     ((np.nan, 5), {})):
        mine = np.clip(a, *args, **kw).gather(root=None)
        theirs = np.clip(g, *args, **kw)
        collective_assert(mine.tobytes() == theirs.tobytes() and mine.dtype == theirs.dtype,
                          f"clip {args} {kw}")


def test_mean_where_ndarray_is_refused_as_the_sum_refuses_it():
    g = np.arange(12.0)
    a = dap.DistArray.from_global(g, comm=comm)
    got = comm.allgather(error_of(lambda: np.mean(a, where=g > 3)))
    collective_assert(all(k == "DapError" and "where= must be a DistArray" in m
                          for k, m in got), got)


@pytest.mark.parametrize("fn", [np.cumsum, np.std, np.var, np.nansum, np.nanmean, np.median,
                                np.argmax], ids=lambda f: f.__name__)
def test_a_distarray_only_as_out_raises_type_error_on_every_rank(fn):
    out = dap.DistArray.from_global(np.zeros(12), comm=comm)
    got = comm.allgather(error_of(lambda: fn(np.arange(12.0), out=out)))
    collective_assert(all("TypeError" in k and "no operand is one" in m
                          for k, m in got), got)
    with pytest.raises(TypeError):
        fn(np.arange(12.0), out=out)


def test_histogram_with_distarray_bins_names_bins():
    bins = dap.DistArray.from_global(np.arange(5.0), comm=comm)
    with pytest.raises(TypeError, match="weights or bins"):
        np.histogram(np.arange(12.0), bins=bins)


def test_concatenate_and_stack_cast_errors_raise_on_every_rank():
    """A cast failing on the rank that holds the NaN: it raised alone and
    the other ranks waited in the move (a hang)."""
    g = np.arange(4.0 * comm.size)
    g[0] = np.nan
    a = dap.DistArray.from_global(g, comm=comm)
    for join in (np.concatenate, np.stack):
        def call(join=join):
            with np.errstate(invalid="raise"):
                join([a, a], dtype=np.int8, casting="unsafe")
        got = comm.allgather(error_of(call))
        collective_assert(all("FloatingPointError" in k for k, _ in got), got)
    # and without the errstate: NumPy's values
    r = np.concatenate([a, a], dtype=np.float32).gather(root=None)
    collective_assert(r.tobytes() == np.concatenate([g, g], dtype=np.float32).tobytes(), "cast")


def test_concatenate_into_object_is_refused_before_anything_moves():
    """dtype=object sent raw pointers between ranks (a crash freeing them)."""
    a = dap.DistArray.from_global(np.arange(6.0), comm=comm)
    for join in (np.concatenate, np.stack):
        got = comm.allgather(error_of(lambda join=join: join([a, a], dtype=object)))
        collective_assert(all(k == "DapError" and "Python objects" in m for k, m in got), got)


@pytest.mark.parametrize("shift", [2 ** 63 - 3, 2 ** 63 - 1, -2 ** 63 + 1, 2 ** 70, -2 ** 70 - 3,
                                   (2 ** 64, -3)])
def test_roll_by_huge_shifts_is_numpys(shift):
    """A shift near 2**63 wrapped in int64: uninitialised values, MPI errors."""
    g = np.arange(10.0)
    a = dap.DistArray.from_global(g, comm=comm)
    axis = (0, 0) if isinstance(shift, tuple) else 0
    got = np.roll(a, shift, axis=axis).gather(root=None)
    collective_assert(got.tobytes() == np.roll(g, shift, axis=axis).tobytes(), f"{shift}")


@pytest.mark.parametrize("kw, kind, words", [
    (dict(dist="b", block_size=[0, 0]), dap.DapError, "block_size[0] must be >= 1"),
    (dict(dist="b", block_size=[-5, -5]), dap.DapError, "block_size[0] must be >= 1"),
    (dict(dist="b", padding=[1.7, 0]), TypeError, "must be an integer"),
    (dict(dist="c", block_size=[1.5, 1]), TypeError, "must be an integer"),
    (dict(dist="b", grid_shape=[1.0, 1.0]), TypeError, "must be an integer"),
    (dict(dist="b", periodic=["no", "no"]), TypeError, "True or False"),
    (dict(dist="c", padding=[-1, 0]), dap.DapError, "padding[0] must be >= 0"),
    (dict(dist="c", periodic=["yes", True]), TypeError, "True or False"),
])
def test_from_shape_refuses_values_it_would_truncate_or_leave_unchecked(kw, kind, words):
    if "grid_shape" in kw and comm.size != 1:
        kw = dict(kw, grid_shape=[float(comm.size), 1.0])
    g = np.arange(24.0).reshape(4, 6)
    a = dap.DistArray.from_global(g, comm=comm)
    with pytest.raises(kind, match=re.escape(words)):
        a.redistribute(**kw)
    with pytest.raises(kind, match=re.escape(words)):
        dap.Distribution.from_shape((4, 6), nprocs=comm.size, **kw)


def _block_dd(size, start, stop, padding, periodic, P, c):
    return dict(dist_type="b", size=size, start=start, stop=stop, padding=padding,
                periodic=periodic, proc_grid_size=P, proc_grid_rank=c)


@pytest.mark.skipif(comm.size != 2, reason="a hand-built two-rank layout (run at 2 ranks)")
@pytest.mark.parametrize("case", ["periodic differs", "wrap padding differs"])
def test_ranks_disagreeing_on_periodic_or_wrap_padding_are_refused(case):
    """A dimension periodic on one rank only was accepted and its halo
    exchange waited; padding that differs across the wrap was accepted."""
    r = comm.rank
    if case == "periodic differs":
        dd = _block_dd(12, -1, 7, (1, 1), True, 2, 0) if r == 0 else \
            _block_dd(12, 5, 12, (1, 0), False, 2, 1)
    else:
        dd = _block_dd(12, -2, 7, (2, 1), True, 2, 0) if r == 0 else \
            _block_dd(12, 5, 13, (1, 1), True, 2, 1)
    buf = np.zeros(dd["stop"] - dd["start"])
    got = comm.allgather(error_of(lambda: dap.from_distarray(
        {"__version__": "0.10.0", "buffer": buf, "dim_data": (dd,)}, comm)))
    words = "'periodic'" if case == "periodic differs" else "differs"
    collective_assert(all("DapError" in k and words in m and "ranks [0]" in m and "ranks [1]" in m
                          for k, m in got), got)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.float32, np.float16, np.int64])
def test_nanmean_of_integers_into_another_dtype_divides_there(dt):
    """NumPy's nanmean of integers is np.mean with out=: the sum into out,
    divided there; the DistArray's mean was cast into out."""
    g = (np.arange(30).reshape(5, 6) * 7 - 40).astype(np.int64)
    d = dap.DistArray.from_global(g, comm=comm, dist=("b", "n"))
    for axis in (None, 0, 1):
        mine, ref = _compare(np.nanmean, g, d, dt, {"axis": axis})
        collective_assert(mine == ref, f"axis={axis} into {np.dtype(dt)}: {mine} against {ref}")
