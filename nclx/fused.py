"""Fused evaluation: ``nclx.evaluate`` and ``@nclx.fuse``.

Both turn NumPy code into a Program of ufunc steps (nclx._trace: the code
runs once on one-element probes, NumPy's own operators decide every ufunc
and loop) and run it on the block executor (nclx._ncl.blockexec): the
whole expression per L2-sized block on nclx's threads, temporaries never
full size, the result written once, floating-point errors reported per
step as eager NumPy reports them.  Results, dtypes, warnings and errors are
those of the same code run eagerly by NumPy.

Whenever fusing could change what the user sees, the code runs eagerly
instead (same results as without nclx): a user node in any hook chain or
``checked()`` active (but recording ``nclx.ledger`` ledgers' nodes: a fused
run adds its rows itself), operands that are not plain ndarrays or scalars,
shapes other than one common shape (and 0-d / scalars), arrays that are not
C-contiguous, aligned and native, dtypes other than bool, int8..uint64,
float32, float64, fewer elements than ``fuse_threshold()``, code the tracer
cannot follow (``nclx.fuse(f).explain(...)`` says why), a call within ROOM
frames of the recursion limit, and a fused function while a profiler or
tracer watches the thread (it sees the plain function's calls).
"""
import sys
import threading
from collections import OrderedDict

import numpy as np

from nclx import _callsite, _expr, _fusecode, _fusewarn, _trace
from nclx._fpflags import fp_may_raise
from nclx._fusebound import BoundFused
from nclx._fusekey import _arg_key, _frozen, _state_key
from nclx import ledger as _ledger
from nclx._ncl import blockexec as _blockexec
from nclx._ncl import entries as _entries
from nclx._ncl import forksafe as _forksafe
from nclx._ncl import fusegate as _fusegate
from nclx._ncl import registry as _registry

__all__ = ["evaluate", "fuse", "fuse_threshold"]

_PLANS_MAX = 256


def fuse_threshold(n=None):
    """The fewest elements a fused run takes (smaller calls run eagerly:
    their temporaries fit in cache already); with ``n``, set it (>= 1)."""
    return _fusegate.threshold(n)


class _Plans:
    """Traced programs (or why not) per key, least recently used dropped."""

    def __init__(self):
        self.lock = threading.RLock()
        _forksafe.guard(self, "lock")
        self.items = OrderedDict()

    def get(self, key):
        with self.lock:
            hit = self.items.get(key)
            if hit is not None:
                self.items.move_to_end(key)
            return hit

    def put(self, key, value):
        with self.lock:
            self.items[key] = value
            while len(self.items) > _PLANS_MAX:
                self.items.popitem(last=False)

    def setdefault(self, key, make):
        """The value under ``key``, made by ``make()`` and kept when absent
        (one lookup under the lock)."""
        with self.lock:
            hit = self.items.get(key)
            if hit is None:
                hit = self.items[key] = make()
                while len(self.items) > _PLANS_MAX:
                    self.items.popitem(last=False)
            else:
                self.items.move_to_end(key)
            return hit


def _recorders():
    """(why fusing must wait, or None; the ledgers a fused run adds its rows
    to).  Ledgers record but change nothing: when their funnel nodes are all
    that shuts the entries' gate (no other user node, no thread inside
    checked(), no Python-level hook), a run stays fused and records itself."""
    gate = _entries.gate()
    chains = _registry.user_chains()
    if not gate and not chains:
        return None, ()
    ledgers, nodes = _ledger._active()
    if ledgers and gate == nodes and all(level == "funnel" for level, _ in chains):
        return None, ledgers
    return "hooks or checked() are active", ()


def _why_not_now(args):
    """(why these arguments run eagerly, or None: fusable now; the ledgers
    recording).  The arguments first: a small call never reads the hook
    registry."""
    why = _why_not_args(args)
    if why is not None:
        return why, ()
    return _recorders()


def _why_not_args(args):
    shape = None
    for a in args:
        if type(a) is np.ndarray and not a.ndim and not (a.flags.aligned and a.dtype.isnative):
            return "a 0-d operand that is not aligned and native"
        if type(a) is np.ndarray and a.ndim:
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                return "operands of different shapes (broadcasting)"
            if not (a.flags.c_contiguous and a.flags.aligned and a.dtype.isnative):
                return "an operand that is not C-contiguous, aligned and native"
        elif _arg_key(a) is None:
            return f"an operand of type {type(a).__name__}"
        if type(a) is np.ndarray and a.dtype.metadata is not None:
            # eager NumPy's result keeps it; the executor's result dtype is
            # made from a type character (found by review)
            return "an operand whose dtype has metadata"
    if shape is None:
        return "no array operand"
    n = 1
    for d in shape:
        n *= d
    if n < _fusegate.threshold():
        return f"{n} elements, fewer than fuse_threshold() ({_fusegate.threshold()})"
    return None


#: ``_run``'s answer where the call runs eagerly (its caller calls the
#: function: fewer frames) and the frames a fused call needs below the
#: recursion limit (its keys, trace and run, warnings included, take fewer)
EAGER, ROOM = object(), 64

_NEAR_LIMIT = f"fewer than {ROOM} frames are left below the recursion limit (a fused call's)"


def _descend(n):
    return n <= 0 or _descend(n - 1)


def near_limit(need=ROOM):
    """Whether fewer than ``need`` frames are left below the recursion limit
    (before, a fused call within about 10 frames of it raised RecursionError
    where the plain call ran, and a trace that hit it was kept as a refusal;
    found by review): a stack shallower than a third of the limit has room
    (a frame takes one or two of it), else ``need`` frames are tried."""
    limit = sys.getrecursionlimit()
    if limit >= 3 * need:
        try:
            sys._getframe(limit // 3)
        except ValueError:
            return False
    try:
        return not _descend(need)
    except RecursionError:
        return True


def _run(fn, args, plans, out, frozen=(), where=None, watch=True):
    """(fn(*args) fused, or EAGER where it must run eagerly; why not fused,
    or None); ``out`` as in evaluate; ``frozen``: what else the trace
    depends on (part of the plan's key); ``where``: the location every
    step's flags are reported at (else each step's own, from the trace:
    nclx._fusewarn); ``watch``: the trace watches the function's reads of
    the errstate (nclx._trace)."""
    why, ledgers = _why_not_now(args)
    plan = None
    if why is None:
        if near_limit():
            why = _NEAR_LIMIT
        else:
            try:
                plan, why = _plan(fn, args, plans, frozen, where, watch)
            except RecursionError:       # in nclx's steps: eager, nothing kept
                plan, why = None, _NEAR_LIMIT
    if plan is None:
        return EAGER, why
    program, constants, positions, wheres, variants = plan
    report = _fusewarn.Reporter(wheres, where, len(program.steps))
    shape = next(a.shape for a in args if type(a) is np.ndarray and a.ndim)
    if variants:
        # the operand order of eager NumPy's reused temporaries at this length
        n = 1
        for d in shape:
            n *= d
        program = next((p for least, p in variants if n >= least), program)
    operands = [args[i].reshape(-1) if args[i].ndim else args[i] for i in positions]
    operands += constants
    if program.reduce is not None:
        if out is not None:
            return EAGER, "out= with a reduction"
        return _execute(program, operands, None, ledgers, report), None
    flat = None
    if out is not None:
        want = np.dtype(program.steps[-1].chars[-1])
        if not (type(out) is np.ndarray and out.shape == shape and out.dtype == want
                and out.flags.c_contiguous and out.flags.aligned and out.flags.writeable):
            return EAGER, "out= not a C-contiguous array of the result's shape and dtype"
        flat = out.reshape(-1)
    # the result allocated in its shape: it owns its data, as eager NumPy's
    # (before, a view of the executor's 1-d array: resize() refused; review)
    result = _execute(program, operands, flat, ledgers, report,
                      None if flat is not None else shape)
    return (out if out is not None else result), None


def _plan(fn, args, plans, frozen, where, watch):
    """(the plan for these arguments, None) or (None, why they run eagerly),
    traced and kept when there is none yet."""
    # which arguments are one object (a trace sees ``x is y``)
    ids = [id(a) for a in args]
    same = () if len(set(ids)) == len(ids) else tuple(ids.index(i) for i in ids)
    key = (tuple(_arg_key(a) for a in args), same, frozen, _state_key())
    plan = plans.get(key)
    if plan is not None:
        return (None, plan) if isinstance(plan, str) else (plan, None)
    try:
        plan = _trace.trace(fn, args, watch)
        if where is not None:
            # the steps report at the caller's location: their traced
            # frames' globals (the first caller's module) are not kept
            program, constants, positions, wheres, variants = plan
            nsteps = len(program.steps)
            plan = (program, constants, positions, (None,) * nsteps + wheres[nsteps:],
                    variants)
        plans.put(key, plan)
        return plan, None
    except _trace.StateChanged as exc:
        # kept only when it happens again: another thread's warning
        # filters may have changed under this trace alone
        seen = (plans.get(("state changed", key)) or 0) + 1
        plans.put(("state changed", key), seen)
        if seen >= _STATE_CHANGES_KEPT:
            plans.put(key, str(exc))
        return None, str(exc)
    except _trace.Untraceable as exc:
        if not isinstance(exc, _trace.NotNow):      # (NotNow: eager this time alone)
            plans.put(key, str(exc))
        return None, str(exc)


def _execute(program, operands, out, ledgers, report, shape=None):
    if not ledgers:
        return _blockexec.execute(program, operands, out=out, report=report, shape=shape)
    rows = []
    try:
        return _blockexec.execute(program, operands, out=out, ledger=rows, report=report,
                                  shape=shape)
    finally:
        _ledger._add_fused(ledgers, rows)


def _eager(fn, args, out):
    result = fn(*args)
    if out is None:
        return result
    np.copyto(out, result, casting="same_kind")
    return out


#: traces refused under changed warning filters before the refusal is kept
_STATE_CHANGES_KEPT = 3

_expr_plans = _Plans()      # expression string -> its _Plans, least recently used dropped


def evaluate(ex, local_dict=None, global_dict=None, out=None):
    """Evaluate the numexpr-style expression string ``ex`` as NumPy would
    evaluate it written as Python code, fused (see the module doc).

    Names are looked up in ``local_dict`` then ``global_dict`` (by default
    the caller's locals and globals).  ``out``: an array the result is
    written to (as ``np.copyto(out, result, casting="same_kind")`` would;
    fused runs write it directly).  Returns the result array, or the NumPy
    scalar of a final ``sum``/``prod``.
    """
    expression = _expr.compile_expression(ex)
    names = expression.names
    try:
        frame = sys._getframe(1)
    except ValueError:            # called from no Python frame (atexit, a C callback)
        frame = where = None
    else:
        where = _callsite.caller(frame)
    if local_dict is None or global_dict is None:
        if frame is None:
            raise TypeError("nclx.evaluate: local_dict and global_dict are needed where "
                            "there is no calling Python frame")
        if local_dict is None:
            local_dict = frame.f_locals
        if global_dict is None:
            global_dict = frame.f_globals
    args = [_expr.lookup(name, local_dict, global_dict) for name in names]
    # one that raises OverflowError where a Python integer would grow past
    # nclx._expr.INT_BITS (before, "2 ** 2**40" hung in Python's power)
    fn = expression.function(args)
    if where is not None:
        # warnings name the caller's line, fused or eager: the expression as
        # if written there (nclx._fusewarn)
        fn = _callsite.relocated(fn, where)
    # its functions read no errstate (names and nclx._expr.FUNCTIONS): no
    # watch, so a profiler set does not keep it eager
    result = _run(fn, args, _expr_plans.setdefault(ex, _Plans), out, where=where,
                  watch=False)[0]
    return _eager(fn, args, out) if result is EAGER else result


def _handled_eagerly(fn):
    """Why a call of ``fn`` now runs eagerly because of its exception
    handlers, or None: under an errstate whose report may raise, a step's
    error reaches a handler only eagerly (a trace computes with errors
    ignored, so it keeps the branch without the error; nclx._fusecode)."""
    if not (fp_may_raise() or "log" in np.geterr().values()):
        return None
    who = _fusecode.has_handlers(fn)
    if who is None:
        return None
    return (f"{who} handles exceptions (try or with) and the errstate may raise: "
            f"a step's error reaches its handler only eagerly")


class _Fused(_fusegate.FuseGate):
    """A function run fused per call signature (see :func:`fuse`); calls
    below the fuse threshold are the plain function at once (the gate)."""

    def __init__(self, fn):
        self.plans = _Plans()
        super().__init__(fn, self._fused_call)
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "fused")
        self.__doc__ = getattr(fn, "__doc__", None)

    def _fused_call(self, args):
        # a profiler or tracer sees the plain function's calls (before, a kept
        if _trace.watchers() is not None:     # plan ran none; found by review)
            return self.fn(*args)
        try:
            frozen = _frozen(self.fn)
            eager = frozen is None or _handled_eagerly(self.fn) is not None
        except RecursionError:           # near the limit: the plain call, nothing kept
            eager = True
        if not eager:
            result = _run(self.fn, args, self.plans, None, frozen)[0]
            if result is not EAGER:
                return result
        return self.fn(*args)

    def explain(self, *args):
        """'fused' when a call with these arguments runs on the block
        executor, else why it runs eagerly (the call is not made)."""
        why = _why_not_now(args)[0]
        if why is None and _trace.watchers() is not None:
            why = (f"{_trace.watchers()}: the function runs as the plain function, whose "
                   f"calls it sees")
        if why is None and near_limit():
            why = _NEAR_LIMIT
        if why is None and _frozen(self.fn) is None:
            why = ("a global, closure cell, default or bound argument of the function is an "
                   "array (or a tuple holding one, or a dtype with metadata, or a tuple nested "
                   "too deeply to key), or the callable's state is not keyed (a callable "
                   "object, a bound method)")
        if why is None:
            why = _handled_eagerly(self.fn)
        if why is None:
            try:
                _trace.trace(self.fn, args)
            except _trace.Untraceable as exc:
                why = str(exc)
        return "fused" if why is None else why

    def __get__(self, obj, objtype=None):
        """A method: bound to the instance, ``explain`` too (it runs eagerly)."""
        if obj is None:
            return self
        return BoundFused(self, obj)

    def __repr__(self):
        return f"<nclx.fuse of {self.fn!r}>"


def fuse(fn):
    """Decorator: run ``fn`` (a function of arrays and scalars using NumPy
    ufuncs and operators, optionally ending in ``np.sum``/``np.prod``) on
    the block executor.  It is traced once per call signature -- each
    array's dtype and whether it is 0-d, each scalar's type and value (a
    scalar is a constant of the trace) -- and runs eagerly for a signature
    it cannot trace (decision cached; ``explain(*args)`` says why).
    Keyword arguments run it eagerly."""
    if not callable(fn):
        raise TypeError(f"nclx.fuse decorates a function, not {type(fn).__name__}")
    return _Fused(fn)
