"""One owner of a run's folder: ``core.run_dir`` names a run's files, and no other product module
spells one of those names to find a file.

A literal that locates a run file is the file's name alone (``out / "verdict.json"``) or a path
ending in it (``f"{out}/run.json"``). Prose that mentions a file for people (a docstring, a
comment, an error message, a help text) is not a locator and passes. Tests may spell the names.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from highwater.core.run_dir import (
    CLIENT_CLOCKS,
    GROUP_MEASURES,
    HISTORY,
    HISTORY_FILES,
    HISTORY_PARQUET,
    LOGS,
    POWER_MEASURES,
    RUN_FILES,
    RUN_JSON,
    THREADS,
    VERDICT_JSON,
    RunDir,
)

ROOT = Path(__file__).resolve().parents[2]

#: the product packages, each a top-level folder of the checkout
PRODUCT = ("core", "harness", "faults", "reports", "highwater", "suites")
#: the one module that may spell the names
OWNER = Path("core/run_dir.py")
#: the names looked for (``logs`` is left out: other folders than a run's are called that too)
NAMES = (HISTORY, HISTORY_PARQUET, RUN_JSON, VERDICT_JSON, GROUP_MEASURES, POWER_MEASURES, THREADS, CLIENT_CLOCKS)
LOCATOR = re.compile(r"(?:^|/)(?:" + "|".join(re.escape(n) for n in NAMES) + r")$")


def spelled_run_files(source: str) -> list[tuple[int, str]]:
    """(line, literal) of each string literal in ``source`` that locates a run file by its name
    (f-strings' literal parts included)."""
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and LOCATOR.search(node.value)
    )


def spellings(root: Path = ROOT, packages: tuple[str, ...] = PRODUCT) -> list[str]:
    """``path:line: literal`` for every spelling in the packages' own files but the owner's
    (``highwater/``'s links to the floors are walked once, as the floors)."""
    found = []
    for package in packages:
        top = (root / package).resolve()
        for f in sorted((root / package).rglob("*.py")):
            rel = f.relative_to(root)
            if not f.resolve().is_relative_to(top) or rel == OWNER:
                continue
            found += [f"{rel}:{line}: {text!r}" for line, text in spelled_run_files(f.read_text(encoding="utf-8"))]
    return found


def test_no_product_module_but_the_owner_spells_a_run_file() -> None:
    bad = spellings()
    assert not bad, "spell these through highwater.core.run_dir (RunDir or its names):\n" + "\n".join(bad)


def test_the_owner_is_where_the_names_are() -> None:
    """The check would see the names where they are spelled: only the owner is let off."""
    assert {text for _, text in spelled_run_files((ROOT / OWNER).read_text(encoding="utf-8"))} == set(NAMES)


SPELLED = """\
import json
from pathlib import Path

def judge(out: Path) -> None:
    json.loads((out / "verdict.json").read_text())
    log = f"{out}/history.jsonl"
    Path("run.json").write_text("{}")
"""

LOOK_ALIKES = '''\
"""Reads history.jsonl and writes verdict.json beside it."""
from pathlib import Path

from highwater.core.run_dir import RunDir

def judge(out: Path) -> str:
    # the runner wrote run.json here
    hunt = out / "hunt.json"  # a campaign's file, not a run's
    notes = out / "scenario.json"
    rerun = out / "rerun.json"
    return f"no verdict.json in {RunDir(out).path}, its checks are unknown; {hunt} {notes} {rerun}"
'''


def test_the_check_sees_a_spelled_name() -> None:
    assert spelled_run_files(SPELLED) == [(5, "verdict.json"), (6, "/history.jsonl"), (7, "run.json")]


def test_a_look_alike_passes() -> None:
    assert spelled_run_files(LOOK_ALIKES) == []


def test_the_walk_names_file_and_line_and_lets_the_owner_off(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "run_dir.py").write_text('RUN_JSON = "run.json"\n')
    (tmp_path / "core" / "clean.py").write_text(LOOK_ALIKES)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "bad.py").write_text(SPELLED)
    assert spellings(tmp_path, ("core", "reports")) == [
        "reports/bad.py:5: 'verdict.json'",
        "reports/bad.py:6: '/history.jsonl'",
        "reports/bad.py:7: 'run.json'",
    ]


def test_a_run_dir_locates_each_file() -> None:
    d = RunDir(Path("results/c/r1"))
    assert d.history == Path("results/c/r1/history.jsonl")
    assert d.history_parquet == Path("results/c/r1/history.parquet")
    assert d.run_json == Path("results/c/r1/run.json")
    assert d.verdict_json == Path("results/c/r1/verdict.json")
    assert d.group_measures == Path("results/c/r1/group-measures.json")
    assert d.power_measures == Path("results/c/r1/power-measures.json")
    assert d.threads == Path("results/c/r1/threads.txt")
    assert d.logs == Path("results/c/r1/logs") == d.path / LOGS
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.path = Path("elsewhere")  # type: ignore[misc]


def test_the_run_files_and_the_history_forms() -> None:
    """Any of the run files makes a folder a run's; a reader takes the Parquet history first."""
    assert RUN_FILES == ("history.jsonl", "history.parquet", "verdict.json", "run.json")
    assert HISTORY_FILES == ("history.parquet", "history.jsonl")
