"""Tracing a function of arrays into a Program for the block executor.

The function runs once on *probes*: one-element ndarray subclasses standing
for its array arguments.  NumPy's own operators run on them (so ``a ** 2``
becomes ``np.square`` exactly where NumPy makes it so, and ``2 * a`` is
``np.multiply(2, a)`` in that order), and every ufunc call arrives in the
probe's ``__array_ufunc__``, which records it as a Step: the ufunc, the
loop NumPy resolves for these operand dtypes (``ufunc.resolve_dtypes``,
Python scalars weak as NEP 50 says), the slots it reads and the slot it
writes.  Scalars become operand slots of the loop's input dtype.  The probe
then calls the ufunc on one-element data (errors ignored) and hands on a
new probe of the result's dtype.

The function runs three times: on one-element probes holding each array's
first element, on probes of three elements (another size, values above and
below), and on three extreme values (the dtype's largest and most negative,
halved, and zero) -- the runs must record the same steps and constants,
and leave the probes unchanged.  So a value read past the probes' checks
(through ``np.asarray(x)``, which no hook sees) that changes what the
function does between these values, and an in-place change, run the
function eagerly instead of being kept in the plan.  A read whose outcome
is the same for all three value sets (a threshold between them) cannot be
seen: such a function must not be fused (docs/fused.md).  The probes
themselves (``nclx._probe``) refuse every attribute but their dtype and the
two reductions, and refuse steps made under another np.errstate or warning
filter than the trace's; a floating-point flag raised by a step on
scalars alone refuses the trace too (eager NumPy reports it on every call),
and so does a result that depends on 0-d arrays and scalars alone.

Anything the executor cannot run as NumPy would raises Untraceable with
the reason: keyword arguments, a non-ufunc call on a probe (indexing,
``np.nonzero``...), Python control flow on a probe's value, a loop whose
input dtype differs from its operand's (a cast), dtypes other than bool,
int8..uint64, float32, float64, more than one output, anything after a
final sum or product.  Callers then run the function eagerly.

``np.where(c, x, y)`` (three arguments) becomes a step of nclx's own
``where`` ufunc on the loop of np.where's result dtype (nclx._probe).

A profiler or tracer the traced run sets is undone and refuses the
function (:class:`_Watch`); a RecursionError or MemoryError refuses the
call only (:class:`NotNow`).
"""
import numpy as np

from nclx import _elide, _fusecode

from nclx._ctxrun import run_isolated
from nclx._fused_program import Program, Step
from nclx._ncl import ledger as _cledger
from nclx._ncl.blockplan import MAX_SLOTS, MAX_STEPS
from nclx._probe import SUPPORTED, _Probe, _Reduced
from nclx._tape import StateChanged, Untraceable, _Tape
from nclx._tracewatch import HOOK_SETTERS, _Watch, watchers  # noqa: F401 - fused.py reads watchers here

__all__ = ["Untraceable", "StateChanged", "trace"]


def _first_values(a):
    """The first trace's probe values: the array's first element (or zero)."""
    one = np.zeros(1, a.dtype)
    if a.size:
        one[0] = a.reshape(-1)[0]
    return one


def _other_values(a, first):
    """The second trace's probe values: for an array three elements (``mid``,
    ``hi``, ``lo``: the first neither the first trace's value nor the least
    or greatest), for a 0-d array one other value -- so that anything taken
    from a probe's size, order or values (``np.asarray(x)[0]``, ``.mean()``,
    an escaped ``argmax`` or ``argmin``, a branch on a value) differs
    between the two traces."""
    v = first[0]
    with np.errstate(all="ignore"):
        if a.dtype.kind == "b":
            mid, hi, lo = not v, not v, v
        elif a.dtype.kind in "iu":             # wrapping at the ends of the range
            one = a.dtype.type(1)
            mid, hi, lo = v + one, v + one + one + one, v - one
        elif np.isfinite(v):
            d = abs(v) + 1
            mid, hi, lo = v + d / 2, v + d, v - d
        else:
            mid, hi, lo = 0.5, 1.0, -1.0
    return np.array([mid] if a.ndim == 0 else [mid, hi, lo], dtype=a.dtype)


def _extreme_values(a):
    """The third trace's probe values: far from the first two (the largest
    and most negative finite values NumPy's dtype holds, halved, and zero),
    so that a threshold a value read past the probes' checks is compared
    with (``np.asarray(x).max() > 100``, ``.min() >= 0``) most likely
    differs between the traces."""
    if a.dtype.kind == "b":
        vals = [True, False, True]
    elif a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        vals = [info.max // 2, info.min // 2, 0]
    else:
        big = np.finfo(a.dtype).max / 2
        vals = [big, -big, 0.0]
    return np.array(vals[:1] if a.ndim == 0 else vals, dtype=a.dtype)


def _trace_once(fn, args, positions, values, same=(), watch=True):
    """One run of ``fn`` on probes holding ``values`` (one array per array
    argument): its tape and what it returned.

    It runs under an errstate of its own that calls a recorder for every
    floating-point flag: the probes' steps compute with errors ignored, so
    a flag comes from a step on scalars alone (``np.log(k)``, ``k`` a NumPy
    scalar), which the plan would keep as a constant, reported at the trace
    and never again where eager NumPy reports it on every call -- such a
    function runs eagerly.  An np.errstate set inside the function differs
    from the trace's own (the tape's baseline) and is refused: the executor
    reports under the caller's; so is an np.seterr the function leaves
    set (the trace's errstate would undo it).  ``watch``: the function's
    reads of the errstate are watched (nclx.evaluate's read none); a hook
    the run sets is undone and refuses the function (:class:`_Watch`); a
    RecursionError or MemoryError refuses this call only (:class:`NotNow`)."""
    flagged = []
    # only what the caller does not ignore is reported eagerly (the plan's
    # key holds the caller's errstate)
    modes = {k: "ignore" if v == "ignore" else "call" for k, v in np.geterr().items()}
    with np.errstate(call=lambda kind, flag: flagged.append(kind), **modes):
        tape = _Tape(len(positions), max((args[i].ndim for i in positions), default=1))
        call = list(args)
        probes = []
        for slot, (i, v) in enumerate(zip(positions, values)):
            probes.append(v.view(_Probe)._nclx_init(tape, slot))
            call[i] = probes[-1]
            if args[i].ndim:
                tape.wide.add(slot)
        for j, i in same:               # one array passed twice: one probe (x is y)
            call[j] = call[i]
        kept = [v.copy() for v in values]
        reads = _Watch(watch)
        try:
            with reads:
                out = fn(*call)
        except Untraceable:
            if tape.state_changed:
                raise _refusal(tape) from None
            raise
        except Exception as exc:
            if reads.hooks is not None or reads.shared is not None:
                raise (NotNow if reads.hooks is None else Untraceable)(
                    reads.hooks or reads.shared) from None
            if tape.poisoned is not None:
                raise _refusal(tape) from None
            if isinstance(exc, (RecursionError, MemoryError)):
                # short of stack or memory here (a RecursionError was kept
                # before: eager for good; found by review)
                raise NotNow(f"tracing raised {type(exc).__name__}: {exc}") from None
            raise Untraceable(f"tracing raised {type(exc).__name__}: {exc}") from None
        if np.geterrcall() is not tape.errcall or np.geterr() != tape.err:
            # np.seterr inside the function: this context's state is undone
            # when the trace's errstate exits; eager runs keep it, as NumPy
            raise Untraceable("the function sets np.seterr (eager NumPy keeps it)")
    if reads.hooks is not None:
        raise Untraceable(reads.hooks)
    if reads.shared is not None:
        raise NotNow(reads.shared)
    if tape.poisoned is not None:             # refused, and the function caught it
        raise _refusal(tape)
    if reads.why is not None:
        raise (NotNow if reads.unwatched else Untraceable)(reads.why)
    if flagged:
        raise Untraceable(f"a step on scalars alone flags '{flagged[0]}' (eager NumPy reports "
                          f"it on every call; a plan would keep its value)")
    if any(v.tobytes() != k.tobytes() for v, k in zip(values, kept)):
        raise Untraceable("the function changed an argument in place")
    return tape, out


class NotNow(Untraceable):
    """Not traced at this call, for a reason that may pass (a profiler is set,
    the stack is short): the call runs eagerly and the refusal is not kept."""


def _three_traces(fn, args, positions, same, watch):
    """:func:`trace`'s three runs of ``fn``: one-element probes, probes of
    other sizes and values, extreme values."""
    first = [_first_values(args[i]) for i in positions]
    return (_trace_once(fn, args, positions, first, same, watch),
            _trace_once(fn, args, positions,
                        [_other_values(args[i], f) for i, f in zip(positions, first)],
                        same, watch),
            _trace_once(fn, args, positions, [_extreme_values(args[i]) for i in positions],
                        same, watch))


def _refusal(tape):
    return (StateChanged if tape.state_changed else Untraceable)(tape.poisoned)


def _result_slot(tape, out):
    if tape.reduced is not None:
        if not isinstance(out, _Reduced):
            raise Untraceable("the reduction is not the result")
        return tape.reduced[2]
    if not isinstance(out, _Probe) or object.__getattribute__(out, "__dict__").get(
            "_nclx_tape") is not tape:
        raise Untraceable(f"the result is a {type(out).__name__}, not an array expression")
    return out._nclx_slot


def _same_trace(t1, t2):
    return (t1.steps == t2.steps and t1.reduced == t2.reduced and t1.elisions == t2.elisions
            and [(s, v.dtype, v.tobytes()) for s, v in t1.constants]
            == [(s, v.dtype, v.tobytes()) for s, v in t2.constants])


def _check_depends_on_an_array(tape, result, ndims):
    """Refuse a result (or the value a final reduction reads) computed from
    0-d arrays and scalars alone: NumPy gives it their shape, the executor
    would spread it over the n-d arguments' elements."""
    wide = {slot for slot, nd in enumerate(ndims) if nd}
    for st in tape.steps:
        if any(i in wide for i in st.ins):
            wide.add(st.out)
    if result not in wide:
        raise Untraceable("the result depends on 0-d arrays and scalars alone "
                          "(NumPy gives it their shape)")


def trace(fn, args, watch=True):
    """Trace ``fn(*args)``; args: ndarrays (probed, in order: the operand
    slots; one array passed more than once is one probe and one slot, as
    ``x is y`` holds eagerly) and anything else (passed as it is, a
    constant of the trace).  A function whose code calls ``type()``
    (nclx._fusecode) is not traced.
    Returns (program, constants, array_positions, wheres, variants):
    constants is a list of (slot, 0-d array) the caller passes after the
    arrays; wheres, per step (the reduction last), where eager NumPy
    reports its flags (file, line, module globals, code name; None: never
    flags); variants, ((fewest elements, program), ...): the program for
    calls of at least that many elements, whose temporaries eager NumPy
    reuses with swapped operands (nclx._elide; ``program`` below them).

    The function runs three times, on one-element probes, on probes of
    other sizes and values (:func:`_other_values`) and on extreme values
    (:func:`_extreme_values`); the runs must record the same steps and
    constants: a result that depends on the probes (taken through
    ``np.asarray`` or another way past the probe's checks) in a way these
    values reveal runs the function eagerly instead of being kept."""
    who = _fusecode.calls_type(fn)
    if who is not None:
        raise Untraceable(f"{who} calls type(): the trace's probes are no numpy.ndarray "
                          f"(isinstance() and .__class__ answer as for one)")
    who = _fusecode.sets_hooks(fn, HOOK_SETTERS)
    if who is not None:
        raise Untraceable(f"{who[0]} may set a profile or trace function ({who[1]}): the "
                          f"plain function leaves it set")
    positions, same = [], []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            first = next((j for j in positions if args[j] is a), None)
            if first is None:
                positions.append(i)
            else:
                same.append((i, first))
    for i in positions:
        if args[i].dtype.char not in SUPPORTED:
            raise Untraceable(f"an operand of dtype {args[i].dtype}")
    depth = _cledger.muted()
    try:
        _cledger.mute(1)        # the probes' small calls are no calls of the user's
        # in a copy of the caller's context: an errstate the traces enter is
        # never left in the caller's, whatever interrupts its exit (a Ctrl-C
        # inside np.errstate's __exit__ left the trace's "call" errstate in
        # place, and NumPy's warnings silenced for good; review 25); the
        # context variables the function sets are set here once they return
        (tape, out), (again, out2), (third, out3) = run_isolated(
            _three_traces, fn, args, positions, same, watch)
    finally:
        _cledger.unmute_to(depth)       # (also after a Ctrl-C right after mute)
    result = _result_slot(tape, out)
    if tape.reduced is None and out.dtype.metadata is not None:
        # a 0-d operand of such a dtype made inside the function
        # (np.asarray(2.0, dtype=dt) * x): eager NumPy's result keeps the
        # metadata, the executor's dtype is made from a type character
        # (found by review)
        raise Untraceable("the result's dtype has metadata (eager NumPy's keeps it)")
    if not (_same_trace(tape, again) and _same_trace(tape, third)) or \
            result != _result_slot(again, out2) or result != _result_slot(third, out3):
        raise Untraceable("the function's steps depend on its arrays' values or sizes "
                          "(something read a probe past its checks)")
    _check_depends_on_an_array(tape, result, [args[i].ndim for i in positions])
    if not tape.steps:
        raise Untraceable("no ufunc step")
    if tape.steps[-1].out != result:
        raise Untraceable("the result is not the last step's")
    # constants become operand slots right after the arrays: renumber
    nin = len(positions) + len(tape.constants)
    order = list(range(len(positions))) + [s for s, _ in tape.constants]
    temps = [st.out for st in tape.steps]
    remap = {old: new for new, old in enumerate(order)}
    remap.update({old: nin + k for k, old in enumerate(temps)})
    steps = tuple(Step(st.ufunc, st.chars, tuple(remap[i] for i in st.ins), remap[st.out])
                  for st in tape.steps)
    if nin + len(temps) > MAX_SLOTS or len(steps) > MAX_STEPS:
        # before: the executor refused the program with a ValueError the
        # caller saw (a 40-step expression raised instead of running)
        raise Untraceable(f"{len(steps)} steps over {nin + len(temps)} operands and temporaries "
                          f"(the executor runs at most {MAX_STEPS} steps over {MAX_SLOTS})")
    kind, chars = (tape.reduced[0], tape.reduced[1]) if tape.reduced is not None else (None, None)
    program = Program(steps, nin + len(temps), nin, remap[result], kind, chars)
    wheres = tuple(tape.wheres) + ((tape.reduce_where,) if tape.reduced is not None else ())
    wide = {k for k, i in enumerate(positions) if args[i].ndim}
    for st in steps:
        if any(i in wide for i in st.ins):
            wide.add(st.out)
    elisions = [(k, remap[s], isz) for k, s, isz in tape.elisions]
    return (program, [v for _, v in tape.constants], positions, wheres,
            _elide.variants(program, elisions, wide))
