"""Report rendering and merging without Spark: HTML, JUnit, summary, SVG, fault windows,
verdict merging and lenient run discovery."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path
from typing import Any

from highwater.reports.aggregate import CHECK_ORDER, ReportData, context_events, merge_run_verdicts
from highwater.reports.junit import build_junit
from highwater.reports.layout import load_run
from highwater.reports.render_html import render
from highwater.reports.spark_checks import SparkVerdict
from highwater.reports.summary import class_exit_code, summary
from highwater.reports.svg import _segments, line_chart
from highwater.reports.timelines import fault_windows


def _verdicts(bad: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for c in CHECK_ORDER:
        valid = bad.get(c, True)
        out[c] = {
            "check": c,
            "valid": valid,
            "counts": {"n": 1},
            "notes": [],
            "allowed": False,
            "examples": [{"kind": c, "events": [{"index": 3, "f": "poll"}]}] if valid is False else [],
        }
    return out


def _run(label: str, bad: dict[str, Any], version: str = "4.3.1") -> dict[str, Any]:
    camp, rid = label.split("/")
    v = _verdicts(bad)
    from highwater.core.checks.verdict import merge_valid

    return {
        "key": 0,
        "label": label,
        "campaign": camp,
        "run_id": rid,
        "suite": "chaos",
        "scenario": "kill",
        "kafka_version": version,
        "client": "kp",
        "config": {"acks": "all"},
        "seed": 1,
        "repro": f"highwater campaign --seed {rid}",
        "started_at": "2025-01-01T00:00:00Z",
        "schedule": None,
        "racks": {},
        "client_bytes": None,
        "problems": [],
        "path": "/x",
        "valid": merge_valid(x["valid"] for x in v.values()),
        "verdicts": v,
    }


def _data() -> ReportData:
    runs = [_run("c1/a", {}), _run("c1/b", {"poll-skip": False}), _run("c2/c", {"progress": "unknown"}, "3.9.1")]
    matrix = []
    for col in (("4.3.1",), ("3.9.1",)):
        for c in CHECK_ORDER:
            rs = [r for r in runs if r["kafka_version"] == col[0]]
            vals = [r["verdicts"][c]["valid"] for r in rs]
            matrix.append(
                {
                    "suite": "chaos",
                    "scenario": "kill",
                    "kafka_version": col[0],
                    "client": "kp",
                    "check": c,
                    "runs": len(rs),
                    "passed": vals.count(True),
                    "failed": sum(v is False for v in vals),
                    "unknown": vals.count("unknown"),
                    "allowed": 0,
                    "valid": False if False in vals else "unknown" if "unknown" in vals else True,
                }
            )
    cols = [{"suite": "chaos", "scenario": "kill", "kafka_version": v, "client": "kp"} for v in ("3.9.1", "4.3.1")]
    tl = {
        "width_s": 1.0,
        "t": [0.0, 1.0, 2.0],
        "acks": [1.0, 2.0, 3.0],
        "send_errors": [0.0, 0.0, 1.0],
        "polled": [0.0, 1.0, 2.0],
        "latency_p50_ms": [None, 3.0, 4.0],
        "latency_p99_ms": [None, 5.0, 9.0],
        "partitions": {"t-0": {"leader": [1, 1, 2], "isr": [3, 2, 3], "hw": [1, 2, 3]}},
        "lag": {"consumer-0 t-0": [0.0, 1.0, None]},
        "latency_sampled": 1,
        "faults": [{"start_s": 0.5, "end_s": 1.5, "kind": "kill", "targets": "[3]"}],
    }
    return ReportData(
        generated_at="now",
        results_dir="/r",
        master="local[1]",
        checks=CHECK_ORDER,
        runs=runs,
        matrix=matrix,
        columns=cols,
        failures=[
            {
                "run": "c1/b",
                "check": "poll-skip",
                "counts": {"skips": 1},
                "notes": [],
                "repro": "highwater campaign --seed b",
                "runs_failing_check": 1,
                "examples": [
                    {
                        "what": {"kind": "poll-skip"},
                        "indices": [3],
                        "context": [
                            {
                                "index": 3,
                                "time_ns": 5,
                                "process": "c<0>",
                                "type": "ok",
                                "f": "poll",
                                "value": {"records": []},
                                "error": None,
                                "involved": True,
                            }
                        ],
                    }
                ],
            }
        ],
        timelines={"c1/b": tl},
        fetch=[],
        trends=[],
        disagreements=[],
    )


def test_html_is_self_contained_and_escaped() -> None:
    html = render(_data())
    assert "<script src" not in html and "<link rel='stylesheet'" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    assert "c&lt;0&gt;" in html and "c<0>" not in html
    assert html.count("<svg") >= 5 and 'class="fault"' in html
    assert "data-check='poll-skip' data-col='1' data-valid='false'" in html
    assert "highwater campaign --seed b" in html


def test_junit_one_case_per_check_and_scenario_with_repro() -> None:
    root = build_junit(_data())
    cases = root.findall(".//testcase")
    assert len(cases) == 2 * len(CHECK_ORDER)
    fails = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in fails] == ["poll-skip"]
    assert "repro: highwater campaign --seed b" in (fails[0].find("failure").text or "")
    errs = [c for c in cases if c.find("error") is not None]
    assert [c.get("name") for c in errs] == ["progress"] and errs[0].find("error").get("type") == "unknown"
    assert root.get("tests") == str(len(cases)) and root.get("failures") == "1"
    ET.fromstring(ET.tostring(root))  # well-formed


def test_junit_says_what_it_leaves_out() -> None:
    """A failure's text shows a few examples and events of a run: the rest is counted, never
    dropped silently (issue 30)."""
    from highwater.reports.junit import _details

    events = [{"index": i} for i in range(6)]
    verdict = {
        "counts": {"skips": 5},
        "notes": [f"n{i}" for i in range(4)],
        "examples": [{"kind": "poll-skip", "detail": "x" * 700, "events": events}] * 5,
    }
    text = _details([({"label": "c1/b", "repro": "highwater run ..."}, verdict)])
    assert "... and 1 more note(s)" in text
    assert "... and 2 more example(s), all in the run's verdict.json" in text
    assert "... and 2 more event(s)" in text
    assert "characters)" in text  # the long example was shortened, and says so


def test_failures_say_how_many_context_events_were_left_out() -> None:
    data = _data()
    data.failures[0]["examples"][0]["context_more"] = 7
    html = render(data)
    assert "and 7 more events around it" in html
    data.failures[0]["examples"][0]["context_more"] = 0
    assert "more events around it" not in render(data)


def test_summary_is_versioned_and_three_valued() -> None:
    s = summary(_data())
    assert s["format"] == "highwater.report-summary/2"
    assert s["valid"] is False and s["exit_code"] == 1 and s["class"] == "violated"
    assert s["totals"] == {"runs": 3, "valid": 1, "known": 0, "violated": 1, "fixed?": 0, "unknown": 1}
    json.dumps(s)
    assert [class_exit_code(c) for c in ("valid", "violated", "unknown")] == [0, 1, 3]


def test_fault_windows_pair_heals_by_kind_and_targets() -> None:
    ev = [
        {"f": "fault", "time_ns": 1_000_000_000, "kind": '"kill"', "targets": "[3]"},
        {"f": "fault", "time_ns": 2_000_000_000, "kind": "cut", "targets": "[1]"},
        {"f": "heal", "time_ns": 3_000_000_000, "kind": "kill", "targets": "[3]"},
        {"f": "fault", "time_ns": 4_000_000_000, "kind": "pause", "targets": "[2]"},
        {"f": "heal", "time_ns": 5_000_000_000, "kind": None, "targets": "[]"},
        {"f": "fault", "time_ns": 6_000_000_000, "kind": "kill", "targets": "[1]"},
    ]
    w = fault_windows(ev, 9_000_000_000)
    assert [(x["kind"], x["start_s"], x["end_s"]) for x in w] == [
        ("kill", 1.0, 3.0),
        ("cut", 2.0, 5.0),
        ("pause", 4.0, 5.0),
        ("kill", 6.0, 9.0),
    ]
    assert w[-1].get("unhealed") is True


def test_svg_segments_break_on_missing_values() -> None:
    assert _segments([0, 1, 2, 3], [1, None, 2, 3], False) == [[(0, 1.0), (0, 1.0)], [(2, 2.0), (3, 3.0)]]
    svg = line_chart([0, 1], [("a", [None, None])], title="empty")
    assert svg.startswith("<svg") and "polyline" not in svg


def test_merge_flags_spark_python_disagreement(tmp_path: Path) -> None:
    d = tmp_path / "camp" / "r1"
    d.mkdir(parents=True)
    py = [
        {
            "check": "poll-skip",
            "valid": True,
            "counts": {"skips": 0, "skipped_offsets": 0, "steps_judged": 5, "steps_unjudged": 0},
            "examples": [],
            "notes": [],
        }
    ]
    (d / "verdict.json").write_text(json.dumps({"valid": True, "verdicts": py}))
    run = load_run(tmp_path, d, 0)
    assert run.campaign == "camp" and run.verdicts is not None
    spark = {
        "poll-skip": SparkVerdict(
            "poll-skip", False, {"skips": 1, "skipped_offsets": 1, "steps_judged": 5, "steps_unjudged": 0}
        )
    }
    dis: list[dict[str, Any]] = []
    out = merge_run_verdicts(run, spark, dis)
    assert dis and dis[0]["check"] == "poll-skip" and "skips" in dis[0]["counts_differ"]
    assert out["poll-skip"]["valid"] == "unknown"
    assert out["lost-write"]["valid"] == "unknown"  # missing from verdict.json: never valid
    assert out["history"]["valid"] == "unknown"  # no history file is a problem of the run


def test_lenient_run_discovery(tmp_path: Path) -> None:
    d = tmp_path / "c" / "bad"
    d.mkdir(parents=True)
    (d / "verdict.json").write_text("{not json")
    (d / "run.json").write_text(json.dumps({"suite": "s", "scenario": "x", "repro": "cmd"}))
    run = load_run(tmp_path, d, 7)
    assert run.verdicts is None and run.suite == "s" and run.repro == "cmd"
    assert any("verdict.json unreadable" in p for p in run.problems)


def test_context_events_marks_involved(tmp_path: Path) -> None:
    from highwater.core.history import to_parquet
    from tests.synth.histories import HistoryBuilder

    b = HistoryBuilder()
    for i in range(20):
        b.send("producer-0", "t", 0, f"v{i}", offset=i)
    src = b.write(tmp_path / "h.jsonl")
    to_parquet(src, tmp_path / "h.parquet")
    ctx = context_events(tmp_path / "h.parquet", [10], radius=2)
    assert [e["index"] for e in ctx] == [8, 9, 10, 11, 12]
    assert [e["involved"] for e in ctx] == [False, False, True, False, False]


def test_context_from_one_read_per_run(tmp_path: Path) -> None:
    """Several examples of one run share one read; each still gets only its own neighbours."""
    from highwater.core.history import to_parquet
    from highwater.reports.aggregate import context_table
    from tests.synth.histories import HistoryBuilder

    b = HistoryBuilder()
    for i in range(40):
        b.send("producer-0", "t", 0, f"v{i}", offset=i)
    to_parquet(b.write(tmp_path / "h.jsonl"), tmp_path / "h.parquet")
    table = context_table(tmp_path / "h.parquet", [[5], [30, 31]], radius=1)
    assert table.num_rows == 3 + 4
    assert [e["index"] for e in context_events(tmp_path / "h.parquet", [30, 31], radius=1, table=table)] == [
        29,
        30,
        31,
        32,
    ]
    assert [e["index"] for e in context_events(tmp_path / "h.parquet", [5], radius=1, table=table)] == [4, 5, 6]


def test_run_links_partition_dirs(tmp_path: Path) -> None:
    """Spark reads ``run`` from ``run=<key>`` directories of links; closing removes the links
    and never the histories they point to."""
    from highwater.reports.layout import RunInfo
    from highwater.reports.spark_checks import RunLinks

    runs = []
    for k in range(3):
        d = tmp_path / "results" / f"r{k}"
        d.mkdir(parents=True)
        (d / "history.parquet").write_bytes(b"x")
        runs.append(RunInfo(key=k, campaign="c", run_id=f"r{k}", path=d, parquet=d / "history.parquet"))
    runs.append(RunInfo(key=3, campaign="c", run_id="none", path=tmp_path))  # no history: skipped
    with RunLinks(tmp_path / "cache", runs) as links:
        got = sorted(p.relative_to(links.root).as_posix() for p in links.root.rglob("history.parquet"))
        assert got == [f"run={k}/history.parquet" for k in range(3)]
        assert not links.root.name.startswith((".", "_"))  # Spark skips hidden paths
        assert (links.root / "run=1" / "history.parquet").resolve() == runs[1].parquet.resolve()
    assert not links.root.exists()
    assert all(r.parquet.exists() for r in runs[:3])


# not-applicable ----------------------------------------------------------------------------

NA = "not-applicable"
NA_NOTE = "not applicable: the history has no racks and no meta (needs racks, polls, meta)"


def _na_data() -> ReportData:
    """follower-fetch not applicable in every run; hw-regression in one run of two (4.3.1)."""
    runs = [
        _run("c1/a", {"follower-fetch": NA, "hw-regression": NA}),
        _run("c1/b", {"follower-fetch": NA, "poll-skip": False}),
        _run("c2/c", {"follower-fetch": NA}, "3.9.1"),
    ]
    for r in runs:
        r["verdicts"]["follower-fetch"].update(counts={}, notes=[NA_NOTE])
    matrix = []
    for version in ("4.3.1", "3.9.1"):
        rs = [r for r in runs if r["kafka_version"] == version]
        for c in CHECK_ORDER:
            vals = [r["verdicts"][c]["valid"] for r in rs]
            m = {
                "suite": "chaos",
                "scenario": "kill",
                "kafka_version": version,
                "client": "kp",
                "check": c,
                "runs": len(rs),
                "passed": vals.count(True),
                "failed": sum(v is False for v in vals),
                "unknown": vals.count("unknown"),
                "not_applicable": vals.count(NA),
                "allowed": 0,
            }
            # as reports.aggregate._matrix
            m["valid"] = (
                False
                if m["failed"]
                else "unknown"
                if m["unknown"]
                else NA
                if m["not_applicable"] == m["runs"]
                else True
            )
            matrix.append(m)
    d = _data()
    d.runs, d.matrix, d.failures, d.timelines = runs, matrix, [], {}
    return d


def test_not_applicable_cell_is_neutral_and_not_counted() -> None:
    html = render(_na_data())
    cell = re.search(
        r"<td class='cell v-na' data-check='follower-fetch' data-col='1' "
        r"data-valid='not-applicable' title='([^']*)'>n/a</td>",
        html,
    )
    assert cell, html[html.find("follower-fetch") :][:400]
    assert "2 not applicable" in cell.group(1) and "no racks and no meta" in cell.group(1)
    # hw-regression on 4.3.1: one valid run, one not applicable: valid, 1 of the 1 judged run
    assert re.search(
        r"data-check='hw-regression' data-col='1' data-valid='true' "
        r"title='[^']*1 not applicable'>\u2713 1/1</td>",
        html,
    )
    assert ".v-na{" in html
    assert "<td class='small'>hw-regression, follower-fetch</td>" in html  # runs table
    assert "data-valid='not-applicable'" not in html.split("id='runs'")[1]  # runs are never n/a


def test_not_applicable_junit_is_skipped_with_reason() -> None:
    root = build_junit(_na_data())
    cases = root.findall(".//testcase")
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert [c.get("name") for c in skipped] == ["follower-fetch", "follower-fetch"]
    msg = skipped[0].find("skipped").get("message") or ""
    assert "not applicable" in msg and "no racks and no meta" in msg
    assert root.get("skipped") == "2" and root.get("failures") == "1" and root.get("errors") == "0"
    assert {s.get("skipped") for s in root.findall("testsuite")} == {"1"}
    hw = [c for c in cases if c.get("name") == "hw-regression"]
    assert all(len(c.findall("skipped")) == 0 for c in hw)  # applied in one run of 4.3.1: passed
    ET.fromstring(ET.tostring(root))


def test_summary_is_four_valued_per_check_and_three_valued_per_run() -> None:
    s = summary(_na_data())
    runs = {r["run"]: r for r in s["runs"]}
    assert runs["c1/a"]["not_applicable_checks"] == ["hw-regression", "follower-fetch"]
    assert runs["c1/a"]["valid"] is True and runs["c1/a"]["checks"]["follower-fetch"]["valid"] == NA
    assert runs["c1/b"]["failed_checks"] == ["poll-skip"]
    assert s["totals"] == {"runs": 3, "valid": 2, "known": 0, "violated": 1, "fixed?": 0, "unknown": 0}
    assert {m["valid"] for m in s["matrix"] if m["check"] == "follower-fetch"} == {NA}
    assert s["valid"] is False and s["exit_code"] == 1
    json.dumps(s)


def test_merge_accepts_spark_on_a_not_applicable_check_unless_it_found_a_violation(tmp_path: Path) -> None:
    d = tmp_path / "camp" / "r1"
    d.mkdir(parents=True)
    py = [{"check": "poll-skip", "valid": NA, "counts": {}, "examples": [], "notes": ["no final reads"]}]
    (d / "verdict.json").write_text(json.dumps({"valid": True, "verdicts": py}))
    run = load_run(tmp_path, d, 0)
    counts = {"skips": 0, "skipped_offsets": 0, "steps_judged": 4, "steps_unjudged": 1}
    dis: list[dict[str, Any]] = []
    for spark_valid in ("unknown", True):  # polls without final reads: Spark judged what it could
        out = merge_run_verdicts(run, {"poll-skip": SparkVerdict("poll-skip", spark_valid, counts)}, dis)
        assert dis == [] and out["poll-skip"]["valid"] == NA and out["poll-skip"]["source"] == "python+spark"
    bad = {"poll-skip": SparkVerdict("poll-skip", False, {**counts, "skips": 1})}
    out = merge_run_verdicts(run, bad, dis)
    assert dis and dis[0]["python"] == NA and out["poll-skip"]["valid"] == "unknown"


def test_run_where_no_check_applied_is_unknown(tmp_path: Path) -> None:
    from highwater.reports.aggregate import _run_row
    from highwater.reports.layout import RunInfo

    v = _verdicts({c: NA for c in CHECK_ORDER if c != "history"})
    assert _run_row(RunInfo(key=0, campaign="c", run_id="r", path=tmp_path), v)["valid"] == "unknown"
    v["lost-write"]["valid"] = True
    assert _run_row(RunInfo(key=0, campaign="c", run_id="r", path=tmp_path), v)["valid"] is True


# stalls, schedule, bounds -------------------------------------------------------------------


def _stall(consumer: str, partition: int, window: int, phase: str, stall_ms: int, bound_ms: int) -> dict[str, Any]:
    return {
        "kind": "longest-stall",
        "topic": "t",
        "partition": partition,
        "consumer": consumer,
        "window": {"index": window, "kind": "kill", "phase": phase, "start_ns": 2_000_000_000, "end_ns": 9_000_000_000},
        "stall_ms": stall_ms,
        "from_time_ns": 3_000_000_000,
        "to_time_ns": 3_000_000_000 + stall_ms * 10**6,
        "bound_ms": bound_ms,
        "events": [{"index": 3, "f": "fault"}],
    }


def _detail_data() -> ReportData:
    """Run c1/b (plotted) with a scheduled nemesis, stalls reported by progress and
    follower-fetch and a header config with derived bounds; c2/c (not plotted) scripted."""
    from highwater.core.checks.bounds import Settings, header_entries

    d = _data()
    b, c = d.runs[1], d.runs[2]
    b["config"] = {"acks": "all", **header_entries(Settings(bound_slack_ms=1234))}
    c["config"] = {"acks": "all", **header_entries(Settings(bound_slack_ms=999))}
    b["nemesis"] = {
        "kind": "scheduled",
        "schedule": {
            "format": "highwater.schedule/1",
            "seed": 42,
            "faults": [
                {
                    "id": 1,
                    "start": 30.0,
                    "duration": 12.5,
                    "cli": "partition --target broker:2 --peer broker:1",
                    "fault": {"kind": "partition", "target": "broker:2", "peer": "broker:1", "params": {}},
                },
                {"id": 0, "start": 5.0, "duration": 10.0, "cli": "kill --target broker:3"},
            ],
        },
    }
    b["schedule"] = b["nemesis"]["schedule"]
    c["nemesis"] = {
        "kind": "scripted",
        "steps": [
            {"after": 4.0, "fault": "pause --target leader:t/0", "duration": 6.0},
            {"after": 2.0, "fault": "kill --target broker:1", "duration": 3.0},
        ],
    }
    stalls = [
        _stall("consumer-0", 0, 0, "fault", 7_777, 313_500),
        _stall("consumer-1", 1, 0, "after-heal", 41_000, 35_500),
    ]
    b["verdicts"]["progress"].update(counts={"stalls": 0, "longest_stall_ms": 41_000}, examples=list(stalls))
    b["verdicts"]["follower-fetch"].update(counts={"longest_stall_ms": 7_777}, examples=stalls[:1])
    return d


def test_run_section_shows_longest_stalls_with_their_bounds() -> None:
    html = render(_detail_data())
    sec = html[html.index("<details class='timeline' data-run='c1/b'") :]
    sec = sec[: sec.index("</details>")]
    assert "progress 41000 ms, follower-fetch 7777 ms" in sec
    table = sec[sec.index("<table class='compact stalls'>") :]
    # one row for both checks when they report the same stall
    assert re.search(
        r"<td>consumer-0</td><td>t-0</td><td>#0 kill</td><td>fault</td><td>2.0s \u2013 9.0s</td>"
        r"<td>7777</td><td>313500</td><td>progress, follower-fetch</td>",
        table,
    )
    assert re.search(
        r"<tr class='v-false'><td>consumer-1</td><td>t-1</td><td>#0 kill</td><td>after heal</td>"
        r"[^\n]*<td>41000</td><td>35500</td><td>progress</td>",
        table,
    )  # over its bound
    s = summary(_detail_data())
    st = {r["run"]: r["stalls"] for r in s["runs"]}
    assert st["c1/b"]["longest_ms"] == {"progress": 41_000, "follower-fetch": 7_777}
    rows = st["c1/b"]["longest"]
    assert [
        (x["consumer"], x["partition"], x["phase"], x["stall_ms"], x["bound_ms"], x["checks"], x["over_bound"])
        for x in rows
    ] == [
        ("consumer-0", 0, "fault", 7_777, 313_500, ["progress", "follower-fetch"], False),
        ("consumer-1", 1, "after-heal", 41_000, 35_500, ["progress"], True),
    ]
    assert rows[0]["window"] == 0 and rows[0]["fault_kind"] == "kill" and "events" not in rows[0]
    assert st["c1/a"] == {"longest_ms": {}, "longest": []}
    json.dumps(s)


def test_run_section_shows_the_schedule() -> None:
    html = render(_detail_data())
    sec = html[html.index("<details class='timeline' data-run='c1/b'") :]
    sec = sec[: sec.index("</details>")]
    assert "nemesis: <b>scheduled</b>, seed 42, 2 fault(s)" in sec
    sched = sec[sec.index("<table class='compact schedule'>") :]
    assert sched.index("<td>5s</td><td>kill</td><td>broker:3</td><td>10s</td>") < sched.index(
        "<td>30s</td><td>partition</td><td>broker:2 \u2194 broker:1</td><td>12.5s</td>"
    )
    # a run without a plotted timeline still gets its section; scripted steps run one after another
    rest = html[html.index("<details class='run-detail' data-run='c2/c'") :]
    assert "nemesis: <b>scripted</b>, 2 fault(s)" in rest
    assert "<td>4s</td><td>pause</td><td>leader:t/0</td><td>6s</td>" in rest
    assert "<td>12s</td><td>kill</td><td>broker:1</td><td>3s</td>" in rest
    assert "nemesis: <b>not recorded</b>" in html  # c1/a: no nemesis, no schedule


def test_config_table_groups_without_bounds_and_lists_them_apart() -> None:
    d = _detail_data()
    d.runs[0]["config"] = dict(d.runs[1]["config"], bounds={}, consumer_stall_bound_ms=1)
    html = render(d)
    table = html[html.index("<table id='config-table'>") :]
    table = table[: table.index("</table>")]
    assert "formula" not in table and "bound_ms" not in table and "bounds" not in table
    assert "bound_slack_ms" in table  # the settings are configuration and stay
    # c1/b and c2/c differ only in their settings' slack; c1/a only in its bounds: one group with c1/b
    assert table.count("<tr><td>4.3.1</td>") == 1 and "<td>2</td></tr>" in table
    bl = html[html.index("<details id='bounds-list'>") :]
    bl = bl[: bl.index("</details>")]
    assert "3 distinct" in bl and "c1/b:" in bl and "c2/c:" in bl
    assert "consumer_stall_bound 1 ms (given)" in bl  # the flat key the checks would use
    from highwater.core.checks.bounds import Settings, derive

    want = derive(Settings(bound_slack_ms=1234))["progress_bound_ms"]
    assert f"progress_bound {want.ms} ms" in bl and escape(want.formula) in bl  # formula on hover
    sec = html[html.index("<details class='timeline' data-run='c1/b'") :]
    assert f"progress_bound {want.ms} ms" in sec[: sec.index("</details>")]  # and in the run's section


def test_release_view_is_rendered_with_the_change_outlined_and_in_the_summary() -> None:
    from dataclasses import replace

    from highwater.reports.releases import release_view

    runs = [_run("s/a", {}, "3.9.2"), _run("s/b", {"poll-skip": False}, "4.0.2"), _run("s/c", {}, "4.4.0")]
    node = "suites/sweep/test_x.py::test_y[<z>]"
    runs = [{**r, "repro": f"highwater run --client java '{node}'"} for r in runs]
    data = replace(_data(), runs=runs, timelines={}, failures=[], releases=release_view(runs))
    html = render(data, Path("/y/report"))
    # each change with its bisect command, escaped
    listed = html[html.index("id='release-changes-list'") :]
    listed = listed[: listed.index("</ul>")]
    assert (
        "fail on 4.0.2: <code>highwater bisect &#39;suites/sweep/test_x.py::test_y[&lt;z&gt;]&#39; --good 3.9.2 --bad 4.0.2 --client java</code>"
        in listed
    ), listed
    assert "--good 4.4.0 --bad 4.0.2" in listed
    table = html[html.index("id='releases-table'") :]
    table = table[: table.index("</table>")]
    assert re.search(r"class='v-false changed' data-release='4.0.2'", table), table
    assert re.search(r"class='v-true changed' data-release='4.4.0'", table), table  # fixed again
    # the failing run links to its directory relative to the report's, never as a file:// URL
    assert "data-release='3.9.2' data-verdict='pass'" in table and "<a href='../../x'>s/b</a>" in table
    assert "file:" not in html
    s = summary(data)
    assert [(c["release"], c["to"]) for c in s["release_changes"]] == [("4.0.2", "fail"), ("4.4.0", "pass")]
    # one release: the section says how to fill it instead of a table
    assert "id='releases-table'" not in render(_data())


def test_a_run_with_rolls_shows_its_mixed_version_window_as_a_band_of_its_own() -> None:
    from highwater.reports.render_html import mixed_version_window

    windows = [
        {"start_s": 3.0, "end_s": 6.0, "kind": "roll", "targets": "[]"},
        {"start_s": 7.0, "end_s": 27.0, "kind": "kill", "targets": "[]"},
        {"start_s": 29.0, "end_s": 39.0, "kind": "roll", "targets": "[]"},
    ]
    band = mixed_version_window(windows)
    assert band is not None and (band["start_s"], band["end_s"], band["band"]) == (3.0, 39.0, "mixed")
    assert mixed_version_window([w for w in windows if w["kind"] == "kill"]) is None  # no roll, no band
    svg = str(line_chart([0, 40], [("a", [1, 2])], title="t", faults=[band, windows[1]]))
    assert svg.count('class="mixed"') == 1 and svg.count('class="fault"') == 1
    assert "<title>mixed-version window" in svg and "<title>fault: kill" in svg
