"""NaN-skipping reductions of a DistArray: ``nansum``, ``nanprod``,
``nanmin``, ``nanmax``, ``nanmean``, ``nanvar``, ``nanstd`` (``nanargmin``/
``nanargmax`` live in :mod:`argext`).

``nansum``/``nanprod`` are the reduction with NaNs replaced by 0 and 1
(NumPy's ``_replace_nan``), ``nanmin``/``nanmax`` are ``fmin``/``fmax`` reductions;
each is one collective, with NumPy's "All-NaN slice encountered" warning
(one more, a logical or, to learn whether any slice was all NaN).
``nanmean`` is the sum over the count of non-NaN cells and ``nanvar``/
``nanstd`` NumPy's two passes over them: partial sums combine in rank order,
so they agree with NumPy's to 1e-12 relative, with NumPy's "Mean of empty
slice" and "Degrees of freedom <= 0 for slice" warnings.
"""
import warnings

import numpy as np

from nclx import _callsite
from nclx.dap.functions._common import (da_out, finish, is_da, numpy_refusal, reduce_parts,
                                        value_out)
from nclx.dap.functions.statistics import (_where, bad_dof, divide_dof, divide_keep, nan_dof_first, sqrt_keep,
                                           var, var_parts)
from nclx.dap.registry import implements
from nclx.dap.validate import DapTypeError
from nclx.dap.outloop import loop_with_out
from nclx.dap.outwrite import blocks_into, divided_into


def _notnan(a):
    b = a._block
    return ~np.isnan(b) if b.dtype.kind in "fc" else np.ones(b.shape, bool)


def _mask(a, where, what):
    m = _notnan(a)
    w = _where(a, where, what)
    return m if w is None else (m & w)


def _any(r, test):
    """Whether ``test`` holds anywhere in a result (a value or a DistArray)."""
    if is_da(r):
        return bool(reduce_parts(r, np.asarray(test(r._block)), np.logical_or))
    return bool(np.any(test(np.asarray(r))))


def _replaced(a, value):
    """``a``'s block with its NaNs replaced by ``value`` (NumPy's
    ``_replace_nan``: a NaN cast to an integer ``dtype=`` would warn)."""
    b = a._block
    if b.dtype.kind not in "fc":
        return b
    return np.where(np.isnan(b), b.dtype.type(value), b)


def _check_inexact(dtype, out):
    """NumPy's nanmean/nanvar errors for an inexact array's ``dtype``/``out``."""
    if dtype is not None and not np.issubdtype(np.dtype(dtype), np.inexact):
        raise TypeError("If a is inexact, then dtype must be inexact")
    if out is not None and getattr(out, "dtype", None) is not None \
            and not np.issubdtype(out.dtype, np.inexact):
        raise TypeError("If a is inexact, then out must be inexact")


def _user_where(a, where, what):
    w = _where(a, where, what)
    return True if w is None else w


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
           where=True):
    """``sum`` with NaNs as 0 (one collective)."""
    dtype = loop_with_out(np.add, a.dtype, out, dtype) or dtype
    r = reduce_parts(a, _replaced(a, 0), np.add, axis, dtype, keepdims,
                     _user_where(a, where, "np.nansum"), initial)
    return finish(r, out, "np.nansum", lambda o: numpy_refusal(
        np.nansum, a.dtype, len(a.shape), o, axis=axis, dtype=dtype, keepdims=keepdims))


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
            where=True):
    """``prod`` with NaNs as 1 (one collective)."""
    dtype = loop_with_out(np.multiply, a.dtype, out, dtype) or dtype
    r = reduce_parts(a, _replaced(a, 1), np.multiply, axis, dtype, keepdims,
                     _user_where(a, where, "np.nanprod"), initial)
    return finish(r, out, "np.nanprod", lambda o: numpy_refusal(
        np.nanprod, a.dtype, len(a.shape), o, axis=axis, dtype=dtype, keepdims=keepdims))


def _nanext(name, ufunc, a, axis, out, keepdims, initial, where):
    w = _where(a, where, f"np.{name}")
    r = reduce_parts(a, a._block, ufunc, axis, loop_with_out(ufunc, a.dtype, out), keepdims,
                     True if w is None else w,
                     initial)
    if a.dtype.kind in "fc" and _any(r, np.isnan):
        _callsite.warn("All-NaN slice encountered", RuntimeWarning)
    return finish(r, out, f"np.{name}", lambda o: numpy_refusal(
        getattr(np, name), a.dtype, len(a.shape), o, axis=axis, keepdims=keepdims))


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """``fmin`` reduction: NaN only for an all-NaN slice (with NumPy's warning)."""
    return _nanext("nanmin", np.fmin, a, axis, out, keepdims, initial, where)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """``fmax`` reduction: NaN only for an all-NaN slice (with NumPy's warning)."""
    return _nanext("nanmax", np.fmax, a, axis, out, keepdims, initial, where)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Sum over count of the non-NaN cells (two collectives; 1e-12 relative);
    NaN and NumPy's "Mean of empty slice" warning where none is left."""
    if a.dtype.kind not in "fc":           # NumPy's np.mean, where= and out= included
        if out is not None:                 # NumPy's refusals first (the same on every rank)
            numpy_refusal(np.nanmean, a.dtype, len(a.shape), out, axis=axis, dtype=dtype,
                          keepdims=keepdims)
        return a.mean(axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    _check_inexact(dtype, out)
    m = _mask(a, where, "np.nanmean")
    cnt = reduce_parts(a, m, np.add, axis, np.intp, keepdims)
    tot = reduce_parts(a, a._block, np.add, axis, loop_with_out(np.add, a.dtype, out, dtype)
                       or dtype, keepdims, m)
    if value_out(out, tot):
        # NumPy's nanmean: the sum into out=, divided there by the count
        with np.errstate(divide="ignore", invalid="ignore"):
            divided_into(out, tot, cnt, "np.nanmean")
        if _any(cnt, lambda c: c == 0):
            _callsite.warn("Mean of empty slice", RuntimeWarning)
        return out
    if da_out(out, tot):
        # as the value's out= above: the sum there, divided there
        blocks_into(out, tot, "np.nanmean", count=cnt._block if is_da(cnt) else cnt,
                    quiet=True)
        if _any(cnt, lambda c: c == 0):
            _callsite.warn("Mean of empty slice", RuntimeWarning)
        return out
    if _any(cnt, lambda c: c == 0):
        _callsite.warn("Mean of empty slice", RuntimeWarning)
    r = divide_keep(tot, cnt._block if is_da(cnt) else cnt, quiet=True)
    return finish(r, out, "np.nanmean")


@implements(np.nanvar, first=nan_dof_first)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=np._NoValue, correction=np._NoValue):
    """NumPy's two passes over the non-NaN cells (1e-12 relative)."""
    if a.dtype.kind not in "fc":           # NumPy's np.var (no NaN to drop)
        _no_mean(mean, "np.nanvar")
        return var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                   correction=correction)
    return _nanvar(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "np.nanvar",
                   False)


def _no_mean(mean, what):
    """The keyword no DistArray takes: a TypeError (DapTypeError) naming the
    function the user called (review 21: np.nanstd of integers named np.var,
    its floats raised a plain TypeError)."""
    if mean is not np._NoValue:
        raise DapTypeError(f"{what}(DistArray, mean=...) is not implemented")


def _nanvar(a, axis, dtype, out, ddof, keepdims, where, mean, correction, what, sqrt):
    """np.nanvar of float data, or with ``sqrt`` np.nanstd."""
    _check_inexact(dtype, out)
    if correction is not np._NoValue:
        ddof = correction
    _no_mean(mean, what)
    ss, n = var_parts(a, axis, dtype, keepdims, _mask(a, where, what), quiet=True)
    if value_out(out, ss):
        return _nanvar_into(out, ss, n, ddof, what, sqrt)
    if da_out(out, ss):
        bad, nn = bad_dof(n, ddof)

        def warn():             # NumPy's nanvar warns after its sum into out=
            if bad:
                _callsite.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning)
        return blocks_into(out, ss, what, count=nn - ddof, quiet=True,
                           nan_where=(nn - ddof <= 0) if bad else None, sqrt=sqrt,
                           between=warn)
    v = divide_dof(ss, n, ddof, "Degrees of freedom <= 0 for slice.", quiet=True,
                   nan_where_bad=True)
    return finish(sqrt_keep(v) if sqrt else v, out, what)


def _nanvar_into(out, ss, n, ddof, what, sqrt):
    """NumPy's nanvar (nanstd) into a value's out=: the sum of squares there,
    divided by ``n - ddof`` (errors ignored), its warning and NaN where
    that is <= 0, then (nanstd) the square root there."""
    dof = np.asarray(n) - ddof
    with np.errstate(divide="ignore", invalid="ignore"):
        divided_into(out, ss, dof, what)
    bad = dof <= 0
    if np.any(bad):
        _callsite.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning)
        np.copyto(out, np.nan, where=np.reshape(bad, np.shape(out)) if bad.ndim else bad,
                  casting="unsafe")
    if sqrt:
        np.sqrt(out, out=out)
    return out


@implements(np.nanstd, first=nan_dof_first)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=np._NoValue, correction=np._NoValue):
    """The square root of :func:`nanvar` (1e-12 relative)."""
    if a.dtype.kind in "fc":
        return _nanvar(a, axis, dtype, out, ddof, keepdims, where, mean, correction,
                       "np.nanstd", True)
    # NumPy's nanstd of integers: np.var into out=, then the square root
    # there, in out's dtype (before: taken in the variance's dtype, then
    # cast -- float32 digits in a float64 out=; found by review)
    _no_mean(mean, "np.nanstd")
    v = nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
               correction=correction)
    return sqrt_keep(v) if out is None else np.sqrt(v, out=v)
