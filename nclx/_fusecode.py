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

And one thing a trace must not run at all: a call that sets a profile or
trace function (``sys.setprofile``, ``sys.settrace``, ``breakpoint()``,
``sys.monitoring``): the plain function leaves it set and the profiler
sees its calls from then on, a fused one would not run it (:func:`sets_hooks`;
what the scan misses, the trace undoes and refuses: nclx._trace).

Both look at the function's code, the code nested in it (lambdas, inner
functions, comprehensions) and the Python functions it names as globals
or holds in closure cells and defaults (a decorator's wrapper; a
``functools.partial``'s function), to a depth of :data:`DEPTH`; code
reached otherwise (a method, a function of another module called as
``module.f``) is not seen (docs/fused.md).
"""
import dis
import functools
import types

__all__ = ["calls_type", "has_handlers", "sets_hooks", "DEPTH"]

#: how many levels of global functions the scan follows
DEPTH = 3

_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME"))


def _functions(value):
    """The Python functions ``value`` runs when called: itself, a
    ``functools.partial``'s function and the functions among its bound
    arguments, a bound method's function."""
    if isinstance(value, types.FunctionType):
        yield value
    elif isinstance(value, types.MethodType):
        yield from _functions(value.__func__)
    elif isinstance(value, functools.partial):
        yield from _functions(value.func)
        for v in value.args + tuple(value.keywords.values()):
            if isinstance(v, (types.FunctionType, types.MethodType, functools.partial)):
                yield from _functions(v)


def _held(fn):
    """The values a function holds besides its code: closure cells,
    defaults and keyword-only defaults."""
    out = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:          # an empty cell
            pass
    out += list(getattr(fn, "__defaults__", None) or ())
    out += list((getattr(fn, "__kwdefaults__", None) or {}).values())
    return out


def _codes(fn):
    """(code, its globals, the values its function holds) of ``fn``: its
    own, the code nested in it, and those of the Python functions it reads
    as globals or holds in a closure cell or a default (a decorator's
    wrapper calls the function it wraps through a cell; before, that
    function was not looked at; found by review), to DEPTH levels; a
    ``functools.partial`` is its function's."""
    seen_codes, seen_fns, out = set(), set(), []

    def visit_code(code, glob, held, depth):
        if id(code) in seen_codes:
            return
        seen_codes.add(id(code))
        out.append((code, glob, held))
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                visit_code(c, glob, (), depth)
        if depth >= DEPTH or glob is None:
            return
        for name in code.co_names:
            for g in _functions(glob.get(name)):
                visit_fn(g, depth + 1)

    def visit_fn(f, depth):
        if id(f) in seen_fns or not isinstance(getattr(f, "__code__", None), types.CodeType):
            return
        seen_fns.add(id(f))
        held = _held(f)
        visit_code(f.__code__, getattr(f, "__globals__", None), held, depth)
        if depth >= DEPTH:
            return
        for v in held:
            for g in _functions(v):
                visit_fn(g, depth + 1)

    for f in _functions(fn):
        visit_fn(f, 0)
    return out


def calls_type(fn):
    """The name of a function whose code may call ``type()`` (and so branch
    on an argument's exact type), or None: it loads the global ``type``, a
    global bound to ``type`` (``exact = type``), or ``type`` from the
    ``builtins`` module (found by review: the aliases were traced), or its
    function holds ``type`` in a closure cell or default (``t=type``)."""
    for code, glob, held in _codes(fn):
        glob = glob or {}
        if any(glob.get(name) is type for name in code.co_names) or \
                any(v is type for v in held):
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
    for code, _, _ in _codes(fn):
        table = getattr(code, "co_exceptiontable", None)
        if table:
            return code.co_name
        if table is None and any(ins.opname in ("SETUP_FINALLY", "SETUP_WITH")
                                 for ins in dis.get_instructions(code)):
            return code.co_name
    return None


def sets_hooks(fn, names):
    """(the name of a function whose code names one of ``names``, that
    name), or None: a function that may set a profile or trace function
    (nclx._tracewatch.HOOK_SETTERS) runs eagerly, before any trace runs it."""
    for code, _, _ in _codes(fn):
        found = names.intersection(code.co_names)
        if found:
            return code.co_name, min(found)
    return None
