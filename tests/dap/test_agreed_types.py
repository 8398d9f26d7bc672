"""nclx.dap.collective.agreed_error_type on one process: which types combine
with DapError, and how their instances read."""
import numpy as np
import pytest

from nclx.dap import DapError
from nclx.dap.collective import agreed_error_type
from nclx.dap.validate import DapTypeError


@pytest.mark.parametrize("name, base", [
    ("AxisError", np.exceptions.AxisError), ("IndexError", IndexError),
    ("KeyError", KeyError), ("OSError", OSError), ("FileNotFoundError", FileNotFoundError),
    ("ZeroDivisionError", ZeroDivisionError), ("FloatingPointError", FloatingPointError),
    ("LinAlgError", np.linalg.LinAlgError), ("TypeError", TypeError),
    ("UnicodeDecodeError", UnicodeDecodeError), ("MemoryError", MemoryError),
])
def test_known_types_combine_with_dap_error(name, base):
    cls = agreed_error_type(name)
    assert issubclass(cls, DapError) and issubclass(cls, base)
    err = cls("rank 1 of 2 failed:\n  rank 1: x")
    assert str(err) == "rank 1 of 2 failed:\n  rank 1: x"      # no KeyError quotes, no errno
    assert agreed_error_type(name) is cls                        # cached


@pytest.mark.parametrize("name", ["ValueError", "DapError", "Exception", "NoSuchError",
                                  "BaseException", "KeyboardInterrupt", "print", ""])
def test_others_are_plain_dap_errors(name):
    assert agreed_error_type(name) is DapError


def test_nclx_types_are_kept():
    assert agreed_error_type("DapTypeError") is DapTypeError


# ---------------------------------------------- found by a review (each failed before)
@pytest.mark.parametrize("name", ["StopIteration", "StopAsyncIteration", "SyntaxError",
                                  "IndentationError", "TabError", "ExceptionGroup",
                                  "BaseExceptionGroup"])
def test_types_with_a_meaning_of_their_own_stay_plain(name):
    """StopIteration would end a generator or loop instead of raising,
    SyntaxError prints its (empty) fields instead of the report, an
    exception group cannot be built from one message."""
    assert agreed_error_type(name) is DapError


def test_numpys_ufunc_type_errors_are_type_errors():
    with pytest.raises(TypeError) as info:
        np.add(np.zeros(2), "a")
    name = type(info.value).__name__               # UFuncTypeError or a private subclass
    cls = agreed_error_type(name)
    assert issubclass(cls, TypeError) and issubclass(cls, DapError), name
    assert issubclass(agreed_error_type("UFuncTypeError"), TypeError)


def test_nclx_error_families_outside_nclx_errors():
    import nclx.dap.npymap                          # noqa: F401 - imported by a save
    from nclx.storage.params import NoSuchBufferError  # noqa: F401
    assert issubclass(agreed_error_type("Unmappable"), OSError)
    assert issubclass(agreed_error_type("NoSuchBufferError"), AttributeError)
    from nclx.types.parser import TypeStringError
    assert issubclass(agreed_error_type("TypeStringError"), TypeStringError)


def test_pickle_and_deepcopy_keep_message_notes_and_attributes():
    import copy
    import pickle
    err = agreed_error_type("IndexError")("rank 1 of 2 failed")
    err.add_note("a note")
    err._nclx_agreed = True
    for back in (pickle.loads(pickle.dumps(err)), copy.deepcopy(err)):
        assert isinstance(back, DapError) and str(back) == str(err)
        assert back.__notes__ == ["a note"] and back._nclx_agreed is True
