"""A Program checked and resolved once for nclx._ncl.blockexec: the loop of
every step (the function NumPy's ufunc call would run: nclx's entry where
nclx serves the signature, NumPy's loop elsewhere), each slot's dtype, the
final reduction's loop and starting values.  Plans are cached by program."""
import os

import numpy as np

from nclx._ncl import entries, entryloops, spec
from nclx._ncl import ledger as _cledger
from nclx._ncl.looptable import find_loop

MAX_SLOTS = 64          # blockexec's C arrays
MAX_STEPS = 64
_CHARS = "?bBhHiIlLqQfd"    # bool, int8..uint64, float32, float64
_CACHE_MAX = 512
_PROGRAM_FIELDS = ("steps", "nslots", "ninputs", "result", "reduce", "reduce_chars")

_cache = {}
_ufunc_op = None
_twins = {}
_slots = None
_entry_slot = None      # entry address -> slot (nclx's own ufuncs: fma, where)
_l2 = None


#: steps cheap enough that a program made of them waits on memory: its
#: result may be written with non-temporal stores (blockexec).  Measured on
#: the AMD EPYC VM, 2 threads: 2*a+b*b 1.12-1.14x, where(a>b,a,b)*2
#: 1.08x; with exp, sqrt or a division among the steps the separate store
#: pass cost 2-8% (the plain stores had overlapped the arithmetic)
STREAM_OPS = frozenset({
    "add", "subtract", "multiply", "negative", "positive", "absolute", "fma",
    "maximum", "minimum", "fmax", "fmin", "copysign", "where", "cast",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert"})


class Plan:
    """What blockexec needs of one Program (see make_plan)."""

    __slots__ = ("program", "nsteps", "nslots", "ninputs", "result", "dtypes", "itemsizes",
                 "steps", "names", "reduce", "reduce_seq", "reduce_loop", "reduce_start",
                 "reduce_seed", "bytes_per_element", "stream", "stream_probes")

    def __init__(self):
        self.stream_probes = None     # blockexec's streamprobe.StreamProbes, made at first need


def l2_bytes():
    """Size of the L2 cache in bytes (1 MiB when the system does not say)."""
    global _l2
    if _l2 is None:
        size = 0
        try:
            size = os.sysconf("SC_LEVEL2_CACHE_SIZE")
        except (ValueError, OSError, AttributeError):
            pass
        if size <= 0:
            try:
                with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
                    text = f.read().strip()
                size = int(text[:-1]) * 1024 if text.endswith("K") else int(text)
            except (OSError, ValueError):
                size = 0
        _l2 = size if size > 0 else 1 << 20
    return _l2


def _loop(ufunc, chars, where):
    """(function address, data address, entry slot or -1) of ``ufunc``'s loop
    ``chars``; the slot where the address is nclx's entry for it (for a
    ufunc of nclx.ufuncs without a NumPy twin -- ``where``, ``fma`` -- the
    loop its table holds, known as an entry by its address)."""
    global _ufunc_op, _slots, _entry_slot
    if _ufunc_op is None:
        # built whole, then published (``_ufunc_op`` last): an interrupt or
        # an error half way leaves nothing half built for the next call
        ufunc_op = {}
        for op in spec.OPS:
            uf = spec.numpy_ufunc(op)
            if uf is not None:
                ufunc_op[uf] = op
        slots = {sig: k for k, sig in enumerate(entries.signatures())}
        entry_slot = {}
        for op in spec.OPS:
            if op != "cast" and spec.numpy_ufunc(op) is None:
                for c, fn, _ in entryloops.entry_loops(op):
                    entry_slot[fn] = slots.get((op, c), -1)
        _slots, _entry_slot = slots, entry_slot
        _ufunc_op = ufunc_op
    op = _ufunc_op.get(ufunc)
    want = [np.dtype(c) for c in chars]
    if op is not None:
        if op not in _twins:
            _twins[op] = entryloops.twin_loops(op)
        for c, fn, data in _twins[op]:
            if len(c) == len(chars) and [np.dtype(x) for x in c] == want:
                k = _slots.get((op, c), -1)
                served = k >= 0 and any(e[1] == fn for e in entryloops.entry_loops(op) if e[0] == c)
                return fn, data, k if served else -1
    else:
        found = find_loop(ufunc, chars)
        if found is not None:
            return found[1], found[2], _entry_slot.get(found[1], -1)
    raise TypeError(f"nclx.blockexec: {where}: numpy.{ufunc.__name__} has no loop {chars!r}")


def _dtype_of(chars, where):
    if not isinstance(chars, str):
        raise TypeError(f"nclx.blockexec: {where}: chars must be a str, not {type(chars).__name__}")
    for c in chars:
        if c not in _CHARS:
            raise TypeError(f"nclx.blockexec: {where}: type character {c!r} is not one the "
                            f"executor runs (bool, int8..uint64, float32, float64)")
    return [np.dtype(c) for c in chars]


def _int_in(value, lo, hi, what):
    if type(value) is not int or not lo <= value < hi:
        raise ValueError(f"nclx.blockexec: {what} must be an int in [{lo}, {hi}), not {value!r}")
    return value


def _build(program):
    # nclx._fused_program.Program (above the core: known by its fields)
    if getattr(type(program), "_fields", None) != _PROGRAM_FIELDS:
        raise TypeError(f"nclx.blockexec: program must be a nclx._fused_program.Program, "
                        f"not {type(program).__name__}")
    nslots = _int_in(program.nslots, 1, MAX_SLOTS + 1, "nslots")
    ninputs = _int_in(program.ninputs, 0, nslots + 1, "ninputs")
    steps = program.steps
    if len(steps) > MAX_STEPS:
        raise ValueError(f"nclx.blockexec: at most {MAX_STEPS} steps, not {len(steps)}")
    dtypes = [None] * nslots
    written = [s < ninputs for s in range(nslots)]
    plan = Plan()
    plan.steps = []
    plan.names = []
    for k, st in enumerate(steps):
        where = f"step {k}"
        uf = st.ufunc
        if not isinstance(uf, np.ufunc):
            raise TypeError(f"nclx.blockexec: {where}: ufunc must be a numpy.ufunc, not {uf!r}")
        if uf.nout != 1 or uf.nin not in (1, 2, 3):
            raise ValueError(f"nclx.blockexec: {where}: numpy.{uf.__name__} has {uf.nin} inputs "
                             f"and {uf.nout} outputs; the executor runs 1 to 3 inputs, 1 output")
        if len(st.ins) != uf.nin:
            raise ValueError(f"nclx.blockexec: {where}: numpy.{uf.__name__} reads {uf.nin} slots, "
                             f"ins names {len(st.ins)}")
        dts = _dtype_of(st.chars, where)
        if len(dts) != uf.nin + 1:
            raise ValueError(f"nclx.blockexec: {where}: chars {st.chars!r} must have "
                             f"{uf.nin + 1} type characters")
        for j, s in enumerate(st.ins):
            _int_in(s, 0, nslots, f"{where}: input slot {j}")
            if not written[s]:
                raise ValueError(f"nclx.blockexec: {where} reads slot {s} before any step writes it")
            if dtypes[s] is None:
                dtypes[s] = dts[j]
            elif dtypes[s] != dts[j]:
                raise TypeError(f"nclx.blockexec: {where} reads slot {s} as {dts[j]}, "
                                f"it holds {dtypes[s]}")
        o = _int_in(st.out, ninputs, nslots, f"{where}: output slot")
        if written[o]:
            raise ValueError(f"nclx.blockexec: {where} writes slot {o}, already written")
        written[o] = True
        dtypes[o] = dts[-1]
        fn, data, slot = _loop(uf, st.chars, where)
        plan.steps.append((fn, data, slot, tuple(st.ins), o))
        plan.names.append(uf.__name__.encode())
    plan.names.append(b"reduce")
    result = _int_in(program.result, 0, nslots, "result")
    if steps and result != steps[-1].out:
        raise ValueError(f"nclx.blockexec: result is slot {result}, the last step writes "
                         f"slot {steps[-1].out}")
    if program.reduce not in (None, "sum", "prod"):
        raise ValueError(f"nclx.blockexec: reduce must be None, 'sum' or 'prod', "
                         f"not {program.reduce!r}")
    if not steps and (program.reduce is None or result >= ninputs):
        raise ValueError("nclx.blockexec: a program without steps must reduce an operand")
    plan.reduce = program.reduce
    plan.reduce_seq = False
    plan.reduce_loop = None
    if program.reduce is not None:
        rdts = _dtype_of(program.reduce_chars, "reduce_chars")
        if dtypes[result] is None and rdts:
            dtypes[result] = rdts[0]        # an operand reduced as it is
        rdt = dtypes[result]
        if len(rdts) != 3 or rdt is None or any(d != rdt for d in rdts):
            raise TypeError(f"nclx.blockexec: reduce_chars {program.reduce_chars!r} must be the "
                            f"result's dtype ({rdt}) three times")
        uf = np.add if program.reduce == "sum" else np.multiply
        if uf.reduce(np.empty(0, rdt)).dtype != rdt:
            raise TypeError(f"nclx.blockexec: numpy.{uf.__name__}.reduce of {rdt} gives "
                            f"{uf.reduce(np.empty(0, rdt)).dtype}; the executor reduces "
                            f"without a cast")
        plan.reduce_loop = _loop(uf, program.reduce_chars, "reduce_chars")
        plan.reduce_seq = program.reduce == "prod" and rdt.kind == "f"
        plan.reduce_start = 0 if program.reduce == "sum" else 1
        plan.reduce_seed = (-0.0 if rdt.kind == "f" else 0) if program.reduce == "sum" else 1
    plan.program = program
    plan.nsteps = len(steps)
    plan.nslots = nslots
    plan.ninputs = ninputs
    plan.result = result
    plan.dtypes = tuple(dtypes)
    plan.itemsizes = tuple(d.itemsize if d is not None else 0 for d in dtypes)
    plan.bytes_per_element = sum(plan.itemsizes)
    plan.stream = all(name.decode() in STREAM_OPS for name in plan.names[:-1])
    return plan


def make_plan(program):
    """The cached Plan of ``program``; ValueError / TypeError name what is wrong."""
    try:
        return _cache[program]
    except KeyError:
        pass
    except TypeError:
        raise TypeError("nclx.blockexec: program is not hashable (a list among its steps?)") from None
    plan = _build(program)
    if len(_cache) >= _CACHE_MAX:
        _cache.clear()
    _cache[program] = plan
    return plan


_chunks = None


def reduces_in_chunks():
    """True when this NumPy reduces a contiguous float array in chunks of
    np.getbufsize() elements (acc += pairwise(chunk), as NumPy 2.0.2 does;
    2.4.6 and 2.5 do not) rather than in one pairwise pass; measured once,
    on data whose two sums differ."""
    global _chunks
    if _chunks is None:
        # nclx's own calls, not the user's: a recording ledger does not
        # count them (before, the first fused float sum in a process added
        # about 450 add.reduce rows to it; found by review 22)
        depth = _cledger.muted()
        try:
            _cledger.mute(1)
            x = np.random.default_rng(12345).standard_normal(3 * np.getbufsize() + 77)
            x = (x * 1e4).astype(np.float32)
            bufsize = np.getbufsize()
            one = np.float32(-0.0) + _pairwise(x)
            acc = np.float32(-0.0)
            for lo in range(0, len(x), bufsize):
                acc = acc + _pairwise(x[lo:lo + bufsize])
            got = np.add.reduce(x)
        finally:
            _cledger.unmute_to(depth)       # (also after a Ctrl-C right after mute)
        _chunks = bool(got.tobytes() == acc.tobytes() and got.tobytes() != one.tobytes())
    return _chunks


def _pairwise(x):
    """NumPy's pairwise sum of a float32 array, by its own loop on pieces of
    at most 128 elements (where NumPy does not split) added as its tree adds
    them."""
    n = len(x)
    if n <= 128:
        return np.add.reduce(x)       # -0.0 + pairwise(x): no split, one loop call
    n2 = n // 2
    n2 -= n2 % 8
    return np.float32(_pairwise(x[:n2]) + _pairwise(x[n2:]))
