"""``from_string(type, *buffers)``: a zero-copy view of buffers laid out as
the type says, in Arrow's buffer order.

For each node of the type, outermost first:

- ``option`` around a var dimension, a string or a value: a validity bitmap
  (Arrow's: one bit per element, LSB first);
- ``var`` dimension and ``string``/``bytes``: an offsets buffer (n + 1
  entries; int32 or int64 as the buffer's dtype says, int64 for raw bytes
  unless ``offsets_dtype=`` says otherwise); a string's bytes follow;
- fixed dimensions: no buffer of their own (they multiply the count below);
- a scalar or record: one values buffer (records packed, NumPy's
  ``align=False`` layout).

The outermost dimension may be ``strided``: its size then comes from the
first buffer's length.  Every buffer is checked against what the type needs
before anything is read.
"""
import math

import numpy as np

from nclx.types import _bits
from nclx.types.datashape import Dim, Option, Record, Scalar, String, dtype_of_scalar
from nclx.types.parser import parse
from nclx.types._offsets import validate_offsets
from nclx.types.ragged import Ragged

__all__ = ["from_string"]

#: buffer formats of single bytes: such a buffer object is raw bytes (Arrow's
#: buffers say "b", bytes and bytearray "B", ctypes char arrays "c")
_BYTE_FORMATS = ("B", "b", "c")


def _raw_dtype(dtype):
    """An ndarray of uint8 (or of plain void items) is raw bytes; any other
    dtype is a typed buffer, read as that dtype or refused."""
    return dtype == np.uint8 or (dtype.kind == "V" and dtype.names is None
                                 and dtype.subdtype is None)


class _Buffers:
    def __init__(self, buffers, offsets_dtype):
        self.items = list(buffers)
        self.i = 0
        self.offsets_dtype = np.dtype(offsets_dtype) if offsets_dtype is not None else None

    def _next(self, role):
        """(array, index, typed): the next buffer as an ndarray; ``typed``
        when it carries a dtype of its own (an ndarray, or a buffer object
        of another format than single bytes) rather than raw bytes."""
        if self.i >= len(self.items):
            raise ValueError(f"{len(self.items)} buffer(s) given; the type needs another "
                             f"one for {role} (buffer {self.i})")
        buf, k = self.items[self.i], self.i
        self.i += 1
        if not isinstance(buf, np.ndarray):
            try:
                with memoryview(buf) as mv:
                    fmt, size = mv.format, mv.itemsize
                raw = size == 1 and fmt.lstrip("@=<>!") in _BYTE_FORMATS
            except TypeError as exc:
                raise TypeError(f"buffer {k} ({role}) is a {type(buf).__name__}, not an "
                                "ndarray or a bytes-like object") from exc
            if raw:
                try:
                    return np.frombuffer(buf, dtype=np.uint8), k, False
                except BufferError as exc:     # e.g. a strided memoryview
                    raise ValueError(f"buffer {k} ({role}) is not C-contiguous ({exc})") from None
            try:        # a typed buffer object (array.array, a memoryview of int64 ...)
                buf = np.asarray(memoryview(buf))
            except (TypeError, ValueError, NotImplementedError) as exc:
                raise TypeError(f"buffer {k} ({role}) has the buffer format {fmt!r}, "
                                "which NumPy cannot read: pass raw bytes or an ndarray") from exc
        if isinstance(buf, np.ma.MaskedArray):
            # (before review 21, NumPy's "cannot reshape array of size 2 into
            # shape (8,)" from inside numpy.ma, naming no buffer)
            raise TypeError(f"buffer {k} ({role}) is a masked array: a buffer holds values "
                            "only; pass its .data, and the mask as a validity bitmap of an "
                            "option type")
        if type(buf) is not np.ndarray:
            buf = np.asarray(buf)     # a subclass's bytes as a plain ndarray (np.matrix ...)
        if not buf.flags.c_contiguous:
            raise ValueError(f"buffer {k} ({role}) is not C-contiguous")
        if buf.dtype.hasobject:
            raise TypeError(f"buffer {k} ({role}) is an ndarray of {buf.dtype}: Python "
                            "objects are no buffer of values")
        return buf, k, not _raw_dtype(buf.dtype)

    def raw(self, role, count, dtype, text=False):
        """``count`` items of ``dtype``; ``text``: a string's bytes, which
        any array of single bytes (int8, S1 ...) holds as well as uint8."""
        arr, k, typed = self._next(role)
        if text and arr.dtype.itemsize == 1 and arr.dtype.kind in "iuSV":
            typed = False
        if typed:
            # a typed buffer is read as its dtype says or not at all (found
            # by review: an int64 or float32 array given for int32 values
            # was reinterpreted byte by byte); its byte order may differ
            if arr.dtype.newbyteorder("=") != dtype.newbyteorder("="):
                order = "" if arr.dtype.isnative else ", not in the machine's byte order,"
                raise TypeError(f"buffer {k} ({role}) is an array of {arr.dtype}{order} and "
                                f"the type needs {dtype}: pass an array of {dtype} (either byte "
                                "order) or raw bytes (bytes, bytearray, a uint8 array)")
            dtype = arr.dtype
        if dtype.itemsize == 0:          # e.g. "()": no bytes to view
            return np.empty(count, dtype), k
        need = count * dtype.itemsize
        if arr.nbytes < need:
            raise ValueError(f"buffer {k} ({role}) has {arr.nbytes} bytes; {count} x {dtype} "
                             f"need {need}")
        return arr.reshape(-1).view(np.uint8)[:need].view(dtype), k

    def offsets(self, role, count):
        arr, k, typed = self._next(role)
        if typed and arr.dtype in (np.int32, np.int64) and self.offsets_dtype is None:
            dtype = arr.dtype
        else:
            dtype = self.offsets_dtype or np.dtype(np.int64)
        if dtype not in (np.int32, np.int64):
            raise TypeError(f"offsets_dtype must be int32 or int64, not {dtype}")
        # a typed buffer is read as its dtype says or not at all (found by
        # review: '>i8' and float64 offsets, then int16 ones, and int64 ones
        # with offsets_dtype=int32, were reinterpreted byte by byte)
        if typed and not arr.dtype.isnative:
            raise TypeError(f"buffer {k} ({role}) is an array of {arr.dtype}, not in the "
                            "machine's byte order: offsets are int32 or int64 in native "
                            "byte order (or raw bytes)")
        if typed and arr.dtype != dtype:
            given = "" if self.offsets_dtype is None else f" and offsets_dtype is {dtype}"
            raise TypeError(f"buffer {k} ({role}) is an array of {arr.dtype}{given}: offsets "
                            "are int32 or int64, read as their dtype says (or raw bytes: "
                            "bytes, bytearray, a uint8 array)")
        need = (count + 1) * dtype.itemsize
        if arr.nbytes < need:
            raise ValueError(f"buffer {k} ({role}) has {arr.nbytes} bytes; {count + 1} offsets "
                             f"of {dtype} need {need}")
        return arr.reshape(-1).view(np.uint8)[:need].view(dtype), k

    def validity(self, role, count):
        arr, k, typed = self._next(role)
        if typed and arr.dtype != np.int8:
            # bits packed in bytes: raw bytes, or an int8 array as a buffer
            # of format "b" is (found by review: a bool array, one byte per
            # element, was read as bits)
            raise TypeError(f"buffer {k} ({role}) is an array of {arr.dtype}: a validity "
                            "bitmap is Arrow's, one bit per element, LSB first, in raw bytes "
                            "(bytes, bytearray, a uint8 array; np.packbits(mask, "
                            "bitorder='little') packs a bool mask)")
        need = _bits.nbytes_for(count)
        if arr.nbytes < need:
            raise ValueError(f"buffer {k} ({role}) has {arr.nbytes} bytes; a bitmap of "
                             f"{count} entries needs {need}")
        return arr.reshape(-1).view(np.uint8)[:need]

    def peek_count(self, itemsize):
        if self.i >= len(self.items):
            raise ValueError("no buffer given to size the strided dimension from")
        buf = self.items[self.i]
        nbytes = buf.nbytes if isinstance(buf, np.ndarray) else memoryview(buf).nbytes
        if itemsize and nbytes % itemsize:
            # (before, the partial element was dropped silently; review 23)
            raise ValueError(f"buffer {self.i}: {nbytes} bytes is not a whole number of "
                             f"the strided dimension's {itemsize}-byte elements")
        return nbytes // itemsize if itemsize else 0


def _record_dtype(t, where):
    names, formats = [], []
    for name, f in zip(t.names or [f"f{i}" for i in range(len(t.fields))], t.fields):
        shape = []
        while isinstance(f, Dim) and f.kind == "fixed":
            shape.append(f.size)
            f = f.element
        if isinstance(f, Record):
            base = _record_dtype(f, where)
        elif isinstance(f, Scalar):
            base = dtype_of_scalar(f, where=f"{where}: field {name!r}")
        else:
            raise TypeError(f"{where}: field {name!r} of type {f} has no fixed-width layout "
                            "(fields of a viewed record are scalars, records or fixed dims)")
        names.append(name)
        formats.append((base, tuple(shape)) if shape else base)
    try:
        # NumPy's dict form, packed: the list form renames a field "" to
        # "f0" (found by review: {"": int8} came back as {f0: int8})
        return np.dtype({"names": names, "formats": formats})
    except ValueError as exc:     # e.g. a field's fixed dimensions NumPy cannot hold
        raise ValueError(f"{where}: record {t} has no NumPy layout ({exc})") from None


def _fixed_dtype(t, where):
    """dtype and inner shape of a type made of fixed dims over a scalar/record."""
    shape = []
    while isinstance(t, Dim) and t.kind == "fixed":
        shape.append(t.size)
        t = t.element
    if isinstance(t, Record):
        return _record_dtype(t, where), tuple(shape)
    if isinstance(t, Scalar):
        return dtype_of_scalar(t, where=where), tuple(shape)
    return None, None


def _build(t, count, bufs, where):
    """``count`` consecutive elements of type ``t`` from the buffers."""
    if isinstance(t, Option):
        content = t.content
        if isinstance(content, (String,)) or (isinstance(content, Dim) and content.kind == "var"):
            validity = bufs.validity(f"validity of {where}", count)
            r = _build(content, count, bufs, where)
            return Ragged(r.offsets, r.values, validity, encoding=r.encoding, validate=False)
        dtype, shape = _fixed_dtype(content, where)
        if dtype is None or shape:
            raise TypeError(f"{where}: from_string views options of scalars, records, strings "
                            f"and var dimensions, not ?{content}")
        validity = bufs.validity(f"validity of {where}", count)
        values, _ = bufs.raw(f"values of {where}", count, dtype)
        return np.ma.masked_array(values, mask=~_bits.valid_mask(validity, 0, count))
    if isinstance(t, Dim) and t.kind == "var":
        offsets, k = bufs.offsets(f"offsets of {where}", count)
        total = int(offsets[-1]) if count else 0
        if count and int(offsets[0]) < 0:
            raise ValueError(f"buffer {k}: offsets[0] = {int(offsets[0])} is negative")
        if count:
            validate_offsets(offsets, np.iinfo(np.int64).max)
        values = _build(t.element, total, bufs, f"var dimension below {where}")
        try:
            return Ragged(offsets, values)
        except ValueError as exc:
            raise ValueError(f"buffer {k}: {exc}") from None
    if isinstance(t, String):
        if t.size is not None:
            raise TypeError(f"{where}: fixed-width {t} is not viewed by from_string")
        offsets, k = bufs.offsets(f"offsets of {where}", count)
        if count:
            validate_offsets(offsets, np.iinfo(np.int64).max)
        total = int(offsets[-1]) if count else 0
        data, _ = bufs.raw(f"bytes of {where}", total, np.dtype(np.uint8), text=True)
        try:
            return Ragged(offsets, data, encoding="utf-8" if t.kind == "string" else "bytes")
        except ValueError as exc:
            raise ValueError(f"buffer {k}: {exc}") from None
    if isinstance(t, Dim) and t.kind == "strided":
        raise TypeError(f"{where}: a strided dimension is only allowed outermost")
    if isinstance(t, Dim) and t.kind == "fixed":
        inner = _build(t.element, count * t.size, bufs, where)
        if isinstance(inner, Ragged):
            raise TypeError(f"{where}: var dimensions or strings inside a fixed dimension are "
                            "not viewed by from_string (put the fixed dimension inside)")
        shape = (count, t.size) + inner.shape[1:]
        try:
            return inner.reshape(shape)
        except ValueError:      # no elements, but a shape NumPy cannot hold
            raise ValueError(f"{where}: a fixed dimension of {t.size} gives the shape "
                             f"{shape}, too large for NumPy") from None
    dtype, shape = _fixed_dtype(t, where)
    if dtype is None:
        raise TypeError(f"{where}: from_string cannot view {t} (pointer, union, categorical "
                        "and unknown types describe no buffer layout nclx owns)")
    values, _ = bufs.raw(f"values of {where}", count, dtype)
    return values


def from_string(s, *buffers, offsets_dtype=None):
    """The type object of ``s`` when no buffers are given; otherwise a view
    of ``buffers`` with that type (ndarray, masked array or Ragged)."""
    t = parse(s) if isinstance(s, str) else s
    if not buffers:
        return t
    bufs = _Buffers(buffers, offsets_dtype)
    if isinstance(t, Dim) and t.kind == "strided":
        dtype, shape = _fixed_dtype(t.element, "the strided dimension")
        if dtype is None:
            raise TypeError("a strided outer dimension needs fixed-width elements to be sized "
                            "from its buffer")
        count = bufs.peek_count(dtype.itemsize * math.prod(shape))   # (no int64 wrap)
        out = _build(t.element, count, bufs, "dimension 1")
    elif isinstance(t, Dim) and t.kind == "fixed":
        out = _build(t.element, t.size, bufs, "dimension 1")
    else:
        out = _build(t, 1, bufs, "the value")
        out = out[0] if isinstance(out, Ragged) else out.reshape(out.shape[1:])
    if bufs.i != len(bufs.items):
        raise ValueError(f"{len(bufs.items)} buffers given; the type {t} uses {bufs.i}")
    return out
