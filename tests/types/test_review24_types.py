"""Review 24, nclx.types: ``x in r`` for a Ragged asks whether a present
value (at any depth; values under a missing list do not count) equals
``x``, as NumPy's ``x in a`` asks ``(a == x).any()``; for strings, whether
a present string equals ``x``.  Before, Python iterated the lists and
asked each list comparison's truth value: NumPy's "truth value of an array
with more than one element is ambiguous"."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nclx.types import Ragged, from_list, from_strings
from types_strategies import nested_lists


def _present_values(lists):
    for x in lists:
        if x is None:
            continue
        if isinstance(x, list):
            yield from _present_values(x)
        else:
            yield x


@settings(max_examples=200, deadline=None)
@given(nested_lists(leaf=st.integers(-3, 3), depth=2), st.integers(-4, 4))
def test_in_is_any_present_value_equal(lists, x):
    r = from_list(lists)
    assert (x in r) == (x in list(_present_values(r.to_list())))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet="ab\u00e9", max_size=3)), max_size=8),
       st.text(alphabet="ab\u00e9", max_size=3))
def test_in_of_strings_is_any_present_string_equal(strings, x):
    r = from_strings(strings)
    assert (x in r) == (x in [s for s in strings if s is not None])
    if not any(s is not None for s in strings):
        return                  # no bytes item: from_strings cannot tell bytes from str
    b = from_strings([None if s is None else s.encode() for s in strings])
    assert (x.encode() in b) == (x.encode() in [s.encode() for s in strings if s is not None])


def test_values_under_a_missing_list_do_not_count():
    r = Ragged(np.array([0, 1, 3]), np.array([7.0, 8.0, 9.0]), validity=np.array([0b10], np.uint8))
    assert r.to_list() == [None, [8.0, 9.0]]
    assert 7.0 not in r and 8.0 in r
    nested = Ragged(np.array([0, 1, 2]), r)
    assert 7.0 not in nested and 9.0 in nested


def test_float_values_nan_and_signed_zero_as_numpy():
    r = from_list([[np.nan, -0.0], [1.5]])
    assert (np.nan in r) is False          # NaN == NaN is False, as in NumPy
    assert 0.0 in r and -0.0 in r
    assert (np.nan in np.array([np.nan])) is False


@pytest.mark.parametrize("x", [[1, 2], np.array([1, 2]), (1,)])
def test_a_non_scalar_needle_is_a_clear_type_error(x):
    with pytest.raises(TypeError, match="x must be one value"):
        x in from_list([[1, 2], [3]])


def test_other_needles_are_unequal_as_in_numpy():
    """Review 24b: None and object() raised TypeError (NumPy: False); the
    other string kind, numbers in strings and None in strings are False too,
    as ``b"a" in np.array(["a"])`` is."""
    strs, nums = from_strings(["a", None]), from_list([[1.0, 2.0], None])
    for r, ref in ((strs, np.array(["a"])), (nums, np.array([1.0, 2.0]))):
        for x in (None, object(), b"a", 3, 3.5, "a"):
            assert (x in r) == (x in ref), (r, x)
    assert b"a" in from_strings([b"a"]) and "a" not in from_strings([b"a"])
