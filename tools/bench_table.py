#!/usr/bin/env python3
"""Turn the newest asv results into the Markdown tables of docs/benchmarks.md.

For each benchmark whose first parameter names an implementation or mode
(numpy/nclx, stock/installed/ledger), print the median time of each and the
ratio to the first ("numpy" or "stock"): ratio > 1 means slower than stock.

    python tools/bench_table.py [.asv/results]
"""
import glob
import itertools
import json
import os
import sys


def _latest(results_dir):
    files = [f for f in glob.glob(os.path.join(results_dir, "*", "*.json"))
             if not f.endswith("machine.json")]
    if not files:
        sys.exit(f"no asv results under {results_dir}; run asv first (docs/benchmarks.md)")
    return max(files, key=os.path.getmtime)


def _fmt(sec):
    if sec is None:
        return "n/a"
    for unit, scale in (("s", 1), ("ms", 1e3), ("us", 1e6), ("ns", 1e9)):
        if sec * scale >= 1:
            return f"{sec * scale:.3g} {unit}"
    return f"{sec * 1e9:.3g} ns"


def _plain_table(name, params, values, fmt=None):
    fmt = fmt or _fmt
    print(f"\n#### {name}\n")
    if len(params) >= 2:
        # the last parameter (a size) across, the others down
        cols = [c.strip("'") for c in params[-1]]
        print("| " + " | ".join(["params"] + cols) + " |")
        print("|---|" + "---:|" * len(cols))
        vals = iter(values)
        for head in itertools.product(*params[:-1]):
            row = [fmt(next(vals)) for _ in cols]
            print(f"| {', '.join(p.strip(chr(39)) for p in head)} | " + " | ".join(row) + " |")
        return
    print("| params | value |")
    print("|---|---:|")
    for combo, v in zip(itertools.product(*params), values):
        print(f"| {', '.join(p.strip(chr(39)) for p in combo)} | {fmt(v)} |")


def main(argv):
    results_dir = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".asv", "results")
    path = _latest(results_dir)
    with open(path) as fh:
        data = json.load(fh)
    cols = data["result_columns"]
    print(f"<!-- from {os.path.basename(path)}, machine {data.get('params', {}).get('machine', '?')} -->")
    for name in sorted(data["results"]):
        row = dict(zip(cols, data["results"][name]))
        params = row.get("params") or []
        values = row.get("result")
        if not params or values is None:
            continue
        if name.split(".")[-1].startswith("track_"):
            _plain_table(name, params, values, fmt=lambda v: "n/a" if v is None else f"{v:.3f}")
            continue
        if not name.split(".")[-1].startswith("time_"):
            continue
        impls = [p.strip("'") for p in params[0]]
        if not set(impls) <= {"numpy", "nclx", "stock", "installed", "ledger"}:
            _plain_table(name, params, values)
            continue
        rest = [[p.strip("'") for p in ps] for ps in params[1:]]
        combos = list(itertools.product(*rest))
        grid = {}
        for i, combo in enumerate(itertools.product(impls, *rest)):
            grid[combo] = values[i]
        print(f"\n#### {name}\n")
        print("| " + " | ".join(["params"] + [f"{m} (median)" for m in impls]
                                + [f"{m} / {impls[0]}" for m in impls[1:]]) + " |")
        print("|" + "---|" * (1 + 2 * len(impls) - 1))
        for combo in combos:
            times = [grid[(m, *combo)] for m in impls]
            ratios = [(t / times[0]) if (t and times[0]) else None for t in times[1:]]
            print("| " + " | ".join([", ".join(combo)] + [_fmt(t) for t in times]
                                    + [f"{r:.3f}" if r else "n/a" for r in ratios]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
