"""The table of nclx operations: one source of truth for the code generator
(``kernels.pyx.in`` is expanded with this module's names) and for the ufunc
builder (:mod:`nclx._ncl.ufuncs`).

Everything here is named in fixed-width dtypes; the mapping to NumPy's
C-named type characters happens at run time in :mod:`nclx._ncl.dtypes`.
"""

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


def default_preference(op):
    """((elementwise whole, chunk), (reduce whole, chunk)): True = NumPy's loop."""
    whole = op not in NCLX_WHOLE_CALLS
    red = op in PREFER_NUMPY_REDUCE
    return ((whole, False), (whole or red, red))

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

SUBSYSTEM_OF_KIND = {"compare": "compare", "binary": "binary", "unary": "unary"}
#: Funnel subsystems, in enum order (a binary call that is a reduction goes
#: to "reduce").
SUBSYSTEMS = ("compare", "binary", "unary", "reduce")


def char_signatures(op):
    """NumPy type-character signatures of ``op``'s loops, in NumPy's order.

    Returns a list of strings of ``nin + 1`` characters, e.g. ``'ll?'`` for
    ``less`` on long.  int64/uint64 mixed comparisons follow ``'QQ?'`` as in
    NumPy 2.
    """
    kind, nin, _ident, loops = OPS[op]
    uniform = {ins[0]: out for ins, out in loops if len(set(ins)) == 1}
    mixed = [(ins, out) for ins, out in loops if len(set(ins)) > 1]
    sigs = []
    for c in NUMPY_CHAR_ORDER:
        dt = LP64_CHARS[c]
        if dt not in uniform:
            continue
        out = uniform[dt]
        sigs.append(c * nin + (c if out == dt else "?"))
        if c == "Q":
            for ins, out in mixed:
                sigs.append("".join("q" if t == "int64" else "Q" for t in ins) + "?")
    return sigs


def all_char_signatures():
    """(op, chars) for every loop nclx registers or replaces, in a fixed order."""
    return [(op, chars) for op in OPS for chars in char_signatures(op)]


def kernel_name(op, in_dtypes, out_dtype):
    """``<op>_<dtype>`` for uniform loops, ``<op>_<dt1>_<dt2>`` for mixed ones."""
    if len(set(in_dtypes)) == 1:
        return f"{op}_{in_dtypes[0]}"
    return f"{op}_{'_'.join(in_dtypes)}"


def all_kernels():
    """Yield (op, kind, in_dtypes, out_dtype, kernel_name) for every kernel."""
    for op, (kind, _nin, _ident, loops) in OPS.items():
        for ins, out in loops:
            yield op, kind, ins, out, kernel_name(op, ins, out)


def c_arg_types(in_dtypes):
    """C parameter list of a scalar op function, e.g. ``'int64_t, int64_t'``."""
    return ", ".join(CTYPES[t] for t in in_dtypes)
