"""NumPy arrays as Arrow tables: one row of the canonical fixed-shape tensor
extension type (``arrow.fixed_shape_tensor``), holding the whole array.

The storage is ``fixed_size_list<value_type>[prod(shape)]`` whose values
buffer is the array's own memory (no copy on the way out; none on the way
back either: ``table_to_array`` returns a view of the received buffer or of
the shared segment).  Types Arrow lacks travel as their raw bits:

* bool: values uint8 (0/1), and the dtype in the metadata;
* complex64/complex128: values float32/float64 with one more trailing
  dimension of 2 (real, imaginary).

The dtype is written twice: in the extension metadata JSON
(``{"shape": [...], "nclx:dtype": "bool"}``, for other readers of the raw
schema; pyarrow ignores the extra key) and in the field's metadata
(``nclx:dtype``), which survives pyarrow's conversion to the extension type
and is what :func:`table_to_array` reads.

Tensors from other writers: Arrow bool values (bits) are unpacked and date32
(int32 days) converted to ``datetime64[D]``, both into a new array; integer,
floating, date64, timestamp (without time zone) and duration values are
viewed as they are; any other value type is a ProtocolError naming the field
and the type (review 20).
"""
import json

import numpy as np
import pyarrow as pa

from nclx.ipc.errors import ProtocolError

COLUMN = "tensor"
#: most values one tensor holds: Arrow's fixed_size_list ``list_size`` is an
#: int32 (a complex element is two values)
MAX_VALUES = (1 << 31) - 1
EXT_NAME = b"arrow.fixed_shape_tensor"
DTYPE_KEY = b"nclx:dtype"
_KINDS = "biufc"


def as_array(obj):
    """The C-contiguous, native-byte-order ndarray to serve for ``obj``.

    ``obj``: an ndarray, anything ``np.asarray`` takes (an nclx storage), or a
    DistArray / DAP producer (its local block, ``__distarray__()['buffer']``,
    padding included).  A non-contiguous or byte-swapped array is copied
    once; object, string, datetime and structured dtypes raise TypeError;
    more than :data:`MAX_VALUES` values (elements, two per complex one) a
    ValueError, before any copy.
    """
    if hasattr(obj, "__distarray__"):
        obj = obj.__distarray__()["buffer"]
    a = np.asarray(obj)
    dt = a.dtype
    if dt.kind not in _KINDS or dt.fields is not None or dt.subdtype is not None:
        raise TypeError(f"cannot serve an array of dtype {dt} ({dt.str!r}): only bool, "
                        f"integer, floating and complex dtypes")
    if dt.kind == "c" and dt.itemsize not in (8, 16):
        raise TypeError(f"cannot serve dtype {dt}: Arrow has no {dt.itemsize // 2}-byte float")
    if dt.kind == "f" and dt.itemsize not in (2, 4, 8):
        raise TypeError(f"cannot serve dtype {dt}: Arrow has no {dt.itemsize}-byte float")
    count = a.size * (2 if dt.kind == "c" else 1)
    if count > MAX_VALUES:
        raise ValueError(f"cannot serve an array of {a.size} elements (shape {a.shape}, "
                         f"dtype {dt}): a fixed-shape tensor holds at most {MAX_VALUES} "
                         f"values (Arrow's fixed_size_list list_size is an int32"
                         + (", and a complex element is two values)" if dt.kind == "c"
                            else ")"))
    if not dt.isnative:
        a = a.astype(dt.newbyteorder("="))
    return a if a.flags.c_contiguous else a.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)


def array_to_table(obj):
    """A one-row table (column ``tensor``) of the fixed-shape tensor type holding ``obj``."""
    a = as_array(obj)
    shape = list(a.shape)
    if a.dtype.kind == "b":
        values = a.view(np.uint8)
        # NumPy takes any nonzero byte as True (a uint8 array viewed as bool):
        # such an array is sent as 0/1 bytes, in a new array (review 22: before,
        # nclx's own client refused it); the usual 0/1 one is sent as it is
        if values.size and int(values.max()) > 1:
            values = (values != 0).view(np.uint8)
    elif a.dtype.kind == "c":
        values = a.reshape(a.shape + (1,)).view(np.dtype(f"f{a.dtype.itemsize // 2}"))
        shape.append(2)
    else:
        values = a
    vtype = pa.from_numpy_dtype(values.dtype)
    n = int(values.size)
    flat = pa.Array.from_buffers(vtype, n, [None, pa.py_buffer(values.reshape(-1))])
    storage = pa.Array.from_buffers(pa.list_(vtype, n), 1, [None], children=[flat])
    meta = {"shape": shape}
    if a.dtype.kind in "bc":
        meta["nclx:dtype"] = a.dtype.name
    field = pa.field(COLUMN, storage.type, nullable=False, metadata={
        b"ARROW:extension:name": EXT_NAME,
        b"ARROW:extension:metadata": json.dumps(meta).encode(),
        DTYPE_KEY: a.dtype.name.encode()})
    return pa.Table.from_arrays([storage], schema=pa.schema([field]))


def _value_dtypes(field, vtype):
    """``(raw, result)``: the NumPy dtype of a tensor's values buffer as it
    lies in memory and the dtype of the returned array, for Arrow value type
    ``vtype``.  ``raw`` is None for bool (Arrow packs it in bits); for date32
    (int32 days) the result is a converted ``datetime64[D]``.  Any other type
    without an exact fixed-width NumPy equal is a ProtocolError (before,
    strings, decimals and fixed_size_binary gave NumPy's "cannot create an
    OBJECT array", date32 was read as 8-byte datetime64[ms], pairs of days)."""
    if pa.types.is_boolean(vtype):
        return None, np.dtype(np.bool_)
    if pa.types.is_date32(vtype):
        return np.dtype(np.int32), np.dtype("M8[D]")
    if pa.types.is_date64(vtype):
        return np.dtype("M8[ms]"), np.dtype("M8[ms]")
    if pa.types.is_integer(vtype) or pa.types.is_floating(vtype):
        dt = np.dtype(vtype.to_pandas_dtype())
        return dt, dt
    if pa.types.is_duration(vtype):
        dt = np.dtype(f"m8[{vtype.unit}]")
        return dt, dt
    if pa.types.is_timestamp(vtype):
        try:
            tz = vtype.tz
        except UnicodeDecodeError:
            tz = "(not UTF-8)"
        if tz is None:
            dt = np.dtype(f"M8[{vtype.unit}]")
            return dt, dt
        why = f"timestamp with time zone {tz!r} (NumPy's datetime64 has none)"
    else:
        why = str(vtype)
    raise ProtocolError(f"field {field.name!r}: tensor value type {why} has no fixed-width "
                        f"NumPy equal: nclx reads tensors of bool, integer, floating, "
                        f"date, timestamp (no time zone) and duration values")


def _declared_dtype(field, vtype, base):
    name = (field.metadata or {}).get(DTYPE_KEY)
    if name is None:
        return base
    try:
        dt = np.dtype(name.decode("ascii"))
    except (TypeError, ValueError, UnicodeError):
        raise ProtocolError(f"field {field.name!r}: nclx:dtype {name!r} is not a NumPy "
                            f"dtype") from None
    ok = (dt == base or (dt.kind == "b" and base == np.uint8)
          or (dt.kind == "c" and base.kind == "f" and dt.itemsize == 2 * base.itemsize))
    if not ok or dt.kind not in _KINDS:
        raise ProtocolError(f"field {field.name!r}: nclx:dtype {dt} does not travel as "
                            f"Arrow {vtype}")
    return dt


def _unpack_bits(field, values, n):
    """The ``n`` bools of an Arrow boolean array (bit-packed, LSB first, from
    bit ``values.offset``) as a new ndarray: bits past the values (padding,
    which Arrow leaves undefined) are never read."""
    start = values.offset
    first, nbytes = start // 8, (start % 8 + n + 7) // 8
    data = values.buffers()[1]
    if data is None or data.size < first + nbytes:
        raise ProtocolError(f"field {field.name!r}: the tensor's bool values buffer holds "
                            f"{0 if data is None else data.size} bytes, {n} values from "
                            f"bit {start} need {first + nbytes}")
    raw = np.frombuffer(data, np.uint8, count=nbytes, offset=first)
    bits = np.unpackbits(raw, bitorder="little")
    return bits[start % 8:start % 8 + n].astype(np.bool_)


def _dims(field, what, value):
    """``value`` (a tensor's shape or permutation, from JSON) as a list of
    non-negative ints whose product fits in an int64, else ProtocolError."""
    if not isinstance(value, (list, tuple)) or len(value) > 64:
        raise ProtocolError(f"field {field.name!r}: tensor {what} {str(value)[:80]} is not "
                            f"a list of at most 64 dimensions")
    total = 1
    for i, d in enumerate(value):
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise ProtocolError(f"field {field.name!r}: tensor {what}[{i}] = "
                                f"{str(d)[:80]} is not a non-negative integer")
        total *= max(d, 1)       # a 0 elsewhere must not hide an overflow
    if total > (1 << 63) - 1:
        raise ProtocolError(f"field {field.name!r}: tensor {what} {list(value)}: the "
                            f"product of its dimensions does not fit in an int64")
    return [int(d) for d in value]


def table_to_array(table):
    """The ndarray in a table made by :func:`array_to_table` (a view of its buffer)."""
    if table.num_columns != 1:
        raise ProtocolError(f"an array travels as one column, the table has "
                            f"{table.num_columns}")
    field = table.schema.field(0)
    etype = field.type
    if isinstance(etype, pa.FixedShapeTensorType):
        shape, perm, vtype = etype.shape, etype.permutation, etype.value_type
    elif (isinstance(etype, pa.FixedSizeListType) and field.metadata
          and field.metadata.get(b"ARROW:extension:name") == EXT_NAME):
        # a table made by array_to_table that has not been through IPC yet
        try:
            doc = json.loads(field.metadata[b"ARROW:extension:metadata"])
            shape, perm = doc["shape"], doc.get("permutation")
        except (KeyError, TypeError, ValueError, RecursionError) as exc:
            raise ProtocolError(f"field {field.name!r}: bad tensor metadata "
                                f"({type(exc).__name__}: {str(exc)[:200]})") from None
        shape = _dims(field, "shape", shape)
        perm = None if perm is None else _dims(field, "permutation", perm)
        vtype = etype.value_type
    else:
        raise ProtocolError(f"column {field.name!r} has type {etype}, not "
                            f"arrow.fixed_shape_tensor")
    if table.num_rows != 1:
        raise ProtocolError(f"an array travels as one row, the table has {table.num_rows}")
    if perm is not None and list(perm) != list(range(len(perm))):
        raise ProtocolError(f"tensor permutation {list(perm)} is not supported")
    shape = tuple(_dims(field, "shape", list(shape)))
    raw, base = _value_dtypes(field, vtype)
    dt = _declared_dtype(field, vtype, base)
    if dt.kind == "c":
        if not shape or shape[-1] != 2:
            raise ProtocolError(f"complex tensor of shape {list(shape)}: the last dimension "
                                f"must be 2 (real, imaginary)")
    chunk = next(c for c in table.column(0).chunks if len(c))
    storage = chunk.storage if isinstance(chunk, pa.ExtensionArray) else chunk
    if storage.null_count:
        raise ProtocolError("the tensor row is null")
    values = storage.flatten()
    n = int(np.prod(shape, dtype=np.int64))
    if len(values) != n or values.null_count:
        raise ProtocolError(f"tensor of shape {list(shape)} has {len(values)} values "
                            f"({values.null_count} null)")
    if n == 0:
        try:
            out = np.empty(shape, base)
        except ValueError as exc:      # dimensions beside a 0 too large for NumPy
            raise ProtocolError(f"field {field.name!r}: empty tensor of shape "
                                f"{list(shape)}: {exc}") from None
    elif raw is None:                  # Arrow bool: bits, unpacked into a new array
        return _unpack_bits(field, values, n).reshape(shape)
    else:
        data = values.buffers()[1]
        need = (values.offset + n) * raw.itemsize
        if data is None or data.size < need:
            raise ProtocolError(f"field {field.name!r}: the tensor's {vtype} values buffer "
                                f"holds {0 if data is None else data.size} bytes, "
                                f"{n} values from {values.offset} need {need}")
        out = np.frombuffer(data, dtype=raw, count=n,
                            offset=values.offset * raw.itemsize).reshape(shape)
        if raw != base:                # date32: int32 days -> datetime64[D] (a copy)
            out = out.astype(base)
    if dt.kind == "b" and base != dt:  # nclx's bool: bytes 0/1
        if n and out.max() > 1:
            raise ProtocolError(f"field {field.name!r}: a bool tensor holds values other "
                                f"than 0 and 1")
        return out.view(np.bool_)
    if dt.kind == "c":
        out = out.view(dt)
        return out.reshape(shape[:-1])
    return out
