"""Review 21 of the core (the test failed before its fix):

- C1: inside ``nclx.checked()``, a float overflow under
  ``np.errstate(over="print")`` was printed to Python's ``sys.stderr``;
  NumPy prints to the process's stderr (fd 2), which a
  ``contextlib.redirect_stderr`` does not capture.
"""
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import contextlib, io, numpy as np, nclx
    a = np.array([1e308])
    for inside in (False, True):
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf), np.errstate(over="print"):
            if inside:
                with nclx.checked():
                    a * 10
            else:
                a * 10
        print(repr(buf.getvalue()))
""")


def test_c1_checked_print_mode_writes_to_fd_2_as_numpy():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["''", "''"]          # sys.stderr saw nothing, either way
    assert r.stderr.count("Warning: overflow encountered in multiply\n") == 2, r.stderr
