#!/usr/bin/env python3
"""What nclx.storage does on a real GPU (CuPy): the figures docs/storage.md
records.  Needs CuPy and an NVIDIA GPU; prints Markdown.

    python tools/storage_device_check.py [--sizes-mib 1 64 512]

1. ``__cuda_array_interface__`` consumed by CuPy without a copy (same pointer).
2. The transfers each sync transition makes (calls, bytes).
3. ``device_to_host`` / ``host_to_device`` bandwidth (median of 7, forced
   copies of the whole padded span) next to CuPy's own ``get``/``set`` of a
   plain array of the same size.
"""
import argparse

import numpy as np

import nclx.storage as st
from nclx._timing import median_time
from nclx.storage import devices

REPEATS = 7   # the bandwidth figures are medians of this many copies


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mib", type=int, nargs="+", default=[1, 64, 512])
    args = ap.parse_args(argv)
    import cupy as cp   # optional: needed only here, so --help works without it

    backend = devices.CupyBackend()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    print(f"GPU: {props['name'].decode()}, CuPy {cp.__version__}, NumPy {np.__version__}\n")
    sync = cp.cuda.runtime.deviceSynchronize
    with devices.use(backend):
        s = st.zeros((64, 64, 16), device="gpu", halo=2, alignment_size=256)
        c = cp.asarray(s)
        print("## __cuda_array_interface__\n")
        print(f"- cp.asarray(storage).data.ptr == interface pointer: "
              f"{c.data.ptr == s.__cuda_array_interface__['data'][0]}")
        print(f"- aligned element (2, 2, 2) address % 256: "
              f"{(c.data.ptr + sum(2 * k for k in c.strides)) % 256}")
        c[2, 2, 2] = 42.0
        print(f"- written through CuPy, read through the storage: {s[2, 2, 2]}\n")

        print("## Transfers per sync transition\n")
        print("| step | state after | h2d calls | d2h calls | bytes moved |")
        print("|---|---|---:|---:|---:|")
        s = st.zeros((128, 128, 32), device="gpu")
        backend.reset_counters()
        steps = [
            ("host write s[0,0,0] = 1", lambda: s.__setitem__((0, 0, 0), 1.0)),
            ("to_cupy()", s.to_cupy),
            ("device write via to_cupy()", lambda: s.to_cupy().fill(2.0)),
            ("host read s[1,1,1]", lambda: s[1, 1, 1]),
            ("synchronize() when clean", s.synchronize),
            ("set_host_modified(); synchronize()", lambda: (s.set_host_modified(), s.synchronize())),
            ("set_device_modified(); np.asarray(s)", lambda: (s.set_device_modified(), np.asarray(s))),
            ("device_to_host(force=True)", lambda: s.device_to_host(force=True)),
        ]
        for name, fn in steps:
            before = (backend.h2d_calls, backend.d2h_calls, backend.h2d_bytes + backend.d2h_bytes)
            fn()
            sync()
            after = (backend.h2d_calls, backend.d2h_calls, backend.h2d_bytes + backend.d2h_bytes)
            print(f"| {name} | {s.sync_state!r} | {after[0] - before[0]} | "
                  f"{after[1] - before[1]} | {after[2] - before[2]:,} |")

        print(f"\n## Bandwidth (GB/s, median of {REPEATS})\n")
        print("| MiB | storage device_to_host | cp.ndarray.get (same bytes) | "
              "storage host_to_device | cp.ndarray.set |")
        print("|---:|---:|---:|---:|---:|")
        for mib in args.sizes_mib:
            n = mib * (1 << 20) // 8
            s = st.zeros((n,), device="gpu")
            s.synchronize()
            nbytes = s._buf.host_span.nbytes
            d2h = median_time(lambda: (s.device_to_host(force=True), sync()), REPEATS)
            h2d = median_time(lambda: (s.host_to_device(force=True), sync()), REPEATS)
            a = cp.zeros(n)
            h = np.empty(n)
            get = median_time(lambda: (a.get(out=h), sync()), REPEATS)
            put = median_time(lambda: (a.set(h), sync()), REPEATS)
            gb = lambda t: nbytes / t / 1e9  # noqa: E731
            print(f"| {mib} | {gb(d2h):.1f} | {gb(get):.1f} | {gb(h2d):.1f} | {gb(put):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
