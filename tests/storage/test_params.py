"""Storage keywords: GDP-3's preset table, inference order, bad input:
every bad keyword, shape, sync_state and dtype refused by every creation
function with the package's error naming it (and never a crash: odd dtypes
and a sweep of garbage values run in a subprocess)."""
import functools
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nclx.storage as st
from nclx.storage import SyncState
from storage_helpers import assert_refused, emu  # noqa: F401  (emu: a fixture)

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


BAD_INPUT = [
    # (id, keyword, value, call)
    ("halo_len", "halo", ((1, 1),), None),
    ("halo_len3", "halo", (1, 1, 1), None),
    ("halo_neg", "halo", ((-1, 0), (0, 0)), None),
    ("halo_neg_int", "halo", (-1, 0), None),
    ("halo_wide", "halo", ((2, 2), (0, 0)), None),
    ("halo_wide_int", "halo", 3, None),
    ("halo_triple", "halo", ((1, 2, 3), (0, 0)), None),
    ("halo_float", "halo", ((1.5, 0), (0, 0)), None),
    ("halo_str", "halo", "ab", None),
    ("ai_out", "aligned_index", (3, 0), None),
    ("ai_out2", "aligned_index", (0, 4), None),
    ("ai_neg", "aligned_index", (-1, 0), None),
    ("ai_len", "aligned_index", (0,), None),
    ("ai_int", "aligned_index", 2, None),
    ("ai_float", "aligned_index", (0.5, 0), None),
    ("align_0", "alignment_size", 0, None),
    ("align_3", "alignment_size", 3, None),
    ("align_48", "alignment_size", 48, None),
    ("align_neg", "alignment_size", -8, None),
    ("align_float", "alignment_size", 2.0, None),
    ("align_str", "alignment_size", "64", None),
    ("align_none", "alignment_size", None, None),
    ("layout_dup", "layout", (0, 0), None),
    ("layout_range", "layout", (1, 2), None),
    ("layout_short", "layout", (0,), None),
    ("layout_long", "layout", (0, 1, 2), None),
    ("layout_str", "layout", "01", None),
    ("layout_float", "layout", (0.0, 1), None),
    ("dims_long", "dims", "IJK", None),
    ("dims_short", "dims", "I", None),
    ("dims_repeat", "dims", ("I", "I"), None),
    ("dims_name", "dims", ("X", "J"), None),
    ("dims_lower", "dims", "ij", None),
    ("dims_int", "dims", ("I", 1), None),
    ("dims_negative", "dims", ("I", "-1"), None),
    ("dims_unicode_digit", "dims", ("I", "\u00b2"), None),
    ("dims_number", "dims", 5, None),
    ("defaults_unknown", "defaults", "gtmc", None),
    ("defaults_lower", "defaults", "c", None),
    ("defaults_int", "defaults", 1, None),
    ("device_cpu", "device", "cpu", None),
    ("device_cuda", "device", "cuda", None),
    ("device_int", "device", 0, None),
    ("managed_yes", "managed", "yes", None),
    ("managed_true", "managed", True, None),
    ("unknown_kw", "foo", 1, None),
    ("order_kw", "order", "F", None),
    ("strides_kw", "strides", (8, 8), "not as_storage"),
]


CREATORS = {
    "empty": lambda **kw: st.empty((3, 4), **kw),
    "zeros": lambda **kw: st.zeros((3, 4), **kw),
    "ones": lambda **kw: st.ones((3, 4), **kw),
    "full": lambda **kw: st.full((3, 4), 1.5, **kw),
    "empty_like": lambda **kw: st.empty_like(st.zeros((3, 4)), **kw),
    "zeros_like": lambda **kw: st.zeros_like(np.zeros((3, 4)), **kw),
    "ones_like": lambda **kw: st.ones_like(st.zeros((3, 4)), **kw),
    "full_like": lambda **kw: st.full_like(st.zeros((3, 4)), 2, **kw),
    "storage": lambda **kw: st.storage(np.zeros((3, 4)), **kw),
    "storage_nocopy": lambda **kw: st.storage(np.zeros((3, 4)), copy=False, **kw),
    "as_storage": lambda **kw: st.as_storage(np.zeros((3, 4)), **kw),
}


# strides= is as_storage's own keyword (tested with flat buffers below)
BAD_CASES = [(creator, case) for case in BAD_INPUT for creator in sorted(CREATORS)
             if case[3] is None or creator not in ("as_storage", "storage_nocopy")]


@pytest.mark.parametrize("creator, case", BAD_CASES, ids=[f"{c[0]}-{k}" for k, c in BAD_CASES])
def test_bad_keywords_are_refused_by_name(emu, creator, case):
    _, keyword, value, _ = case
    kw = {keyword: value}
    if keyword == "managed":
        kw["device"] = "gpu"
    assert_refused(lambda: CREATORS[creator](**kw), keyword, value,
                   name_value=keyword not in ("foo", "order", "strides"))


@pytest.mark.parametrize("creator", ["empty", "zeros", "ones", "full", "storage_shape"])
@pytest.mark.parametrize("shape", [-1, (2, -1), (2.5,), "abc", None, (2, None), (1,) * 65],
                         ids=lambda x: "65_dims" if x == (1,) * 65 else repr(x))
def test_bad_shapes(creator, shape):
    call = {"empty": lambda: st.empty(shape), "zeros": lambda: st.zeros(shape),
            "ones": lambda: st.ones(shape), "full": lambda: st.full(shape, 1),
            "storage_shape": lambda: st.storage(shape=shape)}[creator]
    assert_refused(call, "shape", shape)


def test_like_functions_do_not_take_shape():
    for f in (st.empty_like, st.zeros_like, st.ones_like):
        assert_refused(functools.partial(f, st.zeros((2, 2)), shape=(3, 3)), "shape", None,
                       name_value=False)


@pytest.mark.parametrize("value", [((5, 5), (0, 0)), ((1, 1),), "x", ((-1, 0), (0, 0))],
                         ids=repr)
def test_halo_setter_refuses_bad_values(value):
    s = st.zeros((3, 4), halo=1)
    assert_refused(lambda: setattr(s, "halo", value), "halo", value)
    assert s.halo == ((1, 1), (1, 1))


@pytest.mark.parametrize("value", ["dirty", 1, SyncState.SYNC_HOST_DIRTY], ids=repr)
@pytest.mark.parametrize("creator", ["as_storage", "storage", "storage_gpu"])
def test_bad_sync_state(emu, creator, value):
    call = {"as_storage": lambda: st.as_storage(np.zeros(3), sync_state=value),
            "storage": lambda: st.storage(np.zeros(3), sync_state=value),
            "storage_gpu": lambda: st.storage(np.zeros(3), sync_state=value, device="gpu")}
    assert_refused(call[creator], "sync_state", value)


# the folder holding the nclx package under test (subprocesses import it from there)
STAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(st.__file__))))


def run_python(code, timeout=60):
    """Run ``code`` in a fresh interpreter importing this nclx; (rc, output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [STAGE] + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd="/", check=False)
    return proc.returncode, proc.stdout + proc.stderr


CRASHERS = {
    "empty_object": "s = st.empty((64,), dtype=object); print(np.asarray(s))",
    "zeros_object": "s = st.zeros((64,), dtype=object); print(np.asarray(s))",
    "storage_object": "s = st.storage(np.array([None, 1, 'x'], dtype=object)); print(np.asarray(s))",
    "struct_object": "s = st.empty((64,), dtype=[('a', object), ('b', 'f8')]); print(np.asarray(s))",
    "flat_object": "s = st.as_storage(np.full(64, 0xAB, np.uint8), shape=(2,), dtype=object); "
                   "print(np.asarray(s))",
    "wrap_object_then_ufunc": "s = st.as_storage(np.array([1, 2], dtype=object)); print(s + 1)",
    "zero_itemsize": "s = st.zeros((3,), dtype='V0'); print(np.asarray(s))",
}


@pytest.mark.parametrize("name", sorted(CRASHERS))
def test_dtypes_that_cannot_live_in_raw_memory(name):
    """Object dtypes (and other unusual ones) in raw, uninitialised or
    foreign memory: refused with the package's error naming dtype, or
    working as NumPy does -- never a crash.  Run in a subprocess."""
    code = f"""
        import os, numpy as np, nclx.storage as st
        print("NCLX=" + os.path.dirname(os.path.dirname(os.path.dirname(st.__file__))), flush=True)
        try:
            {CRASHERS[name]}
        except st.StorageError as e:
            print("REFUSED", type(e).__name__, e)
        except Exception as e:
            print("OTHER", type(e).__name__, e)
        else:
            print("WORKED")
    """
    rc, out = run_python(code)
    assert f"NCLX={STAGE}" in out, out[-500:]
    assert rc == 0, f"the interpreter died (rc {rc}, {signal.Signals(-rc).name if rc < 0 else rc}): {out[-500:]}"
    last = out.strip().splitlines()[-1]
    assert not last.startswith("OTHER"), last
    if last.startswith("REFUSED"):
        assert "dtype" in last, last


def test_nothing_crashes_on_garbage_keywords_in_a_subprocess():
    """A sweep of odd values for every keyword of every creation function
    in one subprocess: each call returns or raises, the process survives."""
    code = """
        import itertools, numpy as np, nclx.storage as st
        from nclx.storage import devices
        devices.use(devices.EmulatedDevice())
        odd = [None, 0, 1, -1, 2**63, -2**63, 1.5, float('nan'), "", "x", (), (None,), (1, 2, 3),
               ((1, 2), (3, 4)), [[0, 0]], b"ab", object(), np.array([1, 2]), True]
        keys = ["aligned_index", "alignment_size", "defaults", "device", "dims", "halo",
                "layout", "managed", "shape", "strides", "offset", "dtype", "sync_state"]
        n = 0
        for key, v in itertools.product(keys, odd):
            for call in (lambda kw: st.empty((3, 2), **kw), lambda kw: st.empty_like(st.zeros((3, 2)), **kw),
                         lambda kw: st.as_storage(bytearray(64), **kw),
                         lambda kw: st.as_storage(np.zeros((3, 2)), **kw),
                         lambda kw: st.storage(np.zeros((3, 2)), **kw)):
                try:
                    call({key: v})
                except (ValueError, TypeError):
                    pass
                except Exception as e:
                    print("UNEXPECTED", key, repr(v)[:40], type(e).__name__, e)
                n += 1
        print("DONE", n)
    """
    rc, out = run_python(code, timeout=120)
    assert rc == 0, f"the interpreter died (rc {rc}): {out[-800:]}"
    assert "DONE" in out, out[-800:]
    unexpected = [ln for ln in out.splitlines() if ln.startswith("UNEXPECTED")]
    assert not unexpected, "\n".join(unexpected[:20])
