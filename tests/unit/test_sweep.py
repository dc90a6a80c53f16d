"""Sweep planning, state and resumption, with stand-ins for assembling and running (pure logic)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.distribution import SetupError
from highwater.sweep import (
    ReleaseStatus,
    SweepError,
    SweepState,
    clock,
    eta_seconds,
    load_or_start,
    newest_patches,
    parse_range,
    releases_in_range,
    run_sweep,
    summary_lines,
)

PUBLISHED = ["3.2.3", "3.3.1", "3.3.2", "3.4.0", "3.9.1", "4.0.0", "4.4.0"]
PLAN: dict[str, object] = {"range": "3.3.1..newest", "tests": ["suites/conformance"]}


def test_newest_patch_of_each_minor_line() -> None:
    assert newest_patches(["3.3.2", "3.3.1", "3.4.0", "3.9.0", "3.9.1", "4.0.0"]) == [
        "3.3.2",
        "3.4.0",
        "3.9.1",
        "4.0.0",
    ]


def test_ranges() -> None:
    assert parse_range("3.3.1..newest") == ("3.3.1", None)
    assert parse_range(" 3.3.1 .. 3.9.1 ") == ("3.3.1", "3.9.1")
    assert parse_range("3.9.1") == ("3.9.1", "3.9.1")
    for bad in ("3.3..newest", "x..4.0.0", "4.0.0..3.3.1"):
        with pytest.raises(SweepError) as err:
            parse_range(bad)
        assert "\n" not in str(err.value)


def test_releases_in_range_include_patches_and_never_predate_kraft() -> None:
    assert releases_in_range(PUBLISHED, "3.0.0", None) == ["3.3.1", "3.3.2", "3.4.0", "3.9.1", "4.0.0", "4.4.0"]
    assert releases_in_range(PUBLISHED, "3.3.2", "4.0.0") == ["3.3.2", "3.4.0", "3.9.1", "4.0.0"]
    with pytest.raises(SweepError, match="no published release"):
        releases_in_range(PUBLISHED, "3.5.0", "3.8.0")


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_sweep_skips_unassemblable_releases_and_resumes_after_an_interruption(tmp_path: Path) -> None:
    state_path = tmp_path / "sweep.json"
    releases = releases_in_range(PUBLISHED, "3.3.1", "4.0.0")
    clock_ = Clock()
    ran: list[str] = []
    said: list[str] = []

    def prepare(v: str) -> None:
        if v == "3.3.2":
            raise SetupError("Kafka 3.3.2 is incomplete on Maven Central: kafka-tools is missing")

    def run(v: str) -> int:
        ran.append(v)
        clock_.t += 600
        return {"3.4.0": 1, "3.9.1": 2}.get(v, 0)  # 3.9.1: Ctrl-C in the child

    state = run_sweep(load_or_start(state_path, PLAN, releases), state_path, prepare, run, said.append, clock_)
    assert ran == ["3.3.1", "3.4.0", "3.9.1"]
    assert {r: o.status for r, o in state.outcomes.items()} == {
        "3.3.1": ReleaseStatus.PASSED,
        "3.3.2": ReleaseStatus.SKIPPED,
        "3.4.0": ReleaseStatus.FAILED,
    }
    assert state.pending() == ["3.9.1", "4.0.0"]
    assert any(line.startswith("release 3.3.2 skipped: Kafka 3.3.2 is incomplete") for line in said)
    assert "release 4 of 5 (3.9.1): elapsed 20m00s, ETA 20m00s" in said  # median 10 min x 2 pending

    # the same command again: only what is not recorded runs
    ran.clear()
    resumed = load_or_start(state_path, PLAN, releases)
    assert resumed.pending() == ["3.9.1", "4.0.0"]
    state = run_sweep(resumed, state_path, prepare, lambda v: ran.append(v) or 0, said.append, clock_)
    assert ran == ["3.9.1", "4.0.0"] and not state.pending()
    lines = summary_lines(state)
    assert lines[-1] == "3 passed, 1 failed, 1 skipped, 0 pending"
    assert json.loads(state_path.read_text())["outcomes"]["3.4.0"]["exit_code"] == 1


def test_state_of_another_sweep_or_a_broken_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    SweepState(PLAN, ["3.3.1"]).save(path)
    with pytest.raises(SweepError, match="belongs to another sweep"):
        load_or_start(path, {**PLAN, "client": "java"}, ["3.3.1"])
    path.write_text("{not json")
    with pytest.raises(SweepError, match="unreadable sweep state"):
        load_or_start(path, PLAN, ["3.3.1"])
    path.write_text(json.dumps({"format": "highwater.sweep/1", "plan": {}}))
    with pytest.raises(SweepError, match="not a highwater.sweep/1 sweep state file"):
        load_or_start(path, PLAN, ["3.3.1"])


def test_eta_and_clock() -> None:
    assert eta_seconds([], 3) is None and clock(None) == "?"
    assert eta_seconds([60, 600, 120], 2) == 240
    assert clock(59) == "0m59s" and clock(3 * 3600 + 5 * 60) == "3h05m"


def test_cli_says_a_bad_range_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from highwater import cli

    assert cli.main(["sweep", "--kafka-versions", "3.3..newest"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "highwater: error: bad release range '3.3..newest': expected LOW..HIGH, e.g. 3.3.1..newest or 3.3.1..3.9.1"
    ]
