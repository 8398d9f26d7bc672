#!/usr/bin/env python3
"""Record gt4py's CPU storage allocation as an oracle table for nclx.storage.

This script documents how ``tests/data/gt4py_alloc_cases.json`` was made. It
needs gt4py (it was recorded with gt4py 1.1.12, numpy 2.4) and is never run
by the test suite::

    python3 -m venv /tmp/gt4py-oracle/venv
    /tmp/gt4py-oracle/venv/bin/pip install gt4py==1.1.12
    /tmp/gt4py-oracle/venv/bin/python tools/record_gt4py_alloc.py \
        [--out tests/data/gt4py_alloc_cases.json] [--seed 20240611]

The oracle is ``gt4py.storage.cartesian.utils.allocate_cpu(shape, layout_map,
dtype, alignment_bytes, aligned_index) -> (raw_buffer, ndarray)``, which calls
``gt4py.storage.allocators.NDArrayBufferAllocator.allocate``:

* ``layout_map[i] = j``: tensor dimension ``i`` is dimension ``j`` of a
  C-ordered buffer (the dimension with ``j == ndim - 1`` is contiguous).
* The contiguous dimension is padded up to a multiple of
  ``max(alignment_bytes // itemsize, 1)`` items; the others are not padded.
* ``raw_buffer`` is a ``uint8`` array of
  ``itemsize * prod(padded_shape) + alignment_bytes - 1`` bytes.
* The view starts ``byte_offset`` bytes into the raw buffer, chosen so that
  the element at ``aligned_index`` sits on an ``alignment_bytes`` boundary.
  Only ``aligned_index[contiguous dim]`` enters the offset; the other strides
  are already multiples of the alignment (or the alignment is <= itemsize).

Output: one JSON document. Line 1 is ``{"header": {...},`` and every case is
one compact JSON object on its own line, so the file diffs well. Keys of a
case (see ``header["keys"]``) are short to keep the file small.

``raw_mod`` and ``off`` depend on the address malloc returned for the raw
buffer and are therefore NOT reproducible between runs; everything else is.
They always satisfy ``off == (data_mod - raw_mod) % align``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
from pathlib import Path

try:
    import gt4py
    import numpy as np
    from gt4py.storage import allocators
    from gt4py.storage.cartesian import layout_registry
    from gt4py.storage.cartesian.utils import allocate_cpu
except ImportError as exc:  # pragma: no cover - documentation script
    sys.exit(f"record_gt4py_alloc.py needs gt4py importable ({exc}); see the module docstring")


ALIGNMENTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
# Every item size: 1 (int8, bool), 2 (int16, float16), 4 (int32, float32),
# 8 (int64, float64, complex64), 16 (complex128).
DTYPES = ["int8", "bool", "int16", "float16", "int32", "float32",
          "int64", "float64", "complex64", "complex128"]
EXTENTS = [1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 33]

KEYS = {
    "shape": "input shape",
    "layout": "input layout_map (permutation of range(ndim))",
    "dtype": "input dtype name (numpy)",
    "isz": "dtype itemsize in bytes",
    "align": "input alignment_bytes",
    "aidx": "input aligned_index",
    "oshape": "returned array shape",
    "strides": "returned array strides (bytes)",
    "padded": "allocated (padded) shape: contiguous dim rounded up to max(align//isz,1) items",
    "nbytes": "len(raw buffer) in bytes == isz*prod(padded) + align - 1",
    "data_mod": "array data pointer % align (deterministic)",
    "aoff": "byte offset of element aidx from the array data pointer == sum(aidx*strides)",
    "amod": "(address of element aidx) % align -- always 0",
    "off": "array data pointer - raw buffer start, bytes (depends on malloc; not reproducible)",
    "raw_mod": "raw buffer start % align (depends on malloc; not reproducible)",
}


def _padded_shape(arr, raw, isz, align, layout):
    """Recover the allocated shape from the returned strides and raw length."""
    ndim = len(layout)
    elems = (len(raw) - (align - 1)) // isz
    assert (len(raw) - (align - 1)) % isz == 0
    padded = list(arr.shape)
    if ndim == 0:
        return padded, elems
    contig = layout.index(ndim - 1)
    if ndim == 1:
        padded[contig] = elems
    else:
        nxt = layout.index(ndim - 2)
        padded[contig] = arr.strides[nxt] // isz
    assert math.prod(padded) == elems, (padded, elems)
    return padded, elems


def record(shape, layout, dtype, align, aidx):
    raw, arr = allocate_cpu(tuple(shape), tuple(layout), np.dtype(dtype), align,
                            None if aidx is None else tuple(aidx))
    isz = np.dtype(dtype).itemsize
    raw_addr = raw.__array_interface__["data"][0]
    data_addr = arr.__array_interface__["data"][0]
    aidx_t = tuple(aidx) if aidx is not None else (0,) * len(shape)
    aoff = sum(int(i) * int(s) for i, s in zip(aidx_t, arr.strides))
    padded, _ = _padded_shape(arr, raw, isz, align, list(layout))
    case = {
        "shape": list(shape), "layout": list(layout), "dtype": dtype, "isz": isz,
        "align": align, "aidx": None if aidx is None else list(aidx),
        "oshape": list(arr.shape), "strides": [int(s) for s in arr.strides],
        "padded": [int(p) for p in padded], "nbytes": int(len(raw)),
        "data_mod": data_addr % align, "aoff": aoff,
        "amod": (data_addr + aoff) % align,
        "off": data_addr - raw_addr, "raw_mod": raw_addr % align,
    }
    # Invariants the table is meant to pin down.
    assert case["amod"] == 0, case
    assert case["off"] == (case["data_mod"] - case["raw_mod"]) % align, case
    assert case["nbytes"] == isz * math.prod(padded) + align - 1, case
    assert arr.dtype == np.dtype(dtype) and list(arr.shape) == list(shape)
    return case


def record_error(group, shape, layout, dtype, align, aidx, note=""):
    entry = {"group": group, "shape": shape, "layout": layout, "dtype": dtype,
             "align": align, "aidx": aidx}
    try:
        case = record(shape, layout, dtype, align, aidx)
    except Exception as exc:  # noqa: BLE001 - recording gt4py's behaviour
        entry.update(error=type(exc).__name__, message=str(exc))
    else:
        entry.update(error=None, result=case)
    if note:
        entry["note"] = note
    return entry


def halo_indices(rng, shape):
    """Zero plus a couple of halo-style aligned indices inside the shape."""
    ndim = len(shape)
    out = [[0] * ndim]
    fixed = [[2, 2, 0, 1][:ndim], [3, 1, 2, 0][:ndim], [1] * ndim]
    for f in fixed:
        out.append([min(i, s - 1) for i, s in zip(f, shape)])
    out.append([rng.randrange(s) for s in shape])
    uniq = []
    for a in out:
        if a not in uniq:
            uniq.append(a)
    return uniq


def main_cases(rng):
    cases = []
    # A: every permutation x every alignment, random dtype/shape, two aligned
    #    indices each (zero and a halo index where the shape allows one).
    for ndim in range(1, 5):
        for layout in itertools.permutations(range(ndim)):
            for align in ALIGNMENTS:
                shape = [rng.choice(EXTENTS) for _ in range(ndim)]
                dtype = rng.choice(DTYPES)
                idx = halo_indices(rng, shape)
                picks = [idx[0]] + ([rng.choice(idx[1:])] if len(idx) > 1 else [])
                for aidx in picks:
                    cases.append(("perm_x_align", shape, list(layout), dtype, align, aidx))
    # B: full dtype x alignment grid on a halo-padded 3-D field (I,J,K with
    #    halo 3 in I/J), both the IJK-contiguous and the I-contiguous layout.
    for dtype in DTYPES:
        for align in ALIGNMENTS:
            for layout, aidx in (((0, 1, 2), [3, 3, 0]), ((2, 1, 0), [3, 3, 0]),
                                 ((0, 1, 2), [3, 3, 5]), ((2, 1, 0), [5, 3, 0])):
                cases.append(("dtype_x_align", [13, 10, 7], list(layout), dtype, align, aidx))
    # C: extents of 1 everywhere / in the contiguous dimension.
    for ndim in range(1, 5):
        for layout in itertools.permutations(range(ndim)):
            contig = layout.index(ndim - 1)
            for align in (1, 16, 64, 1024):
                shape = [rng.choice([1, 5, 8]) for _ in range(ndim)]
                shape[contig] = 1
                dtype = rng.choice(DTYPES)
                cases.append(("extent1_contig", shape, list(layout), dtype, align, [0] * ndim))
        for align in (8, 256):
            cases.append(("all_ones", [1] * ndim, list(range(ndim)), rng.choice(DTYPES), align,
                          [0] * ndim))
    # D: aligned index in the contiguous dimension sweeps 0..ipb+1 (ipb =
    #    items per aligned block), to pin the offset formula.
    for dtype in ("int8", "float32", "float64", "complex128"):
        isz = np.dtype(dtype).itemsize
        for align in (16, 64, 256):
            ipb = max(align // isz, 1)
            for a in sorted({0, 1, 2, ipb - 1, ipb, ipb + 1}):
                if a < 0:
                    continue
                shape = [4, 3, max(a + 1, 6)]
                cases.append(("contig_index_sweep", shape, [0, 1, 2], dtype, align, [1, 2, a]))
                cases.append(("contig_index_sweep", shape[::-1], [2, 1, 0], dtype, align, [a, 2, 1]))
    # E: aligned_index=None (gt4py treats it as zeros).
    for ndim in range(1, 5):
        cases.append(("aidx_none", [5] * ndim, list(range(ndim))[::-1], "float64", 64, None))
    return cases


def edge_cases():
    e = []
    e.append(record_error("zero_extent", [0], [0], "float64", 64, [0]))
    e.append(record_error("zero_extent", [3, 0, 4], [0, 1, 2], "float64", 64, [0, 0, 0]))
    e.append(record_error("negative_extent", [3, -1], [0, 1], "float64", 8, [0, 0]))
    e.append(record_error("layout_none", [3, 4, 5], [0, None, 1], "float64", 64, [0, 0, 0],
                          "gt4py>=1.0 layout maps are full permutations; masked dims are dropped "
                          "from shape instead (layout_maker_factory). None is rejected."))
    e.append(record_error("layout_none", [3, 4], [None, None], "float64", 64, [0, 0]))
    e.append(record_error("layout_not_perm", [3, 4, 5], [0, 0, 1], "float64", 64, [0, 0, 0]))
    e.append(record_error("layout_out_of_range", [3, 4], [0, 2], "float64", 64, [0, 0]))
    e.append(record_error("layout_wrong_len", [3, 4], [0, 1, 2], "float64", 64, [0, 0]))
    e.append(record_error("ndim0", [], [], "float64", 64, [],
                          "0-d allocation is allowed by the allocator"))
    e.append(record_error("ndim0", [], [], "int8", 1, None))
    e.append(record_error("incompatible_align", [4, 5], [0, 1], "float64", 12, [0, 0]))
    e.append(record_error("incompatible_align", [4, 5], [0, 1], "int32", 6, [0, 0]))
    e.append(record_error("incompatible_align", [4, 5], [0, 1], "int16", 3, [0, 0]))
    e.append(record_error("non_pow2_align_ok", [4, 5], [0, 1], "int16", 6, [0, 0],
                          "only gcd(align, itemsize) in (align, itemsize) is checked"))
    e.append(record_error("non_pow2_align_ok", [4, 5], [0, 1], "int8", 24, [0, 3]))
    e.append(record_error("align_smaller_than_item", [4, 5], [0, 1], "complex128", 4, [1, 1]))
    e.append(record_error("align_zero", [4, 5], [0, 1], "float64", 0, [0, 0]))
    e.append(record_error("aidx_beyond_shape", [4, 5], [0, 1], "float64", 64, [6, 9],
                          "aligned_index is not range-checked by the allocator"))
    e.append(record_error("aidx_negative", [4, 5], [0, 1], "float64", 64, [0, -3]))
    e.append(record_error("aidx_wrong_len", [4, 5], [0, 1], "float64", 64, [1]))
    e.append(record_error("aidx_wrong_len", [4, 5], [0, 1], "float64", 64, [1, 2, 3]))
    e.append(record_error("shape_tuple_of_np_int", [np.int64(4), np.int16(5)], [1, 0],
                          "float32", 32, [1, 1]))
    return e


def presets():
    """gt4py.storage.empty per registered CPU backend: layout_map per
    dimensions tuple, alignment, and the strides it gives for one shape."""
    out = []
    dims_list = [("I",), ("J",), ("K",), ("I", "J"), ("I", "K"), ("J", "K"),
                 ("I", "J", "K"), ("I", "J", "K", "0"), ("I", "J", "K", "0", "1"),
                 ("K", "0"), ("I", "J", "0")]
    import gt4py.storage as gs

    for name in sorted(layout_registry.REGISTRY):
        info = layout_registry.REGISTRY[name]
        for dims in dims_list:
            entry = {"backend": name, "device": info["device"], "alignment": info["alignment"],
                     "dims": list(dims), "layout": list(info["layout_map"](dims))}
            if info["device"] == "cpu":
                shape = [5, 6, 7, 2, 3][: len(dims)]
                aidx = [1, 2, 0, 0, 0][: len(dims)]
                for dtype in ("float64", "int8"):
                    a = gs.empty(shape, dtype, backend=name, aligned_index=aidx, dimensions=dims)
                    entry.setdefault("empty", []).append(
                        {"shape": shape, "dtype": dtype, "aidx": aidx,
                         "strides": [int(s) for s in a.strides]})
            out.append(entry)
    return out


def _jsonable(o):
    if isinstance(o, np.integer):
        return int(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _dump(o):
    return json.dumps(o, separators=(",", ":"), default=_jsonable)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1]
                                         / "tests" / "data" / "gt4py_alloc_cases.json"))
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    specs = main_cases(rng)
    cases = []
    for group, shape, layout, dtype, align, aidx in specs:
        c = record(shape, layout, dtype, align, aidx)
        c["group"] = group
        cases.append(c)

    header = {
        "gt4py": gt4py.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "seed": args.seed,
        "oracle": "gt4py.storage.cartesian.utils.allocate_cpu(shape, layout_map, dtype, "
                  "alignment_bytes, aligned_index) -> (raw_uint8_buffer, ndarray); "
                  "calls gt4py.storage.allocators.NDArrayBufferAllocator.allocate",
        "recorded_by": "tools/record_gt4py_alloc.py",
        "keys": KEYS,
        "nondeterministic_keys": ["off", "raw_mod"],
        "n_cases": len(cases),
        "storage_empty_note": "gt4py.storage.empty(shape, dtype=float64, *, backend, "
                              "aligned_index=None, dimensions=None) calls allocate_cpu with "
                              "alignment_bytes = registry alignment * itemsize",
    }
    edges = edge_cases()
    pres = presets()

    lines = ['{"header": ' + _dump(header) + ",",
             '"edge_cases": [']
    lines += [_dump(e) + ("," if i < len(edges) - 1 else "")
              for i, e in enumerate(edges)]
    lines += ["],", '"presets": [']
    lines += [_dump(p) + ("," if i < len(pres) - 1 else "")
              for i, p in enumerate(pres)]
    lines += ["],", '"cases": [']
    lines += [_dump(c) + ("," if i < len(cases) - 1 else "")
              for i, c in enumerate(cases)]
    lines += ["]}"]
    text = "\n".join(lines) + "\n"
    json.loads(text)  # well-formed
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"{len(cases)} cases, {len(edges)} edge cases, {len(pres)} presets -> {out} "
          f"({len(text) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
