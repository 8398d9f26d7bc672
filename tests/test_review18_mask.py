"""Review 18 of nclx.mask: place and putmask store the selected elements
only, as NumPy does.  Their kernels used to store every element of a word of
eight mask bytes with some selected (the old value back where the byte is
zero, to avoid a branch): a second Python thread writing the unselected
elements of the same array meanwhile (the GIL is released) lost its writes.
"""
import threading
import time

import numpy as np
import pytest

import nclx
import nclx.mask as M

N = 1 << 20          # large enough that nclx releases the GIL


@pytest.fixture(autouse=True)
def _one_thread():
    old = nclx.get_num_threads()
    nclx.set_num_threads(1)
    yield
    nclx.set_num_threads(old)


@pytest.mark.parametrize("fn", [M.putmask, M.place])
@pytest.mark.parametrize("values", [[5.0], [5.0] * 7])
def test_unselected_elements_written_by_another_thread_are_kept(fn, values):
    # even elements: fn writes 5.0 again and again; odd elements: another
    # thread adds 1 to each of them per pass (NumPy's masked ufunc loop
    # writes only where `where` is True).  Every odd element must end equal
    # to the number of passes: a store of a stale value by fn loses one.
    a = np.zeros(N)
    mine = np.arange(N) % 2 == 0
    theirs = ~mine
    done = threading.Event()
    passes = [0]
    ready = threading.Barrier(2, timeout=30)

    def other():
        ready.wait()
        t0 = time.monotonic()
        while not done.is_set() and time.monotonic() - t0 < 30:
            np.add(a, 1.0, out=a, where=theirs)
            passes[0] += 1

    t = threading.Thread(target=other)
    t.start()
    ready.wait()
    t0 = time.monotonic()
    calls = 0
    while time.monotonic() - t0 < 20:
        fn(a, mine, values)
        calls += 1
        if calls >= 200 and passes[0] >= 3:
            break
    done.set()
    t.join(60)
    assert not t.is_alive()
    assert passes[0] >= 1
    assert (a[mine] == 5.0).all()
    lost = int(np.count_nonzero(a[theirs] != passes[0]))
    assert lost == 0, f"{lost} elements lost the other thread's writes"


@pytest.mark.parametrize("nv", [1, 2, 3, 7, 8, 9, 64, 1000, N])
@pytest.mark.parametrize("density", [0.05, 0.5, 0.95])
def test_selected_elements_take_numpy_s_values(nv, density):
    # the kernels' new paths (selected bytes of a mixed word visited one by
    # one, the value index carried across words) give NumPy's bytes
    rng = np.random.default_rng(nv)
    n = 5000 + nv % 13
    a = rng.standard_normal(n)
    m = rng.random(n) < density
    m[:64] = True                                   # full words too
    v = rng.standard_normal(nv)
    for fn, npfn in ((M.putmask, np.putmask), (M.place, np.place)):
        x, y = a.copy(), a.copy()
        fn(x, m, v)
        npfn(y, m, v)
        assert x.tobytes() == y.tobytes()
