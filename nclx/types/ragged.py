"""``Ragged``: DyND's var dimension over NumPy buffers, laid out as Arrow's lists.

A Ragged of ``n`` lists is an offsets buffer (int32 or int64, ``n + 1``
entries, list ``i`` is ``values[offsets[i]:offsets[i + 1]]``), a values
buffer (an ndarray -- its trailing dimensions are fixed dimensions of every
list --, a masked array for missing values, or another Ragged for a second
var dimension) and, optionally, an Arrow validity bitmap (one bit per list,
LSB first, 1 = present).  Nothing is copied on construction.

The class takes itself apart and wraps parts: the algorithms it runs work on
raw arrays in the modules below it (``compute``: per-list reductions, lining
lists up; ``_to_arrow``: pyarrow arrays; ``datashape``: types of arrays), and
building from Python objects or converting to and from pyarrow and awkward
are module functions above it (``nclx.types.from_list``, ``to_arrow``, ...).
"""
import operator

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from nclx.types import _bits, _contains, _summary, _to_arrow, compute
from nclx.types._ragged_compute import ComputeMixin
from nclx.types._ragged_index import IndexMixin
from nclx.types._offsets import (as_offsets as _as_offsets, check_lists, check_window,
                                 validate_offsets)
from nclx.types.datashape import Dim, Option, String, array_type

__all__ = ["Ragged"]

_ENCODINGS = (None, "utf-8", "bytes")
#: var dimensions a Ragged may have (from_list's limit: nclx.types.build.MAX_DEPTH + 1)
_MAX_VAR = 65


def _as_values(values):
    depth, v = 1, values
    while isinstance(v, Ragged):        # (before: 1000 by hand broke typeof, repr, to_list)
        depth, v = depth + 1, v._values
        if depth > _MAX_VAR:
            raise ValueError(f"values nest more than {_MAX_VAR - 1} var dimensions")
    if isinstance(values, (Ragged, np.ndarray)):
        if isinstance(values, np.ndarray) and values.ndim == 0:
            raise ValueError("values must have at least one dimension, not a 0-d array")
        if isinstance(values, np.ndarray) and values.dtype.kind == "O":
            raise TypeError("values of dtype object are not supported: "
                            "use nclx.types.from_list for Python objects")
        return values
    if isinstance(values, (list, tuple)):
        raise TypeError("values must be an ndarray or a Ragged: use nclx.types.from_list "
                        "to build one from Python lists")
    try:
        arr = np.asarray(memoryview(values))
    except TypeError:
        raise TypeError(f"values must be an ndarray or a Ragged, not {type(values).__name__}") from None
    return _as_values(arr)


class Ragged(IndexMixin, ComputeMixin, NDArrayOperatorsMixin):
    """Lists of varying length over NumPy buffers (a ``var`` dimension).

    Parameters
    ----------
    offsets : int32 or int64 array, 1-D, length n + 1
    values : ndarray, masked array or Ragged
    validity : uint8 bitmap (Arrow's), optional; at least ``ceil(n / 8)`` bytes
    validate : bool
        True (default): check the offsets in one vectorized pass (never
        decreasing, first >= 0, last <= len(values)).  False: O(1), for
        buffers the caller trusts; indexing still never reads outside
        ``values`` (NumPy slicing clips).
    encoding : None, "utf-8" or "bytes"
        "utf-8": uint8 values holding strings (type ``string``); "bytes":
        byte strings (type ``bytes``).
    """
    __slots__ = ("_offsets", "_values", "_validity", "_vbit", "_encoding", "__weakref__")
    __array_priority__ = 20

    def __init__(self, offsets, values, validity=None, *, validate=True, encoding=None,
                 validity_offset=0):
        offsets = _as_offsets(offsets)
        values = _as_values(values)
        if encoding not in _ENCODINGS:
            raise ValueError(f"encoding must be None, 'utf-8' or 'bytes', not {encoding!r}")
        if encoding is not None and not (isinstance(values, np.ndarray) and values.ndim == 1
                                         and values.dtype == np.uint8
                                         and not isinstance(values, np.ma.MaskedArray)):
            raise TypeError(f"encoding={encoding!r} needs 1-D uint8 values, not "
                            f"{getattr(values, 'dtype', type(values).__name__)}")
        n = len(offsets) - 1
        try:
            validity_offset = operator.index(validity_offset)
        except TypeError:
            raise TypeError("validity_offset must be an int, not "
                            f"{type(validity_offset).__name__}") from None
        if validity is not None:
            validity = _bits.as_bitmap(validity)
            if validity_offset < 0:
                raise ValueError(f"validity_offset = {validity_offset} is negative")
            need = _bits.nbytes_for(validity_offset + n)
            if len(validity) < need:
                raise ValueError(f"validity has {len(validity)} bytes; {n} lists "
                                 f"(from bit {validity_offset}) need {need}")
        elif validity_offset:
            raise ValueError("validity_offset given without a validity bitmap")
        if validate:
            validate_offsets(offsets, len(values))
        self._offsets = offsets
        self._values = values
        self._validity = validity
        self._vbit = int(validity_offset)
        self._encoding = encoding

    def __reduce__(self):
        # every pickle protocol (0 and 1 refused __slots__ before; review
        # 23); the offsets are checked again on load (a pickle is input); a
        # subclass's own attributes and slots are its state (review 23c)
        state = object.__getstate__(self)
        own, slots = state if isinstance(state, tuple) else (state, None)
        slots = {k: v for k, v in (slots or {}).items() if k not in Ragged.__slots__}
        return (_rebuilt, (type(self), self._offsets, self._values, self._validity,
                           self._vbit, self._encoding), (own, slots) if slots else own)

    @classmethod
    def _trusted(cls, offsets, values, validity=None, vbit=0, encoding=None):
        self = cls.__new__(cls)
        self._offsets, self._values, self._validity = offsets, values, validity
        self._vbit, self._encoding = vbit, encoding
        return self

    # ---------------------------------------------------------------- basics
    @property
    def offsets(self):
        return self._offsets

    @property
    def values(self):
        return self._values

    @property
    def validity(self):
        """The validity bitmap (uint8) or None; bit ``validity_offset + i`` is list i."""
        return self._validity

    @property
    def validity_offset(self):
        return self._vbit

    @property
    def encoding(self):
        return self._encoding

    @property
    def starts(self):
        return self._offsets[:-1]

    @property
    def stops(self):
        return self._offsets[1:]

    @property
    def lengths(self):
        """Length of every list (int64)."""
        # (in int64: trusted int32 offsets 2**31 - 1..-2**31 gave 1; review)
        return np.subtract(self._offsets[1:], self._offsets[:-1], dtype=np.int64)

    @property
    def dtype(self):
        """The dtype of the innermost values."""
        return self._values.dtype

    @property
    def type(self):
        """The datashape type object (``str(r.type)`` is ``nclx.types.typeof(r)``)."""
        return Dim("fixed", self._element_type(), len(self))

    def _element_type(self):
        """The type of one list: ``var * T``, ``string`` or ``bytes``; an
        option of it with a validity bitmap."""
        if self._encoding is not None:
            t = String("string" if self._encoding == "utf-8" else "bytes")
        else:
            v = self._values
            t = Dim("var", v._element_type() if isinstance(v, Ragged) else array_type(v).element)
        return Option(t) if self._validity is not None else t

    def __len__(self):
        return len(self._offsets) - 1

    def valid(self):
        """bool[n]: True where the list is present."""
        if self._validity is None:
            return np.ones(len(self), dtype=bool)
        return _bits.valid_mask(self._validity, self._vbit, len(self))

    def window(self):
        """``(values[offsets[0]:offsets[-1]], offsets - offsets[0])``: the
        values the lists reach; views (offsets shifted only when offsets[0] != 0).
        Offsets taken on trust whose ends leave the values raise ValueError
        naming the first bad list as given (O(1) when they are sound)."""
        check_window(self._offsets, len(self._values))
        o0, on = int(self._offsets[0]), int(self._offsets[-1])
        if o0 == 0:
            vals = self._values if on == len(self._values) else self._values[:on]
            return vals, self._offsets
        return self._values[o0:on], self._offsets - self._offsets.dtype.type(o0)

    def __repr__(self):
        # summarised like NumPy's (first and last lists and values, '...'):
        # never a to_list() of whole lists
        return f"Ragged({_summary.summary(self)!r}, type={str(self.type)!r})"

    def __iter__(self):
        for i in range(len(self)):
            yield self._element(i)

    def __contains__(self, x):
        """Whether a present value (at any depth) equals ``x``: NumPy's
        ``(a == x).any()`` over the values (:mod:`nclx.types._contains`)."""
        return _contains.contains(self, x)

    # --------------------------------------------------------------- to/from
    def to_list(self):
        """Nested Python lists (None for missing lists and values)."""
        n = len(self)
        if n == 0:
            return []
        # offsets taken on trust: every list checked (one vectorized pass;
        # found by review: bad lists came out as lists r[i] did not give)
        check_lists(self._offsets, len(self._values))
        o0, on = int(self._offsets[0]), int(self._offsets[-1])
        bounds = (self._offsets - self._offsets.dtype.type(o0)).tolist()
        window = self._values[o0:on]
        if self._encoding is not None:
            raw = window.tobytes()
            items = [raw[bounds[i]:bounds[i + 1]] for i in range(n)]
            if self._encoding == "utf-8":
                items = [b.decode("utf-8") for b in items]
        else:
            flat = window.to_list() if isinstance(window, Ragged) else window.tolist()
            items = [flat[bounds[i]:bounds[i + 1]] for i in range(n)]
        if self._validity is not None:
            valid = self.valid()
            items = [x if v else None for x, v in zip(items, valid.tolist())]
        return items

    tolist = to_list

    def to_strings(self):
        """A list of str (bytes for a bytes Ragged; None for missing)."""
        if self._encoding is None:
            raise TypeError("to_strings needs a Ragged of strings (encoding 'utf-8' or 'bytes')")
        return self.to_list()

    def __arrow_array__(self, type=None):
        """pyarrow's protocol (``pa.array(r)``); see nclx.types.to_arrow."""
        return _to_arrow.list_array(self._offsets, self._values, self._validity, self._vbit,
                                    self._encoding, type)

    # ------------------------------------------------------------ comparison
    def equals(self, other):
        """Structural equality: same type, same lists, same missing entries
        (NaN equal to NaN; values under a missing list do not count)."""
        a, b = self, other
        if not isinstance(b, Ragged):
            return False
        a._check_lists()            # trusted offsets: refused, not compared (review 23)
        b._check_lists()
        if len(a) != len(b) or a._encoding != b._encoding or str(a.type) != str(b.type):
            return False
        va, vb = a.valid(), b.valid()
        if not np.array_equal(va, vb):
            return False
        if not np.array_equal(np.where(va, a.lengths, 0), np.where(vb, b.lengths, 0)):
            return False
        keep = np.flatnonzero(va)
        if len(keep) != len(a):
            a, b = a.take(keep), b.take(keep)
        xa, xb = a.window()[0], b.window()[0]
        if isinstance(xa, Ragged):
            return xa.equals(xb)
        return compute.values_equal(xa, xb)

    __hash__ = None


def _rebuilt(cls, offsets, values, validity, vbit, encoding):
    """A pickled Ragged (or subclass: its own ``__init__`` is not called, as
    pickling never calls it) again, its offsets validated."""
    self = cls.__new__(cls)
    Ragged.__init__(self, offsets, values, validity, encoding=encoding, validity_offset=vbit)
    return self
