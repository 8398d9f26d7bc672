"""nclx.dap.validate: the protocol's examples pass, bad exports are rejected
with a message naming the dimension and key.

- 'u' indices: locally unique, every value an exact int64 (no silent
  wrap-around of uint64, no floats or objects), with the offending value and
  its position named; indices outside ``[0, size)`` are legal in an export
  but rejected, naming the index, by the range checks of the operations that
  place them in a global array (test_distribution.py);
- a non-string ``dist_type`` is a DapTypeError naming dimension and key;
- buffers NumPy cannot export (datetime64, timedelta64) or that hold Python
  objects are a DapError naming the dtype;
- ``__version__`` is exactly ``major.minor.patch`` (decimal, no leading zeros,
  nothing before or after).
"""
import re

import numpy as np
import pytest

from nclx import dap
from nclx.dap import DapError, DapTypeError, validate
from nclx.dap.maps import map_from_dim_dict
from nclx.dap.validate import check_indices_in_range


def export(buf, *dims, version="0.10.0"):
    return {"__version__": version, "buffer": buf, "dim_data": tuple(dims)}


def block(size, start, stop, rank=0, grid=1, **kw):
    return dict(dist_type="b", size=size, start=start, stop=stop, proc_grid_rank=rank,
                proc_grid_size=grid, **kw)


def unstructured(indices, size=10, rank=0, grid=1, **kw):
    return dict(dist_type="u", size=size, indices=indices, proc_grid_rank=rank,
                proc_grid_size=grid, **kw)


# The worked 1-D example: 4 ranks, paddings (4,1), (1,2), (2,3), (3,0).
# Rank 0's left 4 and rank 3's right 0 are boundary padding (part of `size`);
# every inner padding is communication padding, equal on both sides of an edge:
#   rank 0: [0, 10)  = 4 boundary + 5 owned [4, 9) + 1 comm (owned by rank 1)
#   rank 1: [8, 16)  = 1 comm + owned [9, 14) + 2 comm
#   rank 2: [12, 22) = 2 comm + owned [14, 19) + 3 comm
#   rank 3: [16, 24) = 3 comm + owned [19, 24)
WORKED = [((0, 10), (4, 1)), ((8, 16), (1, 2)), ((12, 22), (2, 3)), ((16, 24), (3, 0))]


@pytest.mark.parametrize("rank", range(4))
def test_worked_padded_block_example_validates(rank):
    (start, stop), pad = WORKED[rank]
    out = validate(export(np.zeros(stop - start), block(24, start, stop, rank, 4, padding=list(pad))))
    dd = out["dim_data"][0]
    assert dd["padding"] == pad and dd["periodic"] is False
    assert (dd["start"], dd["stop"]) == (start, stop)


def test_protocol_block_block_example_and_defaults():
    a0 = np.arange(10.0).reshape(1, 10)
    out = validate(export(a0, block(2, 0, 1, 0, 2), block(10, 0, 10)))
    assert out["dim_data"][0]["padding"] == (0, 0)
    assert out["buffer"] is a0


def test_empty_dim_dict_is_an_undistributed_block_dimension():
    out = validate(export(np.zeros((3, 4)), {}, block(4, 0, 4)))
    assert out["dim_data"][0] == {"dist_type": "b", "size": 3, "proc_grid_size": 1,
                                  "proc_grid_rank": 0, "start": 0, "stop": 3,
                                  "padding": (0, 0), "periodic": False}


def test_cyclic_block_cyclic_and_unstructured_validate():
    validate(export(np.zeros(3), dict(dist_type="c", size=10, start=1, proc_grid_rank=1,
                                      proc_grid_size=3)))
    out = validate(export(np.zeros(2), dict(dist_type="c", size=10, start=4, block_size=2,
                                            proc_grid_rank=2, proc_grid_size=3)))
    assert out["dim_data"][0]["block_size"] == 2
    out = validate(export(np.zeros(3), dict(dist_type="u", size=10, indices=np.array([7, -1, 3]),
                                            proc_grid_rank=0, proc_grid_size=2)))
    assert out["dim_data"][0]["one_to_one"] is False


def test_numpy_integers_and_empty_local_buffers_are_accepted():
    validate(export(np.zeros(0), block(np.int64(5), np.int32(5), np.uint8(5), np.int64(1), 2)))
    validate(export(np.zeros(0), dict(dist_type="c", size=2, start=2, proc_grid_rank=2,
                                      proc_grid_size=3)))
    validate(export(np.zeros(0), dict(dist_type="u", size=0, indices=np.zeros(0, int),
                                      proc_grid_rank=0, proc_grid_size=1)))


def test_periodic_first_rank_may_start_below_zero():
    validate(export(np.zeros(7), block(10, -1, 6, 0, 2, padding=(1, 1), periodic=True)))
    with pytest.raises(DapError, match=r"dim_data\[0\]\['start'\]"):
        validate(export(np.zeros(7), block(10, -1, 6, 0, 2, padding=(1, 1))))


GOOD = np.zeros(5)
INVALID = [
    ([1, 2], TypeError, "a DAP export is a dict"),
    ({"buffer": GOOD, "dim_data": ()}, DapError, "'__version__'"),
    ({"__version__": "0.10.0", "dim_data": ()}, DapError, "'buffer'"),
    ({"__version__": "0.10.0", "buffer": GOOD}, DapError, "'dim_data'"),
    ({**export(GOOD, block(5, 0, 5)), "extra": 1}, DapError, "unknown keys"),
    (export(GOOD, block(5, 0, 5), version=10), DapTypeError, "'__version__' must be a string"),
    (export(GOOD, block(5, 0, 5), version="1.0"), DapError, "major.minor.patch"),
    (export(GOOD, block(5, 0, 5), version="1.0.0"), DapError, "major version 1"),
    (export([1, 2, 3], block(3, 0, 3)), DapTypeError, "buffer protocol"),
    ({"__version__": "0.10.0", "buffer": GOOD, "dim_data": "b"}, DapTypeError, "'dim_data' must be a tuple"),
    (export(GOOD), DapError, "0 dimension dictionaries but the buffer has 1"),
    (export(GOOD, block(5, 0, 5), block(5, 0, 5)), DapError, "2 dimension dictionaries"),
    (export(GOOD, [("dist_type", "b")]), DapTypeError, r"dim_data\[0\] must be a dict"),
    (export(GOOD, {"size": 5}), DapError, r"dim_data\[0\] has no 'dist_type'"),
    (export(GOOD, {**block(5, 0, 5), "dist_type": "x"}), DapError, r"\['dist_type'\] must be"),
    (export(GOOD, {k: v for k, v in block(5, 0, 5).items() if k != "stop"}), DapError, "missing required key 'stop'"),
    (export(GOOD, {k: v for k, v in block(5, 0, 5).items() if k != "size"}), DapError, "missing required key 'size'"),
    (export(GOOD, {k: v for k, v in block(5, 0, 5).items() if k != "proc_grid_rank"}), DapError, "'proc_grid_rank'"),
    (export(GOOD, {**block(5, 0, 5), "block_size": 2}), DapError, r"\['block_size'\] is not a key of dist_type 'b'"),
    (export(GOOD, {**block(5, 0, 5), "size": 5.0}), DapTypeError, r"\['size'\] must be an integer"),
    (export(GOOD, {**block(5, 0, 5), "size": True}), DapTypeError, r"\['size'\] must be an integer"),
    (export(GOOD, {**block(5, 0, 5), "size": -1}), DapError, r"\['size'\] must be >= 0"),
    (export(GOOD, block(5, 0, 5, 0, 0)), DapError, r"\['proc_grid_size'\] must be >= 1"),
    (export(GOOD, block(5, 0, 5, 2, 2)), DapError, r"\['proc_grid_rank'\] is 2"),
    (export(GOOD, block(5, 0, 5, -1, 2)), DapError, r"\['proc_grid_rank'\] must be >= 0"),
    (export(GOOD, block(5, -1, 4)), DapError, r"\['start'\] is -1"),
    (export(GOOD, block(5, 3, 2)), DapError, r"\['stop'\] \(2\) is below start"),
    (export(GOOD, block(5, 1, 6)), DapError, r"\['stop'\] is 6, beyond size 5"),
    (export(GOOD, block(9, 0, 4)), DapError, r"buffer.shape\[0\] is 5 but .* 4 local"),
    (export(GOOD, block(5, 0, 5, padding=(1,))), DapTypeError, r"\['padding'\] must be a list or tuple of two"),
    (export(GOOD, block(5, 0, 5, padding="ab")), DapTypeError, r"\['padding'\]"),
    (export(GOOD, block(5, 0, 5, padding=(-1, 0))), DapError, r"\['padding'\] must be >= 0"),
    (export(GOOD, block(5, 0, 5, padding=(3, 3))), DapError, r"\['padding'\] \(3, 3\) is wider"),
    (export(GOOD, block(5, 0, 5, periodic=1)), DapTypeError, r"\['periodic'\] must be a bool"),
    (export(GOOD, dict(dist_type="c", size=10, start=0, proc_grid_rank=1, proc_grid_size=2)), DapError, r"\['start'\] is 0; grid rank 1"),
    (export(GOOD, dict(dist_type="c", size=10, start=0, block_size=0, proc_grid_rank=0, proc_grid_size=2)), DapError, r"\['block_size'\] must be >= 1"),
    (export(GOOD, dict(dist_type="c", size=10, start=0, proc_grid_rank=0, proc_grid_size=3)), DapError, r"shape\[0\] is 5 but .* 4 local"),
    (export(GOOD, dict(dist_type="c", size=10, start=0, proc_grid_rank=0, proc_grid_size=2, padding=(0, 0))), DapError, r"\['padding'\] is not a key of dist_type 'c'"),
    (export(GOOD, dict(dist_type="u", size=10, indices=[1, 2, 3, 4, 5], proc_grid_rank=0, proc_grid_size=1)), DapTypeError, r"\['indices'\] must support the buffer protocol"),
    (export(GOOD, dict(dist_type="u", size=10, indices=np.array([1., 2, 3, 4, 5]), proc_grid_rank=0, proc_grid_size=1)), DapTypeError, r"1-d buffer of integers"),
    (export(GOOD, dict(dist_type="u", size=10, indices=np.array([5, 2, 3, 2, 5]), proc_grid_rank=0, proc_grid_size=1)), DapError, r"global index 2 more than once"),
    (export(GOOD, dict(dist_type="u", size=10, indices=np.arange(4), proc_grid_rank=0, proc_grid_size=1)), DapError, r"shape\[0\] is 5"),
    (export(GOOD, dict(dist_type="u", size=10, indices=np.arange(5), proc_grid_rank=0, proc_grid_size=1, one_to_one="yes")), DapTypeError, r"\['one_to_one'\] must be a bool"),
]


@pytest.mark.parametrize("bad, exc, message", INVALID, ids=[f"case{i}" for i in range(len(INVALID))])
def test_invalid_exports_are_rejected_with_a_clear_message(bad, exc, message):
    with pytest.raises(exc, match=message):
        validate(bad)


def test_errors_are_value_and_type_errors():
    assert issubclass(DapError, ValueError) and issubclass(DapTypeError, TypeError)


# ----------------------------------------------------------------- 'u' indices


def test_uint64_index_beyond_int64_is_rejected_not_wrapped():
    idx = np.array([3, 2**64 - 1, 4], dtype=np.uint64)
    with pytest.raises(DapError, match=r"dim_data\[0\]\['indices'\].*index "
                                       r"18446744073709551615 at position 1"):
        validate(export(np.zeros(3), unstructured(idx)))
    idx = np.array([0, 2**63], dtype=np.uint64)     # one past int64's maximum
    with pytest.raises(DapError, match=r"index 9223372036854775808 at position 1"):
        validate(export(np.zeros(2), unstructured(idx)))


def test_uint64_indices_within_int64_are_converted_exactly():
    idx = np.array([2**63 - 1, 0, 7], dtype=np.uint64)
    out = validate(export(np.zeros(3), unstructured(idx, size=2**63)))["dim_data"][0]
    assert out["indices"].dtype == np.int64
    assert out["indices"].tolist() == [2**63 - 1, 0, 7]


@pytest.mark.parametrize("idx, value, pos", [
    (np.array([0.0, 1.5, 2.0]), "1.5", 1),
    (np.array([0.0, 1.0, np.nan]), "nan", 2),
    (np.array([0.0, 1e30]), "1e+30", 1),
    (np.array([0, "a", 2], dtype=object), "'a'", 1),
    (np.array([0, 2**70], dtype=object), str(2**70), 1),
    (np.array([0, 1.25], dtype=object), "1.25", 1),
], ids=["float-1.5", "float-nan", "float-huge", "object-str", "object-bigint", "object-float"])
def test_non_integer_indices_name_the_value_and_its_position(idx, value, pos):
    with pytest.raises(DapError, match=rf"dim_data\[0\]\['indices'\].*index {re.escape(value)} "
                                       rf"at position {pos}\b"):
        validate(export(np.zeros(len(idx)), unstructured(idx)))


def test_integral_floats_and_objects_are_still_not_integer_buffers():
    # the protocol asks for a buffer of int; integral values in a float or
    # object buffer are rejected too, naming the first one and the dtype
    for idx in (np.array([4.0, 5.0]), np.array([4, 5], dtype=object)):
        with pytest.raises(DapTypeError, match=rf"1-d buffer of integers.*index 4(\.0)? at "
                                               rf"position 0.*{idx.dtype}"):
            validate(export(np.zeros(2), unstructured(idx)))


def test_duplicate_indices_name_dimension_key_value_and_positions():
    with pytest.raises(DapError, match=r"dim_data\[1\]\['indices'\] holds global index 4 more "
                                       r"than once \(positions 0 and 2\)"):
        validate(export(np.zeros((2, 3)), block(2, 0, 2), unstructured(np.array([4, -1, 4]))))
    with pytest.raises(DapError, match=r"global index -3 more than once \(positions 1 and 3\)"):
        validate(export(np.zeros(4), unstructured(np.array([9, -3, 2, -3], dtype=np.int8))))


def test_negative_unordered_sparse_indices_are_valid_exports():
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.dtype(">i8")):
        idx = np.array([7, 0, 3] if np.dtype(dt).kind == "u" else [7, -100, 3], dtype=dt)
        out = validate(export(np.zeros(3), unstructured(idx)))["dim_data"][0]
        assert out["indices"].dtype == np.int64 and out["indices"].tolist() == idx.tolist()


def test_indices_that_numpy_cannot_read_are_a_dap_error():
    with pytest.raises(DapError, match=r"dim_data\[0\]\['indices'\].*datetime64"):
        validate(export(np.zeros(2), unstructured(np.array([1, 2], dtype="M8[s]"))))


def test_range_check_helpers_name_index_position_dimension_and_rank():
    dd = validate(export(np.zeros(3), unstructured(np.array([2, -1, 4]), size=5)))["dim_data"][0]
    with pytest.raises(DapError, match=r"dim_data\[3\]\['indices'\]\[1\] is -1, outside the "
                                       r"global range \[0, 5\)"):
        check_indices_in_range(dd, dim=3)
    dd["indices"] = np.array([2, 0, 5])
    with pytest.raises(DapError, match=r"rank 7: dim_data\[0\]\['indices'\]\[2\] is 5"):
        check_indices_in_range(dd, rank=7)
    with pytest.raises(DapError, match=r"\['indices'\]\[2\] is 5"):
        map_from_dim_dict(dd).check_global_range()
    dd["indices"] = np.array([4, 0, 1])
    check_indices_in_range(dd)
    map_from_dim_dict(dd).check_global_range()
    # block and cyclic dimensions always map into [0, size)
    check_indices_in_range(dap.normalize_dim_dict(block(5, -1, 3, periodic=True, padding=(1, 0))))


# --------------------------------------------------------- dist_type, buffer


@pytest.mark.parametrize("value", [["b"], {"b": 1}, None, 98, b"b"], ids=repr)
def test_non_string_dist_type_is_a_dap_type_error(value):
    dd = block(3, 0, 3)
    dd["dist_type"] = value
    with pytest.raises(DapTypeError, match=r"dim_data\[0\]\['dist_type'\] must be a string"):
        validate(export(np.zeros(3), dd))


@pytest.mark.parametrize("buf, name", [
    (np.array(["2020-01-01", "2020-01-02"], dtype="M8[D]"), r"datetime64\[D\]"),
    (np.array([1, 2], dtype="m8[s]"), r"timedelta64\[s\]"),
    (np.array([1, None], dtype=object), "object"),
    (np.zeros(2, dtype=[("a", "f8"), ("b", "O")]), r"\('b', 'O'\)"),
], ids=["datetime64", "timedelta64", "object", "struct-with-object"])
def test_unexportable_buffer_dtypes_are_a_dap_error_naming_the_dtype(buf, name):
    with pytest.raises(DapError, match=rf"'buffer'.*dtype.*{name}"):
        validate(export(buf, block(2, 0, 2)))


# ------------------------------------------------------------------- version


@pytest.mark.parametrize("version", ["0.10.0\n", "0.10.0 ", " 0.10.0", "\t0.10.0", "0.10",
                                     "0.10.0.1", "00.10.0", "0.010.0", "0.10.00", "0.10.0-rc1",
                                     "v0.10.0", "0.1O.0", "\u0660.10.0", "0..0", ""],
                         ids=repr)
def test_version_must_be_exactly_major_minor_patch(version):
    with pytest.raises(DapError, match=rf"'__version__'.*{re.escape(repr(version))}"):
        validate(export(np.zeros(3), block(3, 0, 3), version=version))


@pytest.mark.parametrize("version", ["0.10.0", "0.0.0", "0.123.45", "0.10.10"])
def test_well_formed_versions_of_major_0_are_accepted(version):
    assert validate(export(np.zeros(3), block(3, 0, 3), version=version))["__version__"] == version
