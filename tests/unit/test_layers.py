"""The floors of the house: imports only point down.

records and checks (``harness.history``, ``harness.checks``, ``harness.policy``)
  <- backends, clients, observations and faults (the rest of ``harness``, ``faults``)
  <- reports
  <- orchestration (``highwater``: runner, CLI, pytest plugin)
``suites`` are the test programs the orchestrator runs; no product package imports them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package -> the top-level packages of ours it must never import
FORBIDDEN = {
    "harness": {"faults", "reports", "highwater", "suites"},
    "faults": {"reports", "highwater", "suites"},
    "reports": {"faults", "highwater", "suites"},
    "highwater": {"suites"},
}
#: the ground floor: pure records and checks, which import nothing that touches the world
GROUND = ("harness/checks", "harness/history", "harness/policy.py", "harness/manifest.py")
GROUND_MAY_IMPORT = ("harness.checks", "harness.history", "harness.policy", "harness.manifest", "harness.errors")


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
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_upward_import(package: str) -> None:
    bad = [
        f"{f.relative_to(ROOT)} imports {m}"
        for f in _files(package)
        for m in imported_modules(f)
        if m.split(".")[0] in FORBIDDEN[package]
    ]
    assert not bad, "\n".join(bad)


def test_ground_floor_imports_only_the_ground_floor() -> None:
    ours = {"harness", "faults", "reports", "highwater", "suites"}
    files = [f for f in _files("harness") if any(str(f.relative_to(ROOT)).startswith(g) for g in GROUND)]
    assert files, "the ground floor has files"
    bad = [
        f"{f.relative_to(ROOT)} imports {m}"
        for f in files
        for m in imported_modules(f)
        if m.split(".")[0] in ours and not m.startswith(GROUND_MAY_IMPORT)
    ]
    assert not bad, "\n".join(bad)


def test_the_layer_test_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("import os\nfrom highwater.runner import RunSpec\n")
    assert "highwater.runner" in imported_modules(bad)
