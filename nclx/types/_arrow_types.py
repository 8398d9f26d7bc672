"""The datashape type of pyarrow data, following ``ak.from_arrow``'s rules:

- a top-level Array or ChunkedArray is an option type when it carries a
  validity buffer (a chunk of it does), whether or not a value is null;
- inside lists, fixed-size lists and structs, and for the columns of a
  Table or RecordBatch, a value is an option type when its *field* is
  nullable (pyarrow's default), nulls or not;
- extension types are their storage type, except Arrow's fixed-shape
  tensor (which awkward cannot read): ``n * 3 * 4 * float32``, its shape; dictionary arrays are
  ``categorical``; ``null`` arrays are ``?unknown``.
"""
import pyarrow as pa

from nclx.types.datashape import (Categorical, Dim, Option, Record, Scalar, String, Union,
                                  scalar_of_dtype)

__all__ = ["arrow_type_of", "arrow_element_type"]

_TIME_UNITS = {"time32[s]": "s", "time32[ms]": "ms", "time64[us]": "us", "time64[ns]": "ns"}


def arrow_type_of(x):
    if isinstance(x, pa.Array):
        t = arrow_element_type(x.type)
        if x.buffers()[0] is not None or _always_option(x.type):
            t = Option(t)
        return Dim("fixed", t, len(x))
    if isinstance(x, pa.ChunkedArray):
        chunks = [c for c in x.chunks if len(c) > 0]
        t = arrow_element_type(x.type)
        if not chunks or _always_option(x.type) or any(c.buffers()[0] is not None
                                                        for c in chunks):
            t = Option(t)
        return Dim("fixed", t, len(x))
    if isinstance(x, (pa.Table, pa.RecordBatch)):
        return Dim("fixed", _schema_record(x.schema), x.num_rows)
    if isinstance(x, pa.DataType):
        return arrow_element_type(x)
    raise TypeError(f"typeof: no datashape type for pyarrow's {type(x).__name__}")


def _always_option(t):
    # awkward reads null arrays and dictionary indices as IndexedOptionArrays
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    return pa.types.is_null(t) or pa.types.is_dictionary(t)


def _schema_record(schema):
    if list(schema.names) == [""]:    # awkward's nameless single column
        return _field_type(schema.field(0))
    return Record(tuple(_field_type(f) for f in schema), tuple(schema.names))


def _field_type(field):
    t = arrow_element_type(field.type)
    if field.nullable or pa.types.is_null(field.type):
        t = Option(t)
    return t


def arrow_element_type(t):
    """The type of one value of Arrow type ``t`` (no option at its own level)."""
    if isinstance(t, pa.FixedShapeTensorType):
        # awkward cannot read these; nclx spells the tensor's logical shape
        out = arrow_element_type(t.value_type)
        for n in reversed(t.shape):
            out = Dim("fixed", out, n)
        return out
    if isinstance(t, pa.BaseExtensionType):
        return arrow_element_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return Categorical(_strip(arrow_element_type(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return Dim("fixed", _field_type(t.value_field), t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return Dim("var", _field_type(t.value_field))
    if pa.types.is_struct(t):
        return Record(tuple(_field_type(t.field(i)) for i in range(t.num_fields)),
                      tuple(t.field(i).name for i in range(t.num_fields)))
    if pa.types.is_union(t):
        return Union(tuple(_field_type(t.field(i)) for i in range(t.num_fields)))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return String("string")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return String("bytes")
    if pa.types.is_decimal(t):
        raise TypeError(f"typeof: Arrow {t} has no datashape type (awkward rejects decimals too)")
    if pa.types.is_fixed_size_binary(t):
        return String("bytes", t.byte_width)
    if pa.types.is_null(t):
        return Scalar("unknown")
    if pa.types.is_boolean(t):
        return Scalar("bool")
    if pa.types.is_timestamp(t):
        return Scalar(f"datetime64[{t.unit}]")
    if pa.types.is_date32(t):
        return Scalar("datetime64[D]")
    if pa.types.is_date64(t):
        return Scalar("datetime64[ms]")
    if pa.types.is_time(t):
        return Scalar(f"datetime64[{_TIME_UNITS[str(t)]}]")
    if pa.types.is_duration(t):
        return Scalar(f"timedelta64[{t.unit}]")
    if pa.types.is_map(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t) \
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t) \
            or pa.types.is_run_end_encoded(t):
        raise TypeError(f"typeof: Arrow {t} has no datashape type (awkward does not read it)")
    try:
        return scalar_of_dtype(t.to_pandas_dtype())
    except (NotImplementedError, TypeError) as exc:
        raise TypeError(f"typeof: Arrow {t} has no datashape type") from exc


def _strip(t):
    # a dictionary's values carry no option of their own in the type
    return t.content if isinstance(t, Option) else t
