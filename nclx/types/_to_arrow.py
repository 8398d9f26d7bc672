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
values, datetime64[D] (Arrow's date32 takes 4 bytes a day).
"""
import numpy as np

from nclx.types import _bits
from nclx.types._offsets import validate_offsets

__all__ = ["list_array", "values_array"]


def values_array(values):
    """A pyarrow array of ``values``: an ndarray (trailing dimensions become
    fixed-size lists, fields a struct), a masked array (nulls) or an object
    with ``__arrow_array__``.  A masked array always gets a validity buffer,
    nulls or not: that buffer is what keeps it an option type through
    ``from_arrow`` (docs/types.md, "Option types through Arrow")."""
    import pyarrow as pa
    if getattr(type(values), "__arrow_array__", None) is not None:
        return values.__arrow_array__()
    if values.ndim > 1 and values.dtype.names is None:
        if 0 in values.shape[1:]:
            # Arrow has no fixed-size list of 0 (before, pyarrow's own
            # "list_size needs to be a strict positive integer"; found by review)
            d = values.shape[1:].index(0) + 1
            raise TypeError(f"a fixed inner dimension of 0 (dimension {d} of the values, "
                            f"shape {values.shape}) does not go to Arrow: its fixed-size "
                            f"lists need a size of 1 or more (to_awkward takes it)")
        # the mask of a masked array travels with its values to the leaves
        arr = values_array(values.reshape(-1))
        for k in reversed(values.shape[1:]):
            arr = pa.FixedSizeListArray.from_arrays(arr, int(k))
        return arr
    mask = None
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        values = values.data
    if values.dtype.names is not None:
        if mask is not None:      # a mask per field: no type says it (typeof refuses them)
            raise TypeError("masked structured values do not go to Arrow: mask the fields' "
                            "own arrays, or use a validity bitmap on the lists")
        if values.ndim != 1:
            raise TypeError("structured values with fixed inner dimensions do not go to Arrow")
        children = [values_array(np.ascontiguousarray(values[n])) for n in values.dtype.names]
        arr = pa.StructArray.from_arrays(children, names=list(values.dtype.names))
    elif values.dtype == np.bool_:
        arr = pa.array(values)
    else:
        if values.dtype.kind in "mM" and np.isnat(values).any():
            # NaT is a null, as pyarrow makes it (before review 21 it went over as
            # int64's minimum, a valid timestamp that broke to_pylist)
            mask = np.isnat(values) if mask is None else mask | np.isnat(values)
        arr = _primitive_array(values, mask)
    if mask is not None:
        validity = pa.py_buffer(_bits.pack(~mask))
        arr = pa.Array.from_buffers(arr.type, len(arr), [validity] + arr.buffers()[1:],
                                    children=_children(arr))
    return arr


def _primitive_array(values, mask):
    """A primitive pyarrow array over the buffer of 1-D ``values`` (zero
    copy when contiguous and native); datetime64[D] becomes date32."""
    import pyarrow as pa
    values = np.ascontiguousarray(values)
    if not values.dtype.isnative:
        # Arrow's buffers are in the machine's order: swapped, not handed
        # over as they are (found by review: >i4 [1, 2] read 16777216, ...)
        values = values.astype(values.dtype.newbyteorder("="))
    if values.dtype.kind in "mM":
        atype, values = _temporal(values, mask)
    else:
        atype = pa.from_numpy_dtype(_arrow_dtype(values.dtype))
    return pa.Array.from_buffers(atype, len(values), [None, pa.py_buffer(values)])


def _arrow_dtype(dt):
    """``dt`` if Arrow has a primitive type of its layout, else a TypeError
    naming it (before, pyarrow's ArrowNotImplementedError "Unsupported numpy
    type 15" for complex, or a ValueError about buffer counts for str)."""
    if dt.kind == "c":
        half = f"f{dt.itemsize // 2}"
        raise TypeError(f"{dt} values do not go to Arrow: Arrow has no complex type; store "
                        f"the real and imaginary parts as a trailing dimension of 2, e.g. "
                        f"values.view('{half}').reshape(-1, 2)")
    if dt.kind == "f" and dt.itemsize not in (2, 4, 8):
        raise TypeError(f"{dt} values do not go to Arrow: Arrow has no {dt.itemsize}-byte "
                        f"float")
    if dt.kind in "US":
        raise TypeError(f"fixed-width {dt} values do not go to Arrow as they are: Arrow's "
                        f"strings are offsets into bytes (nclx.types.from_strings builds "
                        f"such a Ragged)")
    return dt


#: NumPy's datetime64/timedelta64 units with an Arrow type of the same
#: 8-byte layout (timestamp / duration): handed over as they are
_ARROW_UNITS = ("s", "ms", "us", "ns")


def _temporal(values, mask):
    """``(Arrow type, buffer)`` of datetime64 / timedelta64 ``values``.
    Arrow's date32 counts days in 4 bytes where datetime64[D] takes 8: the
    days are narrowed (a copy), every present one checked to fit."""
    import pyarrow as pa
    unit, count = np.datetime_data(values.dtype)
    if count == 1 and unit in _ARROW_UNITS:
        return pa.from_numpy_dtype(values.dtype), values
    if values.dtype.kind == "M" and unit == "D" and count == 1:
        return pa.date32(), _days32(values, mask)
    arrow = "date32 (datetime64[D]) and timestamp" if values.dtype.kind == "M" else "duration"
    raise TypeError(f"{values.dtype} values have no Arrow type: Arrow has {arrow}"
                    f"[s/ms/us/ns]; convert them first, e.g. .astype('{values.dtype.kind}8[s]')")


def _days32(values, mask):
    """datetime64[D] days as int32 (Arrow's date32); masked days are 0."""
    days = values.view(np.int64)
    present = np.ones(len(days), bool) if mask is None else ~mask
    # NaT is int64's minimum: out of range too (a masked array holds missing dates)
    bad = present & ((days < np.iinfo(np.int32).min) | (days > np.iinfo(np.int32).max))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"datetime64[D] value {i} ({values[i]}) has no date32 day (int32 "
                         "days since 1970-01-01); mask missing dates instead of NaT")
    return np.where(present, days, 0).astype(np.int32)


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
        # (a strided bitmap is copied: pyarrow refused it, naming nothing)
        vbuf = pa.py_buffer(np.ascontiguousarray(_bits.realign(validity, validity_offset, n)))
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
