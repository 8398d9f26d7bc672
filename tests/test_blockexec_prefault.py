"""The block executor maps a fresh result's pages before writing them
(nclx/_ncl/ncl_prefault.h: MADV_POPULATE_WRITE over each thread's range of
4 MiB and more whose first page is not mapped yet).  Speed only: these runs
straddle the 4 MiB threshold per thread, start results off page boundaries
(float32, odd lengths), give the private result of a raising errstate and
results already mapped, and every one equals the eager expression bit for
bit."""
import numpy as np
import pytest

from nclx._ncl import blockexec as bx

from test_blockexec import (  # noqa: F401  (fixture)
    _settings, _operands, _quiet, _same, two_a_plus_bb, a_minus_b_over_a_plus_b)

MIB4 = 4 << 20


@pytest.mark.parametrize("dt", ["f8", "f4", "i8"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("extra", [-1, 0, 1, 4099])
def test_fresh_results_around_the_threshold(dt, threads, extra):
    program, eager, _ = two_a_plus_bb(dt)
    n = threads * MIB4 // np.dtype(dt).itemsize + extra
    ops = _operands(eager, dt, n)
    _same(_quiet(bx.execute, program, ops, threads=threads), _quiet(eager, *ops))


def test_a_result_mapped_already_is_written_as_before():
    # the second run's result comes where the first one's was freed (glibc's
    # heap keeps it mapped) or from a fresh mapping: both equal eager NumPy
    program, eager, _ = a_minus_b_over_a_plus_b("f8")
    ops = _operands(eager, "f8", 3 * MIB4 // 8 + 5)
    ref = _quiet(eager, *ops)
    for _ in range(3):
        _same(_quiet(bx.execute, program, ops, threads=2), ref)


def test_out_is_never_prefaulted_but_written():
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", MIB4 // 8 * 2 + 3)
    out = np.full(ops[0].shape, 7.0)
    got = _quiet(bx.execute, program, ops, out=out, threads=2)
    assert got is out
    _same(out, _quiet(eager, *ops))


def test_private_result_of_a_raising_errstate():
    # errstate 'raise': the executor writes a private (fresh, prefaulted)
    # result and copies it into out only when no step raised
    program, eager, _ = a_minus_b_over_a_plus_b("f8")
    n = MIB4 // 8 * 2 + 1
    rng = np.random.default_rng(5)
    a, b = rng.random(n) + 1.0, rng.random(n) + 1.0
    out = np.full(n, 7.0)
    with np.errstate(all="raise"):
        got = bx.execute(program, [a, b], out=out, threads=2)
    assert got is out
    _same(out, _quiet(eager, a, b))
    b = b.copy()
    a[-1] = b[-1] = 0.0                 # 0/0 in the last element: invalid
    out[:] = 7.0
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        bx.execute(program, [a, b], out=out, threads=2)
    assert (out == 7.0).all()
