"""integers() with datetime64/timedelta64 bounds: NumPy's refusal or
answer for every integer dtype (found by review: the 32-bit dtypes took
timedelta64 high bounds NumPy refuses, since NumPy compares their high
bounds with a uint64 bound, the smaller types' with an int)."""
import warnings

import numpy as np
import pytest

import nclx.random as nr

_TIMES = {
    "m8 scalar": np.timedelta64(1, "s"),
    "m8 array": np.array([1, 2], "m8[s]"),
    "M8 scalar": np.datetime64(0, "s"),
    "M8 array": np.array(["1970-01-01"], "M8[D]"),
}
_INTS = {"int": 0, "int array": np.array([0, 0]), "None": None}


def _outcome(gen, low, high, dtype, size, endpoint):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = gen.integers(low, high, size=size, dtype=dtype, endpoint=endpoint)
    except Exception as exc:  # noqa: BLE001 - compared with NumPy's
        return type(exc).__name__, str(exc)
    return "ok", np.asarray(x).dtype.str, np.shape(x)


_CASES = [(t, o, "low") for t in sorted(_TIMES) for o in sorted(_INTS)] + \
         [(t, o, "high") for t in sorted(_TIMES) for o in sorted(_INTS) if o != "None"]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64", "bool"])
@pytest.mark.parametrize("time,other,time_is", _CASES)
def test_time_bounds_are_numpys(dtype, time, other, time_is):
    """NumPy's error type and message (or dtype and shape) for a time bound
    as low or high (high=None: the range from low alone)."""
    t, o = _TIMES[time], _INTS[other]
    low, high = (t, o) if time_is == "low" else (o, t)
    for size in (None, 2):
        for endpoint in (False, True):
            want = _outcome(np.random.default_rng(1), low, high, dtype, size, endpoint)
            got = _outcome(nr.Generator(1), low, high, dtype, size, endpoint)
            assert got == want, (size, endpoint)
