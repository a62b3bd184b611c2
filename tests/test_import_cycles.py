"""No import cycles among the product's modules, counting every import: module-level, inside a
function (an import moved into a function to dodge a cycle still counts), and a module named by a
string (importlib, the CLI's command registry, the roles' flow list)."""

from __future__ import annotations

import ast
from pathlib import Path

from streams.settings import REPO_ROOT

PACKAGES = ("streams", "connectors", "schemas")


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)

    def owner(name: str) -> str | None:  # `a.b.c` → the module that defines it (a.b.c, a.b or a)
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in mods:
                names = [node.value]
            else:
                continue
            graph[module] |= {o for n in names if (o := owner(n)) and o != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles():
    assert cycles(import_graph(REPO_ROOT)) == []


def test_the_check_sees_a_cycle_hidden_in_a_function_or_a_string(tmp_path):
    pkg = tmp_path / "streams"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from streams.b import x\n")
    (pkg / "b.py").write_text("def f():\n    from streams.a import y\n")
    (pkg / "c.py").write_text("import importlib\nM = importlib.import_module('streams.d')\n")
    (pkg / "d.py").write_text("from streams import c\n")
    (pkg / "e.py").write_text("from streams.a import x\n")
    assert sorted(cycles(import_graph(tmp_path))) == [["streams.a", "streams.b"], ["streams.c", "streams.d"]]


def private_imports(root: Path) -> list[str]:
    """``from a.b import _name`` and ``module._name`` across the product's modules (a private name used
    by another module should be public instead)."""
    mods = modules(root)
    scripts = {f"benchmarks.{p.stem}": p for p in (root / "benchmarks").glob("*.py")}  # they use the product too
    found = []
    for module, path in {**mods, **scripts}.items():
        tree = ast.parse(path.read_text(), str(path))
        aliases = set()   # names bound to a first-party module in this file
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] in PACKAGES:
                for a in node.names:
                    if f"{node.module}.{a.name}" in mods:
                        aliases.add(a.asname or a.name)
                    elif a.name.startswith("_") and not a.name.startswith("__") and node.module != module:
                        found.append(f"{path.relative_to(root)}:{node.lineno} from {node.module} import {a.name}")
            elif isinstance(node, ast.Import):
                aliases |= {a.asname for a in node.names if a.asname and a.name in mods}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    found = private_imports(REPO_ROOT)
    assert not found, "make the name public (or move the code):\n" + "\n".join(found)


def test_the_private_scan_sees_both_forms(tmp_path):
    (tmp_path / "streams").mkdir()
    (tmp_path / "connectors").mkdir()
    (tmp_path / "schemas").mkdir()
    (tmp_path / "streams" / "__init__.py").write_text("")
    (tmp_path / "streams" / "a.py").write_text("def _p():\n    pass\n")
    (tmp_path / "streams" / "b.py").write_text("from streams import a\nfrom streams.a import _p\n\na._p()\n")
    assert len(private_imports(tmp_path)) == 2
