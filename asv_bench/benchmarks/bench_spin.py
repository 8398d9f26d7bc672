"""Split calls beside busy processes: libgomp's spin count as ``import nclx``
sets it (10,000 turns) against libgomp's default (300,000) and its passive
policy -- docs/benchmarks.md, "Workers that spin" (nclx/bench_spin.py).

``track_ratio``: the setting's time per ``nclx.evaluate("2*a+b*b")`` call
(1e6 float64, 2 threads, a fresh interpreter each) over nclx's own, the
median of 3 alternating rounds, with ``busy`` spinning processes beside:
> 1 means nclx's setting is faster.
"""
import statistics

from nclx.bench_spin import busy_processes, time_setting


class SpinCount:
    params = [["default", "passive"], [0, 2]]
    param_names = ["setting", "busy"]
    unit = "ratio"
    timeout = 600
    number = 1
    repeat = 1

    def track_ratio(self, setting, busy):
        ratios = []
        with busy_processes(busy):
            for _ in range(3):
                mine = time_setting("nclx")["evaluate"]
                other = time_setting(setting)["evaluate"]
                ratios.append(other / mine)
        return statistics.median(ratios)
