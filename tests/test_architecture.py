"""The package layers, checked by reading every module's imports (an AST scan, nothing is imported).

    runtime  <-  models  <-  indexing  <-  app
    corpus   <-  indexing, retrieval  <-  answering  <-  app
                 training (offline jobs) and benchmarks sit on top

corpus is the ground floor: the shared vocabulary (documents, chunks, sentences, filters) and the storage port
(SearchBackend). Retrieval and answering talk to the index only through that port: they never import indexing.

Every import points down; no two modules import each other, even through others or inside a function;
no module is over 450 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
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


def imported_modules(name: str, path: Path) -> set[str]:
    """Our modules that `name` imports anywhere in its file (function-local and TYPE_CHECKING imports too)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import module` imports the submodule; `from module import name` the module itself.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # `import a.b.c` names a.b.c; attribute paths resolve upward
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imported_modules(name, path) for name, path in MODULES.items()}


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
    # Tarjan's strongly connected components: any component of more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
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
                cycles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert not cycles, "modules that import each other (directly or through others): " + str(cycles)


def test_no_module_is_over_the_line_limit() -> None:
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules by idea (over {MAX_LINES} lines): {long}"


def test_the_scan_sees_function_local_and_relative_imports(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from app.services import Services\n\nfrom .citations import Citation\n")
    assert imported_modules("answering.answerer", source) == {"app.services", "answering.citations"}
