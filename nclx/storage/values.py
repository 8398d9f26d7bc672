"""A storage as a Python value: truth, numbers, ``len``, iteration,
membership, and NumPy's operators, ufuncs and functions on it (the mixin
:class:`~nclx.storage.core.Storage` takes them from).

Each answers as an ndarray of the same values would: ambiguous truth for
more than one element, ``__index__`` for integer 0-d storages only, ``**``
with a scalar exponent through ndarray's own operator (its ``square`` /
``sqrt`` / ``reciprocal`` fast paths, their warnings' names included).
"""
import operator

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from nclx import _callsite, aware
from nclx.storage.buffer import locked
from nclx.storage.devices import SyncState
from nclx.storage.funcs import storage_default
from nclx.storage.ufunc import host_result_like, storage_compare, storage_ufunc

__all__ = ["ValuesMixin"]

_HOST_DIRTY = SyncState.SYNC_HOST_DIRTY


def _scalar(x):
    """An exponent ndarray's ``**`` may take a fast path for: a Python or
    NumPy scalar, or a 0-d ndarray (NumPy 2.0)."""
    return isinstance(x, (int, float, complex, np.generic)) or (
        type(x) is np.ndarray and x.ndim == 0)


class ValuesMixin(NDArrayOperatorsMixin):
    """Python's value protocols and NumPy's dispatch for a storage."""
    __slots__ = ()

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d storage")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d storage")
        return (self[i] for i in range(self.shape[0]))

    def __contains__(self, value):
        # ndarray's: (self == value).any() over the values (iteration would
        # compare rows and ask a row's ambiguous truth value)
        if isinstance(value, ValuesMixin):
            value = value._value_array()
        return bool(np.asarray(self._value_array() == value).any())

    # truth and scalar conversion as NumPy's (ambiguous for size > 1)
    def __bool__(self):
        return bool(self._value_array())

    def __float__(self):
        return float(self._value_array())

    def __int__(self):
        return int(self._value_array())

    def __complex__(self):
        return complex(self._value_array())

    def __index__(self):
        # ndarray's: integer 0-d arrays only ("only integer scalar arrays ...")
        return operator.index(self._value_array())

    def _value_array(self):
        if self._host is not None:
            return self._host_read()
        return self._buf.backend.to_host(self._dev)

    # -- ** with a scalar exponent: ndarray's fast paths ---------------------------
    # ndarray computes a ** 2, ** 0.5, ** -1 ... as square, sqrt, reciprocal
    # (other warnings, other results for integers); storages do the same.
    def __pow__(self, other):
        if self._host is None or not _scalar(other):
            return np.power(self, other)
        # from the caller's line: NumPy's warnings name it (review 23c)
        return host_result_like(_callsite.call(operator.pow, (self._host_read(), other), {}),
                                self)

    def __ipow__(self, other):
        if self._host is None or not _scalar(other):
            return np.power(self, other, out=(self,))
        with locked(self._buf):
            self._buf.device_to_host()
            _callsite.call(operator.ipow, (self._host, other), {})
            self._buf.mark(_HOST_DIRTY)
        return self

    # -- NumPy ufuncs -------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return storage_ufunc(self, ufunc, method, inputs, kwargs)

    def __eq__(self, other):          # ndarray's where the ufunc has no loop
        return storage_compare(self, other, "__eq__")

    def __ne__(self, other):
        return storage_compare(self, other, "__ne__")

    #: handled by nclx.aware.array_function (NumPy's dispatch protocol)
    _nclx_array_function = True

    def __array_function__(self, func, types, args, kwargs):
        return aware.array_function(func, types, args, kwargs, storage_default)
