"""Section 8 of ``python -m nclx demo``: GDP-3 storages (nclx.storage)."""
import numpy as np

import nclx.storage as st
from nclx.demo._common import section
from nclx.storage import devices


def run():
    """Print what a storage is and does; return 0."""
    section("8. nclx.storage: GDP-3 storages with halos, alignment and layouts")
    s = st.zeros((6, 5, 4), halo=((1, 1), (1, 1), (0, 0)), alignment_size=64, defaults="gtx86")
    a = np.asarray(s)
    corner = a.__array_interface__["data"][0] + sum(i * k for i, k in zip((1, 1, 0), a.strides))
    print(f"s = st.zeros((6, 5, 4), halo=((1, 1), (1, 1), (0, 0)), alignment_size=64, "
          f"defaults='gtx86')\n  {s!r}")
    print(f"  strides {s.strides} (K innermost, padded to 8 elements as gt4py pads); "
          f"origin (1, 1, 0) at an address = {corner % 64} mod 64")
    s.domain_view[...] = np.arange(4 * 3 * 4, dtype=float).reshape(4, 3, 4)
    t = np.sqrt(s + 1.0)
    print(f"t = np.sqrt(s + 1.0) -> {type(t).__name__}, halo {t.halo}, strides {t.strides}, "
          f"t[1, 1, :] = {np.round(np.asarray(t)[1, 1, :], 3)}")
    v = s[1:, ::2, 0]
    print(f"s[1:, ::2, 0] -> a view with dims {v.dims}, halo {v.halo}; "
          f"np.shares_memory(v, s) = {np.shares_memory(v, s)}; __gt_origin__ {s.__gt_origin__}")
    dev = devices.EmulatedDevice()
    with devices.use(dev):
        g = st.zeros((128, 128), device="gpu")
        g[0, 0] = 1.0
        before = repr(g.sync_state)
        g.to_cupy()
        print(f"device='gpu' (managed='gt4py', an emulated device here: CuPy on a GPU): host write "
              f"-> {before}; to_cupy() -> {g.sync_state} after {dev.h2d_calls} copy of "
              f"{dev.h2d_bytes:,} bytes")
    try:
        st.empty((3, 3), halo=(1, -1))
    except st.StorageError as exc:
        print(f"bad input: StorageError: {exc}")
    return 0
