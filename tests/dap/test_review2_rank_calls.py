"""Review 2 (issue 25): ranks that call differently, or pass arguments whose
text is not portable, under ``mpiexec -n 3`` in a subprocess with a
watchdog (dap_helpers): every rank raises, or every rank computes the same
call; no rank is left waiting."""
import textwrap

import numpy as np

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


def test_the_same_call_spelled_differently_is_the_same_call(tmp_path):
    """An argument by keyword on one rank and by position on another, or a
    default given explicitly: the same call, NumPy's result on every rank.
    Before: a DapError "the ranks disagree" on every rank."""
    steps, ended, report = run_ranks(tmp_path, 3, SETUP + textwrap.dedent("""
        step(lambda: np.roll(a, 1, 0).gather(root=None).tolist() if rank else
             np.roll(a, 1, axis=0).gather(root=None).tolist())
        step(lambda: np.flip(a).gather(root=None).tolist() if rank else
             np.flip(a, axis=None).gather(root=None).tolist())
    """))
    assert all(ended), f"a rank was left waiting (or was ended):\n{report}"
    g = [float(v) for v in range(24)]
    for lines in steps:
        assert lines == [f"OK {g[-1:] + g[:-1]!r}", f"OK {g[::-1]!r}"], report


def test_arguments_without_a_plain_text(tmp_path):
    """An int too long for its decimal text on one rank (``repr`` raises
    there): a DapError on every rank, the ranks in step afterwards (before:
    a ValueError on that rank alone, the others went on into the call).
    A fill value of another type than the plain ones (a Fraction) that
    differs by rank: a DapError on every rank (before: each rank filled its
    block with its own value, silently); so does a 0-d object array (was
    compared by shape alone)."""
    steps, ended, report = run_ranks(tmp_path, 3, SETUP + textwrap.dedent("""
        step(lambda: np.roll(a, 10**5000 if rank == 0 else 1))
        step(lambda: float(np.sum(a)))
        from fractions import Fraction
        step(lambda: np.full_like(a, Fraction(rank, 1)))
        step(lambda: np.full_like(a, Fraction(1, 2)).gather(root=None).tolist())
        step(lambda: np.full_like(a, np.array(float(rank), dtype=object)))
        step(lambda: float(np.sum(a)))
    """))
    assert all(ended), f"a rank was left waiting (or was ended):\n{report}"
    for lines in steps:
        assert len(lines) == 6, report
        assert lines[0].startswith(("EXC DapError:", "EXC ValueError:")), report
        assert lines[1] == f"OK {float(sum(range(24)))!r}", report
        assert lines[2].startswith("EXC DapError:"), report
        assert lines[3] == f"OK {[0.5] * 24!r}", report
        assert lines[4].startswith("EXC DapError:"), report
        assert lines[5] == f"OK {float(sum(range(24)))!r}", report


def test_reduction_arguments_refused_on_one_rank(tmp_path):
    """A reduction whose arguments only one rank's NumPy refuses (an axis out
    of range, a duplicate axis, a bad dtype, a non-associative ufunc): that
    rank's error there, a DapError naming it on the others, the ranks in
    step afterwards.  Before: that rank raised alone and went on to its next
    call, which the others' reduction met (a result paired with another
    call, then a rank left waiting)."""
    steps, ended, report = run_ranks(tmp_path, 3, SETUP + textwrap.dedent("""
        m = dap.DistArray.from_global(np.arange(24.0 * N).reshape(4 * N, 6), comm=comm)
        step(lambda: m.sum(axis=5 if rank == 0 else 0))
        step(lambda: np.sum(m, axis=(0, 0) if rank == 1 else 0))
        step(lambda: np.add.reduce(a, dtype="bogus" if rank == 2 else None))
        step(lambda: np.subtract.reduce(a) if rank == 0 else np.add.reduce(a))
        step(lambda: float(np.sum(a)))
    """))
    assert all(ended), f"a rank was left waiting (or was ended):\n{report}"
    failing = [0, 1, 2, 0]
    for r, lines in enumerate(steps):
        assert len(lines) == 5, report
        for k, who in enumerate(failing):
            if r == who:
                assert not lines[k].startswith(("OK", "EXC DapError: add.reduce: rank")), report
            else:
                assert lines[k].startswith("EXC DapError") and f"rank {who}" in lines[k], report
                # also of the failing rank's type (AxisError, TypeError: NumPy's)
                own = steps[who][k].split(":")[0][len("EXC "):]
                if own in ("AxisError", "TypeError"):
                    assert lines[k].startswith(f"EXC DapError[{own}]:"), report
        assert lines[4] == f"OK {float(sum(range(24)))!r}", report


def test_equal_array_arguments_in_other_memory_orders(tmp_path):
    """The same ``q`` in Fortran order on one rank and C order on the
    others: the same call, NumPy's result on every rank (before: a DapError
    "the ranks disagree", the agreement's digest being the arrays' pickles,
    which differ by memory order)."""
    steps, ended, report = run_ranks(tmp_path, 3, SETUP + textwrap.dedent("""
        q2 = np.array([[10.0, 20.0], [30.0, 90.0]])
        step(lambda: np.percentile(a, np.asfortranarray(q2) if rank == 0 else q2).tolist())
    """))
    assert all(ended), f"a rank was left waiting (or was ended):\n{report}"
    want = np.percentile(np.arange(24.0), [[10.0, 20.0], [30.0, 90.0]]).tolist()
    for lines in steps:
        assert lines == [f"OK {want!r}"], report
