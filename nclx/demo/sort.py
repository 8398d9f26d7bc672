"""Section 5c of ``python -m nclx demo``: NumPy's sorts on nclx's threads,
NumPy's values and stable indices."""
import numpy as np

import nclx
from nclx._ncl import sortcopy, sortcount, sorting
from nclx.demo._common import median_time, section


def run():
    section("5c. Sort: np.sort / np.argsort on nclx's threads, NumPy's exact results")
    rng = np.random.default_rng(5)
    a = rng.standard_normal(2_000_000)
    m = rng.integers(0, 1 << 40, (500, 4000))
    few = rng.standard_normal(100)[rng.integers(0, 100, 2_000_000)]     # 100 distinct values
    ordered = np.sort(rng.integers(0, 1 << 40, 2_000_000))               # already in order
    with nclx.installed():
        routed = sorting.reachable() == ""       # install() probed this NumPy's sorts
    if routed:
        cases = [("np.sort(a)", lambda: np.sort(a)),
                 ("np.sort(a, kind='stable')", lambda: np.sort(a, kind="stable")),
                 ("np.argsort(a, kind='stable')", lambda: np.argsort(a, kind="stable")),
                 ("np.sort(m, axis=1)", lambda: np.sort(m, axis=1)),
                 ("np.sort(few)  (100 values)", lambda: np.sort(few)),
                 ("np.sort(ordered, kind='stable')", lambda: np.sort(ordered, kind="stable"))]
        stock = {label: fn for label, fn in cases}
        fast = stock
        head = "installed ms"
    else:
        print(f"install() leaves this NumPy's sorts alone: {sorting.reachable()}")
        stock = {"sort(a)": lambda: np.sort(a), "argsort(a, stable)": lambda: np.argsort(a, kind="stable"),
                 "sort(m, axis=1)": lambda: np.sort(m, axis=1)}
        stock["sort(few)"] = lambda: np.sort(few)
        fast = {"sort(a)": lambda: nclx.sort(a),
                "argsort(a, stable)": lambda: nclx.argsort(a, kind="stable"),
                "sort(m, axis=1)": lambda: nclx.sort(m, axis=1),
                "sort(few)": lambda: nclx.sort(few)}
        head = "nclx.* ms"
    print(f"{'call':<32}{'stock ms':>10}{head:>14}{'ratio':>8}  same bits")
    for label in stock:
        want = stock[label]()
        ts = median_time(stock[label], repeat=5)
        with nclx.installed():
            got = fast[label]()
            ti = median_time(fast[label], repeat=5)
        print(f"{label:<32}{ts * 1e3:>10.1f}{ti * 1e3:>14.1f}{ts / ti:>8.2f}  "
              f"{want.tobytes() == got.tobytes()}")
    taken, in_order = sortcopy.stats()
    print(f"(np.sort's copy checked for order as it was written: {taken} call(s), "
          f"{in_order} already in order and returned without a sort)")
    counted = sortcount.few_sorts()
    print(f"(on {nclx.get_num_threads()} thread(s): split by value or runs sorted by NumPy's own "
          f"function and merged by the merge path; few distinct values counted: "
          f"{counted} sort(s) so far)")
    with nclx.ledger.recording() as led:
        nclx.sort(a[:100_000])
        nclx.argsort(a[:100_000])
    print("ledger rows: " + ", ".join(f"{r.op} {r.dtypes[0]} ({r.subsystem})"
                                      for r in led.records() if r.kind == "call"))
