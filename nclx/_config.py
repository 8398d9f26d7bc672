"""Build and runtime configuration: ``nclx.show_config()``, and the runtime
settings ``nclx.config(reassociate=True)`` changes."""
import operator
import os
import platform
import sys
import threading
import weakref

import numpy as np

from nclx import _build_info
from nclx._ncl import _openmp
from nclx._ncl import forksafe as _forksafe
from nclx._ncl import recycle as _recycle
from nclx._ncl import team as _team
from nclx._ncl import threader as _threader
from nclx._ncl import ufuncs as _ufuncs


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"nclx setting {name!r} takes True or False, not {value!r}")


_SIZE_MAX = 2 ** (8 * np.dtype(np.uintp).itemsize) - 1


def _check_bytes(name, value):
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"nclx setting {name!r} takes a non-negative int (bytes), "
                        f"not {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"nclx setting {name!r} takes a non-negative int (bytes), "
                        f"not {value!r}") from None
    if n < 0:
        raise ValueError(f"nclx setting {name!r} must be >= 0 (bytes), not {value!r}")
    if n > _SIZE_MAX:
        raise ValueError(f"nclx setting {name!r} must be at most {_SIZE_MAX} (bytes: a "
                         f"size_t), not {value!r}")


# name: (get, set, check)
_SETTERS = {"reassociate": (_threader.get_reassociate, _threader.set_reassociate, _check_bool),
            "recycle_cap": (_recycle.cap, lambda v: _recycle.cap(operator.index(v)),
                            _check_bytes)}


class Settings:
    """Settings applied by :func:`nclx.config` when it is called; as a
    context manager it (again) applies them on entry and puts the previous
    values back on exit.

    The settings are the process's (the kernels read them), so blocks of
    several threads overlap.  Each key keeps the live Settings objects that
    set it, in the order they were made, and the value from before the
    first of them: a block leaving hands the key to the latest one still
    live (made and not yet left: open, or made to be entered), or, the last
    one out, back to that first value.  An object made and dropped without
    a block (``nclx.config(x=...)``: "from now on") leaves the list when it
    is collected.  (Before review 23, each block wrote back the value it
    had found when it was made: two threads' blocks overlapping left
    ``reassociate=True`` on after both had ended.)  A forked child keeps
    only its own thread's blocks."""

    def __init__(self, changes):
        unknown = sorted(set(changes) - set(_SETTERS))
        if unknown:
            raise TypeError(f"unknown nclx setting(s) {', '.join(unknown)}; "
                            f"settings: {', '.join(_SETTERS)}")
        for k, v in changes.items():
            _SETTERS[k][2](k, v)
        self.changes = dict(changes)
        with _lock:
            self.previous = {k: _SETTERS[k][0]() for k in changes}
            self._track()
            for k, v in changes.items():
                _SETTERS[k][1](v)

    def _track(self):
        me = weakref.ref(self, _collected)
        self._thread = threading.get_ident()
        for k in self.changes:
            live = _live.setdefault(k, [])
            if not live:
                _before[k] = _SETTERS[k][0]()
            live.append(me)

    def __enter__(self):
        with _lock:
            if not any(r() is self for r in _live.get(next(iter(self.changes)), ())):
                self.previous = {k: _SETTERS[k][0]() for k in self.changes}
                self._track()               # entered again after leaving once
            self._thread = threading.get_ident()
            for k, v in self.changes.items():
                _SETTERS[k][1](v)
        return self

    def __exit__(self, *exc):
        with _lock:
            _leave(self)
        return False

    def __repr__(self):
        return f"<nclx settings {self.changes} (previous {self.previous})>"


def _leave(block):
    """``block`` leaves every key it set: a Settings that a block leaves
    hands each key on; the dead reference to a collected one leaves the
    values as they are.  (The lists change in place: a collection can run
    this inside another call's update of them.)"""
    for k, live in _live.items():
        kept = [r for r in live if r is not block and r() is not block]
        if len(kept) == len(live):
            continue
        live[:] = kept
        if isinstance(block, Settings):
            latest = next((r() for r in reversed(kept) if r() is not None), None)
            _SETTERS[k][1](_before[k] if latest is None else latest.changes[k])


def _collected(ref):
    """A Settings made without a block (or never left) is gone: it leaves
    the lists, its values stay ("from now on")."""
    with _lock:
        _leave(ref)


def _forked_child():
    """Blocks of threads that do not exist in the child end there."""
    me = threading.get_ident()
    for k, live in _live.items():
        mine = [r for r in live if r() is not None and r()._thread == me]
        if len(mine) != len(live):
            _SETTERS[k][1](mine[-1]().changes[k] if mine else _before[k])
            live[:] = mine


_lock = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_lock")   # free in a fork's child
_live = {}           # key -> weak references to the live Settings setting it, in order made
_before = {}         # key -> its value before the first of them
os.register_at_fork(after_in_child=_forked_child)


def current():
    """The runtime settings now: {name: value}."""
    return {k: get() for k, (get, _set, _check) in _SETTERS.items()}


def config(**settings):
    """Without arguments: the build and runtime configuration as a dict (what
    :func:`show_config` prints).  With keyword arguments: change runtime
    settings and return an object that, used as a context manager, puts the
    previous values back on exit::

        nclx.config(reassociate=True)            # from now on
        with nclx.config(reassociate=True):      # inside the block only
            ...

    Settings
    --------
    reassociate : bool (default False)
        Let the threader split reductions whose order NumPy fixes (float
        multiply, maximum, minimum) into per-thread partials.  The result
        then differs from stock NumPy by reassociation: for products a
        relative error of about ``n * eps`` in the worst case and far less in
        practice, and overflow/underflow flags can differ when a partial
        product leaves the float range that NumPy's running product would
        not (or the reverse).  Float sums never need it (they are split
        exactly, on NumPy's pairwise points).
    """
    if settings:
        return Settings(settings)
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
        "num_threads": _team.get_num_threads(),
        "settings": current(),
        "recycle": {k: v for k, v in _recycle.stats().items()
                    if k in ("active", "cap", "cached_bytes", "hits", "misses")},
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


def get_include():
    """Folder holding nclx's C headers (``nclx.h``, ``ncl_spec.h``) for
    compiled code using the C API.  Cython authors ``cimport nclx._ncl.hooks``
    from the installed package (on ``sys.path``) and add this folder to the
    C include path."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
