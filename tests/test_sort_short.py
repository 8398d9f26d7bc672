"""The slot entries' short path (NumPy before 2.5: nclx._ncl.sorting): a
short lane while nobody watches goes to NumPy's function at once, unless
this thread has lanes of a row batch still to come or the lane may start
one; the count of threads with lanes to come returns to 0 after every
sort, and the sorts around a batch stay stock's."""
import threading

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from nclx._ncl import sortrows

from sort_fixtures import lowered, needs_slots

SHAPES = [(1000, 100), (64, 64), (3, 7, 50), (2, 1), (1, 5000), (8, 12)]


@needs_slots
@pytest.mark.parametrize("kind", ["quicksort", "stable"])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_no_lanes_left_to_come_after_each_sort(kind, nthreads):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    want = [np.sort(a, axis=-1, kind=kind).tobytes() for a in arrays]
    wanti = [np.argsort(a, axis=-1, kind=kind).tobytes() for a in arrays]
    with lowered(nthreads), nclx.installed():
        for rnd in range(2):
            for a, w, wi in zip(arrays, want, wanti):
                assert np.sort(a, axis=-1, kind=kind).tobytes() == w
                assert sortrows.rows_pending() == 0
                b = a.copy()
                b.sort(kind=kind)
                assert b.tobytes() == w and sortrows.rows_pending() == 0
                assert np.argsort(a, axis=-1, kind=kind).tobytes() == wi
                # a short 1-d sort right after a batch: NumPy's at once
                s = a.ravel()[:7].copy()
                assert np.sort(s, kind=kind).tobytes() == np.sort(a.ravel()[:7]).tobytes()


@needs_slots
def test_short_sorts_of_views_subclasses_and_hooked_calls():
    rng = np.random.default_rng(6)
    m = rng.standard_normal((40, 30))
    cases = [m[::2, ::3], m[:, 5:9], m.T, np.asfortranarray(m), m.view(np.matrix),
             m.astype(np.int16), m.astype(np.float32)[::-1]]
    want = [np.sort(c, axis=ax).tobytes() for c in cases for ax in (0, 1)]
    with lowered(2), nclx.installed():
        got = [np.sort(c, axis=ax).tobytes() for c in cases for ax in (0, 1)]
        seen = []

        def spy(c):
            seen.append(c.n)
            c.next()
        with hooks.register("funnel", "sort", spy):
            hooked = [np.sort(c, axis=ax).tobytes() for c in cases for ax in (0, 1)]
        assert sortrows.rows_pending() == 0
    assert got == want and hooked == want
    assert len(seen) > 0                 # the hook saw the short lanes too


@needs_slots
def test_threads_sorting_batches_and_short_lanes_at_once():
    rng = np.random.default_rng(7)
    big = rng.standard_normal((256, 64))
    small = [rng.standard_normal((5, 9)) for _ in range(4)]
    want_big = np.sort(big, axis=1).tobytes()
    want_small = [np.sort(s, axis=1).tobytes() for s in small]
    bad = []
    go = threading.Barrier(4)

    def work(k):
        go.wait()
        for _ in range(40):
            if k % 2:
                if np.sort(big, axis=1).tobytes() != want_big:
                    bad.append(("big", k))
            else:
                for s, w in zip(small, want_small):
                    if np.sort(s, axis=1).tobytes() != w:
                        bad.append(("small", k))
    with lowered(2), nclx.installed():
        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert sortrows.rows_pending() == 0
    assert bad == []
