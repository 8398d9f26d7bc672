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
"""
import json

import numpy as np
import pyarrow as pa

from nclx.ipc.errors import ProtocolError

COLUMN = "tensor"
EXT_NAME = b"arrow.fixed_shape_tensor"
DTYPE_KEY = b"nclx:dtype"
_KINDS = "biufc"


def as_array(obj):
    """The C-contiguous, native-byte-order ndarray to serve for ``obj``.

    ``obj``: an ndarray, anything ``np.asarray`` takes (an nclx storage), or a
    DistArray / DAP producer (its local block, ``__distarray__()['buffer']``,
    padding included).  A non-contiguous or byte-swapped array is copied
    once; object, string, datetime and structured dtypes raise TypeError.
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
    if not dt.isnative:
        a = a.astype(dt.newbyteorder("="))
    return a if a.flags.c_contiguous else a.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)


def array_to_table(obj):
    """A one-row table (column ``tensor``) of the fixed-shape tensor type holding ``obj``."""
    a = as_array(obj)
    shape = list(a.shape)
    if a.dtype.kind == "b":
        values = a.view(np.uint8)
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


def _declared_dtype(field, vtype):
    name = (field.metadata or {}).get(DTYPE_KEY)
    base = np.dtype(vtype.to_pandas_dtype())
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
    dt = _declared_dtype(field, vtype)
    vdt = np.dtype(vtype.to_pandas_dtype())
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
            out = np.empty(shape, vdt)
        except ValueError as exc:      # dimensions beside a 0 too large for NumPy
            raise ProtocolError(f"field {field.name!r}: empty tensor of shape "
                                f"{list(shape)}: {exc}") from None
    else:
        data = values.buffers()[1]
        out = np.frombuffer(data, dtype=vdt, count=n,
                            offset=values.offset * vdt.itemsize).reshape(shape)
    if dt.kind == "b":
        if n and out.max() > 1:
            raise ProtocolError("a bool tensor holds values other than 0 and 1")
        return out.view(np.bool_)
    if dt.kind == "c":
        out = out.view(dt)
        return out.reshape(shape[:-1])
    return out
