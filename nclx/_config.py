"""Build and runtime configuration: ``nclx.show_config()``, and the runtime
settings ``nclx.config(reassociate=True)`` changes."""
import dis
import operator
import os
import platform
import sys
import threading

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
    """Settings :func:`nclx.config` changes.  Called as a statement it
    applies them at once ("from now on"); made by a ``with`` statement (the
    caller's next instruction enters it) they are applied on entry, as
    ``np.errstate`` applies its modes, and the previous values come back on
    exit.

    The settings are the process's (the kernels read them), so blocks of
    several threads overlap.  Each key keeps the blocks open on it in the
    order they were entered and the value from before the first of them
    (for an object kept for a later block -- ``cfg = nclx.config(...)``
    then ``with cfg:``, or one a function returns -- the value from before
    it was made, or before the first of such objects made one after the
    other, unless something changed the setting since; a call whose result
    is dropped is "from now on" and is that value for later ones; review
    27: such a block left the setting on for good):
    a block leaving hands the key to the innermost block still open, or,
    the last one out, back to that value.  (Before review 23, a block put
    back what it had found when made: blocks of two threads leaving out of
    order left ``reassociate=True`` on after both had ended; review 23b
    found that applying at creation raced with other threads' entries, so
    a ``with`` statement's object now applies on entry only.)  An object
    entered again, or nested in itself, counts each entry.  A forked child
    ends the blocks of the parent's other threads."""

    def __init__(self, changes, deferred=False, kept=False):
        unknown = sorted(set(changes) - set(_SETTERS))
        if unknown:
            raise TypeError(f"unknown nclx setting(s) {', '.join(unknown)}; "
                            f"settings: {', '.join(_SETTERS)}")
        for k, v in changes.items():
            _SETTERS[k][2](k, v)
        self.changes = dict(changes)
        self._applied = not deferred        # made as a statement: applied now
        with _lock:
            self.previous = {k: _SETTERS[k][0]() for k in changes}
            if not deferred:
                for k, v in changes.items():
                    base = _kept_base.get(k)
                    if kept and base is not None and self.previous[k] == base[1]:
                        # objects kept for later blocks, made one after the
                        # other: each puts back the value from before the first
                        self.previous[k] = base[0]
                    if kept:
                        _kept_base[k] = (self.previous[k], v)
                    else:                       # "from now on": a new base
                        _kept_base.pop(k, None)
                    _SETTERS[k][1](v)

    def __enter__(self):
        me = threading.get_ident()
        with _lock:
            for k, v in self.changes.items():
                blocks = _open.setdefault(k, [])
                if not blocks:
                    now = _SETTERS[k][0]()
                    # applied when made and untouched since: the value it replaced
                    _before[k] = self.previous[k] if self._applied and now == v else now
                blocks.append((self, v, me))
                _SETTERS[k][1](v)
            self._applied = False
        return self

    def __exit__(self, *exc):
        with _lock:
            for k in self.changes:
                blocks = _open.get(k, [])
                at = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i][0] is self),
                          None)
                if at is None:
                    continue
                del blocks[at]
                if not blocks:
                    _SETTERS[k][1](_before.pop(k))
                elif at == len(blocks):          # it was the innermost open one
                    _SETTERS[k][1](blocks[-1][1])
        return False

    def __repr__(self):
        return f"<nclx settings {self.changes} (previous {self.previous})>"


def _forked_child():
    """Blocks of threads that do not exist in the child end there."""
    me = threading.get_ident()
    for k, blocks in list(_open.items()):
        mine = [b for b in blocks if b[2] == me]
        if len(mine) == len(blocks):
            continue
        if mine:
            _open[k] = mine
            _SETTERS[k][1](mine[-1][1])
        else:
            del _open[k]
            _SETTERS[k][1](_before.pop(k))


_WITH = ("BEFORE_WITH", "SETUP_WITH")
_DISCARD = ("POP_TOP", "PRINT_EXPR", "CALL_INTRINSIC_1")   # (the last: 3.12's REPL print)
_entered = {}        # (code, offset) -> (enters a with, result discarded)


def _use(frame):
    """How ``frame``'s current call's result is used: (a ``with``
    statement's manager -- the next instruction enters it; Python 3.14:
    COPY, then LOAD_SPECIAL --, a statement whose result is dropped)."""
    if frame is None:
        return False, True
    key = (frame.f_code, frame.f_lasti)
    hit = _entered.get(key)
    if hit is None:
        after = [i.opname for i in dis.get_instructions(frame.f_code)
                 if i.offset > frame.f_lasti][:2]
        hit = (bool(after) and (after[0] in _WITH or after == ["COPY", "LOAD_SPECIAL"]),
               bool(after) and after[0] in _DISCARD)
        if len(_entered) > 256:
            _entered.clear()
        _entered[key] = hit
    return hit


_lock = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_lock")   # free in a fork's child
_open = {}           # key -> [(block, value, thread)] of the open blocks, in entry order
_kept_base = {}      # key -> (value before the first kept object, the last one's value)
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
        try:
            caller = sys._getframe(1)
        except ValueError:                   # called from no Python frame
            caller = None
        in_with, dropped = _use(caller)
        return Settings(settings, deferred=in_with, kept=not in_with and not dropped)
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
