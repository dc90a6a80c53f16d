"""End to end: generated results -> ``highwater report`` (Spark, local[2]) -> files, checked
against the Python checks and in headless Chromium.

One Spark run for the whole module (the machine has 2 cores shared with Kafka tests): the
fixture builds the store and the report once, the tests read what it wrote.
"""

from __future__ import annotations

import json
import os
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from highwater.cli import main as highwater
from highwater.core.checks import run_all_checks
from highwater.reports.browser_check import check_page, find_chromium
from highwater.suites.nightly import nightly
from tests.synth.reports import RunSpec, demo_specs, write_results

RANDOM_SPECS = [
    RunSpec("nightly-3", "rnd-skip-edges", 11, ("skip", "edges"), writes=150, partitions=3),
    RunSpec("nightly-3", "rnd-lost-edges", 12, ("lost", "edges"), writes=90),
    RunSpec("nightly-3", "rnd-skip-nofinal", 13, ("skip", "no-final"), writes=100, partitions=3),
    RunSpec("nightly-3", "rnd-clean", 14, (), writes=200, partitions=1),
]
CRASHED = RunSpec("nightly-3", "crashed", 15, ("skip",), writes=100)


def _spark_children() -> list[str]:
    """Command lines of our own child processes that run Spark's JVM."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and "SparkSubmit" in cmd:
            found.append(cmd)
    return found


def write_judged_run(d: Path, history: Any, run: dict[str, Any]) -> None:
    """A run folder ``d`` as a run leaves it: ``history`` (a builder with ``write``), the Python
    checks' ``verdict.json`` of it, and ``run.json``."""
    from highwater.core.checks import overall

    d.mkdir(parents=True)
    verdicts = run_all_checks(history.write(d / "history.jsonl"))
    (d / "verdict.json").write_text(
        json.dumps({"valid": overall(verdicts), "verdicts": [v.to_json() for v in verdicts]}, default=str)
    )
    (d / "run.json").write_text(json.dumps(run))


def write_position_changes_run(root: Path) -> None:
    """Position changes in the middle of a chain: a change of all partitions (after which the
    next record is not judged), a seek to a named offset (judged from there), and a skip
    right after each kind of predecessor (record, seek). The last polls have records whose
    serving replica is unknown (all, or one of three). A second partition was never written:
    its final reads are empty."""
    from tests.synth.histories import HistoryBuilder

    b = HistoryBuilder({"acks": "all"})
    for i in range(30):
        b.send("producer-0", "t", 0, f"v{i}", offset=i)
    recs = lambda lo, hi: [("t", 0, o, f"v{o}") for o in range(lo, hi)]  # noqa: E731
    b.assign("consumer-0", "t", 0, 0)
    b.poll("consumer-0", recs(0, 5), replica=1)
    b.poll("consumer-0", recs(7, 9), replica=1)  # skip of 5, 6 after a record
    b.assign("consumer-0", None, None, None, reason="rebalance")  # all partitions, no offset
    b.poll("consumer-0", recs(12, 14), replica=1)  # not judged: after a wildcard change
    b.poll("consumer-0", recs(14, 16), replica=1)
    b.seek("consumer-0", "t", 0, 18)
    b.poll("consumer-0", recs(20, 22), replica=1)  # skip of 18, 19 after a seek
    b.poll("consumer-0", recs(22, 24) + recs(25, 26), replica=1)  # skip of 24 inside a poll
    b.poll("consumer-0", recs(26, 27), replica=None)  # serving replica unknown
    mixed = b.poll("consumer-0", recs(27, 30), replica=2)
    mixed["value"]["records"][1]["replica"] = None  # one record's replica unknown
    for rep in (1, 2, 3):
        b.final("t", 0, rep, 30, [(o, f"v{o}") for o in range(30)])
        b.final("t", 1, rep, 0, [])  # a partition nobody wrote to: empty final reads
    write_judged_run(root / "nightly-3" / "position-changes", b, {"suite": "chaos", "scenario": "position-changes"})


def write_transactions_run(root: Path) -> None:
    """A transactional run (``tests/unit/test_txn_registry.history``): an aborted transaction's
    acked write is not owed to the log, a committed one's write is owed even though its own send
    ended ``info`` (and here it is missing: one lost write). Spark's lost-write must agree."""
    from tests.unit.test_txn_registry import history

    write_judged_run(
        root / "nightly-3" / "transactions",
        history(commit_lost=True),
        {"suite": "transactions", "scenario": "txn-lost"},
    )


def write_retention_run(root: Path, retention_ms: int, name: str) -> None:
    """Ten acknowledged writes of which retention took the first four (the final reads start at
    offset 4), and one (offset 7) missing from the log: on a topic with a finite retention the
    four are expired, not unjudged, in Spark's lost-write as in Python's; with ``retention_ms``
    -1 (kept for good) they are unjudged. The missing one is lost either way."""
    from tests.synth.histories import HistoryBuilder

    b = HistoryBuilder({"acks": "all", "retention_ms": retention_ms})
    for i in range(10):
        b.send("producer-0", "t", 0, f"v{i}", offset=i)
    for rep in (1, 2, 3):
        b.final("t", 0, rep, 10, [(o, f"v{o}") for o in range(4, 10) if o != 7], log_start=4)
    write_judged_run(
        root / "nightly-3" / name, b, {"suite": "tiered", "scenario": name, "config": {"retention_ms": retention_ms}}
    )


def write_store_loss_run(root: Path) -> None:
    """A tiered run whose remote store lost offsets 0-3 (the final reads name them ``unreadable``)
    and whose consumer, having read 0 and 1, jumped to 6: past two unreadable offsets and two
    committed ones. Spark's poll-skip counts the four as Python's does."""
    from tests.synth.histories import HistoryBuilder

    b = HistoryBuilder({"acks": "all"})
    for i in range(10):
        b.send("producer-0", "t", 0, f"v{i}", offset=i)
    b.assign("consumer-0", "t", 0, 0)
    b.poll("consumer-0", [("t", 0, o, f"v{o}") for o in range(2)], replica=1)
    b.poll("consumer-0", [("t", 0, o, f"v{o}") for o in range(6, 10)], replica=1)
    for rep in (1, 2, 3):
        final = b.final("t", 0, rep, 10, [(o, f"v{o}") for o in range(4, 10)])
        final["value"]["unreadable"] = [[0, 4, "UnknownError"]]
    write_judged_run(root / "nightly-3" / "store-loss", b, {"suite": "tiered", "scenario": "store-loss"})


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("results")
    write_results(root, [*demo_specs(), *RANDOM_SPECS])
    write_position_changes_run(root)
    write_transactions_run(root)
    write_retention_run(root, 60_000, "retention-finite")
    write_retention_run(root, -1, "retention-forever")
    write_store_loss_run(root)
    write_results(root, [CRASHED], with_verdict=False)
    hist = root / CRASHED.campaign / CRASHED.run_id / "history.jsonl"
    text = hist.read_bytes()
    hist.write_bytes(text[: len(text) - 40])  # a crash mid-line: the last event is cut
    out = root / "out"
    code = highwater(["report", str(root), "--out", str(out), "--master", "local[2]", "--quiet"])
    return {
        "root": root,
        "out": out,
        "code": code,
        "children": _spark_children(),
        "summary": json.loads((out / "summary.json").read_text()),
    }


def test_exit_code_and_summary(report: dict[str, Any]) -> None:
    s = report["summary"]
    assert report["code"] == 1 and s["exit_code"] == 1 and s["valid"] is False
    assert s["format"] == "highwater.report-summary/2"
    runs = {r["run"]: r for r in s["runs"]}
    assert runs["nightly-1/run-clean"]["valid"] is True
    assert runs["nightly-1/run-skip"]["failed_checks"] == ["poll-skip"]
    assert "lost-write" in runs["nightly-1/run-lost"]["failed_checks"]
    assert runs["nightly-2/run-nofinal"]["valid"] == "unknown"
    moved = runs["nightly-3/position-changes"]
    assert "poll-skip" in moved["failed_checks"]
    skip = moved["checks"]["poll-skip"]
    assert skip["counts"]["skips"] == 3 and skip["counts"]["skipped_offsets"] == 5
    assert skip["counts"]["steps_unjudged"] == 0  # the step after the wildcard change is not a jump
    txn = runs["nightly-3/transactions"]["checks"]["lost-write"]
    assert (txn["valid"], txn["counts"]["lost"], txn["counts"]["acknowledged"]) == (False, 1, 3)
    assert "spark" in txn["source"]  # Spark owes the log only committed transactions' writes too
    crashed = runs["nightly-3/crashed"]
    assert crashed["valid"] is False  # Spark alone found the skip; the rest is unknown
    assert crashed["checks"]["poll-skip"]["source"] == "spark"
    assert crashed["checks"]["progress"]["valid"] == "unknown"
    assert any("unreadable line" in p for p in crashed["problems"])


def test_no_spark_jvm_outlives_the_report(report: dict[str, Any]) -> None:
    assert report["children"] == []


def test_spark_checks_agree_with_python_checks(report: dict[str, Any]) -> None:
    s = report["summary"]
    assert s["spark_python_disagreements"] == []
    judged = 0
    for r in s["runs"]:
        hist = report["root"] / r["campaign"] / r["run_id"] / "history.jsonl"
        python = {v.check: v for v in run_all_checks(hist)}
        for check in ("poll-skip", "lost-write"):
            got = r["checks"][check]
            assert "spark" in got["source"], (r["run"], check)
            assert got["valid"] == python[check].valid, (r["run"], check)
            for k, n in got["counts"].items():
                assert python[check].counts[k] == n, (r["run"], check, k)
            judged += 1
    assert judged == 2 * len(s["runs"]) >= 20
    lost = {
        r["scenario"]: r["checks"]["lost-write"]["counts"] for r in s["runs"] if r["scenario"].startswith("retention")
    }
    assert (lost["retention-finite"]["expired"], lost["retention-finite"]["acknowledged_unjudged"]) == (4, 0)
    assert (lost["retention-forever"]["expired"], lost["retention-forever"]["acknowledged_unjudged"]) == (0, 4)
    assert lost["retention-finite"]["lost"] == lost["retention-forever"]["lost"] == 1
    skip = next(r["checks"]["poll-skip"] for r in s["runs"] if r["scenario"] == "store-loss")
    assert (skip["valid"], skip["counts"]["skips"], skip["counts"]["skipped_offsets"]) == (False, 1, 4)


def test_fetch_counts_match_the_histories(report: dict[str, Any]) -> None:
    """Records per serving replica of every consumer, as the report counted them in Spark,
    equal a plain count over each history's polls."""
    from highwater.core.history import read_history

    s = report["summary"]
    got = {
        (f["run"], f["consumer"]): {
            **f["by_replica"],
            **({"None": f["unknown_replica"]} if f["unknown_replica"] else {}),
        }
        for f in s["fetch"]
    }
    want: dict[tuple[str, str], dict[str, int]] = {}
    for r in s["runs"]:
        hist = report["root"] / r["campaign"] / r["run_id"] / "history.jsonl"
        for e in read_history(hist, lenient=True):
            if e["f"] == "poll" and e["type"] == "ok":
                for rec in e["value"]["records"]:
                    c = want.setdefault((r["run"], e["process"]), {})
                    c[str(rec.get("replica"))] = c.get(str(rec.get("replica")), 0) + 1
    assert got == {k: v for k, v in want.items() if v}
    assert sum(sum(v.values()) for v in got.values()) > 1000


def test_timelines_add_up_to_the_histories(report: dict[str, Any]) -> None:
    """Per-run timelines (the Spark series behind the plots, as the module's report computed
    them with ``reports.timelines`` and kept in its run cache; no second Spark session) against
    plain counts over the same histories: acks, send errors and polled records summed over the
    buckets, the ISR shrinking to 2 during the broker kill and back to 3, one kill window, lag
    per consumer."""
    from highwater.core.history import read_history
    from highwater.reports.layout import ensure_parquet, load_runs
    from highwater.reports.run_cache import RunCache
    from highwater.reports.timelines import Timeline

    root = report["root"]
    runs = [r for r in load_runs(root) if r.run_id in ("run-clean", "run-edges")]
    assert len(runs) == 2
    list(ensure_parquet(runs, root / ".parquet-cache"))  # the report's Parquet (reconverted if a history changed)
    cache = RunCache(root / ".parquet-cache" / "runs")
    for r in runs:
        kept = cache.get(r, "timeline")
        assert kept is not None, f"the report kept no timeline of {r.run_id} (for its current history)"
        tl = Timeline(**kept)
        acks = errs = polled = 0
        for e in read_history(root / r.campaign / r.run_id / "history.jsonl"):
            if e["f"] == "send":
                acks += e["type"] == "ok"
                errs += e["type"] in ("fail", "info")
            elif e["f"] == "poll" and e["type"] == "ok":
                polled += len(e["value"]["records"])
        assert round(sum(tl.acks) * tl.width_s) == acks > 0, r.run_id
        assert round(sum(tl.send_errors) * tl.width_s) == errs, r.run_id
        assert round(sum(tl.polled) * tl.width_s) == polled > 0, r.run_id
        isr = [x for x in tl.partitions["t-0"]["isr"] if x is not None]
        assert min(isr) == 2 and isr[-1] == 3, (r.run_id, isr)
        assert [(w["kind"], w.get("unhealed", False)) for w in tl.faults] == [("kill", False)]
        assert {k.split()[0] for k in tl.lag} == {"consumer-0", "consumer-1"}
    assert _spark_children() == []


def _verdict_view(summary: dict[str, Any]) -> dict[str, Any]:
    return {
        r["run"]: (r["valid"], {c: (v["valid"], v["counts"]) for c, v in r["checks"].items()}) for r in summary["runs"]
    }


@nightly("the report's run cache has its unit tests in make test", 30)
def test_second_report_reuses_cached_runs_and_agrees(
    report: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A later report over the same store takes each unchanged run's Spark results from the
    cache and recomputes only a run whose history changed; the verdicts are the same."""
    root = report["root"]
    touched = root / "nightly-1" / "run-clean" / "history.jsonl"
    later = time.time() + 5
    os.utime(touched, (later, later))  # the JSONL is reconverted: its Parquet is new
    capsys.readouterr()
    code = highwater(["report", str(root), "--out", str(root / "out2"), "--master", "local[2]"])
    err = capsys.readouterr().err
    m = re.search(r"Spark results of (\d+)/(\d+) run\(s\) reused", err)
    assert m, err
    assert int(m.group(1)) == int(m.group(2)) - 1 and int(m.group(2)) == len(report["summary"]["runs"])
    assert "poll-skip, lost-write and fetch shares over 1 histories" in err
    again = json.loads((root / "out2" / "summary.json").read_text())
    assert code == report["code"]
    assert again["spark_python_disagreements"] == []
    assert _verdict_view(again) == _verdict_view(report["summary"])
    assert _spark_children() == []


def test_junit_has_one_case_per_check_and_scenario(report: dict[str, Any]) -> None:
    root = ET.parse(report["out"] / "junit.xml").getroot()
    s = report["summary"]
    cols = {(m["suite"], m["scenario"], m["kafka_version"], m["client"]) for m in s["matrix"]}
    cases = root.findall(".//testcase")
    assert len(cases) == len(cols) * len(s["checks"])
    skip = [c for c in cases if c.get("name") == "poll-skip" and c.find("failure") is not None]
    assert skip, "poll-skip failures are reported"
    text = skip[0].find("failure").text or ""
    assert "repro: highwater campaign" in text and "example:" in text
    assert int(root.get("failures", "0")) >= 3 and int(root.get("errors", "0")) >= 1


@pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)")
def test_report_in_headless_chromium(report: dict[str, Any]) -> None:
    page = check_page(report["out"] / "report.html")
    assert page.loaded
    assert page.console_errors == []
    assert page.requests == [(report["out"] / "report.html").resolve().as_uri()]
    c = page.content
    assert c["overall"] == "false"
    expected = {(m["check"], m["valid"]) for m in report["summary"]["matrix"]}
    shown = {
        (x["check"], {"true": True, "false": False, "not-applicable": "not-applicable"}.get(x["valid"], "unknown"))
        for x in c["cells"]
    }
    assert shown == expected
    assert {"poll-skip", "lost-write"} <= {x["check"] for x in c["cells"] if x["valid"] == "false"}
    assert any(x["valid"] == "unknown" for x in c["cells"])
    assert c["charts"] >= 10 and c["failures"] >= 3
    assert {r["run"]: r["valid"] for r in c["runs"]}["nightly-1/run-clean"] == "true"


@pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)")
def test_browser_check_sees_errors_and_requests(tmp_path: Path) -> None:
    """Negative control: the checker itself must notice a console error and a fetch."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body>"
        "<img src='http://127.0.0.1:9/x.png'><script>console.error('boom')</script>"
        "</body></html>"
    )
    page = check_page(bad, settle_s=0.5)
    assert any("boom" in e for e in page.console_errors)
    assert "http://127.0.0.1:9/x.png" in page.requests
