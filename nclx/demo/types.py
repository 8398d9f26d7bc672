"""Section 9 of ``python -m nclx demo``: DyND-style types and ragged arrays (nclx.types)."""
import ctypes

import numpy as np

from nclx.demo._common import section
from nclx.types import (Ragged, arrmeta_struct_of, data_address_of, debug_repr, from_list,
                        parse, to_awkward, typeof)


def run():
    """Show types, arrmeta and Ragged at work; return 0."""
    import pyarrow as pa   # optional (the types extra): earlier sections run without it

    section("9. nclx.types: DyND's type/arrmeta model, ragged arrays zero-copy to Arrow and awkward")
    a = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    meta = arrmeta_struct_of(a)
    print(f"typeof(a) = {typeof(a)!r}; its arrmeta through ctypes: size/stride "
          f"{meta.size}/{meta.stride}, then {meta.element.size}/{meta.element.stride}; "
          f"a[1, 2] read at data_address_of(a[1, 2, ...]) = "
          f"{ctypes.c_int32.from_address(data_address_of(a[1, 2, ...])).value}")
    r = from_list([[1.5, 2.5], [], [4.0, 5.0, 6.0]])
    print(f"r = {r!r}")
    print(f"r * 2 -> {(r * 2).to_list()} (same offsets: {(r * 2).offsets is r.offsets}); "
          f"r.sum(axis=-1) = {r.sum().tolist()}; r.max(axis=-1) = {r.max().tolist()}")
    arr = pa.array(r)
    same = arr.values.buffers()[1].address == data_address_of(r.values)
    print(f"pa.array(r): {arr.type}, the values buffer shared: {same}; "
          f"typeof(arr) = {typeof(arr)!r} (Arrow's item field is nullable)")
    try:
        import awkward as ak   # optional dependency: the line says how to get it
        print(f"to_awkward(r): {ak.type(to_awkward(r))}; "
              f"ak.sum(axis=-1) = {ak.sum(to_awkward(r), axis=-1).to_list()}")
    except ImportError:
        print("awkward is not installed: pip install awkward for to_awkward(r)")
    print(f"typeof(pa.table(...)) = {typeof(pa.table({'x': [1, None], 's': ['a', 'b']}))!r}")
    print(f"parse('3 * var * ?int64').dims = {[d.kind for d in parse('3 * var * ?int64').dims]}")
    for line in debug_repr(from_list([[1], [2, 3]], dtype=np.int32)).splitlines()[4:16]:
        print("  " + line)
    try:
        Ragged(np.array([0, 3, 2]), np.arange(5))
    except ValueError as exc:
        print(f"bad input: ValueError: {exc}")
    try:
        parse("3 * {x: int32, y float64}")
    except ValueError as exc:
        print(f"bad type string: {str(exc).splitlines()[0]}")
    return 0
