"""Review 21 of the core (the test failed before its fix):

- C2 (docs): docs/hooks.md said install() swaps 759 NumPy loops; 184 of the
  759 entries are nclx's own ufuncs' (575 swapped).
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


def test_c1_checked_print_mode_writes_to_fd_2_as_numpy(tmp_path):
    # run outside the source tree: its nclx/ is not the built package
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["''", "''"]          # sys.stderr saw nothing, either way
    assert r.stderr.count("Warning: overflow encountered in multiply\n") == 2, r.stderr


def test_c2_entry_counts_as_docs_hooks_md_says():
    """docs/hooks.md: 759 entries on LP64 Linux, 184 of them nclx's own ufuncs'
    (fma, where, cast), so install() swaps 575 NumPy loops on NumPy 2.1-2.4,
    fewer before 2.1 (integer floor/ceil/trunc skipped)."""
    import numpy as np
    import nclx
    from nclx._ncl import entries
    n = len(entries.signatures())
    own = [k for k in range(n) if entries.slot_info(k)[2] is None]
    assert {entries.slot_info(k)[0] for k in own} == {"fma", "where", "cast"}
    if np.dtype("l").itemsize == 8:        # LP64
        assert (n, len(own)) == (759, 184)
    with nclx.installed():
        swapped = entries.installed_count()
    assert swapped <= n - len(own)
    if (2, 1) <= tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 5):
        assert swapped == n - len(own) == 575
