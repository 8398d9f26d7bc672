"""Memory outlives the storage object: arrays, views, memoryviews and device
arrays taken from a storage stay valid (same values) after the storage is
deleted and other allocations reuse the freed memory."""
import gc

import numpy as np
import pytest

import nclx.storage as ns
from nclx.storage import Storage
from storage_helpers import emu  # noqa: F401  (emu: a fixture)


def _churn():
    """Allocate and fill other memory (so a freed buffer would be reused)."""
    junk = [ns.full((257, 33), -12345.0, alignment_size=64) for _ in range(50)]
    junk += [np.full(257 * 33, -54321.0) for _ in range(50)]
    return junk


@pytest.mark.parametrize("kind", ["cpu", "gt4py", "cuda", "gpu", "wrapped_bytes"])
def test_references_outlive_the_storage(emu, kind):
    values = np.arange(257 * 33, dtype=np.float64).reshape(257, 33)
    if kind == "wrapped_bytes":
        s = ns.as_storage(bytearray(values.tobytes()), shape=values.shape, dtype=np.float64)
    elif kind == "cpu":
        s = ns.storage(values, halo=2, alignment_size=256, layout=(1, 0))
    else:
        s = ns.storage(values, device="gpu", managed=None if kind == "gpu" else kind)
    refs = {}
    if kind != "gpu":
        refs["asarray"] = np.asarray(s)
        refs["view"] = s[3:-3, ::-2]
        refs["domain"] = s.domain_view
        refs["T"] = s.T
        refs["memoryview"] = s.data
        refs["scalar_row"] = s[5]
    if kind != "cpu" and kind != "wrapped_bytes":
        refs["device"] = s.to_cupy()
        refs["dev_view"] = s[1:4].to_cupy()
    if kind != "gpu":
        s.set_synchronized()
    expected = {"asarray": values, "view": values[3:-3, ::-2], "domain": values, "T": values.T,
                "memoryview": values, "scalar_row": values[5], "device": values,
                "dev_view": values[1:4]}
    if kind == "cpu":
        expected["domain"] = values[2:-2, 2:-2]
    del s
    gc.collect()
    junk = _churn()
    for name, ref in refs.items():
        got = np.asarray(ref.to_cupy() if name == "dev_view" and isinstance(ref, Storage)
                         else ref)
        if name == "memoryview":
            got = np.asarray(ref).reshape(values.shape) if got.ndim == 1 else got
        np.testing.assert_array_equal(got, expected[name], err_msg=f"{kind}: {name} after del")
    del junk
