"""Ratios measured in one process: two variants timed alternately, so that
machine noise hits both; the median of the per-round ratios is returned."""
import statistics
import time


def _sample(fn, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def alternating_ratio(base, other, enter_base=None, enter_other=None, rounds=15,
                      budget=0.004):
    """median over rounds of time(base) / time(other): > 1 means ``other`` is faster."""
    for enter, fn in ((enter_base, base), (enter_other, other)):
        if enter:
            enter()
        fn()
    if enter_base:
        enter_base()
    t0 = time.perf_counter()
    base()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(budget / one))
    ratios = []
    for _ in range(rounds):
        if enter_base:
            enter_base()
        tb = min(_sample(base, inner) for _ in range(3))
        if enter_other:
            enter_other()
        to = min(_sample(other, inner) for _ in range(3))
        ratios.append(tb / to)
    if enter_base:
        enter_base()
    return statistics.median(ratios)
