"""numexpr's expression strings as Python functions of NumPy arrays.

``compile_expression("2*a + b*b")`` checks the string against numexpr's
language -- arithmetic (``+ - * / // % **``), comparisons (one per
operand: ``a < b``), ``& | ^ ~`` and shifts, unary minus and plus, numbers,
names, and calls of the functions below -- and returns (names, function):
the variable names in order of first use and a function of them that
computes the expression with NumPy's own operators and functions.  So the
expression means exactly what it means written in NumPy.  Anything else
raises SyntaxError (unsupported syntax) or TypeError (an unknown function,
keywords), naming it.  Results are cached per string.
"""
import ast
import builtins
import functools

import numpy as np

__all__ = ["FUNCTIONS", "compile_expression"]

#: the functions an expression may call: numexpr's real-valued ones
FUNCTIONS = {
    "where": np.where, "sum": np.sum, "prod": np.prod,
    "abs": np.absolute, "absolute": np.absolute, "sqrt": np.sqrt, "exp": np.exp,
    "expm1": np.expm1, "log": np.log, "log10": np.log10, "log1p": np.log1p, "log2": np.log2,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "arctan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh,
    "floor": np.floor, "ceil": np.ceil, "fmod": np.fmod,
}

#: how many arguments each function takes (a ufunc's extra one would be its out=)
ARITY = {"where": (3,), "sum": (1, 2), "prod": (1, 2), "arctan2": (2,), "fmod": (2,)}

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
           ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_UNARY = (ast.USub, ast.UAdd, ast.Invert)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


class _Check(ast.NodeVisitor):
    def __init__(self, text):
        self.text = text
        self.names = []

    def fail(self, node, what, exc=SyntaxError):
        raise exc(f"nclx.evaluate: {what} is not supported in {self.text!r}")

    def generic_visit(self, node):
        self.fail(node, type(node).__name__)

    def visit_Expression(self, node):
        self.visit(node.body)

    def visit_BinOp(self, node):
        if not isinstance(node.op, _BINOPS):
            self.fail(node, f"the operator {type(node.op).__name__}")
        self.visit(node.left)
        self.visit(node.right)

    def visit_UnaryOp(self, node):
        if not isinstance(node.op, _UNARY):
            self.fail(node, f"the operator {type(node.op).__name__} (use ~ for not)")
        self.visit(node.operand)

    def visit_BoolOp(self, node):
        self.fail(node, "'and'/'or' (use & and |)")

    def visit_Compare(self, node):
        if len(node.ops) != 1:
            self.fail(node, "a chained comparison")
        if not isinstance(node.ops[0], _COMPARE):
            self.fail(node, f"the comparison {type(node.ops[0]).__name__}")
        self.visit(node.left)
        self.visit(node.comparators[0])

    def visit_Call(self, node):
        if not isinstance(node.func, ast.Name):
            self.fail(node, "a call of anything but a function name")
        if node.func.id not in FUNCTIONS:
            self.fail(node, f"the function {node.func.id!r}", TypeError)
        if node.keywords:
            self.fail(node, f"keyword arguments to {node.func.id}", TypeError)
        want = ARITY.get(node.func.id, (1,))
        if len(node.args) not in want:
            self.fail(node, f"{node.func.id} with {len(node.args)} argument"
                      f"{'' if len(node.args) == 1 else 's'} (it takes "
                      f"{' or '.join(map(str, want))})", TypeError)
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.fail(a, "a starred argument")
            self.visit(a)

    def visit_Name(self, node):
        if node.id in FUNCTIONS:
            self.fail(node, f"the function {node.id!r} as a value", TypeError)
        if node.id not in self.names:
            self.names.append(node.id)

    def visit_Constant(self, node):
        if type(node.value) not in (int, float, bool):
            self.fail(node, f"the constant {node.value!r}")


def compile_expression(text):
    """(names, function) for an expression string; see the module doc."""
    if not isinstance(text, str):      # before the cache hashes it (a list: "unhashable")
        raise TypeError(f"nclx.evaluate takes an expression string, not {type(text).__name__}")
    return _compiled(text)


@functools.lru_cache(maxsize=256)
def _compiled(text):
    try:
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise SyntaxError(f"nclx.evaluate: cannot parse {text[:200]!r}: {exc.msg}") from None
        except UnicodeError:           # a lone surrogate: no source text (found by review)
            raise SyntaxError(f"nclx.evaluate: cannot parse {text[:200]!r}: it holds a "
                              f"character that is no valid source text (a lone "
                              f"surrogate)") from None
        except MemoryError as exc:
            if exc.args and "pars" not in str(exc).lower():    # a real shortage of memory
                raise
            # CPython's parser gives up on deep nesting with a MemoryError
            # (3.11: bare; 3.13: "Parser stack overflowed - Python source
            # too complex to parse"; "-" * 100000 + "a"; found by review)
            raise SyntaxError(f"nclx.evaluate: the expression ({len(text)} characters) is "
                              f"nested too deeply to parse") from None
        check = _Check(text)
        check.visit(tree)
    except RecursionError:
        raise SyntaxError(f"nclx.evaluate: the expression ({len(text)} characters) is nested "
                          f"too deeply to check") from None
    names = tuple(check.names)
    rename = _Rename({n: f"_v{i}" for i, n in enumerate(names)})
    body = rename.visit(tree.body)
    # the functions are defaults, not globals: the function reads no global,
    # so nclx._fusewarn can run it with the caller's module globals (its
    # warnings then name the caller's line, as the expression written there)
    used = sorted(rename.functions)
    params = [ast.arg(arg=f"_v{i}") for i in range(len(names))] + \
        [ast.arg(arg=f"_f_{k}") for k in used]
    lam = ast.Expression(ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=params, kwonlyargs=[], kw_defaults=[],
                           defaults=[ast.Name(id=f"_f_{k}", ctx=ast.Load()) for k in used]),
        body=body))
    ast.fix_missing_locations(lam)
    fn = eval(compile(lam, f"<nclx.evaluate {text!r}>", "eval"),
              # real builtins: NumPy's error paths import; the checked tree
              # names nothing but its parameters and the _f_ functions
              {"__builtins__": builtins, **{f"_f_{k}": v for k, v in FUNCTIONS.items()}})
    return names, fn


class _Rename(ast.NodeTransformer):
    """Variables to positional parameters, function names to _f_<name>."""

    def __init__(self, mapping):
        self.mapping = mapping
        self.functions = set()

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id=self.mapping[node.id], ctx=ast.Load()), node)

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        self.functions.add(node.func.id)
        node.func = ast.copy_location(ast.Name(id=f"_f_{node.func.id}", ctx=ast.Load()),
                                      node.func)
        return node
