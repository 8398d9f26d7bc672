"""How a Ragged is indexed: ``r[i]`` (a list, None where missing, a str or
bytes of a string Ragged), ``r[a:b]`` (a view on the same buffers),
``r[::k]``, ``r[ints]``, ``r[bools]`` and ``r.take`` (new buffers),
``r[i, ...]`` (into list ``i``) and ``r[a:b, j]`` (element ``j`` of every
list).  Offsets taken on trust are checked before a list is read.

A mixin of :class:`nclx.types.ragged.Ragged`, below it: it works through the
Ragged's own attributes and constructor (``type(r)._trusted``).
"""
import numpy as np

from nclx.types import _bits
from nclx.types._offsets import check_lists

__all__ = ["IndexMixin"]


class IndexMixin:
    """Indexing and ``take`` of a Ragged."""
    __slots__ = ()

    def _element(self, i):
        if self._validity is not None:
            b = self._vbit + i
            if not (self._validity[b >> 3] >> (b & 7)) & 1:
                return None
        a, b = int(self._offsets[i]), int(self._offsets[i + 1])
        if a < 0 or b < 0:
            # offsets taken on trust: NumPy slicing clips past the end, but
            # a negative bound would wrap around into other lists' values
            # (found by review: offsets 0..-9 read values[0:1])
            check_lists(self._offsets, len(self._values), [i])
        item = self._values[a:b]
        if self._encoding == "utf-8":
            return item.tobytes().decode("utf-8")
        if self._encoding == "bytes":
            return item.tobytes()
        return item

    def _index(self, i):
        n = len(self)
        if isinstance(i, (str, bytes, float, bool, np.bool_)) or \
                getattr(i, "dtype", None) == np.bool_:    # (r[True] gave list 1; review)
            raise TypeError(f"index must be an int, a slice or a tuple, not {type(i).__name__}")
        try:
            i = int(i)
        except TypeError:
            raise TypeError(f"index must be an int, a slice or a tuple, not {type(i).__name__}") from None
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for a Ragged of {n} lists")
        return i + n if i < 0 else i

    def __getitem__(self, key):
        if isinstance(key, tuple):
            if len(key) == 0:
                return self
            head, rest = key[0], key[1:]
            if not rest:
                return self[head]
            if isinstance(head, (int, np.integer)):
                item = self[head]
                if item is None:
                    raise IndexError(f"list {head} is missing (None); it has no element {rest[0]}")
                if isinstance(item, (str, bytes)):
                    raise IndexError("too many indices: the elements of a string Ragged are strings")
                plain = sum(1 for k in rest if k is not None and k is not Ellipsis)
                if isinstance(item, np.ndarray) and plain > item.ndim:   # (NumPy counts rest)
                    raise IndexError(f"too many indices for the Ragged: it has {item.ndim + 1} "
                                     f"dimensions, but {plain + 1} were indexed")
                return item[rest if len(rest) > 1 else rest[0]]
            if isinstance(head, slice) and len(rest) == 1 and isinstance(rest[0], (int, np.integer)):
                return self[head]._column(int(rest[0]))
            raise TypeError("Ragged supports r[i], r[a:b], r[i, ...] and r[a:b, j]; "
                            f"not {key!r}")
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step == 1:
                stop = max(stop, start)
                if self._validity is None:
                    return type(self)._trusted(self._offsets[start:stop + 1], self._values,
                                           None, 0, self._encoding)
                bit = self._vbit + start
                validity = self._validity[bit // 8:]
                return type(self)._trusted(self._offsets[start:stop + 1], self._values, validity,
                                       bit % 8, self._encoding)
            lim = max(len(self), 1)     # (r[::2**70]: np.arange gave objects; review)
            return self.take(np.arange(start, stop, max(-lim, min(step, lim))))
        if isinstance(key, np.ndarray) and key.ndim == 1 and key.dtype.kind in "biu":
            if key.dtype.kind == "b":
                if len(key) != len(self):
                    raise IndexError(f"boolean index has {len(key)} entries; the Ragged has "
                                     f"{len(self)} lists")
                key = np.flatnonzero(key)
            return self.take(key)
        if isinstance(key, (list, IndexMixin)):
            raise TypeError("index with an ndarray of ints or bools, not a "
                            f"{type(key).__name__}")
        return self._element(self._index(key))

    def _column(self, j):
        """Element j of every list (``r[:, j]``)."""
        check_lists(self._offsets, len(self._values))   # trusted offsets: no wrapped reads
        lengths = self.lengths
        if not -2**63 <= j < 2**63:
            # out of bounds for every list (np.where below raised a bare
            # OverflowError; found by review)
            valid = self.valid()
            if valid.any():
                k = int(np.argmax(valid))
                raise IndexError(f"index {j} is out of bounds for list {k} of length "
                                 f"{int(lengths[k])}")
            j = 0           # every list missing: nothing is read
        valid = self.valid()
        jj = np.where(lengths > 0, j, 0) if j >= 0 else j + lengths
        bad = valid & ((jj < 0) | (jj >= lengths))
        if bad.any():
            k = int(np.argmax(bad))
            raise IndexError(f"index {j} is out of bounds for list {k} of length {int(lengths[k])}")
        if self._encoding is not None:
            raise TypeError("r[:, j] of a string Ragged: index the strings one by one")
        pos = self.starts.astype(np.int64) + jj
        out = self._values[pos[valid]] if self._validity is not None else self._values[pos]
        if self._validity is None:
            return out
        full = np.zeros((len(self),) + np.shape(out)[1:], dtype=out.dtype)
        full[valid] = out
        return np.ma.masked_array(full, mask=~valid)

    def take(self, indices):
        """The lists at ``indices`` (ints, negative from the end): new buffers."""
        idx = np.asarray(indices)
        if idx.size == 0 and idx.dtype.kind == "f" and not isinstance(indices, np.ndarray):
            idx = idx.astype(np.int64)         # take([]): NumPy reads [] as float64
        if idx.dtype.kind not in "iu":
            raise TypeError(f"take needs integer indices, not {idx.dtype}")
        if idx.ndim != 1:
            raise ValueError(f"take needs a 1-D array of indices, not a {idx.ndim}-D one")
        n = len(self)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            # (before the cast to int64: a uint64 index >= 2**63 would wrap)
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"index {int(bad)} is out of bounds for a Ragged of {n} lists")
        idx = idx.astype(np.int64, copy=False)
        idx = np.where(idx < 0, idx + n, idx)
        # offsets taken on trust: check the lists taken before sizing anything
        # from them (a bad one could ask for gigabytes)
        check_lists(self._offsets, len(self._values), idx)
        starts = self.starts.astype(np.int64)[idx]
        lens = self.lengths[idx]
        offsets = np.zeros(len(idx) + 1, dtype=self._offsets.dtype)
        np.cumsum(lens, out=offsets[1:])
        total = int(offsets[-1])
        gather = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1] - starts, lens)
        values = self._values.take(gather) if isinstance(self._values, IndexMixin) \
            else self._values[gather]
        validity = None
        if self._validity is not None:
            validity = _bits.pack(self.valid()[idx])
        return type(self)._trusted(offsets, values, validity, 0, self._encoding)
