"""NumPy's loop-getter answers that nclx keeps (nclx._ncl.copyloop's table
of copy answers, nclx._ncl.sortask's sort answers): a kept answer is the
one NumPy's getter gives for the same question, copies of many stride
pairs, alignments and types stay stock's bytes once the table is full,
a hook added after an answer was kept still sees the copies, and threads
filling the table at once agree."""
import textwrap

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from nclx._ncl import copyloop, spec

try:                                  # built against NumPy >= 2.4 headers only
    from nclx._ncl import sortask, sortmeth
    SORT_METHODS = sortmeth.layout() == ""
except ImportError:
    SORT_METHODS = False

from conftest import run_script
from copy_fixtures import split_small

ALL = list(spec.ALL)


def _views(dt, n=40):
    """Sources and destinations of one dtype over many stride pairs,
    aligned and not (a view one byte into a byte buffer)."""
    isz = np.dtype(dt).itemsize
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, size=(n * 8 + 2) * isz, dtype=np.uint8)
    aligned = base[: n * 8 * isz].view(dt)
    off = base[1: 1 + n * 8 * isz].view(dt) if isz > 1 else aligned
    out = []
    for src in (aligned, off):
        for step in (1, 2, 3, -1, -5):
            out.append(src[::step][:n])
        out.append(np.broadcast_to(src[:1], (n,)))        # a stride of 0
    return out


def _copies(views, dt):
    """Each view copied (``copy()``) and assigned into three destinations."""
    out = []
    for v in views:
        for dstep in (1, 2, -3):
            out.append(v.copy().tobytes())
            d = np.zeros(len(v) * 3, dt)[::dstep][: len(v)]
            d[...] = v
            out.append(d.tobytes())
    return out


@pytest.mark.parametrize("dt", ALL)
def test_copies_over_many_stride_pairs_equal_stock(dt):
    views = _views(dt)
    want = _copies(views, dt)
    with split_small(2):
        nclx.install()
        for rnd in range(2):           # the second round after the table filled
            assert _copies(views, dt) == want, (dt, rnd)
    t = np.dtype(dt).num
    kept = copyloop.kept_answers(t)
    assert 1 <= len(kept) <= 4
    for s0, s1, aligned, same in kept:
        assert same, (dt, s0, s1, aligned)


def test_a_hook_added_after_an_answer_was_kept_sees_the_copy():
    a = np.arange(1000.0)
    with split_small(2):
        nclx.install()
        a.copy()                     # the answer kept while nobody watches
        seen = []

        def spy(c):
            if c.op == "copy":
                seen.append(c.n)
            c.next()
        with hooks.register("funnel", "convert", spy):
            b = a.copy()
        assert seen == [1000]
        assert b.tobytes() == a.tobytes()


@pytest.mark.skipif(not SORT_METHODS, reason="NumPy sorts through the ArrFuncs slots here (before 2.5)")
@pytest.mark.parametrize("dt", ALL)
def test_kept_sort_answers_are_numpys(dt):
    x = np.random.default_rng(1).integers(0, 100, 50).astype(dt)
    want = [np.sort(x).tobytes(), np.sort(x, kind="stable").tobytes(),
            np.argsort(x, kind="stable").tobytes()]
    nclx.install()
    try:
        got = [np.sort(x).tobytes(), np.sort(x, kind="stable").tobytes(),
               np.argsort(x, kind="stable").tobytes()]
        np.argsort(x)
    finally:
        nclx.uninstall()
    assert got == want
    t = np.dtype(dt).num
    for arg in (0, 1):
        for stable in (0, 1):
            assert sortask.numpy_answer_kept(t, arg, stable) is True, (dt, arg, stable)


def test_threads_filling_the_tables_at_once_agree():
    code = textwrap.dedent("""
        import threading
        import numpy as np, nclx
        from nclx._ncl import copyloop
        dts = ["int8", "int16", "float32", "float64", "uint64", "bool"]
        views = {}
        for dt in dts:
            b = np.random.default_rng(3).integers(0, 2, 4000).astype(dt)
            views[dt] = [b[::s][:300] for s in (1, 2, 3, -1, -4, 7)]
        want = {dt: [v.copy().tobytes() for v in vs] + [np.sort(vs[0]).tobytes()]
                for dt, vs in views.items()}
        nclx.install()
        go = threading.Barrier(4)
        bad = []
        def work(k):
            go.wait()
            for r in range(50):
                for dt in dts[k % 2::2]:
                    vs = views[dt]
                    got = [v.copy().tobytes() for v in vs] + [np.sort(vs[0]).tobytes()]
                    if got != want[dt]:
                        bad.append((k, dt, r))
        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        nclx.uninstall()
        for dt in dts:
            for s0, s1, aligned, same in copyloop.kept_answers(np.dtype(dt).num):
                if not same:
                    bad.append((dt, s0, s1, aligned))
        print("bad", bad)
    """)
    out = run_script(code, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "bad []" in out.stdout, out.stdout


def _short_row_copies(dt):
    """Copies made of calls of 1 to 40 items (one call a row): reversed,
    strided, contiguous and broadcast rows, and overlapping views of one
    buffer copied both ways (np.copyto between as_strided views)."""
    rng = np.random.default_rng(11)
    base = rng.integers(0, 256, 64 * 41 * 8, dtype=np.uint8).view(dt)
    out = []
    for w in (1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 40):
        m = base[: 64 * w].reshape(64, w)
        out.append(m[:, ::-1].copy().tobytes())
        out.append(np.ascontiguousarray(m[:, ::2]).tobytes())
        out.append(m[::3].copy().tobytes())
        out.append(np.broadcast_to(m[:, :1], (64, w)).copy().tobytes())
        for shift in (-3, -1, 1, 3):
            buf = base[: 64 * w + 8].copy()
            lo = max(0, -shift)
            src = np.lib.stride_tricks.as_strided(buf[lo + shift:], (8, w), (buf.itemsize * w, buf.itemsize))
            dst = np.lib.stride_tricks.as_strided(buf[lo:], (8, w), (buf.itemsize * w, buf.itemsize),
                                                  writeable=True)
            np.copyto(dst, src)
            out.append(buf.tobytes())
    return out


@pytest.mark.parametrize("dt", ALL)
def test_copies_of_short_rows_equal_stock(dt):
    want = _short_row_copies(dt)
    with split_small(2):
        nclx.install()
        assert _short_row_copies(dt) == want
    nclx.install()
    try:
        assert _short_row_copies(dt) == want      # the default sizes
    finally:
        nclx.uninstall()
