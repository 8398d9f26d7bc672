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

#: ops whose float reduction NumPy performs pairwise
PAIRWISE_REDUCE = ("add",)


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
