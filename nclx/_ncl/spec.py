"""The table of nclx operations: one source of truth for the code generator
(``kernels.pyx.in`` is expanded with this module's names) and for the ufunc
builder (:mod:`nclx._ncl.ufuncs`).

Everything here is named in fixed-width dtypes; the mapping to NumPy's
C-named type characters happens at run time in :mod:`nclx._ncl.dtypes`.
"""
import importlib
import sys

BOOL = ("bool",)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
FLOATS = ("float32", "float64")
ALL = BOOL + INTS + FLOATS

#: NumPy's loop order: the legacy type resolver takes the first loop the
#: inputs can be cast to safely, so the ufuncs list loops in this order.
NUMPY_CHAR_ORDER = "?bBhHiIlLqQfd"

#: C type of each fixed-width dtype in the kernels.
CTYPES = {
    "bool": "npy_bool",
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double",
}

#: Item size in bytes.
ITEMSIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2,
            "uint32": 4, "uint64": 8, "float32": 4, "float64": 8}

# identity codes understood by the ufunc builder
ZERO, ONE, MINUS_ONE, NONE, REORDERABLE_NONE = "zero", "one", "minus_one", "none", "reorderable_none"


def _same(dtypes, nin, out=None):
    """Loops whose inputs share one dtype; the output is that dtype or ``out``."""
    return [((dt,) * nin, out or dt) for dt in dtypes]


_MIXED = [(("int64", "uint64"), "bool"), (("uint64", "int64"), "bool")]

#: name -> (kind, nin, identity, loops); loops are (input dtypes, output dtype).
OPS = {}
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    OPS[_name] = ("compare", 2, NONE, _same(ALL, 2, "bool") + _MIXED)
OPS["add"] = ("binary", 2, ZERO, _same(ALL, 2))
OPS["subtract"] = ("binary", 2, NONE, _same(INTS + FLOATS, 2))
OPS["multiply"] = ("binary", 2, ONE, _same(ALL, 2))
OPS["true_divide"] = ("binary", 2, NONE, _same(FLOATS, 2))
OPS["floor_divide"] = ("binary", 2, NONE, _same(INTS + FLOATS, 2))
OPS["remainder"] = ("binary", 2, NONE, _same(INTS + FLOATS, 2))
OPS["maximum"] = ("binary", 2, REORDERABLE_NONE, _same(ALL, 2))
OPS["minimum"] = ("binary", 2, REORDERABLE_NONE, _same(ALL, 2))
OPS["bitwise_and"] = ("binary", 2, MINUS_ONE, _same(BOOL + INTS, 2))
OPS["bitwise_or"] = ("binary", 2, ZERO, _same(BOOL + INTS, 2))
OPS["bitwise_xor"] = ("binary", 2, ZERO, _same(BOOL + INTS, 2))
OPS["negative"] = ("unary", 1, NONE, _same(INTS + FLOATS, 1))
OPS["absolute"] = ("unary", 1, NONE, _same(ALL, 1))
OPS["invert"] = ("unary", 1, NONE, _same(BOOL + INTS, 1))
OPS["sqrt"] = ("unary", 1, NONE, _same(FLOATS, 1))

# ---- ops whose loops are NumPy's own (NUMPY_LOOPS below): nclx adds the
# chains, the ledger, checked() and the threads; every chunk runs NumPy's
# (SIMD/SVML) loop, so results are NumPy's bits at any thread count.
_UNARY_MATH = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
               "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
               "arctanh", "cbrt", "rint", "fabs")
for _name in _UNARY_MATH:
    OPS[_name] = ("unary", 1, NONE, _same(FLOATS, 1))
for _name in ("square", "reciprocal", "sign"):
    OPS[_name] = ("unary", 1, NONE, _same(INTS + FLOATS, 1))
# integer (and bool) floor/ceil/trunc loops exist from NumPy 2.1 on; an entry
# whose loop the running NumPy lacks is skipped (install) or left out (nclx.ufuncs)
for _name in ("floor", "ceil", "trunc"):
    OPS[_name] = ("unary", 1, NONE, _same(ALL, 1))
for _name in ("isnan", "isinf", "isfinite", "logical_not"):
    OPS[_name] = ("isunary", 1, NONE, _same(ALL, 1, "bool"))
OPS["signbit"] = ("isunary", 1, NONE, _same(FLOATS, 1, "bool"))
OPS["power"] = ("binary", 2, NONE, _same(INTS + FLOATS, 2))
for _name in ("arctan2", "copysign", "heaviside"):
    OPS[_name] = ("binary", 2, NONE, _same(FLOATS, 2))
OPS["hypot"] = ("binary", 2, ZERO, _same(FLOATS, 2))
for _name in ("fmax", "fmin"):
    OPS[_name] = ("binary", 2, REORDERABLE_NONE, _same(ALL, 2))
# logical ops belong to Compare (bool results), as at nclx's python level
OPS["logical_and"] = ("compare", 2, ONE, _same(ALL, 2, "bool"))
OPS["logical_or"] = ("compare", 2, ZERO, _same(ALL, 2, "bool"))
OPS["logical_xor"] = ("compare", 2, ZERO, _same(ALL, 2, "bool"))
for _name in ("left_shift", "right_shift", "lcm"):
    OPS[_name] = ("binary", 2, NONE, _same(INTS, 2))
OPS["gcd"] = ("binary", 2, ZERO, _same(INTS, 2))
OPS["float_power"] = ("binary", 2, NONE, _same(("float64",), 2))
OPS["fmod"] = ("binary", 2, NONE, _same(INTS + FLOATS, 2))
OPS["clip"] = ("ternary", 3, NONE, _same(ALL, 3))

# ---- nclx's own ops (no NumPy ufunc of the name): kernels only
#: fma(a, b, c): a*b+c with one rounding (C fma)
OPS["fma"] = ("ternary", 3, NONE, _same(FLOATS, 3))
#: where(cond, x, y): x where cond else y
OPS["where"] = ("ternary", 3, NONE, [(("bool", dt, dt), dt) for dt in ALL])
#: cast(a): a converted to the output dtype, as ``a.astype(dtype)``
OPS["cast"] = ("convert", 1, NONE, [((src,), dst) for src in ALL for dst in ALL])

#: ops served by NumPy's own loops (no nclx kernel)
NUMPY_LOOPS = frozenset(_UNARY_MATH + (
    "square", "reciprocal", "sign", "floor", "ceil", "trunc", "isnan", "isinf", "isfinite",
    "logical_not", "signbit", "power", "arctan2", "copysign", "heaviside", "hypot", "fmax",
    "fmin", "logical_and", "logical_or", "logical_xor", "left_shift", "right_shift", "lcm",
    "gcd", "float_power", "fmod", "clip"))
#: ops NumPy has no ufunc for: only nclx.ufuncs (and nclx.convert) reach them
NCLX_ONLY = ("fma", "where", "cast")
#: NumPy ufuncs that ``numpy.<op>`` does not name (np.clip is a function
#: around this ufunc): the module that holds them
NUMPY_HOME = {"clip": "numpy._core.umath"}


def whole_only(op, in_dtypes):
    """Loops never split across threads: NumPy's integer power raises its
    ValueError (negative exponent) from inside the loop, which only works on
    the thread that called NumPy."""
    return op == "power" and in_dtypes[0] in INTS


def key_dtype(in_dtypes):
    """The dtype a loop is known by in thresholds and hooks: its first input,
    or the value dtype of a loop whose first input is a bool condition."""
    if in_dtypes[0] == "bool" and len(set(in_dtypes)) > 1:
        return in_dtypes[-1]
    return in_dtypes[0]


def numpy_ufunc(op):
    """NumPy's ufunc of ``op`` (None for nclx's own ops), as its module holds it now."""
    home = NUMPY_HOME.get(op, "numpy")
    if op not in NCLX_ONLY:
        return getattr(sys.modules.get(home) or importlib.import_module(home), op)


def start_value(op, dtype):
    """The value a reduction of ``op`` over ``dtype`` starts from -- what an
    empty partial contributes: the ufunc's identity (add 0, multiply 1,
    bitwise_and -1, ...) or, for maximum/minimum (and fmax/fmin), the
    dtype's lowest/highest value (-inf/inf for floats, False/True for bool).
    None when the op has neither.  ``dtype`` is a NumPy dtype or its name."""
    import numpy as np
    dt = np.dtype(dtype)
    if op in ("maximum", "minimum", "fmax", "fmin"):
        high = op in ("minimum", "fmin")
        if dt.kind == "b":
            return dt.type(high)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return dt.type(info.max if high else info.min)
        if dt.kind == "f":
            return dt.type(np.inf if high else -np.inf)
        return None
    value = {ZERO: 0, ONE: 1, MINUS_ONE: -1}.get(OPS[op][2] if op in OPS else None)
    if value is None:
        return None
    if dt.kind == "b":
        return dt.type(value != 0)
    if dt.kind == "u" and value < 0:
        return dt.type(np.iinfo(dt).max)
    # m8/M8: the count in their own unit (NumPy 2.5 deprecates dt.type(int)'s generic one)
    return np.array(value, np.int64).view(dt)[()] if dt.kind in "mM" else dt.type(value)


#: bool reductions that can stop early: the value that, once reached, the
#: accumulator keeps (True for "any"-like ops, False for "all"-like ones).
BOOL_ABSORBING = {"add": 1, "maximum": 1, "bitwise_or": 1,
                  "multiply": 0, "minimum": 0, "bitwise_and": 0}

#: Which loop nclx's kernel node runs by default (nclx.calibrate() measures
#: instead).  Whole calls below the split threshold run NumPy's own loop
#: (runtime-dispatched SIMD; nclx's kernels are level with it there, a few
#: float compares ~10% behind), except the ops where nclx's kernel measured
#: clearly faster.  Per-thread chunks run nclx's kernels, except the
#: reductions NumPy does with SIMD horizontal max/min.
NCLX_WHOLE_CALLS = ("sqrt", "true_divide")
PREFER_NUMPY_REDUCE = ("maximum", "minimum")
#: Ops whose elementwise calls and chunks always run NumPy's loop (also after
#: nclx.calibrate()): for two NaN operands nclx's float remainder keeps
#: another NaN than NumPy's, whose follows its C library's fmod (found by
#: review: threaded chunks gave the first operand's NaN, NumPy the second's).
NUMPY_LOOP_ONLY = ("remainder",)
#: The same for these ops' float loops: which of two NaN operands NumPy's
#: add and multiply keep differs between its versions and between the
#: vectorised body and the tail of one loop call (NumPy 2.0: the second's
#: in the body; 2.4-2.5: the first's, the second's in the tail), so nclx's
#: kernel, which keeps the first's, gave other bits in threaded chunks
#: (found by review); NumPy's loop on chunks cut on 64 elements keeps
#: NumPy's pattern.
NUMPY_FLOAT_LOOP_ONLY = ("add", "multiply")
#: Reductions follow the same rule, and float maximum/minimum ones too
#: (NumPy reduces them in SIMD lanes: which NaN survives is the lanes'
#: choice), also after nclx.calibrate(), which applied the rule to
#: elementwise calls only and kept nclx's kernel for whole float remainder
#: reductions (measured ~10x faster): np.remainder.reduce over NaNs of
#: other payloads or signs gave another NaN than stock (review 18).  The
#: shipped table (default_preference) already runs these reductions whole
#: on NumPy's loop; their chunks are NumPy's pairwise leaves (add), or
#: exist only under config(reassociate=True) (multiply, maximum, minimum)
#: or never (remainder).
NUMPY_FLOAT_REDUCE_ONLY = NUMPY_FLOAT_LOOP_ONLY + ("maximum", "minimum")


def numpy_loop_only(op, dtype, reduce=False):
    """Whether elementwise calls and chunks (``reduce``: reductions, whole
    and chunks) of ``op`` on ``dtype`` (its key dtype's name) always run
    NumPy's loop."""
    floats = NUMPY_FLOAT_REDUCE_ONLY if reduce else NUMPY_FLOAT_LOOP_ONLY
    return op in NUMPY_LOOP_ONLY or (op in floats and dtype in FLOATS)


def default_preference(op, dtype=None):
    """((elementwise whole, chunk), (reduce whole, chunk)): True = NumPy's loop
    (``dtype``: the loop's key dtype, see numpy_loop_only)."""
    if op in NCLX_ONLY:
        return ((False, False), (False, False))     # there is no NumPy loop
    whole = op not in NCLX_WHOLE_CALLS
    red = op in PREFER_NUMPY_REDUCE
    return ((whole, numpy_loop_only(op, dtype)), (whole or red, red))

#: Calls of at least this many elements are split across threads, unless
#: SPLIT_THRESHOLDS names the op (and kind) -- nclx.calibrate(thresholds=True)
#: measures the running machine instead.
SPLIT_THRESHOLD = 65536
NEVER = 1 << 62
#: No call below this many elements is split: NumPy hands casting, where=
#: and broadcasting calls over in buffers of 8,192 elements, and waking the
#: team for each buffer (while the casts stay on one thread) measured slower
#: than one thread (integer true_divide: 0.63-0.89x with a 4,096 threshold).
MIN_SPLIT = 16384


def split_threshold(op, dtype, reduce):
    """Shipped split threshold of ``op`` on inputs of ``dtype`` (fixed-width
    name): measured per (op, kind, dtype) in nclx/_ncl/split_thresholds.py,
    never below MIN_SPLIT."""
    # lazy: meson's generator runs this file as a plain namespace for the
    # templates (no nclx package on the path), and only the runtime asks this
    from nclx._ncl.split_thresholds import MEASURED
    return max(MIN_SPLIT, MEASURED.get((op, "reduce" if reduce else "elementwise", dtype),
                                       SPLIT_THRESHOLD))

#: float ops whose vectorised compares may raise FE_INVALID for a NaN
#: operand (SSE has only signalling less-than); NumPy raises no warning for
#: them, so their float kernels drop an FE_INVALID they raised themselves.
QUIET_NAN_OPS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
                 "maximum", "minimum")

#: ops whose float reduction NumPy performs pairwise
PAIRWISE_REDUCE = ("add",)


#: The fixed-width type of each NumPy type character on LP64 platforms. Only
#: used to decide statically which characters an op has loops for (the class
#: of a character -- bool, integer, float -- is the same everywhere); at run
#: time the dtype layer maps characters to fixed widths.
LP64_CHARS = {
    "?": "bool", "b": "int8", "B": "uint8", "h": "int16", "H": "uint16",
    "i": "int32", "I": "uint32", "l": "int64", "L": "uint64",
    "q": "int64", "Q": "uint64", "f": "float32", "d": "float64",
}

SUBSYSTEM_OF_KIND = {"compare": "compare", "binary": "binary", "unary": "unary",
                     "isunary": "isunary", "ternary": "ternary", "convert": "convert"}
#: Funnel subsystems, in enum order (a binary call that is a reduction goes
#: to "reduce"); the last four are NCLib's subsystems whose calls are not
#: ufunc loops (CALL_OPS).
SUBSYSTEMS = ("compare", "binary", "unary", "reduce", "isunary", "ternary", "convert",
              "sort", "mask", "rng", "create")

#: NCLib's Sort, Mask, RNG and Create subsystems: their ops are whole calls
#: (a sort of n elements, a selection by a mask, a random fill, an
#: allocation), not elementwise loops.  op -> (subsystem, dtypes, operands):
#: one call slot (ledger row, kernel chain ``<op>_<dtype>``) per dtype; a
#: call hands its hooks one buffer per operand, the last one is the one it
#: writes (nclx._ncl.callops).
CALL_OPS = {
    "sort": ("sort", ALL, ("data",)),
    "argsort": ("sort", ALL, ("values", "indices")),
    "extract": ("mask", ALL, ("condition", "arr", "out")),
    "place": ("mask", ALL, ("mask", "vals", "arr")),
    "putmask": ("mask", ALL, ("mask", "values", "a")),
    "count": ("mask", BOOL, ("mask", "count")),
    "random": ("rng", FLOATS, ("out",)),
    "uniform": ("rng", FLOATS, ("out",)),
    "standard_normal": ("rng", FLOATS, ("out",)),
    "normal": ("rng", FLOATS, ("out",)),
    "exponential": ("rng", FLOATS, ("out",)),
    "integers": ("rng", INTS, ("out",)),
    "permutation": ("rng", ("int64",), ("out",)),
    "empty": ("create", ALL, ("out",)),
    "zeros": ("create", ALL, ("out",)),
    "full": ("create", ALL, ("out",)),
    # NumPy's copies of a dtype to itself (nclx._ncl.copying)
    "copy": ("convert", ALL, ("src", "dst")),
}

#: every op's name, in the order of ncl_op_names (call.op): OPS, then CALL_OPS
ALL_OP_NAMES = tuple(OPS) + tuple(CALL_OPS)


def call_slots():
    """(op, dtype) of every call slot, in slot order (after the entries' slots)."""
    return [(op, dt) for op, (_sub, dts, _ops) in CALL_OPS.items() for dt in dts]


def call_operand_dtypes(op, dtype):
    """Fixed-width dtype of each operand of call op ``op`` on ``dtype``: masks
    are bool, indices and counts int64 (npy_intp), the rest ``dtype``."""
    kinds = {"condition": "bool", "mask": "bool", "indices": "int64", "count": "int64"}
    return tuple(kinds.get(name, dtype) for name in CALL_OPS[op][2])


def call_kernel_name(op, dtype):
    """Kernel chain of a call op on ``dtype``: ``sort_int64``."""
    return f"{op}_{dtype}"

#: the C character NumPy uses first for each fixed-width dtype
CANON_CHAR = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
              "int32": "i", "uint32": "I", "int64": "l", "uint64": "L",
              "float32": "f", "float64": "d"}


def char_signatures(op):
    """NumPy type-character signatures of ``op``'s loops, in NumPy's order.

    Returns a list of strings of ``nin + 1`` characters, e.g. ``'ll?'`` for
    ``less`` on long.  int64/uint64 mixed comparisons follow ``'QQ?'`` as in
    NumPy 2; int64 and uint64 loops have both the 'l' and the 'q' (long
    long) spelling; a loop keyed by its last input (``where``'s
    ``'?ll->l'``) keeps its other operands' dtypes.
    """
    kind, nin, _ident, loops = OPS[op]
    if kind == "convert":
        return [ci + co for ci in NUMPY_CHAR_ORDER for co in NUMPY_CHAR_ORDER
                if ((LP64_CHARS[ci],), LP64_CHARS[co]) in loops]
    mixed = [(ins, out) for ins, out in loops if ins[0] != ins[-1] and ins[0] != "bool"]
    by_key = {ins[-1]: (ins, out) for ins, out in loops if (ins, out) not in mixed}
    sigs = []
    for c in NUMPY_CHAR_ORDER:
        dt = LP64_CHARS[c]
        if dt in by_key:
            ins, out = by_key[dt]
            sigs.append("".join(c if t == dt else CANON_CHAR[t] for t in ins)
                        + (c if out == dt else CANON_CHAR[out]))
        if c == "Q":
            for ins, out in mixed:
                sigs.append("".join("q" if t == "int64" else "Q" for t in ins) + CANON_CHAR[out])
    return sigs


def all_char_signatures():
    """(op, chars) for every loop nclx registers or replaces, in a fixed order."""
    return [(op, chars) for op in OPS for chars in char_signatures(op)]


def entry_symbol(op, chars):
    """The C name of the loop entry of (op, NumPy type characters):
    ``_entry_add_lll``, ``_entry_less_llo`` ('o' stands for '?', bool), so
    profilers show what runs."""
    return f"_entry_{op}_" + chars.replace("?", "o")


def kernel_name(op, in_dtypes, out_dtype):
    """``<op>_<dtype>`` for uniform loops (and ``where_<dtype>``),
    ``cast_<from>_<to>`` for casts, ``<op>_<dt1>_<dt2>`` for mixed ones."""
    if OPS[op][0] == "convert":
        return f"{op}_{in_dtypes[0]}_{out_dtype}"
    if len(set(in_dtypes)) == 1:
        return f"{op}_{in_dtypes[0]}"
    if in_dtypes[0] == "bool" and set(in_dtypes[1:]) == {out_dtype}:
        return f"{op}_{out_dtype}"
    return f"{op}_{'_'.join(in_dtypes)}"


def all_loops():
    """Yield (op, kind, in_dtypes, out_dtype, name) for every loop nclx
    serves: its kernel chain's name, and its kernel's where it has one."""
    for op, (kind, _nin, _ident, loops) in OPS.items():
        for ins, out in loops:
            yield op, kind, ins, out, kernel_name(op, ins, out)


def all_kernels():
    """Yield (op, kind, in_dtypes, out_dtype, kernel_name) for every nclx kernel
    (the ops in NUMPY_LOOPS have none: NumPy's loop is theirs)."""
    for item in all_loops():
        if item[0] not in NUMPY_LOOPS:
            yield item


def c_arg_types(in_dtypes):
    """C parameter list of a scalar op function, e.g. ``'int64_t, int64_t'``."""
    return ", ".join(CTYPES[t] for t in in_dtypes)
