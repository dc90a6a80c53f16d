"""Exit codes of the ``highwater`` command, one meaning each (``highwater.exit_codes``,
docs/cli.md): 0 valid, 1 violations, 2 usage (argparse), 3 unknown, 4 harness error or input
refused, 130 interrupted; ``run`` and ``campaign`` translate pytest's."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from highwater import cli, cli_sweep, preflight
from highwater.core.errors import HighwaterError
from highwater.exit_codes import MEANING, Exit, of_pytest, of_verdict, table, worst


def test_one_meaning_per_code() -> None:
    assert [int(e) for e in Exit] == [0, 1, 2, 3, 4, 130]
    assert set(MEANING) == set(Exit) and len(set(MEANING.values())) == len(Exit)
    assert all(f"{int(e):>3}  {MEANING[e]}" in table() for e in Exit)


def test_verdicts() -> None:
    assert [of_verdict(v) for v in (True, False, "unknown", None)] == [0, 1, 3, 3]
    assert of_verdict("not-applicable") is Exit.UNKNOWN  # unknown never counts as valid


def test_pytest_codes_are_translated() -> None:
    assert [of_pytest(c) for c in range(6)] == [0, 1, 130, 4, 4, 4]
    assert of_pytest(-9) is Exit.HARNESS  # a child killed by a signal: no verdict


def test_worst_of_several_outcomes() -> None:
    assert worst() is Exit.OK
    assert worst(0, 0) is Exit.OK
    assert worst(0, 3) is Exit.UNKNOWN
    assert worst(3, 1) is Exit.VIOLATIONS and worst(1, 3) is Exit.VIOLATIONS  # a "no" beats "cannot say"
    assert worst(1, 4) is Exit.HARNESS  # the verdict of a broken harness is not one
    assert worst(4, 130) is Exit.INTERRUPTED
    assert worst(0, 77) is Exit.HARNESS  # a code of no one's


def _command(monkeypatch: pytest.MonkeyPatch, func: object) -> None:
    """``highwater setup`` does ``func`` instead."""
    real = cli.build_parser

    def build() -> argparse.ArgumentParser:
        parser = real()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices["setup"].set_defaults(func=func)
        return parser

    monkeypatch.setattr(cli, "build_parser", build)


def test_a_refusal_is_4_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(args: argparse.Namespace) -> int:
        raise HighwaterError("no such thing")

    _command(monkeypatch, refuse)
    assert cli.main(["setup"]) == Exit.HARNESS == 4
    assert capsys.readouterr().err == "highwater: error: no such thing\n"


def test_a_bug_is_a_harness_error_not_a_violation(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crash(args: argparse.Namespace) -> int:
        raise KeyError("oops")

    _command(monkeypatch, crash)
    assert cli.main(["setup"]) == Exit.HARNESS
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("highwater: harness error: KeyError: 'oops'\n")


def test_an_interruption_is_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    _command(monkeypatch, interrupted)
    assert cli.main(["setup"]) == Exit.INTERRUPTED == 130


def test_a_command_line_that_does_not_parse_is_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["check", "--no-such-option", "h.jsonl"])
    assert done.value.code == Exit.USAGE == 2
    with pytest.raises(SystemExit) as done:
        cli.main(["run", "--profile", "weekly"])
    assert done.value.code == 2
    assert "invalid choice: 'weekly'" in capsys.readouterr().err


class Children:
    """Stands in for child processes: each ``subprocess.call`` returns the next code."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *codes: int) -> None:
        self.codes = list(codes)
        self.argvs: list[list[str]] = []
        monkeypatch.setattr(subprocess, "call", self.call)
        monkeypatch.setattr(preflight, "get_driver", lambda spec: None)

    def call(self, argv: list[str], **_: object) -> int:
        self.argvs.append(list(argv))
        return self.codes.pop(0)


@pytest.mark.parametrize(("child", "ours"), [(0, 0), (1, 1), (2, 130), (3, 4), (4, 4), (5, 4)])
def test_run_translates_the_child_pytests_code(child: int, ours: int, monkeypatch: pytest.MonkeyPatch) -> None:
    Children(monkeypatch, child)
    assert cli.main(["run", "suites/x.py"]) == ours


@pytest.mark.parametrize(
    ("suites", "report", "ours"),
    [(0, 0, 0), (0, 3, 3), (1, 1, 1), (1, 3, 1), (0, 4, 4), (1, 4, 4), (4, 1, 4)],
)
def test_a_campaign_is_the_worse_of_its_suites_and_its_report(
    suites: int, report: int, ours: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    children = Children(monkeypatch, suites, report)
    assert cli.main(["campaign", "--results", str(tmp_path), "--report", str(tmp_path / "r")]) == ours
    assert [a[a.index("-m") + 1] for a in children.argvs] == ["pytest", "highwater.cli"]


def test_an_interrupted_campaign_reports_its_runs_so_far_and_is_130(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    children = Children(monkeypatch, 2, 0)
    assert cli.main(["campaign", "--results", str(tmp_path), "--report", str(tmp_path / "r")]) == Exit.INTERRUPTED
    assert len(children.argvs) == 2


def test_an_interrupted_sweep_is_130_and_a_complete_one_0(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_sweep, "published_versions", lambda: ["3.9.1", "4.0.0"])
    monkeypatch.setattr(cli_sweep, "ensure_kafka", lambda v, progress=None: None)
    argv = ["sweep", "--versions", "3.9.1,4.0.0", "--results", str(tmp_path), "--campaign", "c"]
    Children(monkeypatch, 1, 2)  # 3.9.1 failed, 4.0.0 interrupted
    assert cli.main(argv) == Exit.INTERRUPTED
    Children(monkeypatch, 0)  # resumed: 4.0.0 passes; the survey is complete
    assert cli.main(argv) == Exit.OK
    assert "1 passed, 1 failed, 0 pending" in capsys.readouterr().out


def test_a_report_that_cannot_be_built_is_4(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import highwater.reports.aggregate

    def broken(*_: object) -> None:
        raise RuntimeError("spark fell over")

    monkeypatch.setattr(highwater.reports.aggregate, "build", broken)
    assert cli.main(["report", str(tmp_path), "--quiet"]) == Exit.HARNESS
    assert "harness error: RuntimeError: spark fell over" in capsys.readouterr().err
