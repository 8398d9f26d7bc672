"""``np.linalg.norm`` and the 1-D products ``dot``/``vdot``/``inner`` of
DistArrays.

Each is one reduction across ranks of the ranks' partial results: the
partial dot products (or sums of squares, of absolute values) combine in
rank order, not in NumPy's order over the global array, so float results
agree with NumPy's to 1e-12 relative (the same bits on every rank and every
run); integer results and the max/min norms (``ord=inf``/``-inf``) are
exact.  Operands of the products share one distribution.
"""
import numpy as np

from nclx.dap.fold import allreduce_agreed, raise_verdict
from nclx.dap.functions._common import blocks, counted, is_da, reduce_parts
from nclx.dap.registry import implements
from nclx.dap.validate import DapError


def _sum_of_partials(da, compute, dtype, what):
    """The sum over ranks of ``compute()`` (this rank's partial value, of
    ``dtype``), in rank order: one collective that also carries an error
    raised by ``compute`` on any rank to every rank."""
    error = value = None
    try:
        value = np.asarray(compute(), dtype=dtype)
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    verdict, total = allreduce_agreed(da.comm, np.add, value, ((), np.dtype(dtype)), error,
                                      key=repr((what, np.dtype(dtype).str)))
    raise_verdict(verdict, da.comm.Get_size(), da.comm.Get_rank(), what, error)
    return total[()]


def _product(what, a, b, conj):
    da, (x, y) = blocks(what, a, b)
    if not (is_da(a) and is_da(b)):
        raise DapError(f"{what}: both operands must be DistArrays (got a scalar)")
    if len(da.shape) != 1:
        raise DapError(f"{what} of DistArrays: 1-D operands only, not shape {da.shape}")
    own = counted(da)
    xo, yo = x[own], y[own]
    dtype = np.result_type(xo.dtype, yo.dtype)
    return _sum_of_partials(da, lambda: (np.vdot if conj else np.dot)(xo, yo), dtype, what)


@implements(np.dot)
def dot(a, b, out=None):
    """1-D: the sum of the ranks' partial dot products (1e-12 relative for floats)."""
    if out is not None:
        raise DapError("np.dot of DistArrays: out= is not supported (a scalar result)")
    return _product("np.dot", a, b, False)


@implements(np.vdot)
def vdot(a, b):
    """1-D: ``dot(conj(a), b)`` the same way."""
    return _product("np.vdot", a, b, True)


@implements(np.inner)
def inner(a, b):
    """1-D: as :func:`dot`."""
    return _product("np.inner", a, b, False)


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    """``axis=None`` only: the 2-norm of the flattened array (``ord`` None;
    'fro' for 2-D; 2 for 1-D), and for 1-D ``ord`` 1, ``inf``, ``-inf``, 0 and
    any other number, as NumPy computes them (one collective each)."""
    if axis is not None:
        raise DapError("np.linalg.norm of a DistArray: axis=None only")
    nd = len(x.shape)
    blk = x._block
    if blk.dtype.kind not in "fc":
        blk = blk.astype(float)
    own = counted(x)
    o = blk[own]
    if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
        def local():
            if o.dtype.kind == "c":
                r, i = o.real.ravel(), o.imag.ravel()
                return np.dot(r, r) + np.dot(i, i)
            return np.dot(o.ravel(), o.ravel())
        ret = np.sqrt(_sum_of_partials(x, local, o.real.dtype, "np.linalg.norm"))
    elif nd != 1:
        raise DapError(f"np.linalg.norm of a {nd}-D DistArray: ord={ord!r} is not implemented "
                       "(None or 'fro')")
    elif ord == np.inf:
        ret = reduce_parts(x, np.abs(blk), np.maximum, None, initial=0)   # NumPy's: 0 if empty
    elif ord == -np.inf:
        ret = reduce_parts(x, np.abs(blk), np.minimum, None)
    elif ord == 0:
        ret = reduce_parts(x, blk != 0, np.add, None, dtype=blk.real.dtype)
    elif ord == 1:
        ret = reduce_parts(x, np.abs(blk), np.add, None)
    elif isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    else:
        absx = np.abs(blk) ** ord
        ret = reduce_parts(x, absx, np.add, None) ** (1.0 / ord)
    if keepdims:
        return np.asarray(ret).reshape((1,) * nd)
    return ret
