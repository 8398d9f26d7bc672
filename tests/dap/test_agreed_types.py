"""nclx.dap.validate.agreed_error_type on one process: which types combine
with DapError, and how their instances read."""
import numpy as np
import pytest

from nclx.dap import DapError
from nclx.dap.validate import DapTypeError, agreed_error_type


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
