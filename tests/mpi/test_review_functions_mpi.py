"""Review (issue 25) regressions: NumPy functions on DistArrays at edge
inputs, each against NumPy on the gathered global array, on 1..6 ranks."""
import numpy as np

from fn_helpers import compare, make
from mpi_helpers import collective_assert, outcome


def test_norm_inf_of_empty_vector_is_zero():
    """NumPy's ``norm(x, inf)`` of an empty vector is 0.0 (max with initial=0)."""
    g = np.zeros(0)
    bad = []
    for kw in (dict(), dict(dist=("c",))):
        kind, got = outcome(lambda: np.linalg.norm(make(g, **kw), np.inf))
        want = np.linalg.norm(g, np.inf)
        bad.append(f"{kw}: raised {got}" if kind == "exc" else compare(f"{kw}", got, want))
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))


def test_complex_max_min_with_empty_blocks():
    """max/min (and nanmax/nanmin, axis=0 of 2-D) of a complex DistArray where
    some ranks hold no cell: NumPy's value, not a 'no neutral value' error."""
    g = np.array([1 + 2j, 3 - 1j, 3 - 2j])
    g2 = np.array([[1 + 2j, 0j], [3 - 1j, 5j]])
    bad = []
    for tag, arr, kw, f in [("max", g[:1], {}, np.max), ("min", g, dict(dist=("c",)), np.min),
                            ("nanmax", g[:1], {}, np.nanmax), ("nanmin", g[:2], {}, np.nanmin),
                            ("max axis 0", g2, dict(dist=("b", "n")),
                             lambda x: np.max(x, axis=0))]:
        kind, got = outcome(lambda: f(make(arr, **kw)))
        bad.append(f"{tag}: raised {got}" if kind == "exc" else compare(tag, got, f(arr)))
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))


def test_vstack_hstack_of_0d_distarrays():
    """vstack/hstack of 0-d DistArrays (each rank's own, on COMM_SELF): NumPy's
    atleast_2d/atleast_1d shapes, (2, 1) and (2,) -- not (2,) and an error."""
    from mpi4py import MPI

    import nclx.dap as dap
    g = np.array(3.5)
    h = np.array([1.5])
    bad = []
    for tag, f in [("vstack", lambda a, b: np.vstack([a, a])),
                   ("vstack 0-d and 2-d", lambda a, b: np.vstack([a, b.reshape(1, 1)])),
                   ("hstack", lambda a, b: np.hstack([a, a])),
                   ("hstack 0-d and 1-d", lambda a, b: np.hstack([a, b]))]:
        d = dap.DistArray.from_global(g, comm=MPI.COMM_SELF)
        e = dap.DistArray.from_global(h, comm=MPI.COMM_SELF)
        kind, got = outcome(lambda: f(d, e))
        if kind == "exc":
            bad.append(f"{tag}: raised {got}")
            continue
        got = got.gather(root=0)
        want = f(g, h)
        if got.shape != want.shape or got.tobytes() != want.tobytes():
            bad.append(f"{tag}: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))


def test_scans_of_0d_distarray():
    """cumsum/cumprod (axis=None) of a 0-d DistArray (each rank's own, on
    COMM_SELF): NumPy's 1-element result, not an IndexError."""
    from mpi4py import MPI

    import nclx.dap as dap
    g = np.array(3.5)
    bad = []
    for tag, f in [("cumsum", np.cumsum), ("cumprod", np.cumprod),
                   ("cumsum int8", lambda x: np.cumsum(x, dtype=np.int8))]:
        kind, got = outcome(lambda: f(dap.DistArray.from_global(g, comm=MPI.COMM_SELF)))
        if kind == "exc":
            bad.append(f"{tag}: raised {got}")
            continue
        got, want = got.gather(root=0), f(g)
        if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
            bad.append(f"{tag}: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))


def test_full_like_array_fill_raises_everywhere():
    """np.full_like(da, fill) with an array fill_value: the same DapError on
    every rank, not a per-block broadcast (silently wrong values where the
    fill fits a block, an error only on the ranks where it does not)."""
    from nclx.dap import DapError
    g = np.zeros((5, 3))
    bad = []
    for fill in (np.arange(2.).reshape(2, 1), np.arange(1.).reshape(1, 1, 1), [1.0, 2.0]):
        kind, got = outcome(lambda: np.full_like(make(g), fill))
        if kind != "exc" or DapError.__name__ not in got or "fill_value" not in got:
            bad.append(f"fill shape {np.shape(fill)}: {kind} {got if kind == 'exc' else ''}")
    kind, got = outcome(lambda: np.full_like(make(g), np.float32(2.5)))
    bad.append(f"scalar fill: {got}" if kind == "exc" else compare("scalar", got,
                                                                 np.full_like(g, np.float32(2.5))))
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))


def test_out_of_the_wrong_shape_is_refused():
    """A full reduction's out= of the wrong shape raises ValueError on every
    rank as NumPy's does (it was filled by broadcasting, silently)."""
    g = np.arange(12.).reshape(3, 4)
    bad = []
    for tag, f in [("sum", lambda x, o: np.sum(x, out=o)), ("mean", lambda x, o: np.mean(x, out=o)),
                   ("max", lambda x, o: np.max(x, out=o)), ("var", lambda x, o: np.var(x, out=o)),
                   ("std", lambda x, o: np.std(x, out=o)), ("nansum", lambda x, o: np.nansum(x, out=o)),
                   ("nanmean", lambda x, o: np.nanmean(x, out=o))]:
        kind, got = outcome(lambda: f(make(g), np.zeros(3)))
        if kind != "exc" or not got.startswith("ValueError"):
            bad.append(f"{tag}: {kind} {got}")
        o = np.zeros(())
        kind, got = outcome(lambda: f(make(g), o))
        bad.append(f"{tag} 0-d out: {got}" if kind == "exc" else
                   compare(tag, got, f(g, np.zeros(())), exact=False))
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))


def test_axis_reductions_argsort_histogram_of_0d_distarray():
    """A 0-d DistArray (each rank's own, on COMM_SELF) as NumPy treats a 0-d
    array: ufunc reductions and argmin/argmax accept axis 0 or -1 (the whole
    array), argsort gives array([0]), histogram counts the one value; mean,
    var and a tuple axis raise NumPy's AxisError.  Before: AxisError from
    the reductions and argmax, a DapError from argsort."""
    from mpi4py import MPI

    import nclx.dap as dap
    g = np.array(3.5)
    bad = []
    for tag, f in [("sum axis=0", lambda x: np.sum(x, axis=0)),
                   ("sum axis=-1 keepdims", lambda x: np.sum(x, axis=-1, keepdims=True)),
                   ("max axis=0", lambda x: np.max(x, axis=0)),
                   ("prod axis=-1", lambda x: np.prod(x, axis=-1)),
                   ("any axis=0", lambda x: np.any(x, axis=0)),
                   ("add.reduce axis=0", lambda x: np.add.reduce(x, axis=0)),
                   ("argmax axis=0", lambda x: np.argmax(x, axis=0)),
                   ("argmin axis=-1", lambda x: np.argmin(x, axis=-1)),
                   ("argsort", np.argsort), ("argsort axis=None", lambda x: np.argsort(x, axis=None)),
                   ("histogram", lambda x: np.histogram(x)[0]),
                   ("mean axis=0", lambda x: np.mean(x, axis=0)),
                   ("var axis=0", lambda x: np.var(x, axis=0)),
                   ("sum axis=(0,)", lambda x: np.sum(x, axis=(0,))),
                   ("sum axis=1", lambda x: np.sum(x, axis=1))]:
        kw, want = outcome(lambda: f(g))
        kind, got = outcome(lambda: f(dap.DistArray.from_global(g, comm=MPI.COMM_SELF)))
        if kw == "exc" or kind == "exc":
            if kw != kind or want.split(":")[0] != got.split(":")[0]:
                bad.append(f"{tag}: {kind} {got!r}, NumPy {kw} {want!r}")
            continue
        got = got.gather(root=0) if hasattr(got, "gather") else got
        got, want = np.asarray(got), np.asarray(want)
        if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
            bad.append(f"{tag}: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))
