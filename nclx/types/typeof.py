"""``typeof(x)``: the datashape type of an array, spelled as awkward spells it.

ndarray, masked array, Ragged, NumPy structured arrays, pyarrow Array /
ChunkedArray / RecordBatch / Table, awkward Array (when installed), and
objects known by the protocol they export: ``__distarray__`` (a DistArray:
its local block), ``__gt_data_interface__`` (nclx storages) and
``__array_interface__``.  For everything awkward can
represent the string equals ``str(ak.type(equivalent))``: ``ak.from_numpy``
for NumPy data, ``ak.from_arrow`` for pyarrow data.  Structured arrays of
ndim > 1 keep DyND's spelling (``2 * 3 * {x: int32}``; awkward moves the
dimensions into the fields).
"""
import numpy as np

from nclx._ncl.extent import declares
from nclx.types.datashape import (Categorical, Dim, Option, Record, Scalar, String, Type,
                                  Union, array_type, dtype_type, interface_dtype, shape_type)
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
        return x.type
    if isinstance(x, np.ndarray):
        return array_type(x)
    if isinstance(x, np.generic):
        return array_type(np.asarray(x))
    mod = type(x).__module__ or ""
    if mod.startswith("pyarrow"):
        # pyarrow is optional: _arrow_types imports it, so it loads with pyarrow data only
        from nclx.types._arrow_types import arrow_type_of
        return arrow_type_of(x)
    if mod.startswith("awkward"):
        return _awkward_type(x)
    exported = _exported(x)
    if exported is not None:
        return exported
    raise TypeError(f"typeof: no datashape type for a {type(x).__module__}.{type(x).__name__}")


def _exported(x):
    """The type of an array known by the protocol it exports (no import of
    the package that made it): a DAP producer (``__distarray__``, a
    DistArray: its local block), a gt4py-style storage
    (``__gt_data_interface__``: shape and dtype from its host or device
    entry, no synchronisation), or NumPy's ``__array_interface__``.  A
    protocol that raises or returns something malformed is a TypeError
    naming the protocol and the type."""
    t = type(x)
    if hasattr(t, "__distarray__"):
        return type_of(_protocol(x, "__distarray__", lambda d: d()["buffer"]))
    if hasattr(t, "__gt_data_interface__"):
        got = _protocol(x, "__gt_data_interface__",
                        lambda gdi: _interface_type(_one_entry(gdi)) if gdi else None)
        if got is not None:
            return got
    if declares(x, "__array_interface__"):    # the instance too, as NumPy
        return _protocol(x, "__array_interface__", _interface_type)
    return None


def _one_entry(gdi):
    """The host entry of a ``__gt_data_interface__`` dict, else its first."""
    return gdi.get(None) or next(iter(gdi.values()))


def _protocol(x, name, read):
    """``read(x.<name>)``; any error in the protocol itself (it raises, or its
    value is not what the protocol says) becomes a TypeError naming both."""
    try:
        return read(getattr(x, name))
    except Exception as exc:  # noqa: BLE001 - re-raised as the protocol's TypeError
        if isinstance(exc, TypeError) and str(exc).startswith("typeof:"):
            raise
        raise TypeError(f"typeof: {type(x).__name__}.{name} is unusable: "
                        f"{type(exc).__name__}: {exc}") from exc


def _interface_type(iface):
    """The type of an array interface dict (NumPy's or CUDA's)."""
    dtype = interface_dtype(iface)
    if dtype.kind == "O":
        raise TypeError("typeof: an array of dtype object has no datashape type")
    return shape_type(tuple(iface["shape"]), dtype)


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
