"""The package layers, checked by reading every module's imports (an AST scan, nothing is imported).

    runtime  <-  models  <-  indexing  <-  app
    corpus   <-  indexing, retrieval  <-  answering  <-  app
                 training (offline jobs) and benchmarks sit on top

corpus is the ground floor: the shared vocabulary (documents, chunks, sentences, filters) and the storage port
(SearchBackend). Retrieval and answering talk to the index only through that port: they never import indexing.

Every import points down; no two modules import each other, even through others or inside a function, and no two
packages do at import time; no module is over 450 lines. answering/ loads no model: it reaches the generator and
the passage scorers only through its ports (answering/ports.py), and importing it loads neither models/ nor torch.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runtime", "corpus", "models", "indexing", "retrieval", "answering", "app", "training", "benchmarks")
# package -> the packages of ours it must not import
FORBIDDEN = {
    "runtime": set(PACKAGES) - {"runtime"},
    "corpus": set(PACKAGES) - {"corpus"},
    "models": {"app", "retrieval", "answering", "training", "benchmarks", "indexing", "corpus"},
    "indexing": {"app", "retrieval", "answering", "training", "benchmarks"},
    "retrieval": {"app", "answering", "training", "models", "benchmarks", "indexing"},
    "answering": {"app", "training", "benchmarks", "indexing"},
    "app": {"training", "benchmarks"},
    "training": {"app", "benchmarks"},
    "benchmarks": set(),
}
MAX_LINES = 450


def module_files() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


MODULES = dict(module_files())


def import_targets(node: ast.AST, package: str) -> list[str]:
    """The dotted names an import statement imports (relative ones resolved against `package`); [] for others."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:  # relative import
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    # `from pkg import module` imports the submodule; `from module import name` the module itself.
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def module_level_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run when the module is imported: not function bodies, not `if TYPE_CHECKING:` blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                yield from module_level_statements(node.body)
            yield from module_level_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from module_level_statements(block)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from module_level_statements(node.body)


def raw_imports(name: str, path: Path, module_level: bool = False) -> set[str]:
    """Every dotted name `name` imports, ours or not: anywhere in its file, or only at import time."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = module_level_statements(tree.body) if module_level else ast.walk(tree)
    return {target for node in nodes for target in import_targets(node, package)}


def ours(targets: Iterable[str], name: str) -> set[str]:
    found = set()
    for target in targets:
        while target and target not in MODULES:  # `import a.b.c` names a.b.c; attribute paths resolve upward
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def imported_modules(name: str, path: Path, module_level: bool = False) -> set[str]:
    """Our modules that `name` imports anywhere in its file (function-local and TYPE_CHECKING imports too), or
    only at import time."""
    return ours(raw_imports(name, path, module_level), name)


GRAPH = {name: imported_modules(name, path) for name, path in MODULES.items()}
# What importing each module runs: its module-level imports, and the packages above it (their __init__).
LOADS = {name: imported_modules(name, path, module_level=True) | {".".join(name.split(".")[:i])
                                                                  for i in range(1, name.count(".") + 1)}
         for name, path in MODULES.items()}  # fmt: skip


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan): each is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def loaded_by(module: str) -> set[str]:
    """Our modules that importing `module` loads."""
    seen = {module}
    todo = [module]
    while todo:
        for target in LOADS[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_every_package_exists() -> None:
    assert all((ROOT / package / "__init__.py").is_file() for package in PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_down(package: str) -> None:
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if module.split(".")[0] == package
        for target in targets
        if target.split(".")[0] in FORBIDDEN[package]
    )
    assert not upward, f"{package} must not import {sorted(FORBIDDEN[package])}:\n" + "\n".join(upward)


def test_no_import_cycles() -> None:
    found = cycles(GRAPH)
    assert not found, "modules that import each other (directly or through others): " + str(found)


def test_no_package_cycles_at_import_time() -> None:
    packages: dict[str, set[str]] = {package: set() for package in PACKAGES}
    for module, targets in LOADS.items():
        packages[module.split(".")[0]] |= {target.split(".")[0] for target in targets} - {module.split(".")[0]}
    found = cycles(packages)
    assert not found, "packages that import each other at import time: " + str(found)


def test_the_cycle_check_finds_a_cycle_through_others() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


ANSWERING = [name for name in MODULES if name.split(".")[0] == "answering"]
CONCRETE_BEHIND_PORTS = ("models", "retrieval.reranker", "retrieval.judge", "retrieval.cross_encoder",
                         "retrieval.search")  # fmt: skip


def test_answering_reaches_the_generator_and_scorers_only_through_its_ports() -> None:
    reached = sorted(f"{module} imports {target}" for module in ANSWERING for target in GRAPH[module]
                     if target.startswith(CONCRETE_BEHIND_PORTS))  # fmt: skip
    assert not reached, "answering/ takes these through answering/ports.py:\n" + "\n".join(reached)


def test_importing_answering_loads_no_model() -> None:
    """Neither the engine (models/) nor torch: read from the imports, then checked by importing it."""
    loaded = {target for module in ANSWERING for target in loaded_by(module)}
    assert not sorted(m for m in loaded if m.split(".")[0] == "models")
    heavy = sorted(f"{module} imports {target}" for module in loaded
                   for target in raw_imports(module, MODULES[module], module_level=True)
                   if target.split(".")[0] in ("torch", "transformers", "models"))  # fmt: skip
    assert not heavy, "importing answering/ would load a model:\n" + "\n".join(heavy)
    script = (f"import sys; import {', '.join(ANSWERING)}; "
              "print(sorted(m for m in ('torch', 'models', 'transformers') if m in sys.modules))")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_no_module_is_over_the_line_limit() -> None:
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules by idea (over {MAX_LINES} lines): {long}"


def test_the_scan_sees_function_local_and_relative_imports(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from app.services import Services\n\nfrom .citations import Citation\n")
    assert imported_modules("answering.answerer", source) == {"app.services", "answering.citations"}
