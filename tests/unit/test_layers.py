"""The floors of the house: imports only point down.

records and checks (``core``: history, manifest, checks, policy, errors)
  <- backends, clients, observations and faults (``harness``, ``faults``)
  <- reports
  <- orchestration (``highwater``: runner, CLI, pytest plugin)
``suites`` are the test programs the orchestrator runs; no product package imports them.

Every floor is imported under the one name ``highwater`` (``highwater.core``, ``highwater.harness``,
...; docs/architecture.md, "One import name"): a layer is the second part of such a name, or
``highwater`` itself for the orchestration modules, and no file imports a floor by its bare name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package -> the top-level packages of ours it must never import
FORBIDDEN = {
    # the ground floor imports nothing of ours but itself
    "core": {"harness", "faults", "reports", "highwater", "suites", "tests"},
    "harness": {"faults", "reports", "highwater", "suites", "tests"},
    "faults": {"reports", "highwater", "suites", "tests"},
    "reports": {"faults", "highwater", "suites", "tests"},
    "highwater": {"suites", "tests"},
    "suites": {"tests"},
    # the measurements run anywhere, on the product alone: a benchmark's fixtures are its own
    "benchmarks": {"tests", "suites"},
}


#: the floors that live in top-level folders of the checkout and import as ``highwater.<floor>``
FLOORS = ("core", "harness", "faults", "reports", "suites")


def layer(module: str) -> str | None:
    """The floor a module of ours sits on (``highwater.harness.x`` -> ``harness``,
    ``highwater.runner`` -> ``highwater``, ``tests.x`` -> ``tests``); None for anyone else's."""
    parts = module.split(".")
    if parts[0] == "highwater":
        return parts[1] if len(parts) > 1 and parts[1] in FLOORS else "highwater"
    return parts[0] if parts[0] in ("tests", "benchmarks") else None


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _files(package: str) -> list[Path]:
    """The package's own files: for ``highwater``, not the floors its folder links to."""
    top = (ROOT / package).resolve()
    return sorted(f for f in (ROOT / package).rglob("*.py") if f.resolve().is_relative_to(top))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_upward_import(package: str) -> None:
    bad = [
        f"{f.relative_to(ROOT)} imports {m}"
        for f in _files(package)
        for m in imported_modules(f)
        if layer(m) in FORBIDDEN[package]
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", [*sorted(FORBIDDEN), "tests"])
def test_no_floor_is_imported_by_its_bare_name(package: str) -> None:
    """Installed, ``highwater`` is the only import name: ``import harness`` works in a checkout
    (its root is on the path) and nowhere else."""
    bad = [
        f"{f.relative_to(ROOT)} imports {m}"
        for f in _files(package)
        for m in imported_modules(f)
        if m.split(".")[0] in FLOORS
    ]
    assert not bad, "\n".join(bad)


def test_layers_are_read_from_the_one_import_name() -> None:
    assert layer("highwater.harness.clients.java") == "harness"
    assert layer("highwater.core") == "core"
    assert layer("highwater.runner") == "highwater"
    assert layer("tests.synth.histories") == "tests"
    assert layer("harness.clients") is None and layer("pyspark.sql") is None


def test_the_layer_test_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("import os\nfrom highwater.runner import RunSpec\n")
    assert "highwater.runner" in imported_modules(bad)


#: the packages whose modules must import no module that imports them back (directly or around a loop)
PACKAGES = ("core", "harness", "faults", "reports", "highwater", "suites")


def module_names(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Module name -> file; the floors of ours named as they import (``highwater.harness.x``)."""
    out: dict[str, Path] = {}
    for package in packages:
        top = (root / package).resolve()
        for f in sorted((root / package).rglob("*.py")):
            if not f.resolve().is_relative_to(top):
                continue  # highwater/'s links to the floors: each floor is walked as itself
            parts = list(f.relative_to(root).with_suffix("").parts)
            if root == ROOT and parts[0] in FLOORS:
                parts.insert(0, "highwater")
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, at the top or inside a function (a lazy import
    closes a loop as surely as any). ``from pkg import sub`` counts the submodule only, not what
    ``pkg/__init__.py`` holds; relative imports are resolved."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    loops.append(sorted(group))
    return loops


def test_no_import_loops() -> None:
    assert import_loops(import_graph(module_names())) == []


def test_the_loop_test_sees_a_planted_loop(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "registry.py").write_text("def get():\n    from pkg.backend import Backend\n    return Backend\n")
    (pkg / "backend.py").write_text("from . import registry\n\nclass Backend:\n    pass\n")
    (pkg / "leaf.py").write_text("from pkg.backend import Backend\n")
    assert import_loops(import_graph(module_names(tmp_path, ("pkg",)))) == [["pkg.backend", "pkg.registry"]]
