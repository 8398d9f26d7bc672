"""Elementwise calls on DistArrays under ``np.errstate(...='raise')``: a
floating-point error on one rank's block is raised on every rank (that
rank's FloatingPointError, a DapError naming it on the others), and the
ranks stay in step.  Before: only the failing rank raised; the others went
on to their next collective alone.  Without a 'raise' mode nothing
changes: a warning is the warning rank's own.  ``mpiexec -n 3`` in a
subprocess with a watchdog (dap_helpers)."""
from dap_helpers import run_ranks


def test_a_floating_point_error_on_one_rank_is_raised_everywhere(tmp_path):
    steps, ended, report = run_ranks(tmp_path, 3, """
        g = np.ones(4 * N)
        g[-1] = 0.0                               # the last rank's block
        a = dap.DistArray.from_global(np.ones(4 * N), comm=comm)
        b = dap.DistArray.from_global(g, comm=comm)
        with np.errstate(divide="raise"):
            step(lambda: a / b)
            step(lambda: float(np.sum(a / (b + 1.0))))      # no error: every rank goes on
        with np.errstate(divide="ignore"):
            step(lambda: float(np.sum(np.isinf(a / b))))    # 'ignore': nothing collective
    """)
    assert all(ended), f"a rank was left waiting (or was ended):\\n{report}"
    for r, lines in enumerate(steps):
        assert len(lines) == 3, report
        if r == 2:
            assert lines[0].startswith("EXC FloatingPointError: divide by zero"), report
        else:
            assert lines[0].startswith("EXC DapError[FloatingPointError]: divide: rank 2 of 3 failed"), report
            assert "FloatingPointError" in lines[0], report
        assert lines[1] == f"OK {0.5 * (4 * 3 - 1) + 1.0!r}", report
        assert lines[2] == "OK 1.0", report
