"""The ``.pyi`` stubs beside nclx's compiled modules describe the modules as
they are.

Checked against the imported package (wherever it is installed or staged),
with ``ast`` only (no type checker needed):

- every compiled module that nclx's own Python modules import has a stub
  beside it;
- every public name a stub declares exists on the runtime module, its
  classes' members exist on the runtime classes, and the names a stub
  imports from nclx exist there;
- every name nclx's Python modules take from a compiled module (``from M
  import name`` or ``alias.name``) is declared in M's stub;
- where the runtime function has an introspectable signature (Cython's
  ``binding``), the stub's parameters match it: names, kinds, which have
  defaults and the value of a literal default;
- every name an annotation uses is imported or defined in the stub, and
  ``module.attr`` in an annotation (``npt.NDArray``) exists.
"""
import ast
import importlib
import importlib.machinery
import importlib.util
import inspect
import pathlib

import pytest

import nclx

PACKAGE = pathlib.Path(nclx.__file__).parent
EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_compiled(name):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None and spec.origin.endswith(EXTENSION_SUFFIXES)


def _dotted(node):
    """'a.b.c' for an expression a.b.c of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _uses(tree, package):
    """{(module, name)}: the names one Python module (of ``package``) takes
    from nclx modules: ``from M import name``, ``alias.name`` where alias is
    bound to M (by ``import M as alias`` or ``from P import M as alias``)."""
    modules = {}            # local name -> module it is bound to
    uses = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    modules[top] = top
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            if not module or not module.startswith("nclx"):
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if _is_submodule(full):
                    modules[alias.asname or alias.name] = full
                else:
                    uses.add((module, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node.value)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            if head not in modules:
                continue
            target = modules[head] + ("." + rest if rest else "")
            uses.add((target, node.attr))
    return uses


def _is_submodule(full):
    parent = full.rpartition(".")[0]
    try:
        if not hasattr(importlib.import_module(parent), "__path__"):
            return False
        return importlib.util.find_spec(full) is not None
    except Exception:       # an optional dependency missing: not a module we can check
        return False


def _python_layer_uses():
    """{module: {name: users}} over every .py module of the nclx package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for module, attr in _uses(tree, package):
            out.setdefault(module, {}).setdefault(attr, set()).add(name)
    return out


USES = _python_layer_uses()
COMPILED_USED = sorted(m for m in USES if m.startswith("nclx") and _is_compiled(m))
STUBS = sorted(PACKAGE.rglob("*.pyi"))


def _stub_of(module_name):
    """The stub beside the module's file (an installed or staged tree), else
    at the module's place in the package's tree (an editable install, whose
    compiled modules live in the build directory)."""
    module = importlib.import_module(module_name)
    stem = module_name.rpartition(".")[2] + ".pyi"
    beside = pathlib.Path(module.__file__).parent / stem
    if beside.is_file():
        return beside
    return PACKAGE.joinpath(*module_name.split(".")[1:-1], stem)


def _parse_stub(path):
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _declared(tree):
    """{name: node} of every name a stub's top level declares."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                # a stub re-exports only with ``import x as x``
                if alias.asname is not None and alias.asname == alias.name.rpartition(".")[2]:
                    out[alias.asname] = node
    return out


def _members(cls_node):
    """{name: node} of a stub class's methods, properties and attributes."""
    out = {}
    for node in cls_node.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _is_property(fn):
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def _stub_params(fn):
    """[(name, kind, has_default, literal default or ...)] of a stub function."""
    a = fn.args
    out = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = (inspect.Parameter.POSITIONAL_ONLY if i < len(a.posonlyargs)
                else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        out.append((arg.arg, kind, default))
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, None))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, inspect.Parameter.KEYWORD_ONLY, default))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, None))
    return out


def _check_signature(fn_node, runtime, where):
    try:
        sig = inspect.signature(runtime)
    except (TypeError, ValueError):
        return 0             # not introspectable here (slot wrappers, unbound builds)
    stub = _stub_params(fn_node)
    real = list(sig.parameters.values())
    assert [(n, k) for n, k, _ in stub] == [(p.name, p.kind) for p in real], (
        f"{where}: stub parameters {[(n, k.name) for n, k, _ in stub]} differ from the "
        f"runtime's {[(p.name, p.kind.name) for p in real]}")
    for (name, _kind, default), p in zip(stub, real):
        has = default is not None
        assert has == (p.default is not inspect.Parameter.empty), (
            f"{where}: parameter {name!r} has a default in "
            f"{'the stub' if has else 'the runtime'} only")
        if isinstance(default, ast.Constant) and default.value is not Ellipsis:
            assert default.value == p.default, (
                f"{where}: parameter {name!r} defaults to {default.value!r} in the stub, "
                f"{p.default!r} at runtime")
    return 1


def _stub_module_name(path):
    return _module_name(path.with_suffix(".py"))


def test_the_python_layer_imports_compiled_modules():
    # the scan below finds what it must find (else every other test is empty)
    for name in ("nclx._ncl.entries", "nclx._ncl.hooks", "nclx.storage._fastalloc"):
        assert name in COMPILED_USED, COMPILED_USED
    assert "nclx._ncl.spec" not in COMPILED_USED        # plain Python: no stub needed


@pytest.mark.parametrize("module_name", COMPILED_USED)
def test_each_compiled_module_the_python_layer_imports_has_a_stub(module_name):
    stub = _stub_of(module_name)
    users = sorted(set().union(*USES[module_name].values()))
    assert stub.is_file(), f"{module_name} is imported by {users} but has no {stub.name} beside it"


#: compiled modules meson builds only against some NumPy headers (see
#: nclx/_ncl/meson.build): module -> the NumPy it needs at build time
BUILT_FROM = {"nclx._ncl.sortmeth": (2, 4)}


def _import_built(name):
    """The module; a module this build leaves out by design skips with the reason."""
    need = BUILT_FROM.get(name)
    if need is not None:
        from nclx import _build_info
        built = tuple(int(x) for x in _build_info.NUMPY_BUILD_VERSION.split(".")[:2])
        if built < need:
            pytest.skip(f"{name} is built only against NumPy >= {need[0]}.{need[1]} headers; "
                        f"this copy was built against {_build_info.NUMPY_BUILD_VERSION}")
    return importlib.import_module(name)


@pytest.mark.parametrize("stub", STUBS, ids=lambda p: _stub_module_name(p))
def test_stub_names_exist_at_runtime(stub):
    module = _import_built(_stub_module_name(stub))
    declared = _declared(_parse_stub(stub))
    public = {name: node for name, node in declared.items() if not name.startswith("_")}
    assert public, f"{stub.name} declares nothing public"
    missing = sorted(name for name in public if not hasattr(module, name))
    assert not missing, f"{stub.name} declares names {module.__name__} does not have: {missing}"
    for name, node in public.items():
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(module, name)
        assert isinstance(cls, type), f"{module.__name__}.{name} is not a class"
        for member, mnode in _members(node).items():
            assert hasattr(cls, member), f"{stub.name}: {name}.{member} does not exist at runtime"
            if isinstance(mnode, ast.AnnAssign) or _is_property(mnode):
                raw = inspect.getattr_static(cls, member)
                assert inspect.isdatadescriptor(raw), (
                    f"{stub.name}: {name}.{member} is an attribute in the stub, "
                    f"{type(raw).__name__} at runtime")


@pytest.mark.parametrize("stub", STUBS, ids=lambda p: _stub_module_name(p))
def test_stub_signatures_match_the_runtime(stub):
    module = _import_built(_stub_module_name(stub))
    for name, node in _declared(_parse_stub(stub)).items():
        if name.startswith("_"):
            continue
        if isinstance(node, ast.FunctionDef):
            _check_signature(node, getattr(module, name), f"{stub.name}: {name}")
        elif isinstance(node, ast.ClassDef):
            cls = getattr(module, name)
            for member, mnode in _members(node).items():
                if (isinstance(mnode, ast.FunctionDef) and not _is_property(mnode)
                        and not (member.startswith("__") and member.endswith("__"))):
                    _check_signature(mnode, inspect.getattr_static(cls, member),
                                     f"{stub.name}: {name}.{member}")


@pytest.mark.parametrize("stub", STUBS, ids=lambda p: _stub_module_name(p))
def test_names_a_stub_imports_from_nclx_exist(stub):
    for node in _parse_stub(stub).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nclx"):
            source = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(source, alias.name), (
                    f"{stub.name} imports {alias.name} from {node.module}, which lacks it")


def _annotations(tree):
    """Every annotation expression of a stub (and the values of its aliases
    and TypeVars)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation
            if node.value is not None:
                yield node.value
        elif isinstance(node, ast.Assign):
            yield node.value


@pytest.mark.parametrize("stub", STUBS, ids=lambda p: _stub_module_name(p))
def test_stub_annotations_name_what_exists(stub):
    # what a type checker reports first: an annotation naming nothing
    import builtins
    tree = _parse_stub(stub)
    bound = {}             # name in the stub -> module it stands for, or None
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound[alias.asname or alias.name] = None
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            bound[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound[node.target.id] = None
        elif isinstance(node, ast.Assign):
            bound.update((t.id, None) for t in node.targets if isinstance(t, ast.Name))
    for expr in _annotations(tree):
        for node in ast.walk(expr):
            if isinstance(node, ast.Name):
                assert node.id in bound or hasattr(builtins, node.id), (
                    f"{stub.name}:{node.lineno}: {node.id!r} is neither imported nor defined")
            elif isinstance(node, ast.Attribute):
                dotted = _dotted(node)
                head = dotted.partition(".")[0] if dotted else None
                if head in bound and bound[head] is not None:
                    obj = importlib.import_module(bound[head])
                    for part in dotted.split(".")[1:]:
                        assert hasattr(obj, part), (
                            f"{stub.name}:{node.lineno}: {dotted} does not exist")
                        obj = getattr(obj, part)


@pytest.mark.parametrize("module_name", COMPILED_USED)
def test_stub_declares_what_the_python_layer_uses(module_name):
    stub = _stub_of(module_name)
    if not stub.is_file():
        pytest.fail(f"no stub for {module_name}")
    module = importlib.import_module(module_name)
    declared = _declared(_parse_stub(stub))
    undeclared = {name: sorted(users) for name, users in USES[module_name].items()
                  if not (name.startswith("__") and name.endswith("__"))
                  and hasattr(module, name) and name not in declared}
    assert not undeclared, f"{stub.name} lacks names nclx's Python modules use: {undeclared}"


def test_the_checks_catch_a_wrong_stub():
    # a parameter renamed, a default dropped, a literal default changed: each fails
    from nclx._ncl import hooks
    good = ast.parse("def register(level, target, hook, position='front', *, "
                     "name=None, before=None, after=None): ...").body[0]
    if not _check_signature(good, hooks.register, "ok"):
        pytest.skip("this build's Cython functions carry no signatures")
    tail = "*, name=None, before=None, after=None): ..."
    for bad in ("def register(level, target, fn, position='front', " + tail,
                "def register(level, target, hook, position, " + tail,
                "def register(level, target, hook, position='back', " + tail,
                "def register(level, target, hook, position='front', name=None, before=None, "
                "after=None): ..."):
        with pytest.raises(AssertionError):
            _check_signature(ast.parse(bad).body[0], hooks.register, "bad")
