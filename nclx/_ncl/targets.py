"""Naming hook targets: a kernel chain from ``(op, dtype)`` or a kernel
name, a dtype-like to its fixed-width name.  Errors name the target."""
import functools

import numpy as np

from nclx._ncl import spec
from nclx._ncl.dtypes import fixed_width
from nclx._ncl.registry import HookError

__all__ = ["kernel_chain_name", "spec_name"]


def kernel_chain_name(target):
    """``('add', 'int64')`` -> ``'add_int64'``; ``('equal', ('int64', 'uint64'))`` too
    (the inputs), and ``('cast', ('float64', 'int32'))`` (inputs then output)."""
    if isinstance(target, str):
        if target not in _kernel_names():
            raise HookError(f"no nclx kernel named {target!r}")
        return target
    if not (isinstance(target, tuple) and len(target) == 2):
        raise TypeError(f"a kernel target is (op, dtype) or a kernel name such as 'add_int64', "
                        f"not {target!r}")
    op, dt = target
    if not isinstance(op, str):
        raise TypeError(f"the op of a kernel target must be a str, not {type(op).__name__}")
    if op in spec.CALL_OPS:
        return _call_chain_name(op, dt, target)
    if op not in spec.OPS:
        raise HookError(f"unknown op {op!r} in kernel target; ops: {', '.join(spec.ALL_OP_NAMES)}")
    nin = spec.OPS[op][1]
    if dt is None or isinstance(dt, (bool, int, float)):
        raise TypeError(f"the dtype of kernel target {target!r} must be a dtype name, "
                        f"numpy.dtype or a tuple of them, not {dt!r}")
    try:
        if isinstance(dt, (tuple, list)):
            names = tuple(spec_name(d) for d in dt)
        else:
            names = (spec_name(dt),) * nin
    except TypeError as exc:
        raise TypeError(f"kernel target {target!r}: {exc}") from None
    # (inputs) or (inputs..., output): a cast's kernels share their input
    # and differ by output (before, ('cast', 'float64') silently took the
    # cast to bool and ('cast', ('float64', 'int32')) was "no kernel";
    # found by review 22)
    ins, out = (names[:nin], names[nin]) if len(names) == nin + 1 else (names, None)
    found = _loops_for(op, ins, out)
    if len(found) == 1:
        return spec.kernel_name(op, *found[0])
    if len(found) > 1:
        outs = ", ".join(lout for _lins, lout in found)
        raise HookError(f"kernel target {target!r}: nclx's {op} kernels for {ins} differ by "
                        f"output dtype ({outs}); name it: ({op!r}, {tuple(ins) + (found[0][1],)!r})")
    raise HookError(f"nclx has no {op} kernel for dtype {dt!r}")


@functools.cache
def _kernel_names():
    """Every kernel chain's name (the spec's tables are fixed at build time):
    NumPy's loops' chains too (``'exp_float64'``; before, only the tuple
    ``('exp', 'float64')`` named them)."""
    names = {name for *_, name in spec.all_loops()}
    names.update(spec.call_kernel_name(op, dt) for op, dt in spec.call_slots())
    return frozenset(names)


@functools.cache
def _loops_for(op, ins, out):
    """op's (inputs, output) loops taking ins (and giving out, unless None)."""
    return tuple((lins, lout) for lins, lout in spec.OPS[op][3]
                 if tuple(lins) == ins and (out is None or lout == out))


def _call_chain_name(op, dt, target):
    """Kernel chain of a call op (sort, extract, random, zeros...) on one dtype."""
    try:
        name = spec_name(dt)
    except TypeError as exc:
        raise TypeError(f"kernel target {target!r}: {exc}") from None
    if name not in spec.CALL_OPS[op][1]:
        raise HookError(f"nclx has no {op} kernel for dtype {dt!r}")
    return spec.call_kernel_name(op, name)


def spec_name(dt):
    """Fixed-width name of a dtype-like (``'l'`` -> ``'int64'``)."""
    if dt is None or isinstance(dt, (bool, int, float)):
        raise TypeError(f"not a dtype: {dt!r}")
    if dt == "bool":
        return "bool"
    try:
        name = fixed_width(np.dtype(dt))
    except TypeError:
        raise TypeError(f"not a dtype: {dt!r}") from None
    if name is None:
        raise HookError(f"nclx has no kernels for dtype {np.dtype(dt)}")
    return name
