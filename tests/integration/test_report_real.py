"""Issue 6 on a real run: a short fault-free run on a real cluster, the Spark report built from
its results, and the page checked in headless Chromium (no console errors, no network requests,
the matrix shows every check valid)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from highwater.core.history import read_history
from highwater.harness.local.cluster import Cluster
from highwater.reports.browser_check import check_page, find_chromium
from highwater.run_spec import RunSpec
from highwater.runner import execute_run
from highwater.suites.nightly import nightly

from .kafka_util import NOT_APPLICABLE_WITHOUT_TXN_COMMITS_OR_IDEMPOTENCE


@nightly("make test builds the report of its own runs, and test_report_e2e opens a report in headless Chromium", 50)
def test_report_from_a_real_run_opens_clean_in_chromium(cluster: Cluster, tmp_path: Path) -> None:
    results = tmp_path / "results"
    result = execute_run(
        cluster,
        RunSpec(
            suite="report",
            scenario="real-run",
            campaign="real",
            results_root=results,
            duration=8,
            partitions=1,
            rate=50,
            topic="rpt",
        ),
    )
    assert result.valid is True
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "highwater.cli", "report", str(results), "--out", str(out), "--master", "local[2]"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["valid"] is True
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (make install installs it as root)")
    page = check_page(out / "report.html", chromium)
    assert page.loaded and page.console_errors == []
    assert page.requests == [(out / "report.html").resolve().as_uri()], "the report must load nothing else"
    cells = page.content["cells"]
    # every check valid, except exactly those this history gives no input to (not applicable)
    assert len(cells) >= 13 and {c["check"]: c["valid"] for c in cells if c["valid"] != "true"} == dict.fromkeys(
        NOT_APPLICABLE_WITHOUT_TXN_COMMITS_OR_IDEMPOTENCE, "not-applicable"
    ), cells
    assert page.content["overall"] == "true"
    assert [r["valid"] for r in page.content["runs"]] == ["true"]


@nightly("the manifest's round trip is unit-tested; make test builds the report of its own scheduled runs", 45)
def test_a_real_scheduled_runs_manifest_reaches_the_report(cluster: Cluster, tmp_path: Path) -> None:
    """A short seeded run on the real cluster; its run.json read back through the report path
    (``reports.layout`` and ``reports.aggregate.build``): the schedule and the start time survive
    (the start time is the manifest's, not the file's mtime)."""
    from highwater.core.manifest import RunManifest
    from highwater.faults.schedule import Schedule, ScheduleConfig
    from highwater.nemesis import scheduled
    from highwater.reports.aggregate import Options, build
    from highwater.reports.layout import load_runs
    from highwater.reports.spark_session import Progress

    results = tmp_path / "results"
    config = ScheduleConfig(
        length=6,
        duration=(2.0, 3.0),
        gap=(1.0, 2.0),
        mix=(("latency", 1.0),),
        latency_ms=(20.0, 60.0),
        partitions=("sched/0",),
    )
    schedule = Schedule.generate(cluster.topo, 11, config)
    assert schedule.faults, "the schedule has faults"
    before = time.time()
    result = execute_run(
        cluster,
        RunSpec(
            suite="report",
            scenario="scheduled",
            campaign="real",
            results_root=results,
            duration=10,
            partitions=1,
            rate=50,
            topic="sched",
            seed=11,
        ),
        scheduled(schedule),
    )
    after = time.time()
    manifest = RunManifest.read(result.dir)
    assert not manifest.legacy and manifest.seed == 11 and manifest.schedule == schedule.to_dict()
    assert manifest.nemesis.kind == "scheduled" and manifest.ended_at is not None
    started = datetime.fromisoformat(manifest.started_at.replace("Z", "+00:00")).timestamp()  # type: ignore[union-attr]
    assert int(before) <= started <= after
    os.utime(result.dir / "run.json", (0, 0))  # a start time taken from the mtime would now be 1970
    for f in ("history.jsonl", "verdict.json"):
        os.utime(result.dir / f, (0, 0))
    [info] = load_runs(results)
    assert info.schedule == schedule.to_dict() and info.started_at == manifest.started_at
    assert info.seed == 11 and info.racks == manifest.racks.to_json()
    assert info.client_bytes == manifest.client_bytes
    data = build(results, Options(master="local[2]", cache_dir=tmp_path / "cache"), Progress(enabled=False))
    [row] = data.runs
    assert row["schedule"] == schedule.to_dict() and row["started_at"] == manifest.started_at
    assert row["nemesis"]["kind"] == "scheduled" and row["seed"] == 11
    assert data.trends[0]["started_at"] == manifest.started_at
    fault_events = [e for e in read_history(result.dir / "history.jsonl") if e["f"] == "fault" and e["type"] == "ok"]
    assert [e["value"]["kind"] for e in fault_events] == [f.spec.kind.value for f in schedule.faults]
