"""docs/results-as-dataframes.md is a notebook that runs: its Python blocks are executed in
order, in one namespace, against the synthetic store the page names (``tests/synth/reports.py``,
``demo_specs``), and what each block prints must be the ``text`` block that follows it. The
command lines it shows must parse as ``highwater export`` commands."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from highwater import cli_export
from tests.synth.reports import demo_specs, write_results

DOC = Path(__file__).resolve().parents[2] / "docs" / "results-as-dataframes.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of a Markdown text: (language, body), in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def cells(text: str) -> list[tuple[str, str | None]]:
    """Each Python block with the ``text`` block right after it (its printed output), if any."""
    bs = blocks(text)
    return [
        (body, bs[i + 1][1] if i + 1 < len(bs) and bs[i + 1][0] == "text" else None)
        for i, (lang, body) in enumerate(bs)
        if lang == "python"
    ]


def same_text(a: str) -> list[str]:
    """Lines without trailing blanks (editors strip them; pandas pads its headers with them)."""
    return [line.rstrip() for line in a.strip("\n").splitlines()]


@pytest.fixture()
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Runs every cell of the page in ``tmp_path`` (where the store is ``results/demo``),
    checking each printed output; returns the namespace the cells leave."""
    write_results(tmp_path / "results" / "demo", demo_specs())
    monkeypatch.chdir(tmp_path)
    ns: dict[str, Any] = {"__name__": "docs_results_as_dataframes"}
    for i, (code, expected) in enumerate(cells(DOC.read_text(encoding="utf-8"))):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{DOC.name}[cell {i}]", "exec"), ns)  # noqa: S102 - the page's own code
        if expected is not None:
            assert same_text(out.getvalue()) == same_text(expected), f"cell {i} printed:\n{out.getvalue()}"
    return ns


def test_the_page_has_cells_with_outputs() -> None:
    cs = cells(DOC.read_text(encoding="utf-8"))
    assert len(cs) >= 8 and sum(out is not None for _, out in cs) == len(cs)
    code = "\n".join(c for c, _ in cs)
    for name in ("frames.runs(", "frames.figures(", "frames.stalls(", "frames.fetch_shares(", "frames.events("):
        assert name in code


def test_every_cell_runs_and_prints_what_the_page_shows(notebook: dict[str, Any]) -> None:
    runs = notebook["runs"]
    assert isinstance(runs, pd.DataFrame) and runs.run.nunique() == len(demo_specs())
    # the tables the cells built hold what the synthetic store was made of
    by_release = notebook["by_release"]
    assert by_release.loc[("kafka-python 3.0.12", "3.9.1"), "violated"] == 1  # the lost write
    assert by_release.loc[("java 4.4.0", "4.3.1"), "violated"] == 1  # the Java client's skip
    assert by_release["unknown"].sum() == 2  # no final read; edge cases
    violated = notebook["violated"]
    assert set(violated[violated.check == "poll-skip"].run) == {"nightly-1/run-skip", "nightly-2/java-skip"}
    assert set(violated[violated.check == "lost-write"].run) == {"nightly-1/run-lost"}
    anomalies = notebook["anomalies"]
    assert anomalies.value.sum() == 3  # two skips (one each) and one lost write
    shares = notebook["shares"]
    assert shares.records.sum() == notebook["by_client"].records.sum() > 0
    assert notebook["polled"].to_dict() == {"consumer-0": 118, "consumer-1": 120}
    assert Path("runs.parquet").exists()


def test_the_command_lines_parse(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="highwater")
    cli_export.register(parser.add_subparsers(dest="command"))
    lines = [
        line
        for lang, body in blocks(DOC.read_text(encoding="utf-8"))
        if lang in ("console", "sh", "bash")
        for line in body.splitlines()
        if line.startswith("highwater export")
    ]
    assert len(lines) >= 3
    for line in lines:
        args = parser.parse_args(shlex.split(line)[1:])
        assert args.command == "export" and args.table in cli_export.TABLES
