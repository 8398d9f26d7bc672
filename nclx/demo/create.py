"""Section 5e ("Create") of ``python -m nclx demo``: NumPy's constructors with
alignment, first touch on the team and the Create chains."""
import numpy as np

import nclx
import nclx.create as nc
import nclx.hooks as hooks
from nclx.demo._common import median_time, section


class _Sentinel(hooks.Kernel):
    """Fill every new float64 'empty' array with a recognisable NaN."""

    def __call__(self, inputs, out):
        out.view(np.uint64)[...] = 0x7FF8DEADBEEF0000


def run():
    section("5e. Create: np.empty/zeros/full/..._like with align=, first touch on the team, hooks")
    n = 10_000_000
    print(f"{'call (1e7 float64)':<34}{'numpy ms':>10}{'nclx ms':>10}  same bits")
    for label, f_np, f_nc in [
            ("full(n, 2.5)", lambda: np.full(n, 2.5), lambda: nc.full(n, 2.5)),
            ("ones(n)", lambda: np.ones(n), lambda: nc.ones(n)),
            ("zeros(n)", lambda: np.zeros(n), lambda: nc.zeros(n)),
            ("zeros(n), then a += 1", lambda: np.zeros(n).__iadd__(1),
             lambda: nc.zeros(n).__iadd__(1))]:
        t_np, t_nc = median_time(f_np, repeat=5), median_time(f_nc, repeat=5)
        print(f"{label:<34}{t_np * 1e3:>10.2f}{t_nc * 1e3:>10.2f}  "
              f"{f_np().tobytes() == f_nc().tobytes()}")
    print(f"(on {nclx.get_num_threads()} thread(s): each writes its own page-aligned range)")
    a = nc.zeros((1000, 1000), np.float32, align=4096, order="F")
    print(f"zeros((1000, 1000), float32, align=4096, order='F'): address % 4096 = "
          f"{a.ctypes.data % 4096}, F-contiguous {a.flags.f_contiguous}, all zero {not a.any()}")
    with nclx.ledger.recording() as led:
        nc.full(1000, 7, np.int16)
        nc.empty_like(a)
        nc.zeros(10, np.uint8)
    print("ledger:", sorted((r.op, r.dtypes[0], r.elements, r.subsystem) for r in led.records()))
    with hooks.register("kernel", ("empty", "float64"), _Sentinel()):
        e = nc.empty(4)
    print(f"a kernel hook filling empty float64 arrays with a sentinel: {e.view(np.uint64)[0]:#x}")
