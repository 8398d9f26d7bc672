"""A reduction's result written into an ``out=`` of another dtype by
NumPy's own steps (the cast a reduction makes, a mean's division there, a
standard deviation's square root there), its floating-point flags named as
NumPy names them: into a value's ndarray (:func:`cast_into`,
:func:`divided_into`) or, agreed over the ranks, into a DistArray
(:func:`blocks_into`).  Below DistArray: it reads a DistArray's
distribution, communicator and block only."""
import numpy as np

from nclx import _callsite
from nclx._fpflags import recorded_flags
from nclx._ncl.blockexec import give_fp_errors
from nclx.dap.validate import DapError

__all__ = ["cast_into", "divided_into", "blocks_into"]


def cast_into(out, value):
    """``value`` (a reduction's result, of another dtype than ``out``)
    written into ``out`` as NumPy's reductions write theirs: the unsafe cast
    of ``ufunc.reduce(..., out=)``, its "invalid value encountered in
    reduce" for a NaN made an integer, its ComplexWarning."""
    _, flags = recorded_flags(lambda: np.copyto(out, value, casting="unsafe"))
    if flags:
        # reported as NumPy's reduction reports them: "... encountered in
        # reduce", under the caller's errstate (a copy says "in cast")
        _callsite.call(give_fp_errors, (b"reduce", flags), {})


def divided_into(out, total, count, what, sqrt=False):
    """NumPy's ``_mean``/``_var``/``_std`` (and the nan-functions') steps
    into ``out``: the reduction's ``total`` cast into it as a reduction
    writes, divided there by ``count`` (casting='unsafe'), with ``sqrt`` a
    square root in place -- NumPy's values, warnings and errors for an out=
    of any dtype (an integer one: the truncated total divided, its own cast
    errors; ``np.std``'s sqrt refusing to write it).  Before, the value was
    computed in the reduction's dtype and assigned (found by review)."""
    if np.shape(out) != np.shape(total):
        raise ValueError(f"{what}: out= has shape {np.shape(out)}, the result "
                         f"{np.shape(total)}")
    cast_into(out, total)
    c = np.asarray(count)
    np.true_divide(out, np.reshape(c, np.shape(out)) if c.ndim else c, out=out,
                   casting="unsafe")
    if sqrt:
        np.sqrt(out, out=out)
    return out


def blocks_into(out, result, what, count=None, quiet=False, nan_where=None, sqrt=False,
                between=None):
    """NumPy's steps into a DistArray ``out`` of another dtype than the
    DistArray ``result``'s (a reduction's, or the sum of a mean or variance),
    on each rank's counted cells: the result cast there as a reduction
    writes it, then with ``count`` (a number, or a block laid out like the
    result's) divided there (casting='unsafe'; ``quiet``: its errors
    ignored, as NumPy's nan-functions), NaN where ``nan_where`` (a block),
    and with ``sqrt`` a square root there -- the steps of
    :func:`divided_into`.  Each step's floating-point flags are agreed over
    the result's communicator (one ``Allreduce``: every such communicator
    holds the whole result, so all of them meet the same flags) and raised
    or warned on every rank as NumPy names them ("... in reduce", "... in
    divide", "... in sqrt"); NumPy's casting error of the square root is
    raised after them, on every rank.  Before, the result was assigned:
    "in cast" warnings on the ranks holding the cells, values where NumPy
    raises, a mean divided before its cast (found by review).  ``between()``
    (a warning of NumPy's nanvar) is called after the flags of the cast and
    the division are reported, before those of the square root."""
    if out.distribution != result.distribution:      # every rank's the same
        raise DapError(f"{what}: out= must be a DistArray distributed like the result "
                       f"({result.distribution})")
    comm = result.comm
    own = result.distribution.owned_slices(comm.Get_rank())
    o, r = out._block[own], result._block[own]
    flags = [0, 0, 0]
    late = None

    def step(k, fn):
        flags[k] = recorded_flags(fn)[1]

    step(0, lambda: np.copyto(o, r, casting="unsafe"))
    def laid_out(x):            # a count's block (kept dimensions of 1 too) as the result's
        return np.reshape(x, result._block.shape)[own] if np.ndim(x) else x

    if count is not None:
        c = laid_out(count)
        step(1, lambda: np.true_divide(o, c, out=o, casting="unsafe"))
    if nan_where is not None:
        np.copyto(o, np.nan, where=laid_out(nan_where), casting="unsafe")
    if sqrt:
        try:
            step(2, lambda: np.sqrt(o, out=o))
        except TypeError as exc:        # out's dtype: the same on every rank
            late = exc
    agreed = np.array(flags, np.int64)
    comm.Allreduce(_mpi().IN_PLACE, agreed, op=_mpi().BOR)
    _callsite.call(give_fp_errors, (b"reduce", int(agreed[0])), {})
    if not quiet:
        _callsite.call(give_fp_errors, (b"divide", int(agreed[1])), {})
    if between is not None:
        between()
    _callsite.call(give_fp_errors, (b"sqrt", int(agreed[2])), {})
    if late is not None:
        raise late
    return out


def _mpi():
    from mpi4py import MPI
    return MPI
