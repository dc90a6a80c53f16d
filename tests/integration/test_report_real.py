"""Issue 6 on a real run: a short fault-free run on a real cluster, the Spark report built from
its results, and the page checked in headless Chromium (no console errors, no network requests,
the matrix shows every check valid)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster import Cluster
from highwater.runner import RunSpec, execute_run
from reports.browser_check import check_page, find_chromium


def test_report_from_a_real_run_opens_clean_in_chromium(cluster: Cluster, tmp_path: Path) -> None:
    results = tmp_path / "results"
    result = execute_run(cluster, RunSpec(suite="report", scenario="real-run", campaign="real", results_root=results,
                                          duration=8, partitions=1, rate=50, topic="rpt"))
    assert result.valid is True
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "highwater.cli", "report", str(results), "--out", str(out),
                           "--master", "local[2]"], capture_output=True, text=True, timeout=600)
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
    assert len(cells) >= 13 and all(c["valid"] == "true" for c in cells), cells
    assert page.content["overall"] == "true"
    assert [r["valid"] for r in page.content["runs"]] == ["true"]
