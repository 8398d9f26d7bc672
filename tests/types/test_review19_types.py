"""Review 19 of nclx.types (each test failed before its fix):

- T1: ``np.sum``/``np.prod``/``np.max``/``np.min`` of a Ragged raised
  "unexpected keyword argument 'out'" (NumPy passes ``out=``); now the
  per-list reduction, and ``out=``/``keepdims=True`` refused by name;
- T2: ``Ragged.equals`` of structured values raised TypeError (``~`` of a
  structured mask);
- T3: a Ragged of datetimes or timedeltas holding NaT did not equal itself;
- T4: ``arrmeta`` of an awkward Array changed in place (``a["y"] = ...``,
  ``a.layout = ...``) kept the first tree;
- T5: ``arrmeta`` of an ``__array_interface__`` addressing bytes past its
  ``data`` buffer built a tree over them (``as_storage`` refuses it);
- T6: ``to_arrow`` of values with a fixed inner dimension of 0 leaked
  pyarrow's "list_size needs to be a strict positive integer";
- T7: too many indices on a Ragged (``r[0, 0, 0]`` of a 2-dimensional one)
  gave NumPy's count of the rest of the key ("but 2 were indexed").
"""
import numpy as np
import pytest

from nclx.types import Ragged, arrmeta, from_list, to_arrow, typeof


@pytest.mark.parametrize("fn, method", [(np.sum, "sum"), (np.prod, "prod"),
                                        (np.max, "max"), (np.min, "min")])
@pytest.mark.parametrize("axis", [-1, None])
def test_t1_numpy_reductions_of_a_ragged(fn, method, axis):
    r = from_list([[1.0, 2.0], [4.0], [3.0, 5.0, 6.0]])
    got = fn(r, axis=axis)
    want = getattr(r, method)(axis=axis)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    with pytest.raises(TypeError, match="out= is not supported"):
        fn(r, axis=axis, out=np.empty(3))
    with pytest.raises(TypeError, match="keepdims=True is not supported"):
        fn(r, axis=axis, keepdims=True)


def test_t2_equals_of_structured_values():
    dt = [("a", "i4"), ("b", "f8")]
    s = Ragged(np.array([0, 1, 3]), np.array([(1, 2.0), (3, 4.0), (5, 6.0)], dtype=dt))
    t = Ragged(np.array([0, 1, 3]), np.array([(1, 2.0), (3, 4.0), (5, 7.0)], dtype=dt))
    assert s.equals(s)
    assert not s.equals(t)


@pytest.mark.parametrize("dt", ["M8[s]", "m8[ms]"])
def test_t3_equals_with_nat(dt):
    n = Ragged(np.array([0, 1, 3]), np.array([1, 2, "NaT"], dt))
    m = Ragged(np.array([0, 1, 3]), np.array([1, 3, "NaT"], dt))
    assert n.equals(n)
    assert not n.equals(m)


def test_t4_arrmeta_of_an_awkward_array_changed_in_place():
    ak = pytest.importorskip("awkward", reason="awkward is an optional dependency")
    a = ak.Array([{"x": 1}, {"x": 2}])
    assert str(arrmeta(a).type) == str(typeof(a))
    a["y"] = [3.0, 4.0]
    assert str(arrmeta(a).type) == str(typeof(a)) == "2 * {x: int64, y: float64}"
    a.layout = ak.Array([[1.0, 2.0], []]).layout
    assert str(arrmeta(a).type) == str(typeof(a))


def test_t5_arrmeta_refuses_bytes_past_the_buffer():
    buf = bytearray(16)

    class Past:
        @property
        def __array_interface__(self):
            return {"shape": (3,), "typestr": "<f8", "data": buf, "version": 3}

    class Fits:
        @property
        def __array_interface__(self):
            return {"shape": (2,), "typestr": "<f8", "data": buf, "version": 3}

    with pytest.raises(ValueError, match=r"addresses bytes \[0, 24\) but its data buffer "
                                         r"holds 16 bytes"):
        arrmeta(Past())
    assert str(arrmeta(Fits()).type) == "2 * float64"


def test_t6_to_arrow_of_a_zero_width_fixed_dimension():
    pytest.importorskip("pyarrow", reason="pyarrow is an optional dependency")
    with pytest.raises(TypeError, match="fixed inner dimension of 0"):
        to_arrow(Ragged(np.array([0, 1, 3]), np.zeros((3, 0))))


def test_t7_too_many_indices_counts_the_whole_key():
    r = from_list([[1.0, 2.0], [], [3.0]])
    assert r[0, 1] == 2.0
    with pytest.raises(IndexError, match="it has 2 dimensions, but 3 were indexed"):
        r[0, 0, 0]
