"""nclx.storage against plain NumPy, bit for bit (hypothesis-driven).

Every test builds a storage (random shape 0-4 D with extents 0 and 1, dtype,
halo, layout, alignment_size, aligned_index, dims, and the way it is made)
holding known values, does the same thing to the storage and to a plain
ndarray holding the same values, and compares: values bit for bit (NaN equal
to NaN, the sign of zero checked), dtype, shape, exceptions (their built-in
class) and warnings (under ``np.errstate(all='warn')``).  The storage side
also has to keep its metadata right: basic indexing gives Storage views whose
halo is recomputed here independently of the source, ufunc results that have
the shape of a storage operand are storages laid out like that operand, etc.

Every test runs twice: on stock NumPy and inside ``nclx.installed()``; the
NumPy reference is always computed on stock NumPy (outside the block), so
the installed run checks that nclx gives identical results.

Managed storages (``device="gpu"``) run on the emulated device backend
(``nclx.storage.devices.EmulatedDevice``), set for the whole module.
"""
import contextlib
import copy
import operator
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import nclx
import nclx.storage as ns
from nclx.storage import Storage, devices

MODES = ("stock", "installed")
pytestmark = pytest.mark.parametrize("mode", MODES)

DTYPES = tuple(np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8",
                                     "float32", "float64", "complex128"))
DTYPE_IDS = [d.name for d in DTYPES]
POW2 = tuple(2 ** i for i in range(9))          # 1 .. 256 bytes
DIM_POOL = ("I", "J", "K", "0", "1", "2")
DEFAULT_DIMS = ("I", "J", "K", "0")             # GDP-3: I, J, K, then digits
CLASS_OF_KIND = {"cpu": ns.CPUStorage, "gt4py": ns.SoftwareManagedGPUStorage,
                 "cuda": ns.CUDAManagedGPUStorage}


@pytest.fixture(autouse=True, scope="module")
def emulated_device():
    with devices.use(devices.EmulatedDevice()) as backend:
        yield backend


def mode_ctx(mode):
    return nclx.installed() if mode == "installed" else contextlib.nullcontext()


# ----------------------------------------------------------------- values
def make_values(dtype, shape, seed):
    """Values of ``dtype``: random ones mixed with the dtype's edge values."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(all="ignore"):
        if dtype.kind == "b":
            v = rng.integers(0, 2, n).astype(bool)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            small = rng.integers(max(info.min, -9), min(info.max, 9) + 1, n).astype(dtype)
            big = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
            v = np.where(rng.random(n) < 0.5, small, big)
            edges = np.array([info.min, info.max, 0, 1], dtype)
            v[rng.random(n) < 0.2] = edges[rng.integers(0, 4)] if n else 0
        else:
            ft = np.dtype(np.float32 if dtype == np.float32 else np.float64)

            def floats():
                f = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(ft)
                info = np.finfo(ft)
                special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0,
                                    info.max, -info.max, info.tiny, info.smallest_subnormal],
                                   ft)
                pick = rng.random(n) < 0.3
                f[pick] = special[rng.integers(0, special.size, int(pick.sum()))]
                return f
            v = floats() if dtype.kind == "f" else floats() + 1j * floats()
        return np.asarray(v, dtype).reshape(shape)


# ----------------------------------------------------------------- compare
def run(fn):
    """(result, exception, warnings) of ``fn()`` under errstate(all='warn')."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            try:
                res, exc = fn(), None
            except Exception as e:  # noqa: BLE001 - compared with NumPy's
                res, exc = None, e
    return res, exc, sorted((w.category.__name__, str(w.message)) for w in rec)


def builtin_class(exc):
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return type(exc)


def assert_bits(got, exp, what="value"):
    """``got`` (anything np.asarray takes) equals ndarray/scalar ``exp`` bit for bit."""
    __tracebackhide__ = True
    g = np.asarray(got)
    e = np.asarray(exp)
    assert g.dtype == e.dtype, f"{what}: dtype {g.dtype} != NumPy's {e.dtype}"
    assert g.shape == e.shape, f"{what}: shape {g.shape} != NumPy's {e.shape}"
    np.testing.assert_array_equal(g, e, err_msg=what, strict=True)
    # the sign of zero (a NaN equals any NaN, whatever its sign and payload)
    parts = {"f": lambda x: (x,), "c": lambda x: (x.real, x.imag)}.get(e.dtype.kind, lambda x: ())
    for gp, ep in zip(parts(g), parts(e)):
        zero = ep == 0
        np.testing.assert_array_equal(np.signbit(gp[zero]), np.signbit(ep[zero]),
                                      err_msg=what + " (sign of zero)")


def assert_same_result(got, exp, what="result"):
    """Type-aware comparison of a storage-side result with NumPy's."""
    __tracebackhide__ = True
    if isinstance(exp, tuple):
        assert isinstance(got, tuple) and len(got) == len(exp), f"{what}: {got!r} vs {exp!r}"
        for i, (g, e) in enumerate(zip(got, exp)):
            assert_same_result(g, e, f"{what}[{i}]")
        return
    if isinstance(exp, np.generic):
        if isinstance(got, Storage):
            # a 0-d storage operand gives a 0-d storage where NumPy gives a scalar
            assert got.ndim == 0, f"{what}: NumPy gave a scalar, storage side {got!r}"
        else:
            assert type(got) is type(exp), f"{what}: type {type(got)} != NumPy's {type(exp)}"
        assert_bits(got, exp, what)
        return
    if isinstance(exp, np.ndarray):
        assert isinstance(got, (np.ndarray, Storage)), f"{what}: got {type(got)}"
        assert_bits(got, exp, what)
        return
    assert type(got) is type(exp) and got == exp, f"{what}: {got!r} != {exp!r}"


def compare(np_fn, st_fn, mode, check=None):
    """Run NumPy's side (stock NumPy) and the storage side (in ``mode``);
    compare exceptions, results and warnings.  ``check(got, exp)`` adds
    checks on a successful result.  Returns (got, exp, NumPy's exception)."""
    __tracebackhide__ = True
    exp, exp_exc, exp_w = run(np_fn)
    with mode_ctx(mode):
        got, got_exc, got_w = run(st_fn)
    if exp_exc is not None:
        assert got_exc is not None, f"NumPy raised {exp_exc!r}; storage side returned {got!r}"
        # the package's errors subclass both ValueError and TypeError
        assert isinstance(got_exc, builtin_class(exp_exc)), (
            f"NumPy raised {exp_exc!r}; storage side raised {got_exc!r}")
    else:
        assert got_exc is None, f"storage side raised {got_exc!r}; NumPy returned {exp!r}"
        assert_same_result(got, exp)
        if check is not None:
            check(got, exp)
    assert got_w == exp_w, f"warnings differ:\n  numpy:   {exp_w}\n  storage: {got_w}"
    return got, exp, exp_exc


# ---------------------------------------------------------------- storages
class Spec:
    """Everything drawn for one storage, and what its metadata must be."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return (f"Spec(shape={self.shape}, dtype={self.dtype}, kind={self.kind}, how={self.how}, "
                f"kw={self.kw}, seed={self.seed})")


@st.composite
def specs(draw, dtype=None, shape=None, kinds=("cpu", "cpu", "gt4py", "cuda"), max_ndim=4,
          max_extent=4, hows=("empty", "storage", "full", "as_storage")):
    if shape is None:
        ndim = draw(st.integers(0, max_ndim))
        shape = tuple(draw(st.lists(st.integers(0, max_extent), min_size=ndim, max_size=ndim)))
    ndim = len(shape)
    dtype = np.dtype(dtype if dtype is not None else draw(st.sampled_from(DTYPES)))
    kind = draw(st.sampled_from(kinds))
    how = draw(st.sampled_from(hows))
    if how == "as_storage" and (kind == "cuda" or 0 in shape):
        # (empty buffers are wrapped in test_as_storage_of_empty_buffers)
        how = "empty"
    kw = {}
    # lo < n: a halo covering a whole dimension from below is tested on its
    # own (test_halo_covering_a_whole_dimension)
    halo = tuple((lo, draw(st.integers(0, n - lo))) for n in shape
                 for lo in [draw(st.integers(0, max(n - 1, 0)))])
    halo_form = draw(st.sampled_from(["pairs", "omit", "int", "per_dim"]))
    if halo_form == "pairs":
        kw["halo"] = halo
    elif halo_form == "omit":
        halo = ((0, 0),) * ndim
    elif halo_form == "int":
        h = draw(st.integers(0, min([n // 2 for n in shape], default=0)))
        kw["halo"] = h
        halo = ((h, h),) * ndim
    else:
        halo = tuple((lo, lo) if 2 * lo <= n else (0, 0) for (lo, _), n in zip(halo, shape))
        kw["halo"] = tuple(lo for lo, _ in halo)
    if draw(st.booleans()):
        layout = tuple(draw(st.permutations(range(ndim))))
        kw["layout"] = layout
    else:
        layout = tuple(range(ndim))
    if draw(st.booleans()):
        alignment = draw(st.sampled_from(POW2))
        kw["alignment_size"] = alignment
    else:
        alignment = 1
    if draw(st.booleans()):
        aligned_index = tuple(draw(st.integers(0, max(n - 1, 0))) for n in shape)
        kw["aligned_index"] = aligned_index
    else:
        aligned_index = tuple(lo for lo, _ in halo)
    if draw(st.booleans()):
        dims = tuple(draw(st.permutations(DIM_POOL)))[:ndim]
        kw["dims"] = dims if draw(st.booleans()) or any(len(d) > 1 for d in dims) else "".join(dims)
    else:
        dims = DEFAULT_DIMS[:ndim]
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return Spec(shape=shape, dtype=dtype, kind=kind, how=how, kw=kw, halo=halo, layout=layout,
                alignment=alignment, aligned_index=aligned_index, dims=dims, seed=seed)


def build(spec, values=None):
    """(storage, values): a storage of ``spec`` holding ``values``."""
    if values is None:
        values = make_values(spec.dtype, spec.shape, spec.seed)
    kw = dict(spec.kw)
    if spec.kind != "cpu":
        kw.update(device="gpu", managed=spec.kind)
    if spec.how == "empty":
        s = ns.empty(spec.shape, spec.dtype, **kw)
        s[...] = values
    elif spec.how == "full":
        s = ns.full(spec.shape, values.reshape(-1)[0] if values.size else 0, spec.dtype, **kw)
        s[...] = values
    elif spec.how == "storage":
        s = ns.storage(values, **kw)
    else:   # wrap an aligned buffer laid out as asked
        base = ns.empty(spec.shape, spec.dtype, **kw)
        host = base.to_numpy()
        host[...] = values
        s = ns.as_storage(host, **kw)
    return s, values


def replica(a):
    """A copy of ndarray ``a`` with the same strides and the same address
    modulo 64: NumPy's reductions sum in an order that depends on the memory
    layout, so a bit-exact reference needs the same layout."""
    if a.size == 0 or a.ndim == 0:
        return a.copy()
    lo = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0) + a.itemsize
    raw = np.empty(hi - lo + 64, np.uint8)
    off = ((a.__array_interface__["data"][0] + lo) - raw.ctypes.data) % 64
    r = np.ndarray(a.shape, a.dtype, buffer=raw, offset=off - lo, strides=a.strides)
    r[...] = a
    return r


def plain(x):
    """The plain NumPy counterpart of an operand: a copy laid out the same."""
    if isinstance(x, Storage):
        return replica(np.asarray(x))
    if isinstance(x, np.ndarray):
        return replica(x)
    return x


def address_of(arr, index):
    return arr.__array_interface__["data"][0] + sum(i * s for i, s in zip(index, arr.strides))


def check_metadata(s, spec):
    __tracebackhide__ = True
    assert type(s) is CLASS_OF_KIND[spec.kind], f"{type(s)} for kind {spec.kind}"
    assert not isinstance(s, np.ndarray)
    assert s.shape == spec.shape and s.dtype == spec.dtype and s.ndim == len(spec.shape)
    assert s.size == int(np.prod(spec.shape, dtype=np.int64))
    assert s.nbytes == s.size * spec.dtype.itemsize
    assert s.dims == spec.dims, f"dims {s.dims} != {spec.dims}"
    assert s.halo == spec.halo, f"halo {s.halo} != {spec.halo}"
    assert s.layout == spec.layout, f"layout {s.layout} != {spec.layout}"
    assert s.alignment_size == spec.alignment
    assert s.aligned_index == spec.aligned_index


# ------------------------------------------------------------ (a) asarray
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_asarray_is_the_data_written_and_shares_memory(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, values = build(spec)
    check_metadata(s, spec)
    with mode_ctx(mode):
        a = np.asarray(s)
        assert type(a) is np.ndarray
        assert_bits(a, values, "np.asarray(s)")
        assert a.strides == s.strides
        if s.size:
            assert np.shares_memory(a, s)
            assert np.shares_memory(np.asarray(s), a)
            # the element at aligned_index sits on an alignment boundary
            assert address_of(a, spec.aligned_index) % spec.alignment == 0
            # strides follow the layout: larger layout entry, smaller stride
            moving = [d for d in range(s.ndim) if s.shape[d] > 1]
            by_layout = sorted(moving, key=lambda d: spec.layout[d])
            st_ = [abs(s.strides[d]) for d in by_layout]
            assert st_ == sorted(st_, reverse=True), (s.strides, spec.layout)
        assert s.__array_interface__["data"][0] == a.__array_interface__["data"][0]
        assert s.__array_interface__["shape"] == a.shape
        # np.array copies (and only np.array)
        c = np.array(s)
        assert_bits(c, values, "np.array(s)")
        if s.size:
            assert not np.shares_memory(c, a)
        if s.ndim:
            assert len(s) == s.shape[0]
        else:
            with pytest.raises(TypeError):
                len(s)
        # domain_view: the halo removed, still the same memory
        dv = s.domain_view
        key = tuple(slice(lo, n - hi) for (lo, hi), n in zip(spec.halo, spec.shape))
        assert isinstance(dv, Storage)
        assert_bits(dv, values[key], "domain_view")
        assert dv.halo == ((0, 0),) * s.ndim and dv.dims == spec.dims
        if dv.size:
            assert np.shares_memory(np.asarray(dv), a)
    # np.asarray(s, dtype=other): NumPy's cast, warnings included
    other = data.draw(st.sampled_from(DTYPES))
    compare(lambda: values.astype(other), lambda: np.asarray(s, dtype=other), mode)


@pytest.mark.parametrize("op", ["add", "copy", "deepcopy", "pickle", "empty_like", "T_copy",
                                "accumulate"])
def test_halo_covering_a_whole_dimension(mode, op):
    """halo=((n, 0),) is legal (lo + hi <= n); the storage must then work
    like any other: ufunc results, copies and _like allocations included."""
    values = np.arange(6.0).reshape(3, 2)
    s = ns.storage(values, halo=((3, 0), (0, 2)))
    assert s.halo == ((3, 0), (0, 2))
    f = {"add": lambda x: x + 1, "copy": lambda x: x.copy(), "deepcopy": copy.deepcopy,
         "pickle": lambda x: pickle.loads(pickle.dumps(x)), "empty_like": ns.zeros_like,
         "T_copy": lambda x: x.T.copy(), "accumulate": lambda x: np.add.accumulate(x)}[op]
    g = {"add": lambda x: x + 1, "copy": np.copy, "deepcopy": np.copy, "pickle": np.copy,
         "empty_like": np.zeros_like, "T_copy": lambda x: x.T.copy(),
         "accumulate": lambda x: np.add.accumulate(x)}[op]
    got, _, _ = compare(lambda: g(values), lambda: f(s), mode)
    assert isinstance(got, Storage)
    assert got.halo == (s.T.halo if op == "T_copy" else s.halo)


@pytest.mark.parametrize("layout", [(0, 1, 2), (2, 1, 0), (1, 0, 2)])
@pytest.mark.parametrize("shape", [(2, 0, 3), (0, 4, 5), (3, 4, 0)])
def test_as_storage_of_empty_buffers(mode, shape, layout):
    """An empty buffer says nothing about the layout (NumPy gives it all-zero
    strides): wrapping one with an explicit layout, or wrapping an empty
    storage's own buffer, must work and keep that layout."""
    with mode_ctx(mode):
        s = ns.empty(shape, np.float32, layout=layout, alignment_size=16)
        w = ns.as_storage(np.asarray(s), layout=layout)
        assert w.layout == layout and w.shape == shape
        w = ns.as_storage(np.empty(shape, np.float32), layout=layout)
        assert w.layout == layout and w.shape == shape
        # without layout=, an empty buffer gives the fallback layout
        assert ns.as_storage(np.empty(shape)).layout == (0, 1, 2)


# ------------------------------------------------------- (b) basic indexing
@st.composite
def basic_keys(draw, shape):
    """(key, plan): a basic index for ``shape`` and, per key entry, the
    dimension it consumes (None for None/Ellipsis)."""
    ndim = len(shape)
    n_real = draw(st.integers(0, ndim + (1 if draw(st.integers(0, 9)) == 0 else 0)))
    ellipsis = draw(st.booleans())
    k_before = draw(st.integers(0, n_real)) if ellipsis else n_real
    targets = list(range(k_before)) + [ndim - (n_real - k_before) + j
                                       for j in range(n_real - k_before)]
    entries = []
    for d in targets:
        n = shape[d] if 0 <= d < ndim else 1
        bound = st.integers(-n - 2, n + 2)
        if n and draw(st.integers(0, 2)) == 0:
            i = draw(st.integers(-n - (1 if draw(st.integers(0, 9)) == 0 else 0), n - 1))
            entries.append((np.intp(i) if draw(st.integers(0, 3)) == 0 else i, d))
        else:
            step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2, -3])))
            entries.append((slice(draw(st.one_of(st.none(), bound)),
                                  draw(st.one_of(st.none(), bound)), step), d))
    if ellipsis:
        entries.insert(k_before, (Ellipsis, None))
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), (None, None))
    key = tuple(k for k, _ in entries)
    if len(key) == 1 and draw(st.booleans()):
        key = key[0]
    return key, entries


def slice_halo(n, lo, hi, sl):
    """Expected halo of a sliced dimension: how many of the selected indices,
    in selection order, fall before / after the domain [lo, n - hi)."""
    idx = list(range(n)[sl])
    below = sum(1 for i in idx if i < lo)
    above = sum(1 for i in idx if i >= n - hi)
    return (below, above) if (sl.step or 1) > 0 else (above, below)


def expected_view_meta(spec_dims, spec_halo, spec_layout, shape, entries):
    """dims (None for inserted axes), halo and kept-layout-ranks of s[key]."""
    ndim = len(shape)
    consumed = {d for k, d in entries if d is not None}
    rest = [d for d in range(ndim) if d not in consumed]
    out = []   # (dim name or None, halo, layout rank or None)
    has_ellipsis = any(k is Ellipsis for k, _ in entries)
    for k, d in entries:
        if k is Ellipsis:
            out.extend((spec_dims[r], spec_halo[r], spec_layout[r]) for r in rest)
        elif k is None:
            out.append((None, (0, 0), None))
        elif isinstance(k, slice):
            lo, hi = spec_halo[d]
            out.append((spec_dims[d], slice_halo(shape[d], lo, hi, k), spec_layout[d]))
    if not has_ellipsis:
        out.extend((spec_dims[r], spec_halo[r], spec_layout[r]) for r in rest)
    return out


def check_view(v, s, ref_view, meta):
    __tracebackhide__ = True
    assert isinstance(v, Storage) and type(v) is type(s), f"basic indexing gave {type(v)}"
    assert_bits(v, ref_view, "view")
    if v.size:
        assert np.shares_memory(np.asarray(v), np.asarray(s)), "view does not share memory"
    assert v.halo == tuple(h for _, h, _ in meta), f"halo {v.halo} != {[h for _, h, _ in meta]}"
    assert len(v.dims) == v.ndim == len(meta)
    for got, (name, _, _) in zip(v.dims, meta):
        if name is not None:
            assert got == name, f"dims {v.dims} != {[m for m, _, _ in meta]}"
    new = [got for got, (name, _, _) in zip(v.dims, meta) if name is None]
    assert len(set(v.dims)) == len(v.dims), f"repeated dims {v.dims}"
    assert all(isinstance(d, str) and d.isdigit() for d in new), v.dims
    # kept dimensions keep their relative layout order
    kept = [(v.layout[i], r) for i, (_, _, r) in enumerate(meta) if r is not None]
    assert [r for _, r in sorted(kept)] == sorted(r for _, r in kept), (v.layout, meta)
    assert sorted(v.layout) == list(range(v.ndim))
    if s.sync_state is not None:
        assert v.sync_state is s.sync_state


@pytest.mark.parametrize("dtype", DTYPES[::4], ids=DTYPE_IDS[::4])
@pytest.mark.parametrize("key", [(slice(None, None, -1), slice(1, 4)), (None, 2, Ellipsis),
                                 (slice(None, None, -2), None, slice(4, 0, -3)),
                                 (slice(1, -2), slice(None, None, -1)), (Ellipsis, 0),
                                 (slice(5, 0, -1), None), (slice(0, 1), slice(4, 5))])
def test_basic_indexing_corner_cases(mode, dtype, key):
    """The halo of a negatively stepped slice, None, Ellipsis, slices inside
    one side of the halo."""
    spec = Spec(shape=(6, 5), dtype=dtype, kind="cpu", how="empty",
                kw={"halo": ((1, 2), (0, 1)), "layout": (1, 0), "alignment_size": 64},
                halo=((1, 2), (0, 1)), layout=(1, 0), alignment=64, aligned_index=(1, 0),
                dims=("I", "J"), seed=1)
    s, values = build(spec)
    meta = expected_view_meta(spec.dims, spec.halo, spec.layout, spec.shape,
                              _entries_for(key, spec.shape))
    compare(lambda: values[key], lambda: s[key], mode,
            lambda got, exp: check_view(got, s, exp, meta))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_basic_indexing_gives_views(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, values = build(spec)
    key, entries = data.draw(basic_keys(spec.shape))
    ref = plain(s)

    def check(got, exp):
        if isinstance(exp, np.ndarray):
            meta = expected_view_meta(spec.dims, spec.halo, spec.layout, spec.shape, entries)
            check_view(got, s, exp, meta)
            # writes through the view reach the storage
            if got.size:
                with mode_ctx(mode):
                    fill = make_values(spec.dtype, got.shape, spec.seed + 1)
                    got[...] = fill
                    ref2 = values.copy()
                    ref2[key] = fill
                    assert_bits(np.asarray(s), ref2, "storage after writing through a view")
    compare(lambda: ref[key], lambda: s[key], mode, check)


def _entries_for(key, shape):
    """Plan entries (see basic_keys) for a hand-written key."""
    key = key if isinstance(key, tuple) else (key,)
    real = [k for k in key if k is not None and k is not Ellipsis]
    out, d = [], 0
    for k in key:
        if k is None:
            out.append((k, None))
        elif k is Ellipsis:
            out.append((k, None))
            d += len(shape) - len(real)
        else:
            out.append((k, d))
            d += 1
    return out


# --------------------------------------------- (b) advanced / boolean / keys
@st.composite
def advanced_keys(draw, shape, seed):
    """An advanced or boolean key for ``shape`` (possibly mixed with slices)."""
    rng = np.random.default_rng(seed)
    ndim = len(shape)
    kind = draw(st.sampled_from(["int_array", "int_list", "bool_full", "bool_lead", "mixed",
                                 "two_arrays", "bool_scalar"]))
    if ndim == 0 or kind == "bool_scalar":
        return draw(st.sampled_from([True, False, np.True_]))
    n0 = shape[0]
    if kind == "bool_full":
        return rng.random(shape) < 0.5
    if kind == "bool_lead":
        return rng.random(n0) < 0.5
    idx_shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)))
    idx = rng.integers(-n0, n0, idx_shape) if n0 else np.zeros(idx_shape, np.intp)
    if n0 == 0 and idx.size:
        idx = np.zeros((0,), np.intp)
    if kind == "int_list":
        return idx.reshape(-1).tolist() or [0][:n0]
    if kind == "mixed" and ndim >= 2:
        n1 = shape[1]
        j = rng.integers(-n1, n1, 3) if n1 else np.zeros(0, np.intp)
        return (slice(None, None, -1), j)
    if kind == "two_arrays" and ndim >= 2:
        n1 = shape[1]
        j = rng.integers(-n1, n1, idx.shape) if n1 else np.zeros(idx.shape, np.intp)
        if not n1:
            idx = np.zeros((0,), np.intp)
            j = np.zeros((0,), np.intp)
        return (idx, Ellipsis, j) if ndim >= 3 and draw(st.booleans()) else (idx, j)
    return idx


def as_storage_keys(key):
    """The same key with its arrays given as storages."""
    def conv(k):
        if isinstance(k, np.ndarray) and k.ndim >= 0 and not isinstance(k, Storage):
            return ns.storage(k)
        return k
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_advanced_and_boolean_indexing(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    key = data.draw(advanced_keys(spec.shape, spec.seed))
    ref = plain(s)

    def check(got, exp):
        assert type(got) is np.ndarray, f"advanced indexing gave {type(got)}"
    compare(lambda: ref[key], lambda: s[key], mode, check)
    # keys given as storages select the same elements
    skey = as_storage_keys(key)
    compare(lambda: ref[key], lambda: s[skey], mode, check)


@pytest.mark.parametrize("dtype", DTYPES[:1] + DTYPES[-1:], ids=["bool", "complex128"])
@given(data=st.data())
def test_storage_keys(mode, dtype, data):
    """0-d integer storages index like integers; a storage mask like a mask;
    a storage of indices like an index array; inside tuples too."""
    spec = data.draw(specs(dtype=dtype, max_ndim=3))
    s, values = build(spec)
    assume(s.ndim >= 1 and s.shape[0] > 0)
    i = data.draw(st.integers(-s.shape[0], s.shape[0] - 1))
    i0 = ns.storage(np.array(i))
    compare(lambda: values[i], lambda: s[i0], mode)
    compare(lambda: values[i, ...], lambda: s[i0, ...], mode)
    mask = make_values(np.bool_, spec.shape, spec.seed + 3)
    smask = ns.storage(mask, halo=spec.halo, layout=spec.layout)
    compare(lambda: values[mask], lambda: s[smask], mode)
    idx = np.arange(s.shape[0])[::-1]
    compare(lambda: values[idx], lambda: s[ns.storage(idx)], mode)
    if s.ndim >= 2:
        compare(lambda: values[:, idx[:1]], lambda: s[:, ns.storage(idx[:1])], mode)


# --------------------------------------------------------- (c) __setitem__
@st.composite
def set_values(draw, target_shape, dtype, seed):
    """A value for ``x[key] = value`` whose result shape is ``target_shape``."""
    kind = draw(st.sampled_from(["pyscalar", "npscalar", "array", "array_other_dtype",
                                 "broadcast", "storage", "storage_bcast"]))
    if kind == "pyscalar":
        return draw(st.sampled_from([0, 1, -1, 7, 300, -129, 2 ** 40, 0.5, -0.0, 1e300, float("nan"),
                                     float("inf"), True, False, 1 + 2j]))
    if kind == "npscalar":
        return draw(st.sampled_from([np.int8(-3), np.uint8(250), np.float32(2.5), np.float64(-0.0),
                                     np.float64(np.nan), np.complex128(3 - 1j), np.bool_(True),
                                     np.int64(2 ** 62)]))
    if kind in ("broadcast", "storage_bcast") and target_shape:
        shape = tuple(1 if draw(st.booleans()) else n for n in target_shape)
        shape = shape[draw(st.integers(0, len(shape))):]
    else:
        shape = target_shape
    dt = dtype if kind in ("array", "broadcast", "storage") else draw(st.sampled_from(DTYPES))
    v = make_values(dt, shape, seed)
    if kind.startswith("storage"):
        return ns.storage(v, layout=tuple(range(v.ndim))[::-1])
    return v


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_setitem_like_numpy(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    if data.draw(st.booleans()):
        key, _ = data.draw(basic_keys(spec.shape))
    else:
        key = data.draw(advanced_keys(spec.shape, spec.seed))
    ref = plain(s)
    try:
        target = ref[key].shape
    except IndexError:
        target = ()
    value = data.draw(set_values(target, spec.dtype, spec.seed + 7))
    pv = plain(value)

    def np_side():
        ref[key] = pv
        return ref

    def st_side():
        s[key] = value
        return np.asarray(s)
    _, _, exc = compare(np_side, st_side, mode)
    if exc is None:
        assert_bits(np.asarray(s), ref, "storage after __setitem__")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(spec=specs(max_ndim=3, max_extent=5), data=st.data())
def test_overlapping_self_assignment(mode, dtype, spec, data):
    """s[1:] = s[:-1], reversed and transposed self-assignment: NumPy's result."""
    spec.dtype = dtype
    s, _ = build(spec)
    assume(s.ndim >= 1)
    ax = data.draw(st.integers(0, s.ndim - 1))
    pre = (slice(None),) * ax
    cases = [(pre + (slice(1, None),), pre + (slice(None, -1),)),
             (pre + (slice(None, -1),), pre + (slice(1, None),)),
             (pre + (slice(None, None, -1),), pre + (slice(None),)),
             (pre + (slice(None, None, 2),), pre + (slice(None, None, -2),))]
    dst, src = data.draw(st.sampled_from(cases))
    ref = plain(s)

    def np_side():
        ref[dst] = ref[src]
        return ref

    def st_side():
        s[dst] = s[src]
        return np.asarray(s)
    compare(np_side, st_side, mode)
    if s.ndim == 2 and s.shape[0] == s.shape[1]:
        ref2 = np.asarray(s).copy()

        def np_t():
            ref2[...] = ref2.T
            return ref2

        def st_t():
            s[...] = s.T
            return np.asarray(s)
        compare(np_t, st_t, mode)


# -------------------------------------------------------------- (d) ufuncs
# (np.negative / operator.neg, np.signbit, np.isfinite: NumPy 2.4.6's own
# loops are wrong for some output strides that padded storages have;
# test_ufuncs_on_a_padded_column covers them, so that upstream bug does not
# hide others here)
UNARY = (np.positive, np.absolute, np.sqrt, np.exp, np.log, np.sin, np.floor,
         np.rint, np.sign, np.square, np.reciprocal, np.invert, np.logical_not, np.isnan,
         np.conjugate, np.modf, np.frexp, operator.pos, operator.abs, operator.invert)
BINARY = (np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder,
          np.power, np.maximum, np.minimum, np.fmax, np.arctan2, np.hypot, np.bitwise_and,
          np.bitwise_xor, np.left_shift, np.right_shift, np.logical_and, np.logical_or,
          np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
          np.copysign, np.divmod,
          operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
          operator.lshift, operator.rshift, operator.lt, operator.le, operator.eq,
          operator.ne, operator.gt, operator.ge)
INPLACE = (operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
           operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
           operator.ilshift, operator.irshift)
PY_SCALARS = (0, 1, -1, 2, 3, 200, -200, 1000, 2 ** 63, 0.5, -0.0, 2.5, float("nan"),
              float("inf"), 1e300, 1 + 2j, True, False)
NP_SCALARS = (np.float32(2.5), np.int8(-3), np.uint8(200), np.float64(np.nan),
              np.complex128(1j), np.bool_(True), np.int64(-7), np.float64(0.0))


def fn_name(f):
    return getattr(f, "__name__", repr(f))


@st.composite
def others(draw, spec):
    """A second operand for ``spec``'s storage."""
    kind = draw(st.sampled_from(["storage_same", "ndarray_same", "ndarray_bcast", "pyscalar",
                                 "npscalar", "storage_bcast", "ndarray_grow"]))
    seed = spec.seed + 11
    # (every scalar, Python bool and np.float64/np.complex128 included, is
    # tested in test_scalar_operands; here the ones that are plain numbers)
    if kind == "pyscalar":
        return draw(st.sampled_from([x for x in PY_SCALARS if not isinstance(x, bool)]))
    if kind == "npscalar":
        return draw(st.sampled_from([x for x in NP_SCALARS
                                     if not isinstance(x, (float, complex))]))
    dt = draw(st.sampled_from(DTYPES + (spec.dtype,) * 4))
    shape = spec.shape
    if kind in ("ndarray_bcast", "storage_bcast"):
        shape = tuple(1 if draw(st.booleans()) else n for n in shape)
        shape = shape[draw(st.integers(0, len(shape))):]
    elif kind == "ndarray_grow":
        shape = (draw(st.integers(0, 2)),) + tuple(1 if draw(st.booleans()) else n for n in shape)
    if kind.startswith("storage"):
        if kind == "storage_same":
            return build(draw(specs(dtype=dt, shape=shape, kinds=(spec.kind,))))[0]
        return ns.storage(make_values(dt, shape, seed), layout=tuple(range(len(shape)))[::-1])
    return make_values(dt, shape, seed)


def template_of(inputs, result_shape):
    for x in inputs:
        if isinstance(x, Storage) and x.shape == result_shape:
            return x
    return None


def check_laid_out_like(r, t, what="result"):
    """A new result laid out like storage operand ``t``."""
    __tracebackhide__ = True
    assert isinstance(r, Storage), f"{what}: {type(r)}, expected a storage like its operand"
    assert type(r) is type(t), f"{what}: {type(r).__name__} from a {type(t).__name__} operand"
    assert r.dims == t.dims, f"{what}: dims {r.dims} != operand's {t.dims}"
    assert r.halo == t.halo, f"{what}: halo {r.halo} != operand's {t.halo}"
    assert r.layout == t.layout, f"{what}: layout {r.layout} != operand's {t.layout}"
    want = t.strides if r.dtype == t.dtype else ns.empty_like(t, dtype=r.dtype).strides
    assert r.strides == want, (f"{what}: strides {r.strides} != {want} (operand {t.dtype} "
                               f"strides {t.strides}, result {r.dtype})")
    if r.size and t.size:
        assert not np.shares_memory(np.asarray(r), np.asarray(t))


def check_call_result(inputs, got, exp):
    outs = got if isinstance(got, tuple) else (got,)
    exps = exp if isinstance(exp, tuple) else (exp,)
    for g, e in zip(outs, exps):
        t = template_of(inputs, np.shape(e))
        if t is not None:
            check_laid_out_like(g, t)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_unary_ufuncs(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, values = build(spec)
    f = data.draw(st.sampled_from(UNARY), label="ufunc")
    ref = plain(s)
    compare(lambda: f(ref), lambda: f(s), mode, lambda g, e: check_call_result((s,), g, e))
    assert_bits(np.asarray(s), values, "operand after a unary ufunc")


PADDED_COLUMN_CASES = [
    # (ufunc, dtype, alignment_size): a (n, 1) storage whose padded rows give
    # the result a non-unit inner stride
    (np.negative, "int32", 16), (np.negative, "int64", 64), (np.negative, "float32", 16),
    (np.negative, "float64", 64), (np.signbit, "int16", 2), (np.signbit, "float64", 2),
    (np.isfinite, "float32", 2), (np.isfinite, "float64", 2),
]


@pytest.mark.parametrize("f, dtype, alignment", PADDED_COLUMN_CASES,
                         ids=[f"{f.__name__}-{d}-{a}" for f, d, a in PADDED_COLUMN_CASES])
def test_ufuncs_on_a_padded_column(mode, f, dtype, alignment):
    """f(s) for a column storage (shape (n, 1)) whose rows are padded to the
    alignment, so that the result (allocated like s) has a non-unit stride
    along its only moving axis.  NumPy 2.4.6 itself gets these wrong when
    writing into such an output (np.negative with equal in/out strides of 16
    bytes for 4-byte and 64 bytes for 8-byte types; np.signbit and
    np.isfinite into a strided bool output of 16+ elements, AVX2), so the
    storage's result differs from plain NumPy's on stock NumPy.  (These ops
    are left out of the hypothesis unary test so this does not hide others.)"""
    values = (np.arange(40) - 17).astype(dtype).reshape(40, 1)
    if np.dtype(dtype).kind == "f":
        values[::7] = np.nan
        values[::5] = -np.inf
    s = ns.storage(values, alignment_size=alignment)
    compare(lambda: f(values), lambda: f(s), mode, lambda g, e: check_laid_out_like(g, s))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_binary_ufuncs_and_operators(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, values = build(spec)
    f = data.draw(st.sampled_from(BINARY), label="ufunc")
    o = data.draw(others(spec))
    po = plain(o)
    ref = plain(s)
    if data.draw(st.booleans()):
        compare(lambda: f(ref, po), lambda: f(s, o), mode,
                lambda g, e: check_call_result((s, o), g, e))
    else:
        compare(lambda: f(po, ref), lambda: f(o, s), mode,
                lambda g, e: check_call_result((o, s), g, e))
    assert_bits(np.asarray(s), values, "operand after a binary ufunc")


@pytest.mark.parametrize("scalar", PY_SCALARS + NP_SCALARS, ids=repr)
@given(data=st.data())
def test_scalar_operands(mode, scalar, data):
    """Python scalars (weak, NEP 50) and NumPy scalars on either side."""
    spec = data.draw(specs())
    s, _ = build(spec)
    f = data.draw(st.sampled_from(BINARY), label="ufunc")
    ref = plain(s)
    if data.draw(st.booleans()):
        compare(lambda: f(ref, scalar), lambda: f(s, scalar), mode,
                lambda g, e: check_call_result((s, scalar), g, e))
    else:
        compare(lambda: f(scalar, ref), lambda: f(scalar, s), mode,
                lambda g, e: check_call_result((scalar, s), g, e))


@pytest.mark.parametrize("op", [operator.pow, operator.ipow], ids=["pow", "ipow"])
@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -1, -1.0, 1, 0, 3], ids=repr)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "complex128"])
def test_power_operator_with_scalar_exponents(mode, dtype, exponent, op):
    """ndarray's ** and **= with a scalar exponent: values, errors and
    warnings (NumPy computes some of them as square/sqrt/reciprocal)."""
    with np.errstate(all="ignore"):
        values = np.array([-1.0, 0.0, -0.0, 1e300, 1e-300, 3.0, np.nan, np.inf]).astype(dtype)
    s = ns.storage(values, alignment_size=32)
    ref = plain(s)
    before = s

    def st_side():
        r = op(s, exponent)
        if op is operator.ipow:
            assert r is before
        return r
    _, _, exc = compare(lambda: op(ref, exponent), st_side, mode,
                        lambda g, e: check_call_result((s,), g, e) if op is operator.pow else None)
    if exc is None:
        assert_bits(np.asarray(s), ref, "storage after the operator")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_ufunc_dtype_keyword_keeps_the_layout(mode, dtype, data):
    """np.add(s, x, dtype=...) is still a storage laid out like s."""
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    f = data.draw(st.sampled_from((np.add, np.multiply, np.absolute, np.maximum)))
    dt = data.draw(st.sampled_from(DTYPES))
    args = (s,) if f.nin == 1 else (s, 1)
    pargs = (plain(s),) if f.nin == 1 else (plain(s), 1)
    compare(lambda: f(*pargs, dtype=dt), lambda: f(*args, dtype=dt), mode,
            lambda g, e: check_call_result(args, g, e))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_inplace_operators(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    f = data.draw(st.sampled_from(INPLACE), label="op")
    o = data.draw(others(spec))
    po = plain(o)
    ref = plain(s)
    before = s

    def np_side():
        return f(ref, po)

    def st_side():
        r = f(s, o)
        assert r is before, f"{fn_name(f)} returned {type(r)}, not the storage itself"
        return r
    _, _, exc = compare(np_side, st_side, mode)
    if exc is None:   # (after an error inside the loop the contents are undefined)
        assert_bits(np.asarray(s), ref, f"storage after {fn_name(f)}")
    assert s.halo == spec.halo and s.dims == spec.dims and s.layout == spec.layout


def _probe_bigint_where_crash():
    """True when this NumPy crashes on np.equal(int64, big, out=, where=)
    with a Python int outside int64's range: 2**63 crashes NumPy 2.5.2,
    -2**63 - 1 crashes 2.5.5 (with any where=, None included)."""
    import subprocess
    import sys
    codes = ["import numpy as np; a = np.zeros(2, np.int64); "
             f"np.equal(a, {big}, out=np.zeros(2, bool), where=np.ones(2, bool))"
             for big in ("2**63", "-2**63 - 1")]
    return any(subprocess.run([sys.executable, "-c", code], capture_output=True,
                              timeout=60).returncode != 0 for code in codes)


NUMPY_BIGINT_WHERE_CRASH = _probe_bigint_where_crash()


def _out_of_range_int(x, dtype):
    if not isinstance(x, int) or isinstance(x, bool) or dtype.kind not in "iu":
        return False
    info = np.iinfo(dtype)
    return not info.min <= x <= info.max


OUT_DTYPES = DTYPES[::2]
OUT_UFUNCS = tuple(b for b in BINARY if isinstance(b, np.ufunc) and b.nout == 1)


@pytest.mark.parametrize("out_kind", ["storage", "ndarray", "tuple", "self"])
@pytest.mark.parametrize("dtype", OUT_DTYPES, ids=[d.name for d in OUT_DTYPES])
@given(data=st.data())
def test_out(mode, dtype, out_kind, data):
    """out= a storage, an ndarray, a 1-tuple, the operand itself; with and
    without where= (an ndarray, a storage, a bool): NumPy returns ``out``
    itself and writes only where the mask is set."""
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    f = data.draw(st.sampled_from(OUT_UFUNCS), label="ufunc")
    o = data.draw(others(spec))
    po = plain(o)
    ref = plain(s)
    exp, exc, _ = run(lambda: f(ref, po))
    assume(exc is None and isinstance(exp, np.ndarray))
    use_where = data.draw(st.sampled_from(["none", "ndarray", "storage", "bool"]))
    if NUMPY_BIGINT_WHERE_CRASH and use_where != "none" and _out_of_range_int(po, ref.dtype):
        # NumPy 2.5.2 and 2.5.5 segfault on a comparison with a Python int
        # outside the array's range when where= is given, plain ndarrays
        # included (probed above): not a case a test of nclx can run
        assume(False)
    if out_kind == "self":
        assume(exp.shape == s.shape and np.can_cast(exp.dtype, s.dtype, "same_kind"))
    mask = make_values(np.bool_, exp.shape, spec.seed + 5)
    where = {"none": None, "ndarray": mask, "storage": ns.storage(mask),
             "bool": data.draw(st.booleans())}[use_where]
    pwhere = plain(where)
    init = make_values(exp.dtype if out_kind != "self" else s.dtype, exp.shape, spec.seed + 9)
    if out_kind == "self":
        st_out, np_out = s, ref
    elif out_kind == "ndarray":
        st_out, np_out = init.copy(), init.copy()
    else:
        out_spec = data.draw(specs(dtype=init.dtype, shape=exp.shape, hows=("empty",)))
        st_out, _ = build(out_spec, init.copy())
        np_out = init.copy()
    kw_np = {"out": (np_out,) if out_kind == "tuple" else np_out}
    kw_st = {"out": (st_out,) if out_kind == "tuple" else st_out}
    if where is not None:
        kw_np["where"], kw_st["where"] = pwhere, where

    def st_side():
        r = f(s, o, **kw_st)
        assert r is st_out, f"{fn_name(f)}(out=<{type(st_out).__name__}>) returned {r!r}, not out"
        return np.asarray(r)

    def np_side():
        return f(ref, po, **kw_np)
    _, _, exc = compare(np_side, st_side, mode)
    if exc is None:
        assert_bits(np.asarray(st_out), np_out, "out after the call")
    if isinstance(st_out, Storage):
        assert st_out.halo == out_spec.halo if out_kind != "self" else spec.halo


@pytest.mark.parametrize("dtype", OUT_DTYPES, ids=[d.name for d in OUT_DTYPES])
@given(data=st.data())
def test_where_without_out(mode, dtype, data):
    """where= without out=: the masked elements, dtype, shape, layout and
    NumPy's warning about uninitialised memory."""
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    f = data.draw(st.sampled_from(OUT_UFUNCS), label="ufunc")
    o = data.draw(others(spec))
    po = plain(o)
    ref = plain(s)
    exp, exc, _ = run(lambda: f(ref, po))
    assume(exc is None and isinstance(exp, np.ndarray))
    mask = make_values(np.bool_, exp.shape, spec.seed + 5)
    where = ns.storage(mask) if data.draw(st.booleans()) else mask
    e, e_exc, e_w = run(lambda: f(ref, po, where=mask))
    with mode_ctx(mode):
        g, g_exc, g_w = run(lambda: f(s, o, where=where))
    assert (e_exc is None) == (g_exc is None), (e_exc, g_exc)
    if e_exc is None:
        assert np.asarray(g).dtype == e.dtype and np.shape(g) == e.shape
        m = np.broadcast_to(mask, e.shape)
        assert_bits(np.asarray(g)[m], e[m], "result where the mask is set")
        check_call_result((s, o), g, e)
    assert g_w == e_w, f"warnings differ:\n  numpy:   {e_w}\n  storage: {g_w}"


REDUCERS = ("add.reduce", "multiply.reduce", "maximum.reduce", "minimum.reduce",
            "logical_and.reduce", "bitwise_or.reduce", "sum", "prod", "max", "min", "mean",
            "all", "any")
ACCUMULATORS = ("add.accumulate", "multiply.accumulate", "maximum.accumulate",
                "logical_or.accumulate")


def reducer(name):
    if "." in name:
        uf, method = name.split(".")
        return getattr(getattr(np, uf), method)
    return getattr(np, name)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_reductions(mode, dtype, data):
    """reduce, np.sum/prod/max/min/mean/all/any with axis (None, int,
    tuple) and keepdims: values, dtypes, warnings; storage results keep the
    dims and halo of the axes that remain."""
    _reduction_case(mode, dtype, data, accumulate=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_accumulate(mode, dtype, data):
    """accumulate has the operand's shape: a storage laid out like it."""
    _reduction_case(mode, dtype, data, accumulate=True)


def _reduction_case(mode, dtype, data, accumulate=None):
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    name = data.draw(st.sampled_from(REDUCERS + ACCUMULATORS if accumulate is None else
                                     (ACCUMULATORS if accumulate else REDUCERS)), label="reducer")
    f = reducer(name)
    nd = s.ndim
    kw = {}
    axis_kind = data.draw(st.sampled_from(["default", "none", "int", "tuple"]))
    if name.endswith("accumulate"):
        axis_kind = data.draw(st.sampled_from(["default", "int"]))
    if axis_kind == "none":
        kw["axis"] = None
    elif axis_kind == "int":
        kw["axis"] = data.draw(st.integers(-max(nd, 1), max(nd - 1, 0)))
    elif axis_kind == "tuple":
        kw["axis"] = tuple(data.draw(st.permutations(range(nd)))[:data.draw(st.integers(0, nd))])
    if not name.endswith("accumulate") and data.draw(st.booleans()):
        kw["keepdims"] = True
    ref = plain(s)

    def check(got, exp):
        if not isinstance(exp, np.ndarray):
            return
        if name.endswith("accumulate"):
            check_laid_out_like(got, s, name)
        elif isinstance(got, Storage):
            ax = kw.get("axis", 0 if "." in name else None)
            axes = set(range(nd)) if ax is None else {a % nd for a in
                                                      (ax if isinstance(ax, tuple) else (ax,))}
            if kw.get("keepdims"):
                want_halo = tuple((0, 0) if d in axes else spec.halo[d] for d in range(nd))
                want_dims = spec.dims
            else:
                want_halo = tuple(spec.halo[d] for d in range(nd) if d not in axes)
                want_dims = tuple(spec.dims[d] for d in range(nd) if d not in axes)
            assert got.dims == want_dims, f"{name}{kw}: dims {got.dims} != {want_dims}"
            assert got.halo == want_halo, f"{name}{kw}: halo {got.halo} != {want_halo}"
    compare(lambda: f(ref, **kw), lambda: f(s, **kw), mode, check)


@pytest.mark.parametrize("dtype", DTYPES[5:], ids=DTYPE_IDS[5:])
@given(spec=specs(max_ndim=2), data=st.data())
def test_matmul_like_numpy(mode, dtype, spec, data):
    """A gufunc: the result shape is not the broadcast of the operands'."""
    spec.dtype = dtype
    s, _ = build(spec)
    assume(1 <= s.ndim <= 2)
    k = s.shape[-1]
    oshape = data.draw(st.sampled_from([(k,), (k, 1), (k, k), (k, 3)]))
    o = make_values(dtype, oshape, spec.seed + 2)
    so = ns.storage(o)
    ref = plain(s)
    compare(lambda: ref @ o, lambda: s @ so, mode)
    compare(lambda: np.matmul(ref, o), lambda: np.matmul(s, o), mode)


# ------------------------------------------------------------ (e) transpose
@pytest.mark.parametrize("dtype", DTYPES[::4], ids=DTYPE_IDS[::4])
@given(data=st.data())
def test_transpose_permutes_dims_halo_layout(mode, dtype, data):
    spec = data.draw(specs(dtype=dtype))
    s, _ = build(spec)
    nd = s.ndim
    perm = tuple(data.draw(st.permutations(range(nd))))
    neg = tuple(a - nd if data.draw(st.booleans()) else a for a in perm)
    how = data.draw(st.sampled_from(["method_args", "method_tuple", "np", "np_none", "T",
                                     "method_none", "method_ndarray", "np_list"]))
    if how in ("np_none", "T", "method_none"):
        perm = neg = tuple(range(nd))[::-1]
    call = {"method_args": lambda: s.transpose(*neg), "method_tuple": lambda: s.transpose(neg),
            "np": lambda: np.transpose(s, neg), "np_none": lambda: np.transpose(s),
            "T": lambda: s.T, "method_none": lambda: s.transpose(),
            "method_ndarray": lambda: s.transpose(np.array(neg, dtype=np.intp)),
            "np_list": lambda: np.transpose(s, list(neg))}[how]
    ref = plain(s)

    def check(got, exp):
        assert type(got) is type(s)
        assert got.dims == tuple(spec.dims[a] for a in perm)
        assert got.halo == tuple(spec.halo[a] for a in perm)
        assert got.layout == tuple(spec.layout[a] for a in perm)
        assert got.strides == tuple(s.strides[a] for a in perm)
        if got.size:
            assert np.shares_memory(np.asarray(got), np.asarray(s))
        back = got.transpose(tuple(int(i) for i in np.argsort(perm)))
        assert back.dims == s.dims and back.halo == s.halo and back.layout == s.layout
        if s.sync_state is not None:
            assert got.sync_state is s.sync_state
    compare(lambda: np.transpose(ref, perm), call, mode, check)


@pytest.mark.parametrize("axes", [(0, 2), (0, 3), (-3, 0), (2, -1), (0, 0), (0,), (0, 1, 2),
                                  (1.0, 0)])
def test_transpose_bad_axes_raise_like_numpy(mode, axes):
    s = ns.zeros((2, 3), halo=((1, 0), (0, 1)))
    ref = np.zeros((2, 3))
    compare(lambda: ref.transpose(axes), lambda: s.transpose(axes), mode)
    compare(lambda: np.transpose(ref, axes), lambda: np.transpose(s, axes), mode)


# ------------------------------------------------- (f) copy / deepcopy / pickle
COPIERS = {"copy": lambda s: s.copy(), "copy.copy": copy.copy, "deepcopy": copy.deepcopy,
           **{f"pickle{p}": (lambda s, p=p: pickle.loads(pickle.dumps(s, protocol=p)))
              for p in range(2, pickle.HIGHEST_PROTOCOL + 1)}}


@pytest.mark.parametrize("how", sorted(COPIERS))
@given(spec=specs(), data=st.data())
def test_copies_keep_everything(mode, how, spec, data):
    s, values = build(spec)
    with mode_ctx(mode):
        c = COPIERS[how](s)
    assert type(c) is type(s)
    assert_bits(c, values, how)
    assert c.dims == s.dims and c.halo == s.halo and c.layout == s.layout
    assert c.strides == s.strides, f"{how}: strides {c.strides} != {s.strides}"
    assert c.alignment_size == s.alignment_size
    assert c.aligned_index == s.aligned_index, (
        f"{how}: aligned_index {c.aligned_index} != {s.aligned_index}")
    if c.size:
        assert not np.shares_memory(np.asarray(c), np.asarray(s))
        a = np.asarray(c)
        assert address_of(a, c.aligned_index) % c.alignment_size == 0
        # independent: writing the copy leaves the original alone
        c[...] = make_values(spec.dtype, spec.shape, spec.seed + 1)
        assert_bits(s, values, "original after writing its copy")
    if s.sync_state is not None:
        assert c.sync_state is not s.sync_state


@pytest.mark.parametrize("how", sorted(COPIERS))
@given(spec=specs(max_ndim=3), data=st.data())
def test_copies_of_views(mode, how, spec, data):
    s, values = build(spec)
    key, _ = data.draw(basic_keys(spec.shape))
    r, exc, _ = run(lambda: values[key])
    assume(exc is None and isinstance(r, np.ndarray))
    v = s[key]
    if data.draw(st.booleans()):
        v = v.T
        r = r.T
    with mode_ctx(mode):
        c = COPIERS[how](v)
    assert type(c) is type(v)
    assert_bits(c, r, f"{how} of a view")
    assert c.dims == v.dims and c.halo == v.halo and c.layout == v.layout


def test_deepcopy_and_pickle_keep_identity_in_containers(mode):
    s = ns.ones((3, 4), halo=1, alignment_size=32)
    with mode_ctx(mode):
        d = copy.deepcopy([s, s])
        p = pickle.loads(pickle.dumps([s, s]))
    assert d[0] is d[1] and p[0] is p[1]
    assert d[0] is not s and p[0] is not s
