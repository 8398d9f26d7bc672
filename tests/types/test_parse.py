"""parse: round trip of canonical strings, errors naming the 1-based column."""
import pytest
from hypothesis import given, strategies as st

from nclx.types import (Dim, Option, Record, Scalar, String, TypeStringError, from_string,
                        parse)
from nclx.types.datashape import SCALAR_NAMES

CANONICAL = [
    "2 * 3 * int32", "3 * var * int64", "4 * string", "3 * {x: int32, y: float64}",
    "5 * ?int64", "2 * var * var * float32", "3 * 2 * var * uint8", "int8",
    "strided * strided * int32", "strided * var * int32", "pointer[int32]",
    "3 * pointer[2 * float64]", "2 * option[var * int64]", "1 * {\"a b\": int64, c: ?unknown}",
    "1 * (int64, float64)", "2 * union[int64, string]", "3 * ?categorical[type=string]",
    "1 * bytes[2]", "2 * datetime64[ms]", "timedelta64[10s]", "datetime64", "0 * unknown",
    "2 * 3 * {x: int32, y: uint8}", "{}", "()", "3 * {x: 2 * int32, y: var * ?string}",
    "option[categorical[type=var * int64]]", "?{x: int32}", "{int32: int64, var: bool}",
]


@pytest.mark.parametrize("s", CANONICAL)
def test_round_trip(s):
    t = parse(s)
    assert str(t) == s
    assert parse(str(t)) == t
    assert from_string(s) == t


def test_structure():
    t = parse("3 * var * ?int64")
    assert t == Dim("fixed", Dim("var", Option(Scalar("int64"))), 3)
    assert [d.kind for d in t.dims] == ["fixed", "var"]
    assert t.measure == Option(Scalar("int64"))
    r = parse("{x: int32, y: string}")
    assert isinstance(r, Record) and r.names == ("x", "y") and r.fields[1] == String("string")
    assert parse(" 3*var *  int64 ") == parse("3 * var * int64")


@pytest.mark.parametrize("s, column, words", [
    ("", 1, "empty"),
    ("3 * ", 5, "expected a type"),
    ("3 * var * int33", 11, "unknown type name 'int33'"),
    ("3 * {x: int32, y float64}", 18, "':' after field name 'y'"),
    ("3 * {x: int32, x: int8}", 16, "duplicate field name 'x'"),
    ("3 $ int32", 3, "unexpected character '$'"),
    ("3 * int32 int64", 11, "after a complete type"),
    ("?var * int64", 2, "option[...]"),
    ("option[int32", 13, "']' closing option["),
    ("datetime64[qq]", 12, "unknown time unit"),
    ("3 * (int32, ", 13, "expected a type"),
    ("var", 1, "unknown type name 'var'"),
    ("categorical[int32]", 13, "'type=' inside categorical["),
    ("bytes[x]", 7, "a width in bytes"),
    ("-3 * int32", 1, "unexpected character '-'"),
])
def test_errors_name_the_column(s, column, words):
    with pytest.raises(TypeStringError) as info:
        parse(s)
    assert info.value.column == column
    assert f"column {column}:" in str(info.value)
    assert words in str(info.value)
    assert isinstance(info.value, ValueError)


def test_not_a_string():
    with pytest.raises(TypeError, match="must be str"):
        parse(b"int32")


def test_depth_limit():
    with pytest.raises(TypeStringError, match="deeper"):
        parse("var * " * 500 + "int8")
    assert str(parse("var * " * 100 + "int8")) == "var * " * 100 + "int8"


# generated types: printing then parsing gives the same object
_names = st.sampled_from(["x", "y", "a b", "ü", "\"q\"", "int32", "_1"])
_leaf = st.one_of(st.sampled_from([n for n in SCALAR_NAMES if n not in ("datetime64", "timedelta64")])
                  .map(Scalar), st.sampled_from(["datetime64[s]", "timedelta64[ns]"]).map(Scalar),
                  st.sampled_from([String("string"), String("bytes"), String("bytes", 3)]))


def _extend(children):
    return st.one_of(
        st.builds(lambda c, n: Dim("fixed", c, n), children, st.integers(0, 10 ** 6)),
        st.builds(lambda c: Dim("var", c), children),
        st.builds(lambda c: Option(c), children.filter(lambda c: not isinstance(c, Option))),
        st.lists(st.tuples(_names, children), max_size=3, unique_by=lambda f: f[0]).map(
            lambda fs: Record(tuple(c for _, c in fs), tuple(n for n, _ in fs))),
        st.lists(children, max_size=3).map(lambda cs: Record(tuple(cs), None)),
    )


@given(st.recursive(_leaf, _extend, max_leaves=8))
def test_generated_round_trip(t):
    assert parse(str(t)) == t
    assert str(parse(str(t))) == str(t)


@given(st.text(alphabet="0123456789 *?[](){}:,=\"varintflostrugybecd_x", max_size=30))
def test_fuzz_never_crashes(s):
    try:
        t = parse(s)
    except TypeStringError as exc:
        assert 1 <= exc.column <= len(s) + 1
    else:
        assert parse(str(t)) == t


@pytest.mark.parametrize("text,column,words", [
    ('{"\\x": int32}', 2, "bad escape"),
    ("9" * 5000 + " * int32", 1, "5000 digits"),
    ("string[" + "9" * 30 + "]", 8, "30 digits"),
])
def test_malformed_strings_raise_type_string_errors(text, column, words):
    """Found by review: a bad escape raised JSONDecodeError, a long
    dimension Python's int-conversion ValueError, neither naming a column."""
    with pytest.raises(TypeStringError) as info:
        parse(text)
    assert words in str(info.value) and f"column {column}" in str(info.value)


@pytest.mark.parametrize("opening,closing", [("?{a: ", "}"), ("{a: ", "}"), ("(", ")"),
                                             ("option[", "]"), ("3 * ", "")])
def test_every_type_the_parser_accepts_prints(opening, closing):
    """Found by review: 199 levels of '?{a: ' parsed, then str() raised
    RecursionError; the nesting limit keeps every accepted type printable
    (and its canonical string parses back to it)."""
    depth = 0
    for n in range(1, 200):
        try:
            t = parse(opening * n + "int32" + closing * n)
        except TypeStringError:
            break
        depth = n
        s = str(t)
        repr(t)
        assert parse(s) == t
    assert depth >= 20
