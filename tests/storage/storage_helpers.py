"""Helpers shared by the nclx.storage tests: the emulated device backend as
a fixture (a second host buffer stands in for device memory, so device code
runs without a GPU), device arrays of it, and the check that a bad keyword
is refused with the package's error naming the keyword and the value."""
import numpy as np
import pytest

from nclx.storage import StorageError, devices
from nclx.storage.devices import EmulatedDevice, EmulatedDeviceArray


@pytest.fixture
def emu():
    """The emulated device backend for the test (this thread's: threads that
    create device storages enter ``with devices.use(emu):`` themselves)."""
    with devices.use(EmulatedDevice()) as backend:
        yield backend


def dev_array(values):
    """A device array (of the emulated backend) holding ``values``."""
    return np.array(values, copy=True).view(EmulatedDeviceArray)


def _value_named(msg, value):
    return repr(value) in msg or str(value) in msg


def assert_refused(call, keyword, value, name_value=True):
    __tracebackhide__ = True
    try:
        result = call()
    except StorageError as e:
        assert isinstance(e, (ValueError, TypeError))
        msg = str(e)
        assert keyword in msg, f"message does not name {keyword!r}: {msg!r}"
        if name_value:
            assert _value_named(msg, value), f"message does not name the value {value!r}: {msg!r}"
        return e
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"{keyword}={value!r}: raised {type(e).__name__}({e}), not the package's "
                    "StorageError/StorageTypeError")
    pytest.fail(f"{keyword}={value!r}: accepted, gave {result!r}")
