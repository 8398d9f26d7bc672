"""Small reductions on a DistArray (issue 25): microseconds a call of
``np.sum``, ``np.max``, ``np.linalg.norm``, ``sum(axis=0)`` and an agreement
alone, 1,000 elements over 1, 2 and 4 ranks (4 oversubscribe a 2-core
machine).  Their cost is the fold record's one ``Allreduce``, whose
combining step MPI runs through Python, and the Python around it.

The MPI code runs under ``mpiexec -n ranks python -m nclx.dap.bench_reduce
--json`` once per rank count, in ``setup_cache``.
"""
import json

from nclx.dap.bench_reduce import CASES

RANKS = [1, 2, 4]


class SmallReductions:
    params = [CASES, RANKS]
    param_names = ["case", "ranks"]
    timeout = 600

    def setup_cache(self):
        out = {}
        for ranks in RANKS:
            try:
                from nclx.dap.bench_reduce import launch
                text = launch(["--json"], ranks=ranks)
                out[ranks] = json.loads(text.strip().splitlines()[-1])["us"]
            except Exception as exc:     # no mpi4py / mpiexec: the rows are skipped
                out[ranks] = {"error": repr(exc)}
        return out

    def setup(self, cache, case, ranks):
        if "error" in cache[ranks]:
            raise NotImplementedError(cache[ranks]["error"])

    def track_us(self, cache, case, ranks):
        return cache[ranks][case]
    track_us.unit = "us"
