"""Build and runtime configuration: ``nclx.show_config()``."""
import platform
import sys

import numpy as np

from nclx import _build_info
from nclx._ncl import _openmp
from nclx._ncl import ufuncs as _ufuncs


def config():
    """Return the configuration as a dict (what :func:`show_config` prints)."""
    isa_flags = dict(item.split("=", 1) for item in _build_info.ISA_FLAGS.split(";") if item)
    selected = _ufuncs.selected_isa()
    return {
        "nclx": _build_info.VERSION,
        "numpy": np.__version__,
        "numpy_at_build": _build_info.NUMPY_BUILD_VERSION,
        "python": sys.version.split()[0],
        "platform": f"{platform.system()} {platform.machine()}",
        "compiler": f"{_build_info.COMPILER_ID} {_build_info.COMPILER_VERSION}",
        "cython": _build_info.CYTHON_VERSION,
        "buildtype": _build_info.BUILDTYPE,
        "kernel_c_args": _build_info.KERNEL_C_ARGS,
        "openmp": _openmp.openmp_enabled(),
        "openmp_version": _openmp.openmp_version(),
        "max_threads": _openmp.max_threads(),
        "isa_builds": {isa: (isa_flags.get(isa) or "(compiler default)") for isa in _ufuncs.built_isas()},
        "isa_available": list(_ufuncs.available_isas()),
        "isa_selected": selected,
        "simd_flags": isa_flags.get(selected) or "(compiler default: baseline)",
    }


def show_config():
    """Print and return nclx's build and runtime configuration.

    Lists the nclx and NumPy versions, OpenMP on/off and its thread count,
    the compiler, and the SIMD flags of the kernel build in use.

    Returns
    -------
    dict
        The same information as :func:`config`.
    """
    cfg = config()
    width = max(len(k) for k in cfg)
    for key, value in cfg.items():
        if isinstance(value, dict):
            value = "; ".join(f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(value)
        print(f"{key.ljust(width)}  {value}")
    return cfg
