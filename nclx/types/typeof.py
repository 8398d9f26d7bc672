"""``typeof(x)``: the datashape type of an array, spelled as awkward spells it.

ndarray, masked array, Ragged, NumPy structured arrays, pyarrow Array /
ChunkedArray / RecordBatch / Table, awkward Array (when installed), nclx
storages and DistArray (its local block).  For everything awkward can
represent the string equals ``str(ak.type(equivalent))``: ``ak.from_numpy``
for NumPy data, ``ak.from_arrow`` for pyarrow data.  Structured arrays of
ndim > 1 keep DyND's spelling (``2 * 3 * {x: int32}``; awkward moves the
dimensions into the fields).
"""
import sys

import numpy as np

from nclx.types.datashape import (Categorical, Dim, Option, Record, Scalar, String, Type,
                                  Union, scalar_of_dtype)
from nclx.types.ragged import Ragged

__all__ = ["typeof", "type_of", "dtype_type"]


def typeof(x):
    """The datashape type string of ``x``."""
    return str(type_of(x))


def type_of(x):
    """The type object of ``x`` (see :func:`typeof`)."""
    if isinstance(x, Type):
        return x
    if isinstance(x, Ragged):
        return Dim("fixed", _ragged_element(x), len(x))
    if isinstance(x, np.ndarray):
        return _ndarray_type(x)
    if isinstance(x, np.generic):
        return _ndarray_type(np.asarray(x))
    mod = type(x).__module__ or ""
    if mod.startswith("pyarrow"):
        from nclx.types._arrow_types import arrow_type_of
        return arrow_type_of(x)
    if mod.startswith("awkward"):
        return _awkward_type(x)
    from_nclx = _nclx_array(x)
    if from_nclx is not None:
        return from_nclx
    raise TypeError(f"typeof: no datashape type for a {type(x).__module__}.{type(x).__name__}")


def _nclx_array(x):
    storage = sys.modules.get("nclx.storage.core")
    if storage is not None and isinstance(x, storage.Storage):
        return _shape_type(tuple(x.shape), x.dtype, masked=False)
    dap = sys.modules.get("nclx.dap.distarray")
    if dap is not None and isinstance(x, dap.DistArray):
        return type_of(x.local)
    return None


# ------------------------------------------------------------------ NumPy
def dtype_type(dtype):
    """The element type of one NumPy dtype: scalar, string or record
    (sub-array fields become fixed dimensions)."""
    dtype = np.dtype(dtype)
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        t = dtype_type(base)
        for n in reversed(shape):
            t = Dim("fixed", t, n)
        return t
    if dtype.names is not None:
        return Record(tuple(dtype_type(dtype.fields[n][0]) for n in dtype.names),
                      tuple(dtype.names))
    return scalar_of_dtype(dtype)


def _shape_type(shape, dtype, masked):
    t = dtype_type(dtype)
    if masked:
        t = Option(t)
    for n in reversed(shape):
        t = Dim("fixed", t, n)
    return t


def _ndarray_type(a):
    if a.dtype.kind == "O":
        raise TypeError("typeof: an array of dtype object has no datashape type")
    masked = isinstance(a, np.ma.MaskedArray)
    if masked and a.dtype.names is not None:
        raise TypeError("typeof: masked structured arrays are not supported")
    return _shape_type(a.shape, a.dtype, masked)


def _values_element(values):
    """The type of one element of ``values`` (its first dimension removed)."""
    if isinstance(values, Ragged):
        return _ragged_element(values)
    t = _ndarray_type(values)
    return t.element


def _ragged_element(r):
    if r.encoding is not None:
        t = String("string" if r.encoding == "utf-8" else "bytes")
    else:
        t = Dim("var", _values_element(r.values))
    return Option(t) if r.validity is not None else t


# ---------------------------------------------------------------- awkward
def _awkward_type(x):
    import awkward as ak
    if isinstance(x, ak.Array):
        return Dim("fixed", _form_type(x.layout.form), len(x))
    if isinstance(x, ak.Record):
        return _form_type(x.layout.array.form)
    if isinstance(x, ak.contents.Content):
        return Dim("fixed", _form_type(x.form), x.length)
    raise TypeError(f"typeof: no datashape type for awkward's {type(x).__name__}")


_OPTION_FORMS = ("IndexedOptionForm", "ByteMaskedForm", "BitMaskedForm", "UnmaskedForm")


def _form_type(form):
    name = type(form).__name__
    params = dict(form.parameters or {})
    array = params.pop("__array__", None)
    params.pop("__doc__", None)
    if array not in (None, "string", "bytestring", "char", "byte", "categorical"):
        params["__array__"] = array
    if params:
        raise TypeError(f"typeof: awkward parameters {sorted(params)} have no datashape spelling")
    if name in _OPTION_FORMS:
        content = _form_type(form.content)
        if array == "categorical":
            content = Categorical(content)
        return Option(content)
    if name == "IndexedForm":
        content = _form_type(form.content)
        return Categorical(content) if array == "categorical" else content
    if name in ("ListOffsetForm", "ListForm"):
        if array in ("string", "bytestring"):
            return String("string" if array == "string" else "bytes")
        return Dim("var", _form_type(form.content))
    if name == "RegularForm":
        if array in ("string", "bytestring"):
            return String("string" if array == "string" else "bytes", form.size)
        return Dim("fixed", _form_type(form.content), form.size)
    if name == "NumpyForm":
        t = Scalar(form.primitive)
        for n in reversed(form.inner_shape):
            t = Dim("fixed", t, n)
        return t
    if name == "RecordForm":
        fields = tuple(_form_type(c) for c in form.contents)
        return Record(fields, None if form.is_tuple else tuple(form.fields))
    if name == "EmptyForm":
        return Scalar("unknown")
    if name == "UnionForm":
        return Union(tuple(_form_type(c) for c in form.contents))
    raise TypeError(f"typeof: awkward's {name} has no datashape type")
