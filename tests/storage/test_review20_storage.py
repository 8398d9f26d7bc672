"""Review 20: ``==`` / ``!=`` of a storage where NumPy's ufunc has no loop
(a string or a datetime against numbers, structured records) raised
UFuncTypeError (NumPy's operator mixin) where an ndarray compares: all
False / all True, records field by field.  Now ndarray's answer, laid out
like the storage."""
import numpy as np
import pytest

import nclx.storage as st

CASES = [
    (np.zeros(3, "M8[s]"), 0),
    (np.zeros(3), "x"),
    (np.arange(4).reshape(2, 2), b"x"),
    (np.zeros(3, "U2"), 5),
    (np.zeros(3, "m8[s]"), np.datetime64(0, "s")),
    (np.zeros(3, [("a", "i4"), ("b", "f8")]), None),        # itself, field by field
    (np.ones(2, bool), np.zeros((3, 2), "U1")),             # broadcast to another shape
]


@pytest.mark.parametrize("op", ["__eq__", "__ne__"])
@pytest.mark.parametrize("values, other", CASES)
def test_compare_without_a_ufunc_loop(values, other, op):
    s = st.as_storage(values.copy())
    if other is None:
        other_s, other = st.as_storage(values.copy()), values.copy()
    else:
        other_s = other
    want = getattr(values, op)(other)
    for got in (getattr(s, op)(other_s), getattr(s, op)(other)):
        assert isinstance(got, st.Storage)
        assert np.asarray(got).tobytes() == want.tobytes()
        assert np.asarray(got).dtype == want.dtype and got.shape == want.shape


def test_numpys_own_errors_stay():
    r = np.zeros(3, [("a", "i4")])
    with pytest.raises(TypeError, match="Cannot compare structured or void to non-void"):
        st.as_storage(r.copy()) == 1         # noqa: B015 - the comparison raises
    with pytest.raises(ValueError):
        st.as_storage(np.zeros(3)) == np.zeros(4, "U1")      # noqa: B015


def test_ordinary_comparisons_unchanged():
    s = st.as_storage(np.arange(5.0))
    got = s == 3.0
    assert isinstance(got, st.Storage)
    assert np.asarray(got).tolist() == [False, False, False, True, False]
