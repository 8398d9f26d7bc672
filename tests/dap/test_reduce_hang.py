"""Reductions of DistArrays never leave a rank waiting: an error on one rank
(a floating-point error, a hook, NumPy refusing the arguments, checked()
overflow) is raised on every rank, an empty block contributes its start
value, and axis reductions of temporaries do not run out of communicators.
Each scenario runs under ``mpiexec`` in a subprocess with a watchdog
(dap_helpers)."""
import numpy as np

from dap_helpers import assert_raised_everywhere, run_ranks


def test_floating_point_error_on_one_rank_inside_sum(tmp_path):
    """Defect: inf + -inf on the last rank's block under np.errstate(invalid='raise'):
    that rank raises FloatingPointError in its local reduction
    (reduce.py: ``partial = fn.reduce(...)``) and the others
    wait for ever in the combining Reduce."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        g = np.ones(4 * N)
        g[-1], g[-2] = np.inf, -np.inf           # the last rank's block
        a = dap.DistArray.from_global(g, comm=comm)
        with np.errstate(invalid="raise"):
            step(lambda: a.sum())
    """)
    assert_raised_everywhere(steps, ended, report)


def test_python_hook_raising_on_one_rank_during_a_reduction(tmp_path):
    """Defect: a "python"-level reduce hook that raises on one rank: that rank
    never reaches reduce.reduce_block (the chain runs first, nclx.aware.array_ufunc),
    the others wait in the collectives."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        import nclx.hooks as hooks

        def flaky(call):
            if rank == N - 1:
                raise RuntimeError("hook failed on the last rank")
            return call.next()

        a = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
        with hooks.register("python", "reduce", flaky):
            step(lambda: a.sum())
    """)
    assert_raised_everywhere(steps, ended, report)


def test_max_where_without_initial_with_an_empty_block(tmp_path):
    """Defect: NumPy refuses maximum.reduce(where=...) without initial; the
    ranks with cells raise that ValueError, but a rank with an empty block
    skips the kernel (reduce.py: the identity-fill branch) and waits alone
    in the Allreduce."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        g = np.array([1.0, 2.0])                 # 2 cells on 3 ranks: rank 2 is empty
        a = dap.DistArray.from_global(g, comm=comm)
        step(lambda: a.max(where=a > 1))
    """)
    assert_raised_everywhere(steps, ended, report)


def test_fmax_and_fmin_reduce_with_an_empty_block(tmp_path):
    """Was a hang: np.fmax has no identity, and a rank with an empty block had
    no neutral value (it raised DapError while the others waited in the
    pickled reduction).  An empty block now contributes the reduction's start
    value (nclx.aware.start_value: -inf for a float fmax, the dtype's highest
    value for an integer fmin): NumPy's answer, dtype included, on every rank."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        a = dap.DistArray.from_global(np.array([1.0, 2.0]), comm=comm)   # rank 2 is empty
        step(lambda: float(np.fmax.reduce(a, axis=None)))
        b = dap.DistArray.from_global(np.array([7, 3], dtype=np.int16), comm=comm)
        step(lambda: repr(np.fmin.reduce(b, axis=None)))
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    want = ["OK 2.0", f"OK {repr(repr(np.fmin.reduce(np.array([7, 3], dtype=np.int16))))}"]
    assert all(s == want for s in steps), report


def test_checked_overflow_in_one_ranks_block(tmp_path):
    """Defect: under nclx.checked() an int64 sum that overflows within the last
    rank's block must raise OverflowError (NumPy on the global array does);
    today no rank raises (DistArray kernels ignore checked, the sum wraps),
    and a kernel that did raise on that rank alone would leave the others
    waiting in the Allreduce."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        g = np.ones(4 * N, dtype=np.int64)
        g[-2:] = 2**62                           # the last rank's block overflows
        a = dap.DistArray.from_global(g, comm=comm)
        with nclx.checked():
            step(lambda: int(a.sum()))
    """)
    assert_raised_everywhere(steps, ended, report, types=("OverflowError", "DapError"))


def test_axis_reductions_of_temporaries_do_not_leak_communicators(tmp_path):
    """Defect: every axis reduction of a new DistArray (a temporary such as
    ``(a * 1.0).sum(axis=0)`` in a time-step loop) makes two communicators
    with comm.Split (reduce.py _subcomms), cached on that DistArray and never
    freed: MPICH runs out of context ids after 1023 such reductions ('Other
    MPI error' on every rank)."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        a = dap.DistArray.from_global(np.arange(40.0 * N).reshape(4 * N, 10), comm=comm,
                                      grid_shape=(N, 1))

        def loop():
            for i in range(1100):
                try:
                    r = (a * 1.0).sum(axis=0)
                except Exception as exc:
                    raise RuntimeError(f"axis reduction {i}: {exc}") from exc
                del r
            return "ok"

        step(loop)
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    assert all(s[:1] == ["OK 'ok'"] for s in steps), report
