"""The consumer group measures (core.checks.group_measures) and the report's table that puts
the group protocols side by side (reports.groups, the HTML section)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from highwater.core.checks.data import from_events
from highwater.core.checks.group_measures import GroupMeasures, Resume, group_measures
from highwater.core.run_dir import GROUP_MEASURES
from highwater.reports.groups import group_rows
from highwater.reports.layout import RunInfo
from highwater.reports.render_html import render
from tests.synth.txn import Events, header
from tests.unit.test_report_render import _data

MEMBERS = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}


def _fault(e: Events, f: str, kind: str, target: str) -> Events:
    v = {"kind": kind, "targets": [target], "params": {}}
    return e.add("nemesis", "invoke", f, v).add("nemesis", "ok", f, v)


def _measure(
    e: Events, consumers: dict[str, object] | None = MEMBERS, protocol: str = "consumer"
) -> GroupMeasures | None:
    """The measures of ``e`` with one event per millisecond."""
    events = [{**ev, "time_ns": (i + 1) * 1_000_000} for i, ev in enumerate(e.events)]
    h = header(None, consumers)
    h["config"]["group_protocol"] = protocol
    return group_measures(from_events(h, events))


def _frozen_member() -> Events:
    """consumer-1 reads partition 1 twice, is frozen; consumer-0 reads partition 0, then takes
    partition 1 over from the frozen member, re-reading offset 1; consumer-1 thaws."""
    e = Events().poll("consumer-1", [(0, "a0")], partition=1).poll("consumer-1", [(1, "a1")], partition=1)
    e = _fault(e, "fault", "client_freeze", "consumer-1")  # rows 4-5: the window from 5 ms
    e = e.poll("consumer-0", [(0, "b0")], partition=0)  # its ok at 8 ms
    e = e.poll("consumer-0", [(1, "a1"), (2, "a2")], partition=1)  # 10 ms: resumed after 5 ms
    return _fault(e, "heal", "client_freeze", "consumer-1").poll("consumer-1", [(3, "a3")], partition=1)


def test_duplicates_stalls_and_resume_after_a_member_fault() -> None:
    m = _measure(_frozen_member())
    assert m is not None and m.group_protocol == "consumer"
    assert m.duplicates == 1  # partition 1, offset 1: read by both members
    # consumer-1's gap spans its own freeze: left out; consumer-0's one gap is 2 ms
    assert m.longest_stall_ms == {"consumer-1": 2, "consumer-0": 2}
    assert m.resumes == [Resume("client_freeze", "consumer-1", "t", 1, 5)]
    assert m.slowest_resume_ms == 5


def test_a_partition_never_read_again_and_no_group() -> None:
    e = Events().poll("consumer-1", [(0, "a0")], partition=1)
    m = _measure(_fault(e, "fault", "client_kill", "consumer-1"))
    assert m is not None and m.resumes == [Resume("client_kill", "consumer-1", "t", 1, None)]
    assert m.slowest_resume_ms is None
    assert _measure(_frozen_member(), consumers=None) is None


def _run_dir(tmp_path: Path, name: str, measures: GroupMeasures | None, client: str = "java 4.4.0") -> RunInfo:
    d = tmp_path / name
    d.mkdir()
    if measures is not None:
        (d / GROUP_MEASURES).write_text(json.dumps(measures.to_json()))
    # the suite names a scenario run on each protocol after it (one row pair in the report)
    scenario = f"member-faults-{measures.group_protocol}" if measures else "member-faults"
    return RunInfo(0, "c", name, d, suite="groups", scenario=scenario, kafka_version="4.4.0", client=client)


def test_the_report_puts_the_protocols_side_by_side(tmp_path: Path) -> None:
    m = _measure(_frozen_member())
    assert m is not None
    classic = dataclasses.replace(m, group_protocol="classic", duplicates=7, resumes=[])
    never = dataclasses.replace(m, resumes=[Resume("client_kill", "consumer-1", "t", 1, None)])
    runs = [
        _run_dir(tmp_path, "a", m),
        _run_dir(tmp_path, "b", never),
        _run_dir(tmp_path, "c", classic),
        _run_dir(tmp_path, "d", None),  # no group: no row
    ]
    bad = tmp_path / "e"
    bad.mkdir()
    (bad / GROUP_MEASURES).write_text("{oops")
    runs.append(RunInfo(0, "c", "e", bad, suite="groups", scenario="member-faults"))
    rows = group_rows(runs)
    assert {r["scenario"] for r in rows} == {"groups/member-faults"}
    assert [(r["group_protocol"], r["runs"], r["duplicates"], r["slowest_resume_ms"], r["resumes"]) for r in rows] == [
        ("classic", 1, 7, 0, 0),
        ("consumer", 2, 1, None, 2),
    ]
    assert "unreadable" in runs[-1].problems[0]
    html = render(dataclasses.replace(_data(), groups=rows))
    assert "id='groups-table'" in html and "<td>never</td>" in html and "<td>-</td>" in html
    assert "No group runs" in render(_data())


def test_the_report_puts_the_kip848_assignors_side_by_side(tmp_path: Path) -> None:
    """The groups suite's consumer-protocol runs name their server-side assignor (the scenario
    ``member-faults-consumer-range``, the header's ``group_remote_assignor``): one row each,
    beside classic's; a run before the suite named one keeps a row of its own."""
    m = _measure(_frozen_member())
    assert m is not None
    classic = dataclasses.replace(m, group_protocol="classic")
    runs = []
    for name, measures, scenario, assignor in [
        ("u", m, "member-faults-consumer-uniform", "uniform"),
        ("r", dataclasses.replace(m, duplicates=5), "member-faults-consumer-range", "range"),
        ("r2", m, "member-faults-consumer-range", "range"),
        ("c", classic, "member-faults-classic", None),
        ("old", m, "member-faults-consumer", None),
    ]:
        run = _run_dir(tmp_path, name, measures)
        run.scenario = scenario
        run.config = {"group_protocol": measures.group_protocol} | (
            {"group_remote_assignor": assignor} if assignor else {}
        )
        runs.append(run)
    rows = group_rows(runs)
    assert {r["scenario"] for r in rows} == {"groups/member-faults"}
    assert [(r["group_protocol"], r["group_remote_assignor"], r["runs"], r["duplicates"]) for r in rows] == [
        ("classic", "", 1, m.duplicates),
        ("consumer", "", 1, m.duplicates),
        ("consumer", "range", 2, 5),
        ("consumer", "uniform", 1, m.duplicates),
    ]
    html = render(dataclasses.replace(_data(), groups=rows))
    assert "<th>assignor</th>" in html and "<td>range</td>" in html and "<td>uniform</td>" in html
