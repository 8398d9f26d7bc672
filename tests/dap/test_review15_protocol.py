"""Serial defects of the fifteenth look at nclx.dap's protocol layer (each
failed on the code before its fix):

- P6: ``Distribution.from_shape`` and ``DistArray.from_shape`` took a
  float extent by truncating it (``(4.7,)`` made an array of 4) and parsed
  a string (``("6",)``), as they did ``nprocs=2.5``; NumPy refuses both,
  and the other keywords refused them already.  Now a DapTypeError naming
  the argument;
- P4 (one rank): dimension dictionaries with values beyond int64 (a size
  of 2**70, a stop of 2**64) were normalised as valid; now a DapError
  naming the key (a size may be 2**63: the int64 indices [0, 2**63)).
"""
import numpy as np
import pytest

import nclx.dap as dap
from nclx.dap import DapError
from nclx.dap.validate import DapTypeError, normalize_dim_dict


@pytest.mark.parametrize("shape", [(4.7,), ("6",), (3, 2.0), (True,)])
def test_from_shape_refuses_extents_that_are_no_integers(shape):
    with pytest.raises(DapTypeError, match=r"shape\[\d\] must be an integer"):
        dap.Distribution.from_shape(shape)
    with pytest.raises(DapTypeError, match=r"shape\[\d\] must be an integer"):
        dap.DistArray.from_shape(shape)


@pytest.mark.parametrize("nprocs", [2.5, "2", True])
def test_from_shape_refuses_an_nprocs_that_is_no_integer(nprocs):
    with pytest.raises(DapTypeError, match="nprocs must be an integer"):
        dap.Distribution.from_shape((6,), nprocs=nprocs)


def test_from_shape_takes_numpy_integers():
    d = dap.Distribution.from_shape((np.int64(6), np.uint8(4)), nprocs=np.int32(2))
    assert d.shape == (6, 4) and d.nprocs == 2


@pytest.mark.parametrize("key,value", [("size", 2 ** 70), ("size", 2 ** 63 + 1),
                                       ("stop", 2 ** 64), ("start", -2 ** 63 - 1)])
def test_dimension_values_beyond_int64_are_refused(key, value):
    dd = dict(dist_type="b", size=4, proc_grid_size=1, proc_grid_rank=0, start=0, stop=4)
    dd[key] = value
    with pytest.raises(DapError, match=rf"\['{key}'\].*int64|\['{key}'\] must be >= 0"):
        normalize_dim_dict(dd)
