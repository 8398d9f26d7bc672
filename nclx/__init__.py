"""nclx: portable, hookable, threaded NumPy loop kernels.

The fixed-width kernel library (bool, int8..int64, uint8..uint64, float32,
float64) is exposed as real NumPy ufuncs in :mod:`nclx.ufuncs`;
:func:`show_config` reports how this copy was built.  :func:`install`
routes ordinary NumPy code through nclx's hook chains (:mod:`nclx.hooks`);
:mod:`nclx.ledger` and :func:`checked` are hooks nclx ships.  Compiled code
reaches nclx through the C API (``nclx/include/nclx.h``, the capsule
``nclx._C_API_2``, also reachable as ``nclx._C_API``).
"""
from nclx import _ompenv, _tpctl

_ompenv.before_load()        # before the first module linked to libgomp loads
try:
    from nclx._build_info import VERSION as __version__
    from nclx._config import config, get_include, show_config
    from nclx import errors, ufuncs
    from nclx._ncl.install import (NclxInstallError, install, installed, is_installed,
                                   release_memory, uninstall)
    from nclx import aware, hooks, ledger, mask, random
    from nclx.checked import checked
    from nclx.convert import convert
    from nclx.fused import evaluate, fuse
    from nclx.sorting import argsort, sort
    from nclx.create import (empty, empty_like, full, full_like, ones, ones_like, zeros,
                             zeros_like)
    from nclx._threading import (calibrate, get_num_threads, get_threshold, reset_thresholds,
                                 set_num_threads, set_threshold)
    # the capsule (NCLX_CAPSULE_NAME); _C_API is version 1's attribute: modules
    # built against version 1 fail at import_nclx's exact version check
    from nclx._ncl.capi import C_API as _C_API_2, C_API as _C_API  # noqa: F401
finally:
    # libgomp has read it: children get the caller's environment (also
    # after a failed import: before, it stayed set; review 23)
    _ompenv.after_load()

_tpctl.register()             # threadpoolctl's limits cap nclx's team

__all__ = ["__version__", "config", "show_config", "ufuncs", "install", "uninstall",
           "is_installed", "installed", "hooks", "ledger", "checked", "convert", "aware", "get_include",
           "set_num_threads", "get_num_threads", "set_threshold", "get_threshold", "reset_thresholds",
           "calibrate", "errors", "sort", "argsort", "mask", "random", "empty", "zeros", "ones", "full",
           "empty_like", "zeros_like", "ones_like", "full_like", "release_memory", "evaluate", "fuse",
           "NclxInstallError"]
