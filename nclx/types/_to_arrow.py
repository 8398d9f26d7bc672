"""pyarrow arrays from the parts of a list array (offsets, values,
validity), sharing buffers.

Nothing here knows the Ragged class: values are an ndarray, a masked array
or an object that speaks pyarrow's ``__arrow_array__`` protocol (a nested
Ragged).  pyarrow is optional: it is imported when a function runs.

Zero copy: offsets, numeric values, string bytes, validity bitmaps that
start on a byte boundary.  Copied, because the layouts differ: bool values
(Arrow packs them in bits), structured values (NumPy interleaves fields,
Arrow keeps one buffer per field), masked-array masks (a byte per value
against a bit), validity bits of a slice starting mid-byte, non-contiguous
values.
"""
import numpy as np

from nclx.types import _bits
from nclx.types._offsets import validate_offsets

__all__ = ["list_array", "values_array"]


def values_array(values):
    """A pyarrow array of ``values``: an ndarray (trailing dimensions become
    fixed-size lists, fields a struct), a masked array (nulls) or an object
    with ``__arrow_array__``."""
    import pyarrow as pa
    if getattr(type(values), "__arrow_array__", None) is not None:
        return values.__arrow_array__()
    mask = None
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        values = values.data
    if values.dtype.names is not None:
        if values.ndim != 1:
            raise TypeError("structured values with fixed inner dimensions do not go to Arrow")
        children = [values_array(np.ascontiguousarray(values[n])) for n in values.dtype.names]
        arr = pa.StructArray.from_arrays(children, names=list(values.dtype.names))
    elif values.ndim > 1:
        arr = values_array(np.ascontiguousarray(values).reshape(-1))
        for k in reversed(values.shape[1:]):
            arr = pa.FixedSizeListArray.from_arrays(arr, int(k))
    elif values.dtype == np.bool_:
        arr = pa.array(values)
    else:
        values = np.ascontiguousarray(values)
        if not values.dtype.isnative:
            # Arrow's buffers are in the machine's order: swapped, not handed
            # over as they are (found by review: >i4 [1, 2] read 16777216, ...)
            values = values.astype(values.dtype.newbyteorder("="))
        arr = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                    [None, pa.py_buffer(values)])
    if mask is not None and mask.any():
        validity = pa.py_buffer(_bits.pack(~mask))
        arr = pa.Array.from_buffers(arr.type, len(arr), [validity] + arr.buffers()[1:],
                                    children=_children(arr))
    return arr


def _children(arr):
    import pyarrow as pa
    t = arr.type
    if pa.types.is_struct(t):
        return [arr.field(i) for i in range(t.num_fields)]
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        return [arr.values]
    return None


def list_array(offsets, values, validity=None, validity_offset=0, encoding=None, type=None):
    """A pyarrow ListArray (int32 offsets) / LargeListArray (int64), or
    StringArray / LargeStringArray / (Large)BinaryArray for ``encoding``
    "utf-8" / "bytes", over ``len(offsets) - 1`` lists; cast to ``type``
    when given.  Arrow trusts offsets: they are checked first (one
    vectorized pass), so offsets taken on trust never make it read outside
    ``values``."""
    import pyarrow as pa
    validate_offsets(offsets, len(values))
    n = len(offsets) - 1
    vbuf = None
    if validity is not None:
        vbuf = pa.py_buffer(_bits.realign(validity, validity_offset, n))
    obuf = pa.py_buffer(np.ascontiguousarray(offsets))
    large = offsets.dtype == np.int64
    if encoding is not None:
        if encoding == "utf-8":
            t = pa.large_string() if large else pa.string()
        else:
            t = pa.large_binary() if large else pa.binary()
        data = pa.py_buffer(np.ascontiguousarray(values))
        arr = pa.Array.from_buffers(t, n, [vbuf, obuf, data])
    else:
        child = values_array(values)
        t = (pa.large_list if large else pa.list_)(child.type)
        arr = pa.Array.from_buffers(t, n, [vbuf, obuf], children=[child])
    if type is not None and arr.type != type:
        arr = arr.cast(type)
    return arr
