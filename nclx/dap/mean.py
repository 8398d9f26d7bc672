"""``DistArray.mean``: NumPy's mean (its ``_mean``: the sum in ``dtype``,
divided in the sum's dtype) of a DistArray's counted cells, through the
DistArray's own collective sums.  Below DistArray: it builds results with
the operand's own class."""

import numpy as np

from nclx import _callsite
from nclx.dap import ufuncs as _ufuncs
from nclx.dap.agreedflags import agreed_flags
from nclx.dap.agreekeys import called_by
from nclx.dap.complexcasts import ComplexCasts
from nclx.dap.outwrite import blocks_into, divided_into
from nclx.dap.reduce import join_failed, normalize_axes
from nclx.dap.validate import DapError

__all__ = ["mean"]


def mean(self, axis=None, dtype=None, out=None, keepdims=False, where=np._NoValue):
    """Mean over the cells counted in ``size`` (all ranks), or those where
    ``where`` (a bool DistArray of this distribution, or a bool) is True;
    as NumPy's ``_mean``: the sum in ``dtype`` (float64 for integers,
    float32 for float16), divided in the sum's dtype, "Mean of empty
    slice" when a count is zero."""
    base = _ufuncs._distarray()      # a subclass's sums are plain DistArrays
    # NumPy's ComplexWarnings into out= (nclx.dap.complexcasts): issued in
    # the out= check below, before the first collective
    casts = ComplexCasts(np.mean, (self,), dict(axis=axis, dtype=dtype, out=out,
                                                keepdims=keepdims, where=where), base)
    try:
        with called_by("mean"):       # its sums' key: not np.sum's (review 22)
            return _mean(self, axis, dtype, out, keepdims, where, base, casts)
    finally:
        casts.close()


def _mean(self, axis, dtype, out, keepdims, where, base, casts):
    cls = type(self)
    f16 = dtype is None and self.dtype == np.float16
    if dtype is None:     # NumPy's _mean: float64 for integers, float32 for float16,
        # else none (the sum's own: native byte order, a timedelta's unit)
        dtype = np.float64 if self.dtype.kind in "biu" else (np.float32 if f16 else None)
    plain = where is np._NoValue or where is True
    mask = None
    if not plain and not isinstance(where, base) and np.ndim(where):
        # as the sum's where= (before: "truth value of an array ... is
        # ambiguous" from bool(); found by review)
        raise DapError(f"mean: where= must be a DistArray distributed like the operand or a "
                       f"scalar, not {type(where).__name__}")
    if not plain:
        # a mask in another distribution is redistributed to this one, as the
        # sum's own where= is (before, the count was taken in the mask's
        # layout and divided block by block: wrong values, or a broadcast
        # error on some ranks); first: a collective every rank makes
        mask = self._aligned(where) if isinstance(where, base) else \
            cls._of(np.full(self._block.shape, bool(where)), self.distribution, self.comm)
    if plain:
        axes = normalize_axes(axis, len(self.shape))
        # NumPy's count is an np.intp: a float32 sum divides in float64 (a
        # Python int: in float32, with "scalar divide" in NumPy's warnings)
        count = np.intp(np.prod([self.shape[d] for d in axes], dtype=np.int64))
        if count == 0:
            # NumPy's _mean warns before its sum into out= casts (its
            # ComplexWarnings; before, those came first: under "error" the
            # ComplexWarning was raised; found by review 16)
            _callsite.warn("Mean of empty slice", RuntimeWarning)
    if out is not None:
        # each rank passes its own out=: one refused is refused on every rank,
        # in the sum's collective (the others would return alone)
        try:
            _ufuncs.check_out(out, normalize_axes(axis, len(self.shape)), len(self.shape),
                              keepdims, "mean", dist=self.distribution)
            casts.emit()
            casts.quiet()
        except Exception as exc:
            join_failed(self._block, self.distribution, self.comm, np.add,
                        {"axis": axis, "dtype": dtype, "keepdims": keepdims,
                         "where": True if plain else mask._block}, exc)
            raise
    if plain:
        total = self.sum(axis=axis, dtype=dtype, keepdims=keepdims)
        empty = False           # warned above
    else:
        total = self.sum(axis=axis, dtype=dtype, keepdims=keepdims, where=mask)
        count = mask.sum(axis=axis, dtype=np.intp, keepdims=keepdims)
        empty = bool((count == 0).any()) if isinstance(count, base) else count == 0
        count = count._block if isinstance(count, base) else count
    if empty:
        _callsite.warn("Mean of empty slice", RuntimeWarning)
    if out is not None and not isinstance(total, base):
        # NumPy's _mean: the sum written into out= (as a reduction writes
        # it), divided there (casting='unsafe'): its values for an out= of
        # any dtype (before: the mean assigned -- "cannot convert float NaN
        # to integer" where NumPy writes; found by review)
        return divided_into(out, total, count, "mean")
    if out is not None and isinstance(total, base) and out.dtype != total.dtype:
        # NumPy's _mean: the sum into out, divided there (before: the mean
        # computed in the sum's dtype, then assigned; found by review)
        return blocks_into(out, total, "mean", count=count)
    if isinstance(total, base):
        blk = total._block.copy()          # counted cells only: padding holds no count
        own = total.distribution.owned_slices(total.comm.Get_rank())

        def divide():
            np.true_divide(blk[own], count[own] if np.ndim(count) else count, out=blk[own],
                           casting="unsafe")
        if (count == 0) if plain else empty:
            # empty slices (the same verdict on every rank): 0 / 0's flag
            # reported on every rank, as NumPy's one division reports it
            # (before, on the ranks holding such slices alone: a rank with
            # no cells did not warn, and under 'raise' raised alone; found
            # by review)
            agreed_flags(total.comm, divide, "divide", "mean")
        else:
            divide()
        result = cls._of(blk.astype(np.float16) if f16 else blk, total.distribution,
                         total.comm)
    elif np.ndim(total):
        result = np.true_divide(total, count, out=np.array(total), casting="unsafe")
        result = result.astype(np.float16) if f16 else result
    else:
        # NumPy rounds float16 means from the quotient once, not via float32
        result = (np.float16 if f16 else total.dtype.type)(total / count)
    if out is not None:
        if isinstance(result, base):
            if out.distribution != result.distribution:     # the same on every rank
                raise DapError(f"mean: out= must be a DistArray distributed like the result "
                               f"({result.distribution})")
            out._block[...] = result._block
            return out
        out[...] = result
        return out
    return result
