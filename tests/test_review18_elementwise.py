"""Review 18 regressions: install()'s elementwise subsystems against stock
NumPy, bit for bit.

nclx.calibrate() applied its "NumPy's loop only" rule (spec.numpy_loop_only:
float remainder, add and multiply, whose choice between two NaN operands
nclx's kernels do not reproduce) to elementwise calls only.  Where nclx's
kernel measured faster for a *reduction* (float remainder: about ten times)
it was kept, and np.remainder.reduce / np.add.reduce over NaNs of different
payloads or signs returned another NaN than stock NumPy.
"""
import numpy as np
import pytest

import nclx
from nclx._ncl import entries, policy, spec
from nclx._ncl.ufuncs import kernel_key

NAN_BITS = {
    "float32": np.array([0x7FC00000, 0xFFC00000, 0x7FC00123, 0xFFC00456, 0x7F800001],
                        np.uint32).view(np.float32),
    "float64": np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000123,
                         0xFFF8000000000456, 0x7FF0000000000001], np.uint64).view(np.float64),
}
#: float reductions whose NaN result only NumPy's own loop gives
NAN_SENSITIVE = ("remainder", "add", "multiply", "maximum", "minimum")


@pytest.fixture(autouse=True)
def _clean():
    nclx.uninstall()
    nclx.hooks.reset()
    nclx.reset_thresholds()
    policy.reset_preferences()
    threads = nclx.get_num_threads()
    yield
    nclx.uninstall()
    nclx.hooks.reset()
    nclx.reset_thresholds()
    policy.reset_preferences()
    nclx.set_num_threads(threads)


def _nan_arrays(dt, seed):
    """Short arrays holding two or three NaNs of different payloads/signs."""
    rng = np.random.default_rng(seed)
    nans = NAN_BITS[dt]
    out = []
    for n in (2, 3, 5, 17, 1000):
        for _ in range(8):
            a = (rng.standard_normal(n) * 3).astype(dt)
            k = int(rng.integers(2, 4))
            a[rng.choice(n, min(k, n), replace=False)] = nans[rng.integers(0, len(nans), min(k, n))]
            out += [a, a[::-1], a[::2]]
    return out


def test_calibrate_keeps_numpys_loop_for_nan_sensitive_float_reductions():
    """After calibrate(), float remainder/add/multiply/maximum/minimum
    reductions run NumPy's loop (before: remainder's went to nclx's kernel,
    measured ~10x faster) and their NaN bits equal stock's."""
    nclx.set_num_threads(2)
    nclx.calibrate(small=1024, chunk=16384, reps=3)
    for dt in ("float32", "float64"):
        for op in NAN_SENSITIVE:
            uf = getattr(np, op)
            for a in _nan_arrays(dt, 18):
                with np.errstate(all="ignore"):
                    want = uf.reduce(a)
                    with nclx.installed():
                        got = uf.reduce(a)
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (op, dt, a)
    prefs = policy.preferences()
    for (op, chars), (_, red) in prefs.items():
        if op in NAN_SENSITIVE and chars in ("fff", "ddd"):
            assert red == (True, True), (op, chars, red)


def test_the_shipped_and_calibrated_reduce_choice_follow_one_rule():
    """spec.numpy_loop_only(op, dtype, reduce=True): whole reductions on
    NumPy's loop in the shipped table, whole and chunks after calibrate()."""
    for op in NAN_SENSITIVE:
        for dt in spec.FLOATS:
            assert spec.numpy_loop_only(op, dt, reduce=True)
            assert spec.default_preference(op, dt)[1][0]      # whole reductions: NumPy's
    assert spec.numpy_loop_only("remainder", "int32", reduce=True)
    assert not spec.numpy_loop_only("add", "int64", reduce=True)
    assert not spec.numpy_loop_only("maximum", "float64")     # elementwise: nclx's kernel may run
    nclx.calibrate(small=1024, chunk=16384, reps=3)
    prefs = policy.preferences()
    for op, chars in entries.signatures():
        if op in spec.NCLX_ONLY:
            continue
        if spec.numpy_loop_only(op, spec.key_dtype(kernel_key(op, chars)[1]), reduce=True):
            assert prefs[(op, chars)][1] == (True, True), (op, chars)
