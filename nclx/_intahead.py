"""Python numbers of an expression computed ahead of the call: where a step
on Python numbers alone (literals, names bound to them) would give an
integer of more than :data:`INT_BITS` bits, nclx.evaluate raises
OverflowError instead of letting Python compute it (``2 ** 2**40``: minutes
and gigabytes in Python's power; no NumPy dtype holds it).  The operators
here are Python's own, so the values are those the expression computes.
"""
import ast
import math
import operator

from nclx.errors import NclxError

#: the most bits a Python integer an expression computes may have: Python
#: computes one step of that size in well under 0.1 s (no NumPy dtype holds
#: more than 64 bits, but a comparison with one, or a quotient, may still be
#: in range: ``a < 2**70000``; before, the limit was 65,536 and such
#: expressions raised where eager NumPy gives a result; review 23)
INT_BITS = 1 << 20
_KNOWN = (int, float, complex, bool)      # Python's numbers: computed ahead

OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
        ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
GROWING = (ast.Mult, ast.Pow, ast.LShift)


class _Stop(NclxError):
    """Python raises here (``hit`` None) or an integer passes INT_BITS (node, bits)."""

    def __init__(self, hit=None):
        self.hit = hit


def grows(op, x, y):
    """The bits of ``x op y`` when it would pass INT_BITS, else 0: exact
    near the limit (an estimate within 64 bits of it is settled by
    computing the value, at most INT_BITS + 64 bits: before, a product of
    exactly 2**20 bits was refused), an integer estimate far from it (no
    float: ``3 ** 2**1024`` overflowed log2's product, was taken for
    "Python raises here" and ran unguarded, for ever; review 23)."""
    if not (isinstance(x, int) and isinstance(y, int)) or op not in GROWING:
        return 0
    if op is ast.Mult:
        if not (x and y):
            return 0
        bits = x.bit_length() + y.bit_length()          # the value's, or one more
    elif op is ast.Pow:
        ax = abs(x)
        if y <= 0 or ax <= 1:
            return 0
        low = (ax.bit_length() - 1) * y + 1             # 2**(bl - 1) <= |x|: at least
        if low > INT_BITS + _NEAR:
            return low
        bits = int(y * math.log2(ax)) + 1               # small here: no float overflow
    else:                                               # <<: exact
        bits = x.bit_length() + y if y >= 0 and x else 0
        return bits if bits > INT_BITS else 0
    if bits > INT_BITS + _NEAR:
        return bits
    if bits < INT_BITS - _NEAR:
        return 0
    exact = OPS[op](x, y).bit_length()                   # near the limit: settled
    return exact if exact > INT_BITS else 0


_NEAR = 64


def _value(node, operands):
    """``node`` (an operator) on Python numbers, as Python computes it; _Stop
    where Python raises or an integer would grow past INT_BITS."""
    try:
        if isinstance(node, ast.UnaryOp):
            (x,) = operands
            if type(node.op) is ast.Invert and type(x) is bool:
                return ~int(x)        # (Python 3.12+ warns for ~bool: not here, but eagerly)
            return UNARY[type(node.op)](x)
        if isinstance(node, ast.Compare):
            return COMPARE[type(node.ops[0])](*operands)
        bits = grows(type(node.op), *operands)
        if not bits:
            return OPS[type(node.op)](*operands)
    except (ArithmeticError, TypeError, ValueError):
        raise _Stop() from None
    raise _Stop((node, bits))


_INT_GROWING = ("__mul__", "__rmul__", "__pow__", "__rpow__", "__lshift__", "__rlshift__")


def plain_int(v):
    """An int subclass's value (an IntEnum) where the growing operators are
    int's own, so that Python computes ``v op y`` as on the plain int; else
    None (not computed ahead)."""
    t = type(v)
    if isinstance(v, int) and all(getattr(t, m, None) is getattr(int, m) for m in _INT_GROWING):
        return int.__index__(v)
    return None


def postorder(body, kids_of):
    """``body``'s nodes in evaluation order: (node, type(what), what: a number,
    a variable's index, None (a call), else the places of its operands; the
    node's place in ast.walk's order)."""
    walk = {id(n): i for i, n in enumerate(ast.walk(body))}
    order, place, stack = [], {}, [(body, None)]
    while stack:
        node, kids = stack.pop()
        if kids is None:
            kids = tuple(node.args) if isinstance(node, ast.Call) else kids_of(node, "", [])
            stack.append((node, kids))
            stack.extend([(k, None) for k in reversed(kids)])
            continue
        place[id(node)] = len(order)
        what = (node.value if isinstance(node, ast.Constant) else
                int(node.id[2:]) if isinstance(node, ast.Name) else
                None if isinstance(node, ast.Call) else tuple(place[id(k)] for k in kids))
        order.append((node, type(what), what, walk[id(node)]))
    return order


def first_overflow(order, values):
    """(place in ast.walk's order, node, bits) of the first step in ``order``
    (:func:`postorder`) on Python numbers alone whose value would be an
    integer of more than INT_BITS bits; None if Python raises first."""
    got = []
    try:
        for node, kind, what, index in order:
            if kind is tuple:
                operands = [got[k] for k in what]
                got.append(None if None in operands else _value(node, operands))
            elif kind is int and isinstance(node, ast.Name):
                v = values[what]
                got.append(v if type(v) in _KNOWN else plain_int(v))
            else:                             # a number; None: a call's NumPy value
                got.append(what)
    except _Stop as stop:
        return None if stop.hit is None else (index,) + stop.hit
    return None
