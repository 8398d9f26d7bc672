"""Review 26 (an audit of the docs against the code): the defects it found,
each failing before its fix."""
import pathlib
import re

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
import nclx.ledger

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python_blocks(doc):
    return re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), flags=re.S)


def test_the_readmes_first_example_runs_as_written(capsys):
    block = _python_blocks("README.md")[0]
    assert "show_config" in block
    exec(compile(block, "README.md", "exec"), {})     # before: NameError: name 'nclx'
    assert "numpy" in capsys.readouterr().out.lower()


def test_the_double_inputs_example_prints_what_hooks_md_says():
    (block,) = [b for b in _python_blocks("docs/hooks.md") if "def double_inputs" in b]
    *code, last = block.strip().splitlines()
    expr, comment = last.split("#", 1)
    want = comment.split(":")[0].strip()
    ns = {"np": np, "hooks": hooks}
    exec("\n".join(code), ns)
    try:
        got = repr(eval(expr, ns))
    finally:
        hooks.reset()
    assert got == want          # before: the doc said NclxArray([1, 3, 5])


def test_the_ledger_record_fields_are_the_documented_ones():
    text = (ROOT / "docs/hooks.md").read_text()
    fields = re.search(r"`led\.records\(\)` returns `Record\(([^)]*)\)`", text).group(1)
    with nclx.ledger.recording() as led:
        np.arange(10.0).sum()
        np.sort(np.arange(10))
    recs = led.records()
    assert tuple(f.strip() for f in fields.split(",")) == type(recs[0])._fields
    kinds = re.search(r"rows \(kind is ([^;]*)\)", text.replace("\n", " ")).group(1)
    for r in recs:
        assert f'"{r.kind}"' in kinds


class _Holder:
    @nclx.fuse
    def twice(self, x):
        return x * 2


def test_explain_of_a_fused_method_is_the_call_s_reason():
    a = np.ones(100_000)
    h = _Holder()
    assert (h.twice(a) == a * 2).all()
    # before: "tracing raised TypeError: ... missing 1 required positional argument"
    assert h.twice.explain(a) == _Holder.twice.explain(h, a)
    assert "_Holder" in h.twice.explain(a)
    assert h.twice.__name__ == "twice" and h.twice.__self__ is h
    assert h.twice == h.twice and hash(h.twice) == hash(h.twice)


def test_a_handle_reads_removed_after_reset_in_its_repr_too():
    h = hooks.register("funnel", "binary", lambda call: call.next(), name="r26")
    assert "(active)" in repr(h)
    hooks.reset()
    assert "(removed)" in repr(h)        # before: "(active)" (until .removed was read)
    assert h.removed


# -- nclx.ufuncs (review 26, a helper's ~120,000 comparisons with NumPy) -----

import pickle                                       # noqa: E402
import warnings                                     # noqa: E402

import nclx.ufuncs as nu                            # noqa: E402


def _outcome(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - compared
            return ("exc", type(exc).__name__, str(exc).replace(repr(fn), "F"))
    r = np.asarray(r)
    return ("ok", r.dtype.str, r.shape, r.tobytes(), [str(w.message) for w in seen])


STRINGS = [np.array(["a", "bc", ""]), np.array([b"a", b"bc", b""]),
           np.array(["x", "", "yz"], dtype=np.dtypes.StringDType())]


@pytest.mark.parametrize("op", ["equal", "not_equal", "less", "less_equal", "greater",
                                "greater_equal", "add", "maximum", "minimum"])
@pytest.mark.parametrize("k", range(len(STRINGS)))
def test_string_operands_are_numpys(op, k):
    a = STRINGS[k]
    for args in ((a, a), (a, a[::-1]), (a, a[:1])):
        # before: "did not contain a loop" where NumPy computes
        assert _outcome(getattr(nu, op), *args) == _outcome(getattr(np, op), *args)


def test_a_str_scalar_and_string_multiply_are_numpys():
    a = STRINGS[0]
    assert _outcome(nu.equal, a, "a") == _outcome(np.equal, a, "a")
    out1, out2 = np.empty(3, "U4"), np.empty(3, "U4")
    nu.multiply(a, np.array([2, 3, 1]), out=out1)
    np.multiply(a, np.array([2, 3, 1]), out=out2)
    assert out1.tobytes() == out2.tobytes()
    assert _outcome(nu.multiply, a, 2)[:2] == _outcome(np.multiply, a, 2)[:2]


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_of_datetimes_are_numpys(op):
    d = np.array(["2020-01-01", "NaT", "1970-01-01"], dtype="M8[D]")
    t = np.array([0, 5, -1], dtype="m8[s]")
    for args in ((d, True), (t, t), (d, d)):
        assert _outcome(getattr(nu, op), *args) == _outcome(getattr(np, op), *args)
    assert _outcome(nu.logical_not, t) == _outcome(np.logical_not, t)


@pytest.mark.parametrize("op,data", [("sqrt", [-1.0, 0.0, 4.0]), ("log", [0.0, -2.0, 4.0]),
                                     ("arccos", [2.0, 0.5, -1.0])])
def test_masked_arrays_mask_nclx_domains_as_numpys(op, data):
    import numpy.ma as ma
    got, want = getattr(nu, op)(ma.array(data)), getattr(np, op)(ma.array(data))
    assert got.mask.tolist() == want.mask.tolist()          # before: nothing masked
    assert got.filled(0).tobytes() == want.filled(0).tobytes()
    a, b = ma.array([1.0, 4.0]), ma.array([0.0, 2.0])
    assert nu.divide(a, b).mask.tolist() == np.divide(a, b).mask.tolist()


def test_docs_names_and_pickles_are_numpys_kind():
    for name in ("add", "sqrt", "logical_and", "true_divide", "remainder"):
        uf, npuf = getattr(nu, name), getattr(np, name)
        summary = next(ln for ln in npuf.__doc__.splitlines()[1:] if ln.strip())
        assert uf.__doc__.rstrip().endswith(summary)          # before: a blank line
        if hasattr(npuf, "__module__"):      # NumPy 2.1 and later (2.0's ufuncs have none)
            assert uf.__module__ == "nclx.ufuncs" and uf.__qualname__ == npuf.__name__
            assert pickle.loads(pickle.dumps(uf)) is uf
        else:
            # pickle finds it by scanning sys.modules, whose numpy.linalg.linalg
            # warns on the way (NumPy 2.0's deprecation shim)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                assert pickle.loads(pickle.dumps(uf)) is uf


def test_routing_keeps_nclx_loops_for_numbers():
    with nclx.ledger.recording() as led:
        nu.add(np.arange(10), 1)
        nu.equal(np.arange(10.0), 3.0)
    assert {r.op for r in led.records()} >= {"add", "equal"}
