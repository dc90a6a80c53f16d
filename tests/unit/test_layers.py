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


# --- the clients' homes: the worker side imports no process management -----------------------

#: a Python worker's own folder (the worker side: the worker program and each library's in-worker
#: driver), importing as ``highwater.clients.python``
WORKER_SIDE = "clients/python"
#: modules of the harness's process management, never to be imported inside a worker process:
#: the process manager and the worker processes with their ``atexit`` reaper
PROCESS_MODULES = frozenset({"highwater.harness.procs", "highwater.harness.clients.worker"})
#: standard modules that make a module process management wherever it sits (a hook at exit, a
#: child process of its own)
PROCESS_STDLIB = frozenset({"atexit", "subprocess"})


def module_file(module: str, root: Path = ROOT) -> Path | None:
    """The file of one of our modules named as it imports (``highwater.harness.x``,
    ``highwater.clients.python.x``); None for anyone else's and for ``highwater`` itself (a
    worker makes that package object itself)."""
    parts = module.split(".")
    if parts[0] != "highwater" or len(parts) < 2:
        return None
    base = root.joinpath(*parts[1:])
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _name_of(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(["highwater", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _imports_of(path: Path, root: Path) -> list[str]:
    """What ``path`` imports, at the top or inside a function, relative imports resolved; for
    ``from pkg import name`` both ``pkg`` and ``pkg.name`` (a submodule, if it is one)."""
    here = _name_of(path, root).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            names.append(base)
            names.extend(f"{base}.{a.name}" for a in node.names if module_file(f"{base}.{a.name}", root))
    return names


def worker_side_violations(root: Path = ROOT) -> list[str]:
    """Each import chain from a worker-side file to process management: a module of
    ``PROCESS_MODULES``, or one of ours importing ``atexit`` or ``subprocess``. Importing a
    module runs its packages' ``__init__.py`` first, so each package on the way counts too."""
    bad: list[str] = []
    for start in sorted((root / WORKER_SIDE).glob("*.py")):
        seen: dict[Path, str] = {start: str(start.relative_to(root))}
        todo = [start]
        while todo:
            path = todo.pop()
            chain = seen[path]
            for name in _imports_of(path, root):
                if name in PROCESS_STDLIB:
                    bad.append(f"{chain} imports {name}")
                    continue
                parts = name.split(".")
                for i in range(2, len(parts) + 1):  # the packages on the way, then the module
                    module = ".".join(parts[:i])
                    f = module_file(module, root)
                    if f is None or f in seen:
                        continue
                    seen[f] = f"{chain} -> {module}"
                    if module in PROCESS_MODULES:
                        bad.append(seen[f])
                    todo.append(f)
    return sorted(set(bad))


def test_the_worker_side_imports_no_process_management() -> None:
    """A Python worker (``clients/python/``) imports the module both sides share
    (``harness.client_common``), never the harness's process management: ``harness.procs``,
    ``harness.clients.worker`` (the worker processes, an ``atexit`` reaper), nor through
    ``harness.clients`` (whose package imports them); and no module of ours it reaches, itself
    included, starts processes or hooks the interpreter's exit (``subprocess``, ``atexit``)."""
    assert worker_side_violations() == []


def test_the_worker_side_reaches_the_common_module_and_its_drivers() -> None:
    reached = {name for f in sorted((ROOT / WORKER_SIDE).glob("*.py")) for name in _imports_of(f, ROOT)}
    assert {"highwater.harness.client_common", "highwater.clients.python.kafka_python"} <= reached
    assert {"highwater.clients.python.confluent", "highwater.clients.python.confluent_share"} <= reached


def test_the_worker_side_test_sees_a_planted_import_of_process_management(tmp_path: Path) -> None:
    for folder in ("clients/python", "harness/clients"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "harness" / "__init__.py").write_text("")
    (tmp_path / "harness" / "common.py").write_text("import json\n")
    (tmp_path / "harness" / "clients" / "__init__.py").write_text("from .worker import WorkerProcess\n")
    (tmp_path / "harness" / "clients" / "worker.py").write_text("import atexit\n\nclass WorkerProcess: ...\n")
    (tmp_path / "harness" / "clients" / "base.py").write_text("from highwater.harness import common\n")
    (tmp_path / "harness" / "reaper.py").write_text("import atexit\n")
    (tmp_path / "clients" / "python" / "ok.py").write_text("from highwater.harness.common import json\n")
    (tmp_path / "clients" / "python" / "driver.py").write_text(
        "def make():\n    from highwater.harness.clients.base import X\n    return X\n"
    )
    (tmp_path / "clients" / "python" / "hook.py").write_text("from highwater.harness import reaper\n")
    (tmp_path / "clients" / "python" / "spawner.py").write_text("import subprocess\n")
    assert worker_side_violations(tmp_path) == [
        "clients/python/driver.py -> highwater.harness.clients -> highwater.harness.clients.worker",
        "clients/python/driver.py -> highwater.harness.clients -> highwater.harness.clients.worker imports atexit",
        "clients/python/hook.py -> highwater.harness.reaper imports atexit",
        "clients/python/spawner.py imports subprocess",
    ]
