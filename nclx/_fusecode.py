"""What a fused function's code shows before it is traced (nclx.fused).

A trace runs the function on probes: ndarray subclasses (nclx._probe).
Two things in the code can make the traced branch differ from the one the
real arrays take, whatever values the probes hold:

- ``type(x)`` of an argument: the probes' type is not ``numpy.ndarray``
  (``isinstance`` and ``x.__class__`` answer as for an ndarray); such a
  function runs eagerly (:func:`calls_type`);
- an exception handler (``try``, ``with``): the probes' steps compute with
  floating-point errors ignored, so under an errstate that raises
  (``'raise'``, ``'call'``, ``'log'``, a warnings filter of errors) a
  handler a step's error would reach eagerly is never taken by the trace;
  such calls run eagerly (:func:`has_handlers`).

Both look at the function's code, the code nested in it (lambdas, inner
functions, comprehensions) and the Python functions it names as globals,
to a depth of :data:`DEPTH`; code reached otherwise (a method, a function
of another module called as ``module.f``) is not seen (docs/fused.md).
"""
import dis
import types

__all__ = ["calls_type", "has_handlers", "DEPTH"]

#: how many levels of global functions the scan follows
DEPTH = 3

_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME"))


def _codes(fn):
    """(code, its globals) of ``fn``: its own, the code nested in it, and
    those of the Python functions it reads as globals (to DEPTH levels)."""
    seen, out = set(), []

    def visit_code(code, glob, depth):
        if id(code) in seen:
            return
        seen.add(id(code))
        out.append((code, glob))
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                visit_code(c, glob, depth)
        if depth >= DEPTH or glob is None:
            return
        for name in code.co_names:
            g = glob.get(name)
            if isinstance(g, types.FunctionType):
                visit_code(g.__code__, g.__globals__, depth + 1)

    code = getattr(fn, "__code__", None)
    if isinstance(code, types.CodeType):
        visit_code(code, getattr(fn, "__globals__", None), 0)
    return out


def calls_type(fn):
    """The name of a function whose code may call ``type()`` (and so branch
    on an argument's exact type), or None: it loads the global ``type``, a
    global bound to ``type`` (``exact = type``), or ``type`` from the
    ``builtins`` module (found by review: the aliases were traced)."""
    for code, glob in _codes(fn):
        glob = glob or {}
        if any(glob.get(name) is type for name in code.co_names):
            return code.co_name
        if "type" not in code.co_names:
            continue                 # (a name loaded is among co_names)
        if "builtins" in code.co_names or any(
                isinstance(glob.get(name), types.ModuleType)
                and glob[name].__name__ == "builtins" for name in code.co_names):
            return code.co_name      # builtins.type, the module imported or a global
        for ins in dis.get_instructions(code):
            if ins.opname in _LOADS and ins.argval == "type":
                return code.co_name
    return None


def has_handlers(fn):
    """The name of a function whose code holds an exception handler (try,
    with, and on Python 3.12+ an inlined comprehension's cleanup), or None."""
    for code, _ in _codes(fn):
        table = getattr(code, "co_exceptiontable", None)
        if table:
            return code.co_name
        if table is None and any(ins.opname in ("SETUP_FINALLY", "SETUP_WITH")
                                 for ins in dis.get_instructions(code)):
            return code.co_name
    return None
