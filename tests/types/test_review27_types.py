"""Review 27 (docs audit of types.md): ``x in r`` for nested strings and
for offsets taken on trust; each test failed before its fix."""
import numpy as np
import pytest

from nclx.types import Ragged, from_list, from_strings


def _flat_present(items):
    out = []
    for it in items:
        if isinstance(it, list):
            out.extend(_flat_present(it))
        elif it is not None:
            out.append(it)
    return out


@pytest.mark.parametrize("data", [
    [["ab", "c"], ["d"]],
    [["ab", None], [], ["", "é"]],
    [[["x", "yz"]], [["ab"]], []],
])
def test_strings_at_any_depth_are_found_as_strings(data):
    r = from_list(data)
    present = _flat_present(data)
    for needle in ["ab", "c", "d", "", "é", "yz", "zz", "a"]:
        assert (needle in r) == (needle in present), needle     # before: False for "ab"
    for other in (97, b"ab", 0, None, 1.5):
        assert (other in r) is False                             # before: 97 was True


def test_strings_under_a_missing_list_do_not_count():
    r = from_list([[["ab"]], None, [["q"]]])
    assert "ab" in r and "q" in r
    hidden = from_list([None, [["ab"]]])
    assert "ab" in hidden
    gone = from_list([[["zz"]], None])
    assert "ab" not in gone and "zz" in gone


def test_backwards_offsets_taken_on_trust_name_the_list():
    r = Ragged(np.array([0, 5, 2, 6]), np.arange(6.0), validate=False)
    with pytest.raises(ValueError, match=r"list 1: offsets 5..2 run backwards"):
        3.0 in r          # before: NumPy's "repeats may not contain negative values"
    s = Ragged(np.array([0, 2, 1, 3]), from_strings(["a", "b", "c"]), validate=False)
    with pytest.raises(ValueError, match=r"list 1: offsets 2..1 run backwards"):
        "a" in s


def test_an_option_of_a_record_counts_both_levels():
    from nclx.types import parse
    from nclx.errors import NclxError
    ok = "?{a: " * 25 + "int8" + "}" * 25          # 25 x (2 + 2) = 100 levels
    assert str(parse(ok)).count("?") == 25
    with pytest.raises(NclxError, match="nested deeper than 100 levels"):
        parse("?{a: " * 26 + "int8" + "}" * 26)   # before: accepted up to 50
    with pytest.raises(NclxError, match="nested deeper than 100 levels"):
        parse("?(" * 26 + "int8" + ")" * 26)
