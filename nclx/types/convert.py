"""Ragged <-> pyarrow and awkward, sharing buffers: the module functions
``to_arrow``, ``from_arrow``, ``to_awkward``, ``from_awkward`` (exported
from ``nclx.types``).  pyarrow and awkward are optional: each function
imports the one it needs when it runs.

Zero copy (the new object reads the same memory): offsets, numeric values,
string bytes, and validity bitmaps that start on a byte boundary.  Copied,
because the layouts differ: bool values (Arrow packs them in bits),
structured values (NumPy interleaves fields, Arrow and awkward keep one
buffer per field) into Arrow, masked-array masks (NumPy keeps a byte per
value, Arrow a bit), validity bits of a slice starting mid-byte (n / 8
bytes), non-contiguous values, and dates in days (Arrow's date32 and
time32 take 4 bytes, datetime64 8).  A level is an option type exactly when
its Arrow array carries a validity buffer (docs/types.md, "Option types
through Arrow").
"""
import numpy as np

from nclx.types import _bits, _to_arrow
from nclx.types._offsets import validate_offsets
from nclx.types.ragged import Ragged

__all__ = ["to_arrow", "from_arrow", "to_awkward", "from_awkward"]


def _arrow_view(buf, dtype):
    """A read-only ndarray over a pyarrow buffer: Arrow's memory is
    immutable, and other arrays may share it (found by review:
    ``np.add(r, 1, out=r)`` on ``from_arrow(a)`` rewrote ``a`` in place)."""
    arr = np.frombuffer(buf, dtype=dtype)
    arr.flags.writeable = False
    return arr


def _need_ragged(r, name):
    if not isinstance(r, Ragged):
        raise TypeError(f"{name} takes a Ragged, not {type(r).__name__}")


def _check_trusted(r):
    """awkward trusts offsets: check them (one vectorized pass) so a Ragged
    built with validate=False never makes it read outside."""
    validate_offsets(r.offsets, len(r.values))
    if isinstance(r.values, Ragged):
        _check_trusted(r.values)


# ----------------------------------------------------------------- to Arrow
def to_arrow(r, type=None):
    """A pyarrow ListArray (int32 offsets) / LargeListArray (int64), or
    StringArray / LargeStringArray / (Large)BinaryArray for string Raggeds,
    over ``r``'s buffers (``pa.array(r)`` gives the same)."""
    _need_ragged(r, "to_arrow")
    return _to_arrow.list_array(r.offsets, r.values, r.validity, r.validity_offset, r.encoding,
                                type)


# --------------------------------------------------------------- from Arrow
def _np_of_primitive(arr):
    """The values of a primitive Arrow array; a masked array whenever it
    carries a validity buffer, nulls or not (the option type survives a
    round trip: docs/types.md, "Option types through Arrow")."""
    data = _primitive_data(arr)
    if arr.buffers()[0] is not None:
        mask = ~_bits.valid_mask(np.frombuffer(arr.buffers()[0], np.uint8), arr.offset, len(arr))
        return np.ma.masked_array(data, mask=mask)
    return data


def _primitive_data(arr):
    """The data buffer of a primitive Arrow array as NumPy values: a view,
    except bools (Arrow packs them in bits) and 4-byte dates and times
    (widened to datetime64's 8 bytes)."""
    import pyarrow as pa
    buf, lo, n = arr.buffers()[1], arr.offset, len(arr)
    if pa.types.is_boolean(arr.type):
        # from the bitmap itself: to_numpy would go through Python objects
        # when there are nulls (found by review: list<bool> with a null failed)
        bits = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
        return _bits.valid_mask(bits, lo, n)
    stored, dtype = _arrow_dtypes(arr.type)
    raw = _arrow_view(buf, stored)[lo:lo + n] if buf is not None else np.zeros(0, stored)
    if stored == dtype:
        return raw
    return raw.astype(np.int64).view(dtype)


def _arrow_dtypes(t):
    """``(dtype of the Arrow buffer, dtype of the values)`` of a primitive
    Arrow type; the temporal ones by their own layout, never by
    ``to_pandas_dtype`` (found by review: date32's 4-byte days were read as
    8-byte datetime64[ms])."""
    import pyarrow as pa
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t):
        unit = "ms" if pa.types.is_date64(t) else t.unit     # date64: ms since the epoch
        dtype = np.dtype(f"M8[{unit}]")
        return dtype, dtype
    if pa.types.is_duration(t):
        dtype = np.dtype(f"m8[{t.unit}]")
        return dtype, dtype
    if pa.types.is_date32(t):       # int32 days since the epoch
        return np.dtype(np.int32), np.dtype("M8[D]")
    if pa.types.is_time32(t):       # int32 s / ms since midnight (typeof: datetime64)
        return np.dtype(np.int32), np.dtype(f"M8[{t.unit}]")
    try:
        dtype = np.dtype(t.to_pandas_dtype())
    except (NotImplementedError, TypeError, ImportError) as exc:
        raise TypeError(f"Arrow {t} values have no Ragged equivalent") from exc
    if dtype.kind == "O":
        raise TypeError(f"Arrow {t} values have no Ragged equivalent (no NumPy number dtype)")
    return dtype, dtype


def _from_arrow_values(arr):
    import pyarrow as pa
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        arr = arr.storage
        t = arr.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_string(t) \
            or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return from_arrow(arr)
    if pa.types.is_fixed_size_list(t):
        if arr.null_count:
            raise TypeError("missing fixed-size lists inside a Ragged are not supported")
        k = t.list_size
        inner = _from_arrow_values(arr.values.slice(arr.offset * k, len(arr) * k))
        if isinstance(inner, Ragged):
            raise TypeError("var dimensions inside fixed-size lists are not supported")
        return inner.reshape((len(arr), k) + inner.shape[1:])
    if pa.types.is_struct(t):
        if arr.null_count:
            raise TypeError("missing records inside a Ragged are not supported")
        fields = [_unmask_if_complete(_from_arrow_values(arr.field(i)))
                  for i in range(t.num_fields)]
        if any(isinstance(f, (Ragged, np.ma.MaskedArray)) for f in fields):
            raise TypeError("record fields that are lists or hold nulls are not supported")
        return _record([t.field(i).name for i in range(t.num_fields)], fields, len(arr))
    if pa.types.is_null(t):     # all missing; NumPy's default dtype under the mask
        return np.ma.masked_all(len(arr), dtype=np.float64)
    if pa.types.is_dictionary(t) or pa.types.is_union(t):
        raise TypeError(f"Arrow {t} values have no Ragged equivalent")
    return _np_of_primitive(arr)


def _record(names, fields, n):
    """A structured array of ``n`` records from the field arrays, with the
    fields' own names (NumPy's list form renamed a field "" to "f0": found
    by review, from_arrow then failed with "no field of name ")."""
    names = list(names)
    dup = next((k for i, k in enumerate(names) if k in names[:i]), None)
    if dup is not None:
        raise ValueError(f"record field {dup!r} occurs more than once (a NumPy record needs "
                         "distinct field names)")
    formats = [(f.dtype, f.shape[1:]) if f.ndim > 1 else f.dtype for f in fields]
    out = np.empty(n, dtype=np.dtype({"names": list(names), "formats": formats}))
    for k, f in zip(names, fields):
        out[k] = f[:n]
    return out


def _unmask_if_complete(values):
    # a record field with a validity buffer but no null fits the record as is
    if isinstance(values, np.ma.MaskedArray) and not np.ma.getmaskarray(values).any():
        return values.data
    return values


def from_arrow(array):
    """A Ragged over a pyarrow list/large_list/string/binary array's buffers."""
    import pyarrow as pa
    if isinstance(array, pa.ChunkedArray):
        array = array.chunk(0) if array.num_chunks == 1 else pa.concat_arrays(array.chunks) \
            if array.num_chunks else pa.array([], type=array.type)
    if not isinstance(array, pa.Array):
        raise TypeError(f"from_arrow takes a pyarrow Array or ChunkedArray, not {type(array).__name__}")
    t = array.type
    if isinstance(t, pa.BaseExtensionType):
        array, t = array.storage, array.type.storage_type
    bufs = array.buffers()
    off = array.offset
    n = len(array)
    validity = None
    if bufs[0] is not None:
        validity = _arrow_view(bufs[0], np.uint8)
    strings = {pa.string(): "utf-8", pa.large_string(): "utf-8",
               pa.binary(): "bytes", pa.large_binary(): "bytes"}
    if t in strings:
        odt = np.int64 if t in (pa.large_string(), pa.large_binary()) else np.int32
        offsets = _arrow_view(bufs[1], odt)[off:off + n + 1]
        values = _arrow_view(bufs[2], np.uint8) if bufs[2] is not None \
            else np.zeros(0, np.uint8)
        return Ragged(offsets, values, validity, validity_offset=off if validity is not None else 0,
                      encoding=strings[t])
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        raise TypeError(f"from_arrow needs a list, large_list, string or binary array, not {t}")
    odt = np.int64 if pa.types.is_large_list(t) else np.int32
    offsets = _arrow_view(bufs[1], odt)[off:off + n + 1] if n or bufs[1] is not None \
        else np.zeros(1, odt)
    values = _from_arrow_values(array.values)
    return Ragged(offsets, values, validity, validity_offset=off if validity is not None else 0)


# ----------------------------------------------------------------- awkward
def _ak_content(values):
    import awkward as ak
    if isinstance(values, Ragged):
        return to_awkward(values, highlevel=False)
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        return ak.contents.ByteMaskedArray(ak.index.Index8(mask.view(np.int8)),
                                           _ak_content(values.data), valid_when=False)
    if values.dtype.names is not None:
        fields = [_ak_content(values[n]) for n in values.dtype.names]
        return ak.contents.RecordArray(fields, list(values.dtype.names), length=len(values))
    if not values.dtype.isnative:
        # awkward takes the machine's byte order only: swapped (a copy), as
        # to_arrow does (found by review: a TypeError for '>i4')
        values = values.astype(values.dtype.newbyteorder("="))
    return ak.contents.NumpyArray(values)


def to_awkward(r, highlevel=True):
    """An awkward ListOffsetArray over the same offsets and values."""
    import awkward as ak
    _need_ragged(r, "to_awkward")
    _check_trusted(r)
    index = (ak.index.Index64 if r.offsets.dtype == np.int64 else ak.index.Index32)(r.offsets)
    if r.encoding is not None:
        kind = ("string", "char") if r.encoding == "utf-8" else ("bytestring", "byte")
        content = ak.contents.NumpyArray(r.values, parameters={"__array__": kind[1]})
        layout = ak.contents.ListOffsetArray(index, content, parameters={"__array__": kind[0]})
    else:
        layout = ak.contents.ListOffsetArray(index, _ak_content(r.values))
    if r.validity is not None:
        bits = _bits.realign(r.validity, r.validity_offset, len(r))
        layout = ak.contents.BitMaskedArray(ak.index.IndexU8(bits), layout, valid_when=True,
                                            length=len(r), lsb_order=True)
    return ak.Array(layout) if highlevel else layout


def content_values(layout):
    """The NumPy data (ndarray, masked or structured array) or Ragged of an
    awkward layout, sharing its buffers where the layouts agree."""
    import awkward as ak
    if isinstance(layout, ak.contents.NumpyArray):
        return np.asarray(layout.data)
    if isinstance(layout, (ak.contents.ListOffsetArray, ak.contents.ListArray)) or \
            (layout.is_option and layout.content.is_list):
        return from_awkward(layout)
    if isinstance(layout, ak.contents.RegularArray):
        inner = content_values(layout.content)
        if isinstance(inner, Ragged):
            raise TypeError("var dimensions inside fixed dimensions are not supported")
        return inner[:layout.length * layout.size].reshape((layout.length, layout.size) + inner.shape[1:])
    if layout.is_option:
        mask = np.asarray(layout.mask_as_bool(valid_when=False))
        inner = content_values(layout.content)
        if isinstance(layout, ak.contents.IndexedOptionArray):
            index = np.asarray(layout.index.data)
            inner = inner[np.where(index < 0, 0, index)] if len(inner) else \
                np.zeros(len(index), inner.dtype)
        return np.ma.masked_array(inner[:len(mask)], mask=mask)
    if isinstance(layout, ak.contents.IndexedArray):
        return content_values(layout.project())
    if isinstance(layout, ak.contents.RecordArray) and not layout.is_tuple:
        fields = [content_values(c) for c in layout.contents]
        if any(isinstance(f, (Ragged, np.ma.MaskedArray)) for f in fields):
            raise TypeError("record fields that are lists or hold missing values are not supported")
        return _record(layout.fields, fields, layout.length)
    if isinstance(layout, ak.contents.EmptyArray):
        return np.zeros(0, dtype=np.float64)
    raise TypeError(f"awkward's {type(layout).__name__} has no Ragged equivalent")


def from_awkward(array):
    """A Ragged over an awkward array's list offsets and content."""
    import awkward as ak
    layout = array.layout if isinstance(array, ak.Array) else array
    validity = None
    if layout.is_option:
        if isinstance(layout, ak.contents.BitMaskedArray) and layout.lsb_order and layout.valid_when:
            validity = np.asarray(layout.mask.data)
            # its content may be longer than the array (found by review: the
            # lists past its length came out as extra lists)
            layout = layout.content if layout.content.length == layout.length \
                else layout.content[:layout.length]
        else:
            valid = np.asarray(layout.mask_as_bool(valid_when=True))
            layout = layout.project() if not isinstance(layout, ak.contents.UnmaskedArray) \
                else layout.content
            if isinstance(layout, ak.contents.EmptyArray):     # every list missing
                return Ragged(np.zeros(len(valid) + 1, np.int64), np.zeros(0), _bits.pack(valid))
            if not isinstance(layout, (ak.contents.ListOffsetArray, ak.contents.ListArray)):
                raise TypeError(f"from_awkward needs lists, not {type(layout).__name__}")
            # project() dropped the missing lists: put empty lists back in their place
            lens = np.zeros(len(valid), np.int64)
            lay64 = layout.to_ListOffsetArray64(True)
            lens[valid] = np.diff(np.asarray(lay64.offsets.data))
            offsets = np.zeros(len(valid) + 1, np.int64)
            np.cumsum(lens, out=offsets[1:])
            offsets += np.asarray(lay64.offsets.data)[0]
            inner = from_awkward(lay64)
            validity = _bits.pack(valid)
            return Ragged(offsets, inner.values, validity, encoding=inner.encoding)
    if isinstance(layout, ak.contents.ListArray):
        layout = layout.to_ListOffsetArray64(True)
    if not isinstance(layout, ak.contents.ListOffsetArray):
        raise TypeError(f"from_awkward needs a var dimension (ListOffsetArray/ListArray), "
                        f"not {type(layout).__name__}")
    offsets = np.asarray(layout.offsets.data)
    if offsets.dtype == np.uint32:
        offsets = offsets.astype(np.int64)
    kind = layout.parameter("__array__")
    encoding = {"string": "utf-8", "bytestring": "bytes"}.get(kind)
    values = content_values(layout.content)
    if encoding is not None:
        values = np.asarray(values).view(np.uint8)
    return Ragged(offsets, values, validity, encoding=encoding)
