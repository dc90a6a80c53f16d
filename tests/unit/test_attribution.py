"""Attribution of violations to the broker or to clients (reports.attribution), and how the
summary, JUnit and the HTML matrix carry it. No Spark: matrix rows are built here the way
``reports.aggregate._matrix`` builds them."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Any

import pytest

from highwater.reports.aggregate import CHECK_ORDER, ReportData
from highwater.reports.attribution import attribute, attribute_check, client_status, describe
from highwater.reports.junit import build_junit
from highwater.reports.render_html import render
from highwater.reports.summary import summary

KP, JAVA, RDK = "kafka-python 3.0.12", "java 4.4.0", "confluent-kafka 2.6.1"


def _row(client: str, check: str = "poll-skip", *, ok: int = 0, bad: int = 0, unk: int = 0, na: int = 0, **kw: Any):
    base = {"suite": "chaos", "scenario": "kill", "kafka_version": "4.3.1"}
    return {
        **base,
        **kw,
        "client": client,
        "check": check,
        "runs": ok + bad + unk + na,
        "passed": ok,
        "failed": bad,
        "unknown": unk,
        "not_applicable": na,
        "allowed": 0,
    }


def _one(rows: list[dict[str, Any]]) -> dict[str, Any]:
    (a,) = attribute(rows).values()
    return a


# the pure function, each outcome ------------------------------------------------------------


def test_status_of_a_client() -> None:
    assert client_status(_row(KP, bad=1, ok=5)) == "failed"
    assert client_status(_row(KP, ok=2, unk=3)) == "ok"
    assert client_status(_row(KP, unk=2)) == "undecided"  # unknown is never ok nor failed
    assert client_status(_row(KP, na=2)) is None  # not applicable: no witness


def test_every_client_failing_the_same_check_is_the_broker() -> None:
    a = _one([_row(KP, bad=1, ok=2), _row(JAVA, bad=3), _row(RDK, bad=1)])
    assert a["verdict"] == "broker" and a["clients"] == []
    assert a["checks"]["poll-skip"]["failed"] == sorted([KP, JAVA, RDK])
    assert describe(a["checks"]["poll-skip"]) == "attributed to: broker"


def test_only_some_clients_failing_is_those_clients() -> None:
    a = _one([_row(KP, bad=2), _row(JAVA, ok=3), _row(RDK, bad=1, ok=1)])
    assert a["verdict"] == "clients" and a["clients"] == [RDK, KP]
    assert describe(a["checks"]["poll-skip"]) == f"attributed to: clients {RDK}, {KP}"
    one = _one([_row(KP, bad=2), _row(JAVA, ok=3)])
    assert describe(one) == f"attributed to: client {KP}"


def test_no_client_failing_is_none() -> None:
    a = _one([_row(KP, ok=2), _row(JAVA, ok=1), _row(KP, "lost-write", ok=2), _row(JAVA, "lost-write", ok=1)])
    assert a["verdict"] == "none" and a["clients"] == [] and a["undecided"] == []


def test_one_client_only_cannot_attribute() -> None:
    a = _one([_row(KP, bad=3), _row(KP, "lost-write", ok=1)])
    assert a["verdict"] == "single-client" and a["labels"] == [KP]


def test_two_versions_of_one_client_are_two_clients() -> None:
    a = _one([_row("java 4.4.0", bad=1), _row("java 3.9.1", ok=1)])
    assert a["verdict"] == "clients" and a["clients"] == ["java 4.4.0"]


def test_unknown_client_leaves_it_undecided_when_it_matters() -> None:
    # a failure and an unknown: the broker if the unknown one failed too, else the client
    a = _one([_row(KP, bad=1), _row(JAVA, unk=2)])
    assert a["verdict"] == "undecided" and a["undecided"] == [JAVA]
    assert describe(a) == f"attribution undecided (could not be judged with {JAVA})"
    # no failure but an unknown: never "none" (the unknown one might have failed)
    b = _one([_row(KP, ok=1), _row(JAVA, unk=1)])
    assert b["verdict"] == "undecided"
    # a failure next to a pass: the failing client is to blame whatever the unknown one did
    c = _one([_row(KP, bad=1), _row(JAVA, ok=1), _row(RDK, unk=1)])
    assert c["verdict"] == "clients" and c["clients"] == [KP] and c["undecided"] == []
    assert c["checks"]["poll-skip"]["undecided"] == [RDK]


# clean look-alikes ----------------------------------------------------------------------------


def test_clients_failing_different_checks_is_not_the_broker() -> None:
    rows = [
        _row(KP, "poll-skip", bad=1),
        _row(JAVA, "poll-skip", ok=1),
        _row(KP, "lost-write", ok=1),
        _row(JAVA, "lost-write", bad=1),
    ]
    a = _one(rows)
    assert a["verdict"] == "clients" and a["clients"] == [JAVA, KP]
    assert a["checks"]["poll-skip"]["clients"] == [KP] and a["checks"]["lost-write"]["clients"] == [JAVA]
    assert all(c["verdict"] != "broker" for c in a["checks"].values())


def test_failures_on_other_versions_or_scenarios_are_not_pooled() -> None:
    rows = [
        _row(KP, bad=1),
        _row(JAVA, ok=1),
        _row(JAVA, bad=1, kafka_version="3.9.1"),
        _row(KP, ok=1, kafka_version="3.9.1"),
        _row(JAVA, bad=1, scenario="pause"),
    ]
    out = attribute(rows)
    assert out[("chaos", "kill", "4.3.1")]["clients"] == [KP]
    assert out[("chaos", "kill", "3.9.1")]["clients"] == [JAVA]
    assert out[("chaos", "pause", "4.3.1")]["verdict"] == "single-client"


def test_allowed_anomaly_counts_as_passed() -> None:
    # policy-allowed anomalies are valid runs in the matrix (passed, allowed>0): not a failure
    a = _one([{**_row(KP, ok=1), "allowed": 1}, _row(JAVA, ok=1)])
    assert a["verdict"] == "none"


def test_not_applicable_client_is_no_witness() -> None:
    # the Java client cannot name the serving replica: follower-fetch judged by the others only
    rows = [_row(KP, "follower-fetch", bad=1), _row(RDK, "follower-fetch", bad=1), _row(JAVA, "follower-fetch", na=2)]
    rows += [_row(c, ok=1) for c in (KP, RDK, JAVA)]
    a = _one(rows)
    assert a["checks"]["follower-fetch"]["verdict"] == "broker"
    assert a["verdict"] == "broker"
    # one witness only, and it passed: nothing to attribute
    b = _one([_row(KP, "follower-fetch", ok=1), _row(JAVA, "follower-fetch", na=1), _row(KP, ok=1), _row(JAVA, ok=1)])
    assert b["checks"]["follower-fetch"]["verdict"] == "single-client" and b["verdict"] == "none"
    # one witness only, and it failed: the group cannot say "none"
    c = _one([_row(KP, "follower-fetch", bad=1), _row(JAVA, "follower-fetch", na=1), _row(KP, ok=1), _row(JAVA, ok=1)])
    assert c["verdict"] == "single-client"
    # not applicable everywhere: the check is not attributed at all
    d = _one([_row(KP, "follower-fetch", na=1), _row(JAVA, "follower-fetch", na=1), _row(KP, ok=1), _row(JAVA, ok=1)])
    assert "follower-fetch" not in d["checks"] and d["verdict"] == "none"


def test_broker_outranks_a_client_blamed_on_another_check() -> None:
    rows = [_row(KP, bad=1), _row(JAVA, bad=1), _row(KP, "lost-write", bad=1), _row(JAVA, "lost-write", ok=1)]
    a = _one(rows)
    assert a["verdict"] == "broker" and a["clients"] == [KP]


@pytest.mark.parametrize(
    ("statuses", "verdict"),
    [
        ({KP: "failed", JAVA: "failed"}, "broker"),
        ({KP: "failed", JAVA: "ok"}, "clients"),
        ({KP: "ok", JAVA: "ok"}, "none"),
        ({KP: "failed", JAVA: None}, "single-client"),
        ({KP: "undecided", JAVA: "undecided"}, "undecided"),
        ({KP: "failed", JAVA: "failed", RDK: "undecided"}, "undecided"),
    ],
)
def test_check_level_table(statuses: dict[str, str | None], verdict: str) -> None:
    assert attribute_check(statuses)["verdict"] == verdict


# carried into summary.json, JUnit and the HTML matrix ----------------------------------------


def _verdict(check: str, valid: Any) -> dict[str, Any]:
    return {"check": check, "valid": valid, "counts": {}, "notes": [], "allowed": False, "examples": []}


def _run(label: str, client: str, bad: dict[str, Any], version: str = "4.3.1") -> dict[str, Any]:
    from highwater.core.checks.verdict import merge_valid

    v = {c: _verdict(c, bad.get(c, True)) for c in CHECK_ORDER}
    camp, rid = label.split("/")
    return {
        "key": 0,
        "label": label,
        "campaign": camp,
        "run_id": rid,
        "suite": "chaos",
        "scenario": "kill",
        "kafka_version": version,
        "client": client,
        "config": {},
        "seed": 1,
        "repro": f"highwater run --seed {rid}",
        "started_at": "2025-01-01T00:00:00Z",
        "schedule": None,
        "racks": {},
        "client_bytes": None,
        "problems": [],
        "path": "/x",
        "valid": merge_valid(x["valid"] for x in v.values()),
        "verdicts": v,
    }


def _matrix(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The matrix rows ``reports.aggregate._matrix`` computes with Spark, in plain Python."""
    cells: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        for c, v in r["verdicts"].items():
            cells[(r["suite"], r["scenario"], r["kafka_version"], r["client"], c)].append(v)
    out = []
    for (s, sc, k, cl, c), vs in cells.items():
        vals = [v["valid"] for v in vs]
        out.append(
            {
                "suite": s,
                "scenario": sc,
                "kafka_version": k,
                "client": cl,
                "check": c,
                "runs": len(vs),
                "passed": vals.count(True),
                "failed": sum(v is False for v in vals),
                "unknown": vals.count("unknown"),
                "not_applicable": vals.count("not-applicable"),
                "allowed": 0,
                "valid": False if False in vals else "unknown" if "unknown" in vals else True,
            }
        )
    return out


def _data() -> ReportData:
    """4.3.1: poll-skip fails with all three clients (broker), lost-write only with
    kafka-python (client); 3.9.1: kafka-python alone (single client)."""
    runs = [
        _run("c/kp", KP, {"poll-skip": False, "lost-write": False}),
        _run("c/java", JAVA, {"poll-skip": False}),
        _run("c/rdk", RDK, {"poll-skip": False}),
        _run("c/kp-old", KP, {"progress": False}, "3.9.1"),
    ]
    m = _matrix(runs)
    cols = sorted({(r["suite"], r["scenario"], r["kafka_version"], r["client"]) for r in runs})
    return ReportData(
        generated_at="now",
        results_dir="/r",
        master="local[1]",
        checks=CHECK_ORDER,
        runs=runs,
        matrix=m,
        columns=[{"suite": s, "scenario": sc, "kafka_version": k, "client": c} for s, sc, k, c in cols],
        failures=[],
        timelines={},
        fetch=[],
        trends=[],
        disagreements=[],
    )


def test_summary_carries_attribution_per_scenario_and_version() -> None:
    s = summary(_data())
    by = {(a["scenario"], a["kafka_version"]): a for a in s["attribution"]}
    new = by[("kill", "4.3.1")]
    assert new["clients"] == sorted([KP, JAVA, RDK])
    assert new["attribution"]["verdict"] == "broker" and new["attribution"]["clients"] == [KP]
    assert new["attribution"]["checks"]["poll-skip"]["verdict"] == "broker"
    assert new["attribution"]["checks"]["lost-write"] == {
        "verdict": "clients",
        "clients": [KP],
        "failed": [KP],
        "passed": sorted([JAVA, RDK]),
        "undecided": [],
    }
    assert by[("kill", "3.9.1")]["attribution"]["verdict"] == "single-client"
    json.dumps(s)


def test_junit_says_where_the_fault_lies() -> None:
    root = build_junit(_data())
    ET.fromstring(ET.tostring(root))
    fails = {
        (tc.get("classname"), tc.get("name")): tc.find("failure").get("message")
        for tc in root.iter("testcase")
        if tc.find("failure") is not None
    }
    java_skip = fails[(f"highwater.chaos.kill[kafka=4.3.1,client={JAVA}]", "poll-skip")]
    assert java_skip.endswith("attributed to: broker")
    kp_lost = fails[(f"highwater.chaos.kill[kafka=4.3.1,client={KP}]", "lost-write")]
    assert kp_lost.endswith(f"attributed to: client {KP}")
    old = fails[(f"highwater.chaos.kill[kafka=3.9.1,client={KP}]", "progress")]
    assert "attributed" not in old  # one client: nothing to attribute in the message
    props = {
        (tc.get("classname"), tc.get("name")): {p.get("name"): p.get("value") for p in tc.iter("property")}
        for tc in root.iter("testcase")
    }
    assert props[(f"highwater.chaos.kill[kafka=4.3.1,client={JAVA}]", "lost-write")] == {
        "attribution": "clients",
        "attributed_clients": KP,
    }
    assert props[(f"highwater.chaos.kill[kafka=3.9.1,client={KP}]", "progress")] == {"attribution": "single-client"}


def test_html_matrix_has_an_attribution_row_per_column_group() -> None:
    html = render(_data())
    row = re.search(r"<tr class='attribution'>(.*?)</tr>", html)
    assert row, "no attribution row"
    cells = re.findall(r"<td colspan='(\d)' class='attr [^']*' data-attribution='([^']*)' data-group='([^']*)'", row[1])
    assert cells == [("1", "single-client", "chaos/kill/3.9.1"), ("3", "broker", "chaos/kill/4.3.1")]
    assert "lost-write: attributed to: client kafka-python 3.0.12" in row[1]
    cell = re.search(r"data-check='poll-skip' data-col='1' data-valid='false' title='([^']*)'", html)
    assert cell and cell[1].endswith("attributed to: broker")


def test_single_client_group_names_no_undecided_clients() -> None:
    a = _one([_row(KP, unk=2), _row(KP, "lost-write", ok=1)])
    assert a["verdict"] == "single-client" and a["undecided"] == []
