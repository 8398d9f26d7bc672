"""Large contiguous copies into mapped memory are split only where
splitting measured faster (nclx._ncl.copyrun's probes): the first calls of
a size class go each way in turn, then the faster way is kept; the bytes
are stock's every time, whichever way a call went."""
import threading

import numpy as np
import pytest

import nclx
from nclx._ncl import copying

N = (copying.PROBE_BYTES // 8) + 4099        # float64 items: just above the probed size


@pytest.fixture(autouse=True)
def two_threads():
    before = nclx.get_num_threads()
    old = copying.adapt(True)
    nclx.uninstall()
    nclx.set_num_threads(2)
    copying.reset_probes()
    try:
        yield
    finally:
        nclx.uninstall()
        copying.adapt(old)
        copying.reset_probes()
        nclx.set_num_threads(before)


def _splits(f):
    before = copying.split_calls()
    f()
    return copying.split_calls() - before


def test_probed_calls_alternate_then_the_faster_way_is_kept():
    a = np.random.default_rng(1).standard_normal(N)
    out = np.ones_like(a)                    # written: mapped
    nclx.install()
    ways = [_splits(lambda: np.copyto(out, a)) for _ in range(2 * copying.PROBES)]
    assert out.tobytes() == a.tobytes()
    assert ways == [0, 1] * copying.PROBES   # whole, split, whole, ...
    lo, way, whole, split = copying.probes()[0]
    assert lo == copying.PROBE_BYTES and whole > 0 and split > 0
    # the next call decides: split only when at least 5% faster
    after = [_splits(lambda: np.copyto(out, a)) for _ in range(4)]
    lo, way, whole, split = copying.probes()[0]
    assert way == ("split" if split * 20 <= whole * 19 else "whole")
    assert after == [1 if way == "split" else 0] * 4
    b = a[::-1].copy()
    out[...] = b
    assert out.tobytes() == b.tobytes()


def test_a_kept_way_is_probed_again_after_reprobe_calls():
    """A decision is not for ever (the probes' decision used to last the
    process's life): after copying.reprobe() calls made the kept way the
    class probes again, each way in turn, and the next interval doubles."""
    a = np.random.default_rng(4).standard_normal(N)
    out = np.ones_like(a)
    old = copying.reprobe(3)
    try:
        nclx.install()
        k = 2 * copying.PROBES
        for _ in range(k + 1):                       # probes, then the deciding call
            np.copyto(out, a)
        way = copying.probes()[0][1]
        assert way in ("whole", "split") and copying.rounds()[0] == 0
        kept = 1 if way == "split" else 0
        assert [_splits(lambda: np.copyto(out, a)) for _ in range(2)] == [kept, kept]
        assert [_splits(lambda: np.copyto(out, a)) for _ in range(k)] == [0, 1] * copying.PROBES
        assert copying.probes()[0][1] is None and copying.rounds()[0] == 1
        np.copyto(out, a)                            # decides again
        way = copying.probes()[0][1]
        kept = 1 if way == "split" else 0
        assert [_splits(lambda: np.copyto(out, a)) for _ in range(5)] == [kept] * 5
        assert _splits(lambda: np.copyto(out, a)) == 0          # probing again: whole first
        assert copying.probes()[0][1] is None and copying.rounds()[0] == 2
        assert out.tobytes() == a.tobytes()
        with pytest.raises(ValueError, match="every must be"):
            copying.reprobe(0)
    finally:
        copying.reprobe(old)


def test_the_other_size_classes_are_probed_apart():
    a = np.ones(N)
    out = np.ones_like(a)
    nclx.install()
    for _ in range(2 * copying.PROBES + 1):
        np.copyto(out, a)
    assert copying.probes()[0][1] in ("whole", "split")
    assert [p[1] for p in copying.probes()[1:]] == [None, None]
    copying.reset_probes()
    assert [p[1:] for p in copying.probes()] == [(None, 0, 0)] * 3


def test_fresh_destinations_and_strided_copies_are_always_split():
    a = np.random.default_rng(2).standard_normal(N)
    nclx.install()
    for _ in range(3):
        assert _splits(lambda: a.copy()) == 1          # fresh pages: not probed
        out = np.ones_like(a)
        assert _splits(lambda: np.copyto(out[::-1], a)) == 1   # strided: not probed
        assert out[::-1].tobytes() == a.tobytes()
    assert [p[1:] for p in copying.probes()] == [(None, 0, 0)] * 3


def test_adapt_off_splits_whenever_the_sizes_allow():
    a = np.random.default_rng(3).standard_normal(N)
    out = np.ones_like(a)
    copying.adapt(False)
    nclx.install()
    assert [_splits(lambda: np.copyto(out, a)) for _ in range(8)] == [1] * 8
    assert out.tobytes() == a.tobytes()
    assert copying.adapt() is False


def test_threads_probing_at_once_copy_stocks_bytes():
    srcs = [np.random.default_rng(k).standard_normal(N) for k in range(4)]
    outs = [np.ones_like(s) for s in srcs]
    bad = []
    nclx.install()

    def work(k):
        for _ in range(4):
            np.copyto(outs[k], srcs[k])
            if outs[k].tobytes() != srcs[k].tobytes():
                bad.append(k)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert bad == []
    assert copying.probes()[0][1] in (None, "whole", "split")
