"""Redistribution (issue 25): ``nclx.dap.redistribute`` and ``da.T`` against
a hand-written mpi4py ``Alltoallw`` with subarray (and strided vector)
datatypes doing the same move, 4 ranks, 2000 x 2000 float64 over a balanced
block grid.  Goal: nclx within 1.1x of the hand-written move.

The MPI code runs under ``mpiexec -n 4 python -m nclx.dap.bench_redistribute
--json`` (once, in ``setup_cache``); each case is timed there in alternating
rounds (nclx, then the reference), a round's time being the slowest rank's.

``track_ratio``: time(nclx) / time(hand-written) (< 1 means nclx is faster).
``track_ms``: nclx's median milliseconds.  A case whose results differ from
the reference's byte for byte reports NaN.
"""
import json
import math

CASES = ["block->cyclic", "block->block (P,1)", "transpose"]


class Redistribute:
    params = [CASES]
    param_names = ["case"]
    timeout = 600

    def setup_cache(self):
        try:
            from nclx.dap.bench_redistribute import launch
            out = launch(["--n", "2000", "--repeats", "30", "--json"], ranks=4)
        except Exception as exc:     # no mpi4py / mpiexec: every row is skipped
            return {"error": repr(exc)}
        return json.loads(out.strip().splitlines()[-1])

    def setup(self, cache, case):
        if "error" in cache:
            raise NotImplementedError(cache["error"])

    def track_ratio(self, cache, case):
        r = cache["cases"][case]
        return r["ratio"] if r["same_bytes"] else math.nan
    track_ratio.unit = "nclx / hand-written"

    def track_ms(self, cache, case):
        r = cache["cases"][case]
        return r["nclx_ms"] if r["same_bytes"] else math.nan
    track_ms.unit = "ms"
