"""The report's classes against the known findings: a violation a finding explains is known
(summary, JUnit, HTML, the exit code), one none explains is new and fails the report; the runs'
classes are judged by ``highwater.core.findings.classify`` when the report is built."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from highwater.core.findings import Finding, RunIdentity, Shows, classify
from highwater.reports.aggregate import ReportData, _run_row
from highwater.reports.junit import build_junit
from highwater.reports.layout import RunInfo
from highwater.reports.render_html import render
from highwater.reports.summary import class_exit_code, findings_line, summary
from tests.unit.test_report_render import _data

FINDING = Finding(
    id="HW-99",
    component="client: kp",
    what="skips an offset",
    seen="kp 1.0",
    status="open",
    repro="",
    reason="FINDING HW-99",
    clients={"kp": ">=1.0"},
    shows=(Shows(("chaos/kill",), ("poll-skip",), strict=False),),
)


def _classed(data: ReportData, findings: tuple[Finding, ...]) -> ReportData:
    """The same runs with their classes judged against ``findings`` (label ``kp 1.0``)."""
    out = copy.deepcopy(data)
    for r in out.runs:
        r["client"] = "kp 1.0"
        c = classify(
            findings,
            RunIdentity.of(r["suite"], r["scenario"], r["client"], r["kafka_version"]),
            {k: v["valid"] for k, v in r["verdicts"].items()},
        )
        r["class"], r["findings"] = c.run_class, c.to_json()
    for m in out.matrix:
        m["client"] = "kp 1.0"
    for c in out.columns:
        c["client"] = "kp 1.0"
    return out


def test_a_violation_a_finding_explains_is_known_and_exits_zero_with_its_line() -> None:
    d = _classed(_data(), (FINDING,))
    s = summary(d)
    assert s["valid"] is False  # the verdict stays what the checks said
    assert s["totals"]["known"] == 1 and s["totals"]["violated"] == 0
    assert s["findings"]["known"] == {"HW-99": 1}
    # one run is unknown (progress), so the report is amber, not red
    assert s["class"] == "unknown" and s["exit_code"] == 3
    assert findings_line(d) == "no new violation; 1 known: HW-99; 0 fixed?"
    known = [r for r in s["runs"] if r["class"] == "known"]
    assert [r["findings"]["known"] for r in known] == [{"poll-skip": ["HW-99"]}]


def test_the_same_violation_without_its_finding_is_new_and_exits_one() -> None:
    d = _classed(_data(), ())
    s = summary(d)
    assert s["class"] == "violated" and s["exit_code"] == 1
    assert s["totals"]["violated"] == 1 and s["totals"]["known"] == 0
    assert findings_line(d).startswith("1 run(s) with a new violation; 0 known")


def test_exit_codes_per_class() -> None:
    assert [class_exit_code(c) for c in ("valid", "known", "fixed?", "violated", "unknown")] == [0, 0, 0, 1, 3]


def test_junit_reports_a_known_finding_as_skipped_with_its_id_and_a_new_one_as_a_failure() -> None:
    known = build_junit(_classed(_data(), (FINDING,)))
    cases = [c for c in known.iter("testcase") if c.get("name") == "poll-skip"]
    assert all(c.find("failure") is None for c in cases)
    (case,) = [c for c in cases if c.find("skipped") is not None]
    message = case.find("skipped").get("message") or ""  # type: ignore[union-attr]
    assert message == "known: HW-99 (poll-skip violated in 1/2 run(s), each explained)"  # one run of the two
    assert any(p.get("name") == "known" and p.get("value") == "HW-99" for p in case.iter("property"))
    assert known.get("failures") == "0"
    new = build_junit(_classed(_data(), ()))
    cases = [c for c in new.iter("testcase") if c.get("name") == "poll-skip"]
    assert sum(c.find("failure") is not None for c in cases) == 1 and new.get("failures") == "1"


def test_the_html_marks_known_cells_and_failures_apart_from_new_ones(tmp_path: Any) -> None:
    page = render(_classed(_data(), (FINDING,)), tmp_path)
    assert "v-known" in page and "HW-99" in page and "data-class='unknown'" in page
    assert "no new violation; 1 known: HW-99" in page
    page = render(_classed(_data(), ()), tmp_path)
    assert "data-class='violated'" in page and "1 run(s) with a new violation" in page


def test_the_report_classes_runs_it_loads_against_the_findings_given() -> None:
    base = _data().runs[1]  # poll-skip violated
    info = RunInfo(0, "c1", "b", Path("/x"), suite="chaos", scenario="kill", kafka_version="4.3.1", client="kp 1.0")
    row = _run_row(info, base["verdicts"], (FINDING,))
    assert row["class"] == "known" and row["findings"]["known"] == {"poll-skip": ["HW-99"]}
    assert _run_row(info, base["verdicts"], ())["class"] == "violated"
    other = RunInfo(0, "c1", "b", Path("/x"), suite="chaos", scenario="kill", kafka_version="4.3.1", client="kp 0.9")
    assert _run_row(other, base["verdicts"], (FINDING,))["class"] == "violated"  # outside its versions


def test_a_suite_s_exact_judgement_beyond_a_finding_makes_the_run_new_in_its_files_and_reports(
    tmp_path: Path,
) -> None:
    """HW-10's record explains kafka-python's lost writes in the transactions suite; when the
    suite's exact subtraction finds more lost than HW-10 can account for, ``record_beyond``
    makes the run new in verdict.json and run.json, and the report keeps it new."""
    import json

    from highwater.core.findings import load
    from highwater.reports.layout import load_run
    from highwater.runner import record_beyond
    from tests.synth.reports import RunSpec as SynthRun
    from tests.synth.reports import write_run

    d = write_run(
        tmp_path,
        SynthRun(
            "c",
            "r",
            seed=3,
            anomalies=("lost",),
            client="kafka-python 3.0.12",
            suite="transactions",
            scenario="coordinators-kill",
            kafka_version="4.4.0",
        ),
    )
    info = load_run(tmp_path, d, 0)
    verdicts = {v["check"]: v for v in info.verdicts or []}
    assert verdicts["lost-write"]["valid"] is False
    assert _run_row(info, verdicts, load())["findings"]["known"] == {"lost-write": ["HW-10"]}
    c = record_beyond(d, "HW-10", ["lost-write"])
    assert c is not None and c.run_class == "violated" and "lost-write" in c.new and "lost-write" not in c.known
    assert json.loads((d / "verdict.json").read_text())["findings"]["beyond"] == {"HW-10": ["lost-write"]}
    info = load_run(tmp_path, d, 0)
    row = _run_row(info, verdicts, load())
    assert row["class"] == "violated" and "lost-write" in row["findings"]["new"]
    assert row["findings"]["beyond"] == {"HW-10": ["lost-write"]}
    assert record_beyond(tmp_path / "nothing-here", "HW-10", ["lost-write"]) is None


def test_a_run_rolled_from_one_release_to_another_shows_as_its_path() -> None:
    base = _data().runs[1]
    rolled = RunInfo(
        0,
        "c1",
        "b",
        Path("/x"),
        suite="upgrades",
        scenario="r",
        kafka_version="3.9.1",
        client="kp 1.0",
        config={"upgrade_path": "3.9.1->4.4.0"},
    )
    assert _run_row(rolled, base["verdicts"], ())["kafka_version"] == "3.9.1->4.4.0"
    plain = RunInfo(0, "c1", "b", Path("/x"), suite="chaos", scenario="kill", kafka_version="4.3.1", client="kp 1.0")
    assert _run_row(plain, base["verdicts"], ())["kafka_version"] == "4.3.1"
