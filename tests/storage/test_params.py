"""Storage keywords: GDP-3's preset table, inference order, bad input."""
import numpy as np
import pytest

import nclx.storage as st

# GDP-3, "Default layout parameter when given defaults and dims" (the
# proposal's table; it stands where gt4py 1.1 ignores the order of dims).
GDP3_TABLE = {
    ("IJK", "F"): (2, 1, 0), ("IJK", "C"): (0, 1, 2),
    ("IJK", "gtx86"): (0, 1, 2), ("IJK", "gtcuda"): (2, 1, 0),
    ("KJI", "F"): (2, 1, 0), ("KJI", "C"): (0, 1, 2),
    ("KJI", "gtx86"): (2, 1, 0), ("KJI", "gtcuda"): (0, 1, 2),
}


@pytest.mark.parametrize("dims,defaults", sorted(GDP3_TABLE))
def test_preset_layouts_follow_the_gdp3_table(dims, defaults):
    s = st.empty((3, 4, 5), dims=dims, defaults=defaults)
    assert s.layout == GDP3_TABLE[dims, defaults]
    strides = np.asarray(s).strides
    # largest layout entry -> smallest stride
    assert sorted(range(3), key=lambda d: -strides[d]) == sorted(range(3), key=lambda d: s.layout[d])


def test_preset_picks_alignment_never_the_device():
    s = st.empty((4, 5, 6), defaults="gtcuda")
    assert s.device is None and isinstance(s, st.CPUStorage)
    assert s.alignment_size == st.PRESETS["gtcuda"]["alignment_size"]


def test_explicit_keyword_beats_preset_beats_data():
    data = np.asfortranarray(np.arange(60.0).reshape(3, 4, 5))
    s = st.storage(data)                                    # from the data: F order
    assert s.layout == (2, 1, 0)
    s = st.storage(data, defaults="C")                      # preset beats data
    assert s.layout == (0, 1, 2)
    s = st.storage(data, defaults="C", layout=(1, 2, 0))    # keyword beats preset
    assert s.layout == (1, 2, 0)
    np.testing.assert_array_equal(np.asarray(s), data)


def test_fallbacks():
    s = st.empty((2, 3, 4))
    assert s.dims == ("I", "J", "K") and s.halo == ((0, 0),) * 3 and s.layout == (0, 1, 2)
    assert s.alignment_size == 1 and s.aligned_index == (0, 0, 0) and s.dtype == np.float64
    s = st.empty((2, 3, 4, 5, 6))
    assert s.dims == ("I", "J", "K", "0", "1")
    s = st.empty((5, 6), halo=((1, 2), 3))
    assert s.halo == ((1, 2), (3, 3)) and s.aligned_index == (1, 3)


def test_like_functions_inherit_everything_but_what_is_overridden():
    s = st.zeros((6, 7, 8), dtype=np.float32, halo=(1, 2, 0), dims="KJI", layout=(2, 0, 1),
                 alignment_size=32, aligned_index=(1, 2, 0))
    for like in (st.empty_like(s), st.zeros_like(s), st.ones_like(s), st.full_like(s, 2)):
        assert like.shape == s.shape and like.dtype == s.dtype and like.dims == s.dims
        assert like.halo == s.halo and like.layout == s.layout and like.strides == s.strides
        assert like.alignment_size == 32 and like.aligned_index == (1, 2, 0)
    o = st.ones_like(s, dtype=np.int16, halo=0)
    assert o.dtype == np.int16 and o.halo == ((0, 0),) * 3 and o.aligned_index == (0, 0, 0)
    assert np.asarray(st.full_like(s, 2.5)).min() == 2.5


BAD = [
    (dict(halo=(1, 1)), "halo"),                       # wrong length
    (dict(halo=(1, -1, 0)), "halo"),                   # negative
    (dict(halo=(3, 0, 0)), "halo"),                    # wider than extent 4 (3 + 3)
    (dict(halo=(1.5, 0, 0)), "halo"),
    (dict(aligned_index=(0, 9, 0)), "aligned_index"),  # outside the shape
    (dict(aligned_index=(0, -1, 0)), "aligned_index"),
    (dict(aligned_index=(0, 0)), "aligned_index"),
    (dict(alignment_size=24), "alignment_size"),       # not a power of two
    (dict(alignment_size=0), "alignment_size"),
    (dict(layout=(0, 0, 1)), "layout"),                # not a permutation
    (dict(layout=(0, 1)), "layout"),
    (dict(dims="IJ"), "dims"),                         # does not match ndim
    (dict(dims="IJX"), "dims"),
    (dict(dims="IIK"), "dims"),
    (dict(defaults="gtmc"), "defaults"),
    (dict(device="cpu"), "device"),
    (dict(managed="yes", device="gpu"), "managed"),
    (dict(origin=(1, 1, 1)), "origin"),                # unknown keyword
]


@pytest.mark.parametrize("kwargs,keyword", BAD, ids=[k for _, k in BAD])
def test_bad_keywords_name_the_keyword_and_value(kwargs, keyword):
    with pytest.raises((ValueError, TypeError)) as info:
        st.empty((4, 5, 6), **kwargs)
    assert isinstance(info.value, st.StorageError)
    msg = str(info.value)
    assert keyword in msg
    if keyword != "origin":
        assert repr(kwargs[keyword]) in msg


def test_bad_shape():
    with pytest.raises(st.StorageError, match="shape"):
        st.empty((3, -1))
    with pytest.raises(st.StorageTypeError, match="shape"):
        st.empty((3, 2.0))


def test_halo_setter_validates_and_keeps_the_aligned_point():
    s = st.zeros((8, 8), halo=1, alignment_size=64)
    addr = np.asarray(s).__array_interface__["data"][0]
    s.halo = (2, (0, 3))
    assert s.halo == ((2, 2), (0, 3)) and s.__gt_origin__ == (2, 0)
    assert np.asarray(s).__array_interface__["data"][0] == addr
    assert s.domain_view.shape == (4, 5)
    with pytest.raises(st.StorageError, match="halo"):
        s.halo = (5, 0)


def test_gt_origin_is_in_gt4py_canonical_order():
    s = st.zeros((4, 5, 6), dims="KJI", halo=((3, 0), (2, 0), (1, 0)))
    assert s.__gt_dims__ == ("K", "J", "I")
    assert s.__gt_origin__ == (1, 2, 3)          # I, J, K as gt4py reads it
