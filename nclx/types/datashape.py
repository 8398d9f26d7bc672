"""Type objects of nclx.types: DyND's datashape, spelled as awkward spells it.

A type is a tree of immutable nodes:

- :class:`Dim` -- one dimension in front of an element type: ``fixed``
  (``3 * T``), ``var`` (``var * T``, a ragged dimension) or ``strided``
  (DyND's ``strided * T``, a fixed dimension whose size lives in the arrmeta);
- :class:`Scalar` -- a fixed-width value: ``int32``, ``float64``, ``bool``,
  ``datetime64[s]``, ``unknown`` (the element of an empty list, awkward's);
- :class:`String` -- ``string`` (utf-8) or ``bytes``, variable length, or
  ``bytes[k]`` / ``string[k]`` of a fixed width;
- :class:`Record` -- ``{x: int32, y: float64}``, or a tuple ``(int32, float64)``;
- :class:`Option` -- a value that may be missing: ``?int64``,
  ``option[var * int64]`` (awkward's two spellings: ``option[...]`` around a
  dimension, ``?`` before anything else);
- :class:`Categorical` -- ``categorical[type=string]`` (dictionary-encoded);
- :class:`Union` -- ``union[int64, string]``;
- :class:`Pointer` -- DyND's ``pointer[int32]``.

``str(t)`` is the canonical spelling and :func:`nclx.types.parse` reads it
back: ``str(parse(s)) == s`` for every canonical ``s``.
"""
import json
import operator
import re
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

#: the largest fixed dimension a type string holds (the parser's int64)
_MAX_SIZE = 2 ** 63 - 1

__all__ = ["Type", "Dim", "Scalar", "String", "Record", "Option", "Categorical", "Union",
           "Pointer", "SCALAR_NAMES", "scalar_of_dtype", "dtype_of_scalar", "dtype_type",
           "shape_type", "array_type"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")

#: Scalar names (awkward's primitives, plus ``unknown``); datetime64 and
#: timedelta64 also take a unit: ``datetime64[ms]``.
SCALAR_NAMES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                "uint64", "float16", "float32", "float64", "float128", "complex64",
                "complex128", "complex256", "datetime64", "timedelta64", "unknown")


class Type:
    """Base of every type node."""
    __slots__ = ()

    @property
    def dims(self):
        """The dimensions in front of the element type, outermost first."""
        out, t = [], self
        while isinstance(t, Dim):
            out.append(t)
            t = t.element
        return out

    @property
    def measure(self):
        """The element type below the leading dimensions (DyND's dtype)."""
        t = self
        while isinstance(t, Dim):
            t = t.element
        return t

    def __repr__(self):
        return f"nclx.types.parse({str(self)!r})"


@dataclass(frozen=True, repr=False)
class Dim(Type):
    kind: str            # 'fixed', 'var' or 'strided'
    element: Type
    size: Optional[int] = None   # fixed dims only

    def __post_init__(self):
        if self.kind not in ("fixed", "var", "strided"):
            raise ValueError(f"dimension kind must be 'fixed', 'var' or 'strided', not {self.kind!r}")
        if (self.kind == "fixed") != (self.size is not None):
            raise ValueError("a fixed dimension needs a size; var and strided ones take none")
        if self.size is not None:
            # an int the parser reads back: not a bool, a float or past int64
            # (before review 21, Dim('fixed', t, True) printed 'True * ...')
            if isinstance(self.size, (bool, np.bool_)):
                raise TypeError(f"dimension size must be an integer, not {self.size!r}")
            try:
                size = operator.index(self.size)
            except TypeError:
                raise TypeError(f"dimension size must be an integer, not "
                                f"{type(self.size).__name__} {self.size!r}") from None
            if size < 0 or size > _MAX_SIZE:
                raise ValueError(f"dimension size must be in 0..2**63-1, not {size}")
            object.__setattr__(self, "size", int(size))
        if not isinstance(self.element, Type):
            raise TypeError(f"a dimension's element must be a Type, not "
                            f"{type(self.element).__name__}")

    def __str__(self):
        head = str(self.size) if self.kind == "fixed" else self.kind
        return f"{head} * {self.element}"


@dataclass(frozen=True, repr=False)
class Scalar(Type):
    name: str            # e.g. 'int32', 'datetime64[ms]', 'unknown'

    def __str__(self):
        return self.name


@dataclass(frozen=True, repr=False)
class String(Type):
    kind: str = "string"          # 'string' (utf-8) or 'bytes'
    size: Optional[int] = None    # fixed width in bytes: bytes[k] / string[k]

    def __str__(self):
        return self.kind if self.size is None else f"{self.kind}[{self.size}]"


@dataclass(frozen=True, repr=False)
class Record(Type):
    fields: Tuple[Type, ...]
    names: Optional[Tuple[str, ...]] = None   # None: a tuple type

    def __post_init__(self):
        # a name given twice is no datashape record: parse() refuses the
        # string it prints (before, typeof of an Arrow struct with duplicate
        # names printed one; found by review)
        if not isinstance(self.fields, tuple):
            raise TypeError(f"record: fields must be a tuple of Types, not a "
                            f"{type(self.fields).__name__}")
        bad = next((f for f in self.fields if not isinstance(f, Type)), None)
        if bad is not None:
            raise TypeError(f"record: fields must be a tuple of Types, not holding "
                            f"{type(bad).__name__} {bad!r}")
        if self.names is not None and len(self.names) != len(self.fields):
            # (before review 21, zip() dropped the extra fields from str(): a
            # record printing '{x: int32}' unequal to parse('{x: int32}'))
            raise ValueError(f"record: {len(self.names)} names for {len(self.fields)} fields")
        if self.names is not None:
            seen = set()
            for name in self.names:
                if name in seen:
                    raise ValueError(f"record: duplicate field name {name!r} "
                                     "(datashape record field names are unique)")
                seen.add(name)

    @property
    def is_tuple(self):
        return self.names is None

    def __str__(self):
        if self.names is None:
            return "(" + ", ".join(str(f) for f in self.fields) + ")"
        return "{" + ", ".join(f"{_key(n)}: {f}" for n, f in zip(self.names, self.fields)) + "}"


@dataclass(frozen=True, repr=False)
class Option(Type):
    content: Type

    def __str__(self):
        inner = self.content.content if isinstance(self.content, Categorical) else self.content
        if isinstance(inner, (Dim, Option)):       # '??int32' does not parse
            return f"option[{self.content}]"
        return f"?{self.content}"


@dataclass(frozen=True, repr=False)
class Categorical(Type):
    content: Type

    def __str__(self):
        return f"categorical[type={self.content}]"


@dataclass(frozen=True, repr=False)
class Union(Type):
    contents: Tuple[Type, ...]

    def __str__(self):
        return "union[" + ", ".join(str(c) for c in self.contents) + "]"


@dataclass(frozen=True, repr=False)
class Pointer(Type):
    target: Type

    def __str__(self):
        return f"pointer[{self.target}]"


def _key(name):
    # awkward's rule: identifiers bare, anything else as a JSON string
    return name if _IDENTIFIER.match(name) else json.dumps(name)


# ------------------------------------------------------------ dtype mapping

def scalar_of_dtype(dtype):
    """The scalar or string type of a NumPy dtype without fields or subarray."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return Scalar("bool")
    if dtype.kind in "iuf" or dtype.kind == "c":
        name = dtype.name
        if dtype.kind == "f" and dtype.itemsize > 8:
            name = "float128"
        if dtype.kind == "c" and dtype.itemsize > 16:
            name = "complex256"
        return Scalar(name)
    if dtype.kind in "mM":
        unit, count = np.datetime_data(dtype)
        base = "datetime64" if dtype.kind == "M" else "timedelta64"
        if unit == "generic":
            return Scalar(base)
        return Scalar(f"{base}[{unit if count == 1 else f'{count}{unit}'}]")
    if dtype.kind == "S":
        return String("bytes")
    if dtype.kind == "U":
        return String("string")
    raise TypeError(f"dtype {dtype} has no nclx.types equivalent "
                    "(fixed-width numbers, bool, datetime64/timedelta64, bytes and str only)")


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


def shape_type(shape, dtype, masked=False):
    """``n * m * ... * T`` for an array of ``shape`` and ``dtype`` (``?T``
    when masked)."""
    t = dtype_type(dtype)
    if masked:
        t = Option(t)
    for n in reversed(shape):
        t = Dim("fixed", t, n)
    return t


def interface_dtype(iface):
    """The dtype an array interface dict describes: its ``descr`` with the
    padding entries (empty names) left out and the fields at their offsets,
    the item size from ``typestr`` -- an aligned record comes back as the
    very dtype that exported it (``np.asarray`` turns the padding into a
    ``V`` field)."""
    typestr = np.dtype(iface["typestr"])
    descr = iface.get("descr")
    if not descr or (len(descr) == 1 and descr[0][0] == ""):
        return typestr
    names, formats, offsets, at = [], [], [], 0
    for entry in descr:
        name, fmt = entry[0], entry[1]
        shape = entry[2] if len(entry) > 2 else ()
        dt = np.dtype((fmt, shape)) if shape else np.dtype(fmt) if not isinstance(fmt, list) \
            else interface_dtype({"typestr": "|V0", "descr": fmt})
        if name:
            names.append(name[1] if isinstance(name, tuple) else name)
            formats.append(dt)
            offsets.append(at)
        at += dt.itemsize
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": max(typestr.itemsize, at)})


def array_type(a):
    """The type of an ndarray or masked array."""
    if a.dtype.kind == "O":
        raise TypeError("typeof: an array of dtype object has no datashape type")
    masked = isinstance(a, np.ma.MaskedArray)
    if masked and a.dtype.names is not None:
        raise TypeError("typeof: masked structured arrays are not supported")
    return shape_type(a.shape, a.dtype, masked)


def dtype_of_scalar(t, *, where="type"):
    """The NumPy dtype of a :class:`Scalar` (TypeError naming ``where`` if none)."""
    if not isinstance(t, Scalar) or t.name == "unknown":
        raise TypeError(f"{where}: {t} is not a fixed-width scalar type")
    name = t.name
    if name == "float128":
        name = "longdouble"
    elif name == "complex256":
        name = "clongdouble"
    try:
        dt = np.dtype(name)
    except TypeError as exc:
        raise TypeError(f"{where}: NumPy has no dtype for {t}") from exc
    return dt
