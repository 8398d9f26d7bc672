"""Regression tests for review defects in nclx.dap.validate (one process).

- 'u' indices: locally unique, every value an exact int64 (no silent
  wrap-around of uint64, no floats or objects), with the offending value and
  its position named; indices outside ``[0, size)`` are legal in an export
  but rejected, naming the index, by the operations that place them in a
  global array (``check_global_range``, ``DistArray.from_global``);
- a non-string ``dist_type`` is a DapTypeError naming dimension and key;
- buffers NumPy cannot export (datetime64, timedelta64) or that hold Python
  objects are a DapError naming the dtype;
- ``__version__`` is exactly ``major.minor.patch`` (decimal, no leading zeros,
  nothing before or after).
"""
import importlib
import re

import numpy as np
import pytest

from nclx import dap
from nclx.dap import DapError, DapTypeError, validate
from nclx.dap.maps import map_from_dim_dict

_maps = importlib.import_module("nclx.dap.maps")
_validate = importlib.import_module("nclx.dap.validate")   # nclx.dap.validate is the function


def check_global_range(distribution):
    return _maps.check_global_range(distribution)


def check_indices_in_range(dd, **kw):
    return _validate.check_indices_in_range(dd, **kw)


def export(buf, *dims, version="0.10.0"):
    return {"__version__": version, "buffer": buf, "dim_data": tuple(dims)}


def unstructured(indices, size=10, rank=0, grid=1, **kw):
    return dict(dist_type="u", size=size, indices=indices, proc_grid_rank=rank,
                proc_grid_size=grid, **kw)


def block(size, start, stop, rank=0, grid=1, **kw):
    return dict(dist_type="b", size=size, start=start, stop=stop, proc_grid_rank=rank,
                proc_grid_size=grid, **kw)


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


def _u_distribution(per_rank_indices, size):
    grid = len(per_rank_indices)
    return dap.Distribution.from_dim_data_per_rank(
        [(unstructured(np.array(ix, dtype=np.int64), size=size, rank=r, grid=grid),)
         for r, ix in enumerate(per_rank_indices)])


def test_distribution_range_check_names_dimension_grid_rank_and_ranks():
    d = dap.Distribution.from_dim_data_per_rank(
        [(block(2, 0, 1, 0, 2), unstructured(np.array([0, 1, 2]), size=3)),
         (block(2, 1, 2, 1, 2), unstructured(np.array([0, 1, 2]), size=3))])
    check_global_range(d)
    d = _u_distribution([[0, 1], [2, 6], [3, 4, 5]], size=6)
    with pytest.raises(DapError, match=r"dimension 0, proc_grid_rank 1 \(rank 1\): "
                                       r"dim_data\[0\]\['indices'\]\[1\] is 6, outside the global "
                                       r"range \[0, 6\)"):
        check_global_range(d)


# -------------------------------------------------- from_global with 'u' maps
def test_from_global_places_unstructured_indices_by_value():
    d = _u_distribution([[4, 0, 3, 1, 2]], size=5)
    g = np.arange(5.0) * 10
    a = dap.DistArray.from_global(g, dist=d)
    assert np.asarray(a.local).tolist() == [40.0, 0.0, 30.0, 10.0, 20.0]
    assert a.gather().tolist() == g.tolist()


@pytest.mark.parametrize("indices, bad, pos", [([0, 1, -1, 3, 4], -1, 2),
                                               ([0, 1, 2, 3, 5], 5, 4)])
def test_from_global_rejects_unstructured_indices_outside_the_array(indices, bad, pos):
    d = _u_distribution([indices], size=5)
    with pytest.raises(DapError, match=rf"rank 0.*dim_data\[0\]\['indices'\]\[{pos}\] is {bad}, "
                                       rf"outside the global range \[0, 5\)"):
        dap.DistArray.from_global(np.arange(5.0), dist=d)


def test_from_global_with_a_distribution_checks_the_shape_and_keywords():
    d = _u_distribution([[4, 0, 3, 1, 2]], size=5)
    with pytest.raises(DapError, match=r"shape \(6,\).*\(5,\)"):
        dap.DistArray.from_global(np.arange(6.0), dist=d)
    with pytest.raises(DapError, match="padding"):
        dap.DistArray.from_global(np.arange(5.0), dist=d, padding=[1])


def test_gather_rejects_unstructured_indices_outside_the_array():
    d = _u_distribution([[0, 1, -1, 3, 4]], size=5)
    a = dap.DistArray(np.arange(5.0), d)
    with pytest.raises(DapError, match=r"\['indices'\]\[2\] is -1"):
        a.gather()


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
