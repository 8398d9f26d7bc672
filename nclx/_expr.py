"""numexpr's expression strings as Python functions of NumPy arrays.

``compile_expression("2*a + b*b")`` checks the string against numexpr's
language -- arithmetic (``+ - * / // % **``), comparisons (one per
operand: ``a < b``), ``& | ^ ~`` and shifts, unary minus and plus, numbers,
names, and calls of the functions below -- and returns an
:class:`Expression`: the variable names in order of first use and a
function of them that computes the expression with NumPy's own operators
and functions, so it means exactly what it means written in NumPy.
Anything else raises SyntaxError (syntax, nesting deeper than
:data:`MAX_NESTING`) or TypeError (an unknown function, keywords), naming
it.  Results are cached per string.  The checks walk the tree without
recursion (near the recursion limit a caller still compiles).

A step on Python numbers alone (literals, names bound to them) whose result
would be an integer of more than :data:`INT_BITS` bits raises OverflowError
where Python would compute it (``2 ** 2**40``: minutes and gigabytes in
Python's power, before anything meets an array; no NumPy dtype holds it):
see :mod:`nclx._intahead`.
"""
import _thread
import ast
import builtins
import functools
import types
from collections.abc import Mapping

import numpy as np

from nclx._intahead import COMPARE, OPS, UNARY, GROWING, INT_BITS, first_overflow, plain_int, postorder
from nclx.errors import NclxError

__all__ = ["FUNCTIONS", "INT_BITS", "MAX_NESTING", "Expression", "compile_expression", "lookup"]

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

#: the deepest nesting an expression may have (levels of operators and calls)
MAX_NESTING = 500

#: what the message calls a construct the language lacks (its node type follows)
_CONSTRUCTS = dict(
    Attribute="attribute access", Subscript="subscripts", Slice="a slice", Lambda="a lambda",
    JoinedStr="an f-string", FormattedValue="an f-string", IfExp="a conditional expression",
    NamedExpr="an assignment expression (:=)", List="a list", Tuple="a tuple", Set="a set",
    Dict="a dict", ListComp="a comprehension", SetComp="a comprehension",
    DictComp="a comprehension", GeneratorExp="a generator expression", Yield="yield",
    YieldFrom="yield from", Await="await", Starred="a starred argument")


def _shown(text, limit=200):                 # for a message: cut after ``limit``
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _fail(text, what, exc=SyntaxError):
    raise exc(f"nclx.evaluate: {what} is not supported in {_shown(text)}")


def _kids(node, text, names):
    """Check ``node`` against the language; its operands in evaluation order."""
    if isinstance(node, ast.BinOp):
        if type(node.op) not in OPS:
            _fail(text, f"the operator {type(node.op).__name__} (BinOp)")
        return (node.left, node.right)
    if isinstance(node, ast.UnaryOp):
        if type(node.op) not in UNARY:
            _fail(text, f"the operator {type(node.op).__name__} (UnaryOp; use ~ for not)")
        return (node.operand,)
    if isinstance(node, ast.BoolOp):
        _fail(text, "'and'/'or' (BoolOp; use & and |)")
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            _fail(text, "a chained comparison (Compare with "
                  f"{len(node.ops)} operators; write (a < b) & (b < c))")
        if type(node.ops[0]) not in COMPARE:
            _fail(text, f"the comparison {type(node.ops[0]).__name__} (Compare)")
        return (node.left, node.comparators[0])
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            called = type(node.func).__name__
            what = f"{_CONSTRUCTS[called]} ({called})" if called in _CONSTRUCTS else called
            _fail(text, f"a call of anything but a function name (Call of {what})")
        name = node.func.id
        if name not in FUNCTIONS:
            _fail(text, f"the function {name!r}", TypeError)
        if node.keywords:
            _fail(text, f"keyword arguments to {name}", TypeError)
        starred = next((a for a in node.args if isinstance(a, ast.Starred)), None)
        if starred is not None:          # before the count, which it makes unknown
            _fail(text, f"{_CONSTRUCTS['Starred']} (Starred) in {name}()")
        want = ARITY.get(name, (1,))
        if len(node.args) not in want:
            _fail(text, f"{name} with {len(node.args)} argument"
                  f"{'' if len(node.args) == 1 else 's'} (it takes "
                  f"{' or '.join(map(str, want))})", TypeError)
        return tuple(node.args)
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            _fail(text, f"the function {node.id!r} as a value", TypeError)
        if node.id not in names:
            names.append(node.id)
        return ()
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float, bool, complex):
            r = repr(node.value)
            _fail(text, f"the constant {r[:40]}{'...' * (len(r) > 40)}")
        return ()
    kind = type(node).__name__
    _fail(text, f"{_CONSTRUCTS[kind]} ({kind})" if kind in _CONSTRUCTS else kind)


def _check(body, text):
    """The names ``body`` reads, in order of first use; SyntaxError or
    TypeError for anything outside the language (the first in evaluation
    order) or nesting deeper than MAX_NESTING."""
    names, stack = [], [(body, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            raise SyntaxError(f"nclx.evaluate: the expression ({len(text)} characters) is "
                              f"nested too deeply to check (more than {MAX_NESTING} levels)")
        stack.extend((k, depth + 1) for k in reversed(_kids(node, text, names)))
    return names


def _parse(text):
    """(the checked tree of the stripped ``text``, its names) renamed: variables
    to positional parameters ``_v<i>``, function names to ``_f_<name>``."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise SyntaxError(f"nclx.evaluate: cannot parse {_shown(text)}: {exc.msg}") from None
    except UnicodeError:           # a lone surrogate: no source text (found by review)
        raise SyntaxError(f"nclx.evaluate: cannot parse {_shown(text)}: it holds a character "
                          f"that is no valid source text (a lone surrogate)") from None
    except ValueError as exc:      # a null byte (older Pythons)
        raise SyntaxError(f"nclx.evaluate: cannot parse {_shown(text)}: {exc}") from None
    except MemoryError as exc:     # the parser's on deep nesting (3.11: bare; 3.13:
        if exc.args and "pars" not in str(exc).lower():    # "Parser stack overflowed")
            raise                  # (a real shortage of memory)
        raise SyntaxError(f"nclx.evaluate: the expression ({len(text)} characters) is "
                          f"nested too deeply to parse") from None
    except RecursionError:     # the parser's tree conversion, counted on the stack
        raise _StackShort(text) from None
    names = _check(tree.body, text)
    mapping = {n: f"_v{i}" for i, n in enumerate(names)}
    calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            node.id = f"_f_{node.id}" if id(node) in calls else mapping[node.id]
    return tree.body, names


def _raise(message):                      # (a function's default, with the message)
    raise OverflowError(message)


def _function(text, body, overflow=None):
    """The function of the variables ``body`` (renamed) computes; with
    ``overflow`` (node, message), that node raises OverflowError."""
    used = sorted({n.id[3:] for n in ast.walk(body)
                   if isinstance(n, ast.Name) and n.id.startswith("_f_")})
    nvars = len({n.id for n in ast.walk(body) if isinstance(n, ast.Name)
                 and n.id.startswith("_v")})
    defaults = [FUNCTIONS[k] for k in used]
    if overflow is not None:
        node, message = overflow
        call = ast.copy_location(ast.Call(func=ast.copy_location(
            ast.Name(id="_f__overflow", ctx=ast.Load()), node), args=[], keywords=[]), node)
        if node is body:
            body = call
        for parent in ast.walk(body):         # (the node's parent)
            for field, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, field, call)
                elif isinstance(value, list):
                    value[:] = [call if v is node else v for v in value]
        used.append("_overflow")
        defaults.append(functools.partial(_raise, message))
    params = [ast.copy_location(ast.arg(arg=f"_v{i}"), body) for i in range(nvars)] + \
        [ast.copy_location(ast.arg(arg=f"_f_{k}"), body) for k in used]
    lam = ast.copy_location(ast.Lambda(args=ast.arguments(
        posonlyargs=[], args=params, kwonlyargs=[], kw_defaults=[], defaults=[]), body=body), body)
    try:
        code = compile(ast.Expression(lam), f"<nclx.evaluate {_shown(text, 100)}>", "eval")
    except RecursionError:     # the compiler's own limit, counted on the stack
        raise _StackShort(text) from None
    # real builtins: NumPy's error paths import.  The functions are defaults,
    # not globals: the function reads no global, so nclx._fusewarn can run it
    # with the caller's module globals (its warnings then name the caller's
    # line, as the expression written there)
    fn = eval(code, {"__builtins__": builtins})
    fn.__defaults__ = tuple(defaults)
    return fn


#: the most nodes whose evaluation order an expression keeps (a larger one
#: parses its string again where a call's Python integers need a look)
_KEPT_NODES = 4096


class Expression:
    """A checked expression: ``names`` (its variables in order of first use)
    and ``fn``, the function of them (:meth:`function`: for given values)."""

    def __init__(self, text):
        self.text = text
        body, self.names = _parse(text)
        self.growing = any(isinstance(n, ast.BinOp) and isinstance(n.op, GROWING)
                           for n in ast.walk(body))
        self.compares = any(isinstance(n, ast.Compare) for n in ast.walk(body))
        order = postorder(body, _kids) if self.growing else ()
        # an overflow of literals alone raises in every call
        hit = first_overflow(order, [None] * len(self.names))
        self.static = None if hit is None else hit[0]
        self.fn = _function(text, body) if hit is None else \
            self._variant(hit[0], self._message(*hit[1:]))
        self._order = order if len(order) <= _KEPT_NODES else None
        self._variants = {}

    def _message(self, node, bits):
        segment = ast.get_source_segment(self.text.strip(), node) or ast.dump(node)[:100]
        about = f"{bits:,}" if bits.bit_length() <= 64 else f"2**{bits.bit_length() - 1}"
        return (f"nclx.evaluate: {_shown(segment, 100)} would be a Python integer of about "
                f"{about} bits, more than nclx.evaluate's limit of {INT_BITS:,} "
                f"(nclx._intahead.INT_BITS; not computed)")

    def _variant(self, index, message):
        """The function raising OverflowError at the node ``index`` (in
        ast.walk's order) of a fresh tree (the kept one is shared), parsed
        and compiled as the string was: near the recursion limit on a helper
        thread (before, "a * (k ** 2000)" raised SyntaxError or
        RecursionError there instead of OverflowError; review 22)."""
        def make():
            body = _parse(self.text)[0]
            node = next(n for i, n in enumerate(ast.walk(body)) if i == index)
            return _function(self.text, body, (node, message))
        return _fresh_stack(self.text, make)

    def function(self, values):
        """The function to call with the variables' ``values``: ``fn``, or one
        raising OverflowError where a Python integer would pass INT_BITS."""
        if not self.growing:
            return self.fn
        for v in values:                 # (a loop: no generator's frame near the limit)
            t = type(v)
            if t is int or t is bool or (self.compares and (t is float or t is complex)) \
                    or (isinstance(v, int) and plain_int(v) is not None):
                break
        else:
            return self.fn
        order = self._order if self._order is not None else \
            _fresh_stack(self.text, lambda: postorder(_parse(self.text)[0], _kids))
        hit = first_overflow(order, values)
        if hit is None or hit[0] == self.static:
            return self.fn
        index, node, bits = hit
        # one function per node, its message per call.  No lock: building
        # one twice is harmless (setdefault keeps the first), while a lock
        # held by another thread at os.fork() hung the child's evaluate for
        # good, and a signal handler's evaluate inside the main thread's
        # critical section deadlocked (review 22)
        base = self._variants.get(index)
        if base is None:
            base = self._variants.setdefault(index, self._variant(index, ""))
        return types.FunctionType(base.__code__, base.__globals__, base.__name__,
                                  base.__defaults__[:-1] +
                                  (functools.partial(_raise, self._message(node, bits)),))


def compile_expression(text):
    """The :class:`Expression` of an expression string; see the module doc."""
    if not isinstance(text, str):      # before the cache hashes it (a list: "unhashable")
        raise TypeError(f"nclx.evaluate takes an expression string, not {type(text).__name__}")
    return _compiled(text)


def lookup(name, local_dict, global_dict):
    """``local_dict[name]``, else ``global_dict[name]``: item access, as
    Python's eval and numexpr look names up (before, ``name in d``: a
    mapping's ``__missing__`` was not asked, and a list of pairs said the
    name was not defined; review 23)."""
    for d, which in ((local_dict, "local_dict"), (global_dict, "global_dict")):
        if not (isinstance(d, Mapping) or (hasattr(d, "__getitem__") and hasattr(d, "keys"))):
            raise TypeError(f"nclx.evaluate: {which} must be a mapping, not {type(d).__name__}")
        try:
            return d[name]
        except KeyError:
            continue
    raise NameError(f"nclx.evaluate: name {name!r} is not defined")


class _StackShort(NclxError, SyntaxError):
    """Python's parser or compiler ran out of the stack's recursion limit."""

    def __init__(self, text):
        super().__init__(f"nclx.evaluate: the expression ({len(text)} characters) is nested "
                         f"too deeply for Python's parser and compiler")


#: the least thread stack (threading.stack_size(); 0: the platform's,
#: 8 MiB on Linux) a helper thread parses on; 128 KiB sufficed for the
#: deepest expression taken (MAX_NESTING)
_HELPER_STACK = 1 << 20


def _fresh_stack(text, make):
    """``make()``, or where the caller's stack is too near the recursion
    limit for Python's parser and compiler, ``make()`` on a helper thread's
    fresh stack (there what fails is the expression's own depth; where
    threading.stack_size() makes threads' stacks too small for it, the
    SyntaxError "nested too deeply" at once)."""
    try:
        return make()
    except (_StackShort, RecursionError):
        pass
    if 0 < _thread.stack_size() < _HELPER_STACK:
        # a new thread gets threading.stack_size()'s stack: Python's parser
        # and compiler overran a small one (64 KiB: a segfault; review 23)
        raise SyntaxError(str(_StackShort(text))) from None
    done, box = _thread.allocate_lock(), []
    done.acquire()

    def make_there():
        try:
            box.append(make())
        except (_StackShort, RecursionError):
            box.append(SyntaxError(str(_StackShort(text))))
        except BaseException as exc:             # noqa: BLE001 -- raised in the caller
            box.append(exc)
        finally:
            done.release()
    try:
        _thread.start_new_thread(make_there, ())
    except RuntimeError:                         # no new thread (interpreter shutdown)
        raise SyntaxError(str(_StackShort(text))) from None
    done.acquire()
    if isinstance(box[0], BaseException):
        raise box[0].with_traceback(None) from None
    return box[0]


@functools.lru_cache(maxsize=256)
def _compiled(text):
    # Python's parser and compiler count nesting on the caller's stack: near
    # its limit "a*2.0+1.0" was "nested too deeply" (found by review)
    return _fresh_stack(text, lambda: Expression(text))
