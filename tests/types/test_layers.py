"""nclx.types imports one way: each module only from the layers below it,
never from another subpackage or the package face, and at module level
(the one function-local import is of pyarrow-only code)."""
import ast
import pathlib

import nclx.types

#: layer of each module; a module imports only modules of lower layers
LAYERS = [
    {"datashape", "_bits", "_offsets", "_segments", "_arrmeta_nodes"},
    {"parser", "_arrow_types", "_to_arrow", "compute"},
    {"_ragged_compute", "_ragged_index", "_summary", "_contains"},
    {"ragged"},
    {"typeof", "build", "convert", "views"},
    {"arrmeta"},
    {"debug"},
]
#: what nclx.types may use from outside itself: the layers under the subpackages
BELOW = ("nclx.errors", "nclx.aware", "nclx._ncl", "nclx._callsite")   # _callsite: a leaf (review 23)
#: function-local imports of nclx modules, each with its reason
LATE = {("typeof", "nclx.types._arrow_types")}   # imports pyarrow (optional) at its top


def _imports(path):
    tree = ast.parse(path.read_text())
    top, late = set(), set()
    local = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module + "." + a.name if node.module == "nclx.types" or
                     node.module == "nclx" else node.module for a in node.names]
        else:
            continue
        for name in names:
            if name == "nclx" or name.startswith("nclx."):
                (late if id(node) in local else top).add(name)
    return top, late


def test_one_way():
    layer = {m: i for i, mods in enumerate(LAYERS) for m in mods}
    pkg = pathlib.Path(nclx.types.__file__).parent
    sources = sorted(p for p in pkg.glob("*.py") if p.name != "__init__.py")
    assert {p.stem for p in sources} <= set(layer), "a new module needs its layer here"
    for path in sources:
        me = path.stem
        top, late = _imports(path)
        for name in top | late:
            if name.startswith("nclx.types."):
                other = name.split(".")[2]
                assert layer[other] < layer[me], f"{me} imports {other}, a layer above or beside it"
            else:
                assert name.startswith(BELOW), f"{me} imports {name}: not a layer below nclx.types"
        assert {(me, n) for n in late} <= LATE, f"{me}: function-local imports {late}"
