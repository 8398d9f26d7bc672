"""Review 16 of the Convert and Create paths and nclx.random: each test
failed before its fix."""
import numpy as np
import pytest

import nclx.create as nc


class _Overrider:
    """A foreign array type: its __array_function__ answers what it got."""

    def __array_function__(self, func, types, args, kwargs):
        return func.__name__, args, kwargs


class _NdOverrider(np.ndarray):
    def __array_function__(self, func, types, args, kwargs):
        return func.__name__, len(args), kwargs


@pytest.mark.parametrize("make", [lambda: _Overrider(), lambda: np.zeros(2).view(_NdOverrider)])
@pytest.mark.parametrize("call", [
    lambda m, x: m.empty((2, 2), like=x),
    lambda m, x: m.zeros(3, dtype="f4", like=x),
    lambda m, x: m.empty(3, order="F", like=x),
    lambda m, x: m.ones(3, like=x),
    lambda m, x: m.full(3, 1.5, like=x),
    lambda m, x: m.empty_like(x),
    lambda m, x: m.zeros_like(x, dtype="f4"),
    lambda m, x: m.ones_like(x, shape=(2,)),
    lambda m, x: m.full_like(x, 3, subok=False),
    lambda m, x: m.empty_like(x, order="C"),
])
def test_an_array_function_overrider_gets_numpys_arguments(make, call):
    # the call NumPy's function hands to __array_function__: the arguments
    # given, not every default (before: all of them positionally, plus
    # device=None; an overrider with its own signature read subok as shape)
    x = make()
    assert call(nc, x) == call(np, x)
