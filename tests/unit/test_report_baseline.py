"""``highwater report --baseline PATH``: what changed since an earlier summary (``reports.baseline``),
compared by suite/scenario × Kafka release × client; a bad baseline is refused in one line with
exit 4 before Spark starts, and a good one never changes the exit code. No Spark here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import highwater.reports.aggregate
from highwater import cli
from highwater.exit_codes import Exit
from highwater.reports import summary as summaries
from highwater.reports.baseline import READS, BaselineError, compare, load
from tests.unit.test_report_render import _data


def _run(
    cls: str = "valid",
    *,
    run: str = "c/a",
    scenario: str = "kill",
    kafka: str = "4.3.1",
    client: str = "kp 1.0",
    known: dict[str, list[str]] | None = None,
    new: list[str] | None = None,
) -> dict[str, Any]:
    """A summary's run row (format /2)."""
    return {
        "run": run,
        "suite": "chaos",
        "scenario": scenario,
        "kafka_version": kafka,
        "client": client,
        "valid": {"valid": True, "known": False, "violated": False}.get(cls, "unknown"),
        "class": cls,
        "findings": {"class": cls, "known": known or {}, "new": new or [], "fixed": []},
        "failed_checks": sorted({*(known or {}), *(new or [])}),
    }


def _summary(*runs: dict[str, Any]) -> dict[str, Any]:
    known: dict[str, int] = {}
    for r in runs:
        for f in dict.fromkeys(f for ids in r["findings"]["known"].values() for f in ids):
            known[f] = known.get(f, 0) + 1
    return {
        "format": "highwater.report-summary/2",
        "generated_at": "2026-01-01T00:00:00Z",
        "findings": {"known": known, "fixed": {}},
        "runs": list(runs),
    }


def _v1(*runs: dict[str, Any]) -> dict[str, Any]:
    """A format /1 summary: no class, no findings."""
    rows = [{k: v for k, v in r.items() if k not in ("class", "findings")} for r in runs]
    return {"format": "highwater.report-summary/1", "generated_at": "2025-06-01T00:00:00Z", "runs": rows}


# the comparison --------------------------------------------------------------------------------


def test_a_cell_violated_now_and_valid_before_is_a_new_violation() -> None:
    then = _summary(_run("valid"))
    now = _summary(_run("valid", run="c/a"), _run("violated", run="c/b", new=["poll-skip"]))
    c = compare(then, now, "old/summary.json")
    assert [v.to_json() for v in c.new_violations] == [
        {
            "suite": "chaos",
            "scenario": "kill",
            "kafka_version": "4.3.1",
            "client": "kp 1.0",
            "baseline_client": "kp 1.0",
            "matched_by": "label",
            "was": "valid",
            "checks": ["poll-skip"],
            "runs": ["c/b"],
        }
    ]
    assert [(m.change, m.was, m.now) for m in c.moved] == [("moved", "valid", "violated")]


def test_a_cell_violated_in_both_is_not_new() -> None:
    then = _summary(_run("violated", new=["lost-write"]))
    now = _summary(_run("violated", new=["poll-skip"]))
    c = compare(then, now)
    assert c.new_violations == () and c.moved == ()


def test_a_known_cell_that_is_violated_now_is_new_and_so_is_a_violated_cell_not_run_before() -> None:
    then = _summary(_run("known", known={"poll-skip": ["HW-10"]}))
    now = _summary(
        _run("violated", known={"poll-skip": ["HW-10"]}, new=["lost-write"]),
        _run("violated", run="c/x", kafka="4.4.0", new=["progress"]),
    )
    c = compare(then, now)
    assert [(v.cell.kafka_version, v.cell.was, v.checks) for v in c.new_violations] == [
        ("4.3.1", "known", ("lost-write",)),
        ("4.4.0", None, ("progress",)),
    ]


def test_a_cell_is_the_worst_of_its_runs() -> None:
    then = _summary(_run("valid"), _run("known", run="c/b", known={"poll-skip": ["HW-10"]}))
    now = _summary(_run("valid"), _run("valid", run="c/b"))
    assert [(m.was, m.now) for m in compare(then, now).moved] == [("known", "valid")]


def test_a_finding_known_before_and_not_now_stopped_showing() -> None:
    then = _summary(
        _run("known", known={"poll-skip": ["HW-10"]}),
        _run("known", run="c/b", scenario="pause", known={"lost-write": ["HW-12"]}),
        _run("known", run="c/c", known={"poll-skip": ["HW-13"]}),
    )
    now = _summary(_run("valid"), _run("known", run="c/c", known={"poll-skip": ["HW-13"]}))
    c = compare(then, now)
    assert [f.to_json() for f in c.stopped_showing] == [
        {"id": "HW-10", "runs": 1, "cells": 1, "cells_run_now": 1},  # ran and did not show
        {"id": "HW-12", "runs": 1, "cells": 1, "cells_run_now": 0},  # its scenario was not run
    ]
    assert c.newly_shown == ()
    assert "findings that stopped showing: HW-10, HW-12 (not run now)" in c.lines()[0]


def test_a_finding_known_now_and_not_before_is_newly_shown() -> None:
    then = _summary(_run("valid"))
    now = _summary(_run("known", known={"poll-skip": ["HW-10"]}))
    c = compare(then, now)
    assert [f.to_json() for f in c.newly_shown] == [{"id": "HW-10", "runs": 1, "cells": 1}]
    assert c.stopped_showing == () and c.new_violations == ()
    assert "findings newly shown since the baseline: HW-10" in c.lines()


def test_a_v1_baseline_is_classed_by_its_validity_and_knew_no_findings(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(
        json.dumps(
            _v1(
                _run("violated", new=["poll-skip"]),
                _run("valid", run="c/b", kafka="4.4.0"),
                _run("violated", run="c/c", kafka="4.5.0", new=["progress"]),
            )
        )
    )
    base = load(path)
    assert base.path == path and "class" not in base.summary["runs"][0]
    now = _summary(
        _run("violated", new=["poll-skip"]),  # violated then too: not new
        _run("violated", run="c/b", kafka="4.4.0", new=["lost-write"]),  # valid then: new
        _run("known", run="c/c", kafka="4.5.0", known={"progress": ["HW-9"]}),
    )
    c = compare(base.summary, now, str(base.path))
    assert [(v.cell.kafka_version, v.cell.was) for v in c.new_violations] == [("4.4.0", "valid")]
    assert c.stopped_showing == () and [f.id for f in c.newly_shown] == ["HW-9"]
    assert [(m.kafka_version, m.was, m.now) for m in c.moved] == [
        ("4.4.0", "valid", "violated"),
        ("4.5.0", "violated", "known"),
    ]
    assert c.to_json()["format"] == "highwater.report-summary/1"


def test_moved_lists_changes_only_and_cells_in_one_report() -> None:
    then = _summary(
        _run("valid", scenario="a"),
        _run("valid", run="c/b", scenario="b"),
        _run("unknown", run="c/c", scenario="gone"),
    )
    now = _summary(
        _run("valid", scenario="a"),  # unchanged: not listed
        _run("known", run="c/b", scenario="b", known={"poll-skip": ["HW-10"]}),
        _run("valid", run="c/d", scenario="new"),
    )
    c = compare(then, now)
    assert [m.to_json() for m in c.moved] == [
        {
            "suite": "chaos",
            "scenario": "b",
            "kafka_version": "4.3.1",
            "client": "kp 1.0",
            "baseline_client": "kp 1.0",
            "matched_by": "label",
            "change": "moved",
            "from": "valid",
            "to": "known",
        },
        {
            "suite": "chaos",
            "scenario": "gone",
            "kafka_version": "4.3.1",
            "client": None,
            "baseline_client": "kp 1.0",
            "matched_by": None,
            "change": "gone",
            "from": "unknown",
            "to": None,
        },
        {
            "suite": "chaos",
            "scenario": "new",
            "kafka_version": "4.3.1",
            "client": "kp 1.0",
            "baseline_client": None,
            "matched_by": None,
            "change": "added",
            "from": None,
            "to": "valid",
        },
    ]
    assert c.lines()[0].endswith("; 1 verdict(s) moved, 1 cell(s) added, 1 cell(s) gone")
    assert "  chaos/b, Kafka 4.3.1, kp 1.0: valid -> known" in c.lines()


def test_a_client_whose_version_changed_is_matched_by_name_and_releases_never_are() -> None:
    then = _summary(_run("valid", client="kp 1.0"), _run("valid", run="c/b", kafka="3.9.1"))
    now = _summary(_run("violated", client="kp 2.0", new=["poll-skip"]), _run("valid", run="c/b", kafka="3.9.2"))
    c = compare(then, now)
    (v,) = c.new_violations
    assert (v.cell.client, v.cell.baseline_client, v.cell.matched_by, v.cell.was) == (
        "kp 2.0",
        "kp 1.0",
        "client name",
        "valid",
    )
    assert "chaos/kill, Kafka 4.3.1, kp 2.0 (was kp 1.0)" in c.lines()[0]
    assert [(m.kafka_version, m.change) for m in c.moved] == [("3.9.1", "gone"), ("3.9.2", "added"), ("4.3.1", "moved")]


def test_two_versions_of_a_client_on_each_side_cannot_be_told_apart() -> None:
    then = _summary(_run(client="kp 1.0"), _run(run="c/b", client="kp 1.1"))
    now = _summary(_run(client="kp 2.0"), _run(run="c/b", client="kp 2.1"))
    c = compare(then, now)
    assert sorted((m.change, m.client or m.baseline_client) for m in c.moved) == [
        ("added", "kp 2.0"),
        ("added", "kp 2.1"),
        ("gone", "kp 1.0"),
        ("gone", "kp 1.1"),
    ]


def test_nothing_changed() -> None:
    s = _summary(_run("known", known={"poll-skip": ["HW-10"]}))
    c = compare(s, s, "b.json")
    assert c.lines() == [
        "since b.json: no new violation, no finding stopped showing; 0 verdict(s) moved",
    ]
    assert c.to_json() == {
        "path": "b.json",
        "generated_at": "2026-01-01T00:00:00Z",
        "format": "highwater.report-summary/2",
        "new_violations": [],
        "stopped_showing": [],
        "newly_shown": [],
        "moved": [],
    }


def test_the_summary_this_code_writes_is_one_a_baseline_may_be() -> None:
    assert summaries.FORMAT.rpartition("/")[2] in READS


@pytest.mark.parametrize("place", ["summary.json", "report/summary.json"])
def test_a_directory_holding_a_summary_is_read(tmp_path: Path, place: str) -> None:
    (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / place).write_text(json.dumps(_summary(_run())))
    assert load(tmp_path).path == tmp_path / place


def test_a_summary_of_a_format_not_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": "highwater.report-summary/9", "runs": []}))
    with pytest.raises(BaselineError, match="format highwater.report-summary/9, which this highwater does not read"):
        load(path)


# the command -----------------------------------------------------------------------------------


def _no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def build(*_: object) -> None:
        raise AssertionError("Spark started before the baseline was refused")

    monkeypatch.setattr(highwater.reports.aggregate, "build", build)


def _bad_baselines(tmp: Path) -> dict[str, tuple[Path, str]]:
    (tmp / "bad").mkdir()
    (tmp / "bad" / "not.json").write_text("{ nope")
    (tmp / "bad" / "other.json").write_text(json.dumps({"format": "junit", "runs": []}))
    (tmp / "bad" / "list.json").write_text("[1, 2]")
    (tmp / "bad" / "runs.json").write_text(json.dumps({"format": "highwater.report-summary/2", "runs": {}}))
    (tmp / "bad" / "latin1.json").write_bytes(b"\xff\xfe{")
    tree = tmp / "bad" / "results" / "c1" / "run-1"
    tree.mkdir(parents=True)
    (tree / "run.json").write_text("{}")
    return {
        "missing": (tmp / "bad" / "nope.json", "does not exist"),
        "not-json": (tmp / "bad" / "not.json", "is not JSON"),
        "not-utf8": (tmp / "bad" / "latin1.json", "is not JSON"),
        "not-a-summary": (tmp / "bad" / "other.json", "is not a highwater report summary"),
        "not-an-object": (tmp / "bad" / "list.json", "is not a highwater report summary"),
        "runs-not-a-list": (tmp / "bad" / "runs.json", "'runs' is not a list of runs"),
        "tree-without-summary": (tmp / "bad" / "results", "is a directory without a report summary"),
    }


@pytest.mark.parametrize(
    "case",
    ["missing", "not-json", "not-utf8", "not-a-summary", "not-an-object", "runs-not-a-list", "tree-without-summary"],
)
def test_a_bad_baseline_is_refused_in_one_line_before_spark(
    case: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_spark(monkeypatch)
    path, what = _bad_baselines(tmp_path)[case]
    assert cli.main(["report", str(tmp_path), "--quiet", "--baseline", str(path)]) == Exit.HARNESS == 4
    out = capsys.readouterr()
    assert out.err.count("\n") == 1 and out.err.startswith("highwater report: error: baseline ")
    assert what in out.err and str(path) in out.err
    assert out.out == "" and not (tmp_path / "report").exists()


def _report(monkeypatch: pytest.MonkeyPatch, results: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """``highwater report RESULTS --quiet EXTRA...`` on ``_data()``: its exit code and summary."""
    monkeypatch.setattr(highwater.reports.aggregate, "build", lambda *_: _data())
    code = cli.main(["report", str(results), "--quiet", *extra])
    return code, json.loads((results / "report" / "summary.json").read_text())


def test_a_good_baseline_says_what_changed_and_keeps_the_exit_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # _data(): chaos/kill with kp on 4.3.1 (one run violated poll-skip) and on 3.9.1 (unknown)
    base = tmp_path / "old" / "report" / "summary.json"
    base.parent.mkdir(parents=True)
    base.write_text(json.dumps(_summary(_run("known", run="c0/a", client="kp", known={"poll-skip": ["HW-10"]}))))
    results = tmp_path / "new"
    code_without, plain = _report(monkeypatch, results)
    assert "baseline" not in plain
    assert "id='since'" not in (results / "report" / "report.html").read_text()  # no baseline, no section
    capsys.readouterr()

    code, s = _report(monkeypatch, results, "--baseline", str(tmp_path / "old"))
    assert code == code_without == plain["exit_code"] == Exit.VIOLATIONS  # the baseline informs only
    out = capsys.readouterr().out
    assert (
        f"highwater report: since {base}: 1 new violation(s) (chaos/kill, Kafka 4.3.1, kp), findings that "
        "stopped showing: HW-10; 1 verdict(s) moved, 1 cell(s) added\n"
    ) in out
    assert "highwater report:   chaos/kill, Kafka 4.3.1, kp: known -> violated\n" in out
    b = s["baseline"]
    assert b["path"] == str(base) and b["generated_at"] == "2026-01-01T00:00:00Z"
    assert [(v["kafka_version"], v["was"], v["runs"]) for v in b["new_violations"]] == [("4.3.1", "known", ["c1/b"])]
    assert b["stopped_showing"] == [{"id": "HW-10", "runs": 1, "cells": 1, "cells_run_now": 1}]
    assert b["newly_shown"] == []
    assert [(m["kafka_version"], m["change"], m["from"], m["to"]) for m in b["moved"]] == [
        ("3.9.1", "added", None, "unknown"),
        ("4.3.1", "moved", "known", "violated"),
    ]
    assert {k: v for k, v in s.items() if k != "baseline"} == plain  # the rest of the summary as before
    page = (results / "report" / "report.html").read_text()
    since = page[page.index("<h2 id='since'>") : page.index("<h2", page.index("<h2 id='since'>") + 1)]
    assert "<tr class='v-false'><td>chaos/kill, Kafka 4.3.1, kp</td><td>known</td><td></td><td>c1/b</td>" in since
    assert "HW-10 stopped showing: it explained 1 run(s) in 1 cell(s) then" in since
    assert "<td>chaos/kill, Kafka 3.9.1, kp</td><td>added</td><td></td><td>unknown</td>" in since
    assert "href='#since'" in page


def test_the_baseline_may_be_the_summary_the_report_overwrites(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, first = _report(monkeypatch, tmp_path)
    code, s = _report(monkeypatch, tmp_path, "--baseline", str(tmp_path))
    assert code == first["exit_code"]
    assert s["baseline"]["path"] == str(tmp_path / "report" / "summary.json")
    assert s["baseline"]["new_violations"] == [] and s["baseline"]["moved"] == []
    assert "no new violation, no finding stopped showing; 0 verdict(s) moved" in capsys.readouterr().out
