"""nclx: portable, hookable, threaded NumPy loop kernels.

The fixed-width kernel library (bool, int8..int64, uint8..uint64, float32,
float64) is exposed as real NumPy ufuncs in :mod:`nclx.ufuncs`;
:func:`show_config` reports how this copy was built.
"""
from nclx._build_info import VERSION as __version__
from nclx._config import config, show_config
from nclx import ufuncs

__all__ = ["__version__", "config", "show_config", "ufuncs"]
