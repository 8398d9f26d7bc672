"""Moves that list indices in windows of bounded memory (issue 25: peak
memory per rank within 5% above the source and target blocks), 2 ranks,
1e6 float64: block -> 'u', 'u' -> block, cyclic -> block-cyclic.

The MPI code runs under ``mpiexec -n 2 python -m nclx.dap.bench_windows
--json`` (once, in ``setup_cache``).

``track_ratio``: time in windows / time in one window (the whole index
lists at once).  ``track_peak_percent``: tracemalloc's peak above the target
block, percent of the source and target blocks (windows; the issue's bound
is 5).  ``track_peak_percent_one_window``: the same in one window.  A case
whose two results differ byte for byte reports NaN.
"""
import json
import math

CASES = ["block->u", "u->block", "cyclic->block-cyclic"]


class Windows:
    params = [CASES]
    param_names = ["case"]
    timeout = 900

    def setup_cache(self):
        try:
            from nclx.dap.bench_windows import launch
            out = launch(["--n", "1000000", "--repeats", "7", "--json"], ranks=2)
        except Exception as exc:     # no mpi4py / mpiexec: every row is skipped
            return {"error": repr(exc)}
        return json.loads(out.strip().splitlines()[-1])

    def setup(self, cache, case):
        if "error" in cache:
            raise NotImplementedError(cache["error"])

    def _get(self, cache, case, key):
        r = cache["cases"][case]
        return r[key] if r["same_bytes"] else math.nan

    def track_ratio(self, cache, case):
        return self._get(cache, case, "ratio")
    track_ratio.unit = "windows / one window"

    def track_peak_percent(self, cache, case):
        return 100 * self._get(cache, case, "peak_windows")
    track_peak_percent.unit = "%"

    def track_peak_percent_one_window(self, cache, case):
        return 100 * self._get(cache, case, "peak_one")
    track_peak_percent_one_window.unit = "%"
