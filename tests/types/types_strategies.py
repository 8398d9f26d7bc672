"""Shared strategies for the nclx.types tests: generated pyarrow types and
values, nested Python lists, NumPy arrays."""
import awkward as ak    # tools/test installs both (tools/requirements-interop.txt)
import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

PRIMITIVES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(),
              pa.uint64(), pa.float32(), pa.float64(), pa.bool_(), pa.string(),
              pa.large_string(), pa.binary(), pa.timestamp("ms"), pa.date32()]
NAMES = ["x", "y", "a b", "_z", "int32", "var"]


def _field(t, nullable):
    return pa.field("item", t, nullable=nullable)


def arrow_types(max_leaves=4):
    def extend(children):
        return st.one_of(
            st.builds(lambda t, n: pa.list_(_field(t, n)), children, st.booleans()),
            st.builds(lambda t, n: pa.large_list(_field(t, n)), children, st.booleans()),
            # size >= 1: awkward loses the length of a zero-size fixed list
            # (1 * 0 * int8 reads back as 0 * 0 * int8); see test_typeof
            st.builds(lambda t, n, k: pa.list_(_field(t, n), k), children, st.booleans(),
                      st.integers(1, 3)),
            st.lists(st.tuples(st.sampled_from(NAMES), children, st.booleans()),
                     min_size=1, max_size=3, unique_by=lambda f: f[0]).map(
                lambda fs: pa.struct([pa.field(n, t, nullable=nb) for n, t, nb in fs])),
        )
    return st.recursive(st.sampled_from(PRIMITIVES), extend, max_leaves=max_leaves)


def values_of(t, nullable):
    """A strategy of Python values of Arrow type ``t``."""
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        base = st.integers(int(info.min), int(info.max))
    elif pa.types.is_floating(t):
        base = st.floats(allow_nan=False, width=t.bit_width)
    elif pa.types.is_boolean(t):
        base = st.booleans()
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        base = st.text(max_size=4)
    elif pa.types.is_binary(t):
        base = st.binary(max_size=4)
    elif pa.types.is_timestamp(t) or pa.types.is_date32(t):
        base = st.integers(0, 10 ** 6)
    elif pa.types.is_fixed_size_list(t):
        f = t.value_field
        base = st.lists(values_of(f.type, f.nullable), min_size=t.list_size, max_size=t.list_size)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        f = t.value_field
        base = st.lists(values_of(f.type, f.nullable), max_size=3)
    elif pa.types.is_struct(t):
        base = st.fixed_dictionaries({t.field(i).name: values_of(t.field(i).type, t.field(i).nullable)
                                      for i in range(t.num_fields)})
    else:
        raise AssertionError(t)
    return st.one_of(st.none(), base) if nullable else base


@st.composite
def arrow_arrays(draw, max_len=6):
    t = draw(arrow_types())
    nullable = draw(st.booleans())
    data = draw(st.lists(values_of(t, nullable), max_size=max_len))
    arr = pa.array(data, type=t)
    if len(arr) and draw(st.booleans()):     # a slice: offset into the buffers
        a = draw(st.integers(0, len(arr)))
        arr = arr.slice(a, draw(st.integers(0, len(arr) - a)))
    return arr


#: nested Python lists of ints/floats with None at any level
def nested_lists(leaf=st.integers(-2 ** 40, 2 ** 40), depth=2, none=True):
    s = st.one_of(st.none(), leaf) if none else leaf
    for _ in range(depth):
        inner = st.lists(s, max_size=4)
        s = st.one_of(st.none(), inner) if none else inner
    return st.lists(s, max_size=6)


def ak_type(x):
    """awkward's spelling of the equivalent of x."""
    if isinstance(x, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        return str(ak.type(ak.from_arrow(x)))
    if isinstance(x, np.ndarray):
        return str(ak.type(ak.from_numpy(x)))
    return str(ak.type(x))
