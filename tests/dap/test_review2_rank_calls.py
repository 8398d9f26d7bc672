"""Review 2 (issue 25): ranks that call differently, or pass arguments whose
text is not portable, under ``mpiexec -n 3`` in a subprocess with a
watchdog (dap_helpers): every rank raises, or every rank computes the same
call; no rank is left waiting."""
import textwrap

from dap_helpers import run_ranks

SETUP = """
a = dap.DistArray.from_global(np.arange(8.0 * N), comm=comm)
"""


def test_registered_function_against_an_elementwise_call_under_errstate_raise(tmp_path):
    """One rank in a registered function's agreement, the others in an
    elementwise call under ``np.errstate(over='raise')``: a DapError on every
    rank.  Before: the elementwise ranks raised at once, the other rank
    waited for ever in the allgather that reports the ranks' arguments."""
    steps, ended, report = run_ranks(tmp_path, 3, SETUP + textwrap.dedent("""
        with np.errstate(over="raise"):
            step(lambda: np.roll(a, 1) if rank == 0 else a + 1.0)
        step(lambda: float(np.sum(a)))
    """))
    assert all(ended), f"a rank was left waiting (or was ended):\n{report}"
    for lines in steps:
        assert len(lines) == 2, report
        assert lines[0].startswith("EXC DapError:"), report
        assert "different calls" in lines[0], report
        assert lines[1] == f"OK {float(sum(range(24)))!r}", report
