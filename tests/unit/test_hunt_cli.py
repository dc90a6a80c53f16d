"""``highwater hunt`` and ``highwater run SCENARIO.json``: what is refused in one line before
anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from highwater.cli import build_parser, main
from highwater.cli_hunt import settings_of
from highwater.hunt_draw import HuntError


def _args(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(["hunt", *argv])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ((), "a hunt needs a budget: --runs N or --minutes M"),
        (("--runs", "0"), "--runs and --minutes must be positive"),
        (("--minutes", "-1"), "--runs and --minutes must be positive"),
        (("--runs", "1", "--tries", "0"), "--tries must be at least 1"),
        (("--runs", "1", "--workloads", "plain,streams"), "unknown workload(s) streams"),
    ],
)
def test_a_bad_hunt_is_refused_in_one_line(argv: tuple[str, ...], says: str) -> None:
    with pytest.raises(HuntError) as err:
        settings_of(_args(*argv), ["4.4.0"])
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_hunt_s_settings_are_what_the_command_line_says() -> None:
    s = settings_of(
        _args("--runs", "5", "--client", "java,kafka-python", "--workloads", "plain,group", "--seed", "7"),
        ["4.3.1", "4.4.0"],
    )
    assert s.space.releases == ("4.3.1", "4.4.0") and s.space.clients == ("java", "kafka-python")
    assert s.space.workloads == ("plain", "group") and s.seed == 7 and s.runs == 5 and s.plant is None
    assert not s.budget_left(5, 0.0) and s.budget_left(4, 0.0)


def test_a_hunt_without_a_budget_exits_4_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hunt", "--client", "kafka-python"]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "highwater: error: a hunt needs a budget: --runs N or --minutes M (or both: the first reached ends it)"
    ]


def test_a_scenario_file_runs_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "shrunk.json"
    scenario.write_text("{}")
    assert main(["run", str(scenario), "suites/conformance"]) == 4
    assert "a scenario file (.json) runs without suites or node ids beside it" in capsys.readouterr().err


def test_a_malformed_scenario_file_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "shrunk.json"
    scenario.write_text("not json")
    assert main(["run", str(scenario)]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "shrunk.json: not readable as JSON" in err[0]
