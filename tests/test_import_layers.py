"""nclx imports one way (docs/architecture.md, "Layers"): no import cycle
among nclx's Python modules -- imports inside functions counted -- no
subpackage importing the package face or a layer above it, and few
function-local imports, each with a comment saying why."""
import ast
import pathlib
import re

import nclx

PKG = pathlib.Path(nclx.__file__).parent
#: a subpackage may import these subpackages (dap's blocks are storages)
SIBLINGS_ALLOWED = {"dap": {"storage"}, "storage": set(), "types": set(), "ipc": set()}
#: modules above every subpackage: nothing inside a subpackage imports them
FACE = ("nclx", "nclx.demo", "nclx.bench", "nclx.__main__")
MAX_LATE = 15


def _modname(path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    return {_modname(p): p for p in PKG.rglob("*.py")}


def _resolve(mods, current, node):
    """nclx modules an import statement names (its longest known prefix)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = current.split(".")
            if not str(mods[current]).endswith("__init__.py"):
                pkg = pkg[:-1]
            pkg = pkg[:len(pkg) - node.level + 1]
            base = ".".join(pkg + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = []
    for n in names:
        while n and n not in mods:
            n = n.rpartition(".")[0]
        if n.startswith("nclx") and n != current:
            out.append(n)
    return out


def _graph():
    mods = _modules()
    top, late = {}, {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        in_fn = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(f)}
        lines = path.read_text().splitlines()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(mods, name, node):
                    if id(node) in in_fn:
                        comment = "#" in lines[node.lineno - 1] or \
                            lines[node.lineno - 2].strip().startswith("#")
                        late.setdefault(name, {})[target] = (node.lineno, comment)
                    else:
                        top.setdefault(name, set()).add(target)
    return mods, top, late


def _cycles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_counting_function_local_imports():
    mods, top, late = _graph()
    graph = {}
    for name in mods:
        targets = top.get(name, set()) | set(late.get(name, {}))
        # importing one's own package (its __init__) is how Python loads a module
        graph[name] = {t for t in targets if not name.startswith(t + ".")}
    assert _cycles(graph) == []


def test_function_local_imports_are_few_and_each_says_why():
    _, top, late = _graph()
    found = {(m, t): info for m, ts in late.items() for t, info in ts.items()
             if t not in top.get(m, set())}
    assert len(found) <= MAX_LATE, sorted(found)
    silent = sorted(f"{m}:{line} -> {t}" for (m, t), (line, comment) in found.items() if not comment)
    assert silent == []


def test_subpackages_import_only_below_themselves():
    _, top, late = _graph()
    bad = []
    for name in set(top) | set(late):
        parts = name.split(".")
        if len(parts) < 2 or parts[1] not in SIBLINGS_ALLOWED:
            continue
        sub = parts[1]
        for target in top.get(name, set()) | set(late.get(name, {})):
            tparts = target.split(".")
            if target in FACE or target.startswith("nclx.demo."):
                bad.append(f"{name} imports the face ({target})")
            elif len(tparts) > 1 and tparts[1] in SIBLINGS_ALLOWED and tparts[1] != sub \
                    and tparts[1] not in SIBLINGS_ALLOWED[sub]:
                bad.append(f"{name} imports the subpackage {target}")
    assert sorted(bad) == []


def test_the_core_imports_nothing_above_it():
    _, top, late = _graph()
    for name in set(top) | set(late):
        if name.startswith("nclx._ncl") or name in ("nclx.errors", "nclx._timing"):
            for target in top.get(name, set()) | set(late.get(name, {})):
                assert target.startswith("nclx._ncl") or target in ("nclx.errors",), \
                    f"{name} imports {target}, above the core"


def _cython_graph():
    """nclx._ncl's Cython modules (a .pyx or .pyx.in with its .pxd) and the
    nclx._ncl modules each imports or cimports, from the source tree."""
    src = pathlib.Path(__file__).resolve().parents[1] / "nclx" / "_ncl"
    pattern = re.compile(r"^\s*(?:from\s+nclx\._ncl\.(\w+)\s+c?import"
                         r"|c?import\s+nclx\._ncl\.(\w+)"
                         r"|from\s+nclx\._ncl\s+c?import\s+\(?([\w ,]+))", re.M)
    files = [p for ext in ("*.pyx", "*.pyx.in", "*.pxd", "*.pxd.in") for p in src.glob(ext)]
    names = {p.name.split(".")[0] for p in files}
    graph = {}
    for p in files:
        me = p.name.split(".")[0]
        for m in pattern.finditer(p.read_text()):
            targets = [m.group(1) or m.group(2)] if (m.group(1) or m.group(2)) else \
                [t.strip() for t in m.group(3).split(",")]
            graph.setdefault(me, set()).update(t for t in targets if t in names and t != me)
    return files, graph


def test_no_cimport_cycle_among_the_cython_modules():
    files, graph = _cython_graph()
    assert len(files) > 50 and sum(map(len, graph.values())) > 100   # the scan sees them
    assert _cycles(graph) == []
