"""pytest plugin: run a test session with nclx installed, then check that
uninstall() put every NumPy loop back exactly."""
import os

import numpy as np

import nclx
from nclx._ncl import copying
from nclx._ncl import entries as funnel
from nclx._ncl import looptable
from nclx._ncl import policy
from nclx._ncl import sortcopy
from nclx._ncl import sorting
from nclx._ncl import spec

_before = {}
_sort_slots = {}
_copy_getters = {}
_copy_tuning = []
_sort_impl = []


def pytest_configure(config):
    for op, chars in funnel.signatures():
        if spec.numpy_ufunc(op) is None:
            continue      # nclx's own ops (fma, where, cast)
        try:
            _before[(op, chars)] = looptable.current_loop(spec.numpy_ufunc(op), chars)
        except KeyError:
            pass
    # the strictest setting: nclx's own kernels for every call, none of
    # NumPy's loops (which nclx would otherwise pick where they are faster)
    policy.prefer_everywhere(False)
    _sort_slots.update({k: now for k, (_stock, now) in sorting.slots().items()})
    # NumPy's sort tests use small arrays: let every sort of 64 elements or
    # more take nclx's threaded path (runs of 16, the merge, the row batch)
    sorting.threshold(64)
    sorting.fast_threshold(64)
    sorting.min_run(16)
    sorting.in_order_team(64)
    # and every copy of 128 bytes or more split across the team, a sleeping
    # team woken for it, every contiguous one written with non-temporal
    # stores (nclx._ncl.copying)
    _copy_getters.update(copying.getters())
    _copy_tuning[:] = copying.tune(64, 0, 0)
    # and np.sort of any eligible array copied and checked in one pass
    _sort_impl[:] = [np.sort._implementation, sortcopy.min_bytes(0)]
    # NCLX_SUITE_RECYCLE=1: with the recycling allocator too (NEP 49 handler)
    recycle = os.environ.get("NCLX_SUITE_RECYCLE") == "1"
    swapped = nclx.install(recycle=recycle)
    if recycle and np._core.multiarray.get_handler_name() != "nclx_recycle":
        raise RuntimeError("install(recycle=True) did not set nclx's allocation handler")
    if not nclx.is_installed() or swapped == 0:
        raise RuntimeError("nclx.install() did not swap any loop")
    print(f"\n[nclx] installed: {swapped} NumPy loops routed through nclx, nclx kernels everywhere")


def pytest_unconfigure(config):
    nclx.uninstall()
    policy.reset_preferences()
    sorting.threshold(1 << 15)
    sorting.fast_threshold(1 << 18)
    sorting.min_run(1 << 13)
    sorting.in_order_team(1 << 18)
    copying.tune(*_copy_tuning)
    sortcopy.min_bytes(_sort_impl[1])
    print(f"[nclx] np.sort calls copied in one pass (in order): {sortcopy.stats()}")
    if np.sort._implementation is not _sort_impl[0] or sortcopy.is_swapped():
        raise RuntimeError("uninstall() left np.sort's dispatcher changed")
    print(f"[nclx] copies split across the team: {copying.split_calls()}")
    print(f"[nclx] copies written with non-temporal stores: {copying.stream_calls()}")
    if copying.getters() != _copy_getters:
        raise RuntimeError("uninstall() left NumPy's copy methods changed")
    moved = [k for k, (_stock, now) in sorting.slots().items() if _sort_slots[k] != now]
    if moved:
        raise RuntimeError(f"uninstall() left {len(moved)} sort slots changed: {moved[:5]}")
    changed = [k for k, addr in _before.items()
               if looptable.current_loop(spec.numpy_ufunc(k[0]), k[1]) != addr]
    if changed:
        raise RuntimeError(f"uninstall() left {len(changed)} loops changed: {changed[:5]}")
    print("[nclx] uninstalled: every NumPy loop restored")
