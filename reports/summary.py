"""``summary.json``: the machine-readable verdict of a report.

Versioned (``format``) so CI scripts can rely on it. A check's validity (per run, and per
matrix cell) is four-valued: ``true`` / ``false`` / ``"unknown"`` (its inputs are in the history
but could not settle it) / ``"not-applicable"`` (the history does not carry its inputs at all,
e.g. no racks in the header or no ``meta`` event: the check did not run; a cell is
not-applicable only when every run of it is). Not-applicable never counts as passing nor as
failing. The validity of a run and of the whole report (``valid``, ``exit_code``) stays
three-valued: not-applicable checks are ignored, and a run where no check applied is
``"unknown"``; a run or cell that could not be judged is never reported as passing.
Per run it lists each check's validity, counts and source (python, spark or both);
examples are left to the HTML report and JUnit. ``fetch`` has one entry per (run, consumer):
polled records by serving replica, the share served in the consumer's own rack (KIP-392) and
the records and bytes that crossed racks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.checks.verdict import NOT_APPLICABLE
from reports.aggregate import ReportData

FORMAT = "highwater.report-summary/1"
EXIT_CODES = {True: 0, False: 1, "unknown": 2}


def exit_code(valid: bool | str) -> int:
    """0 compliant, 1 violations, 2 unknown (the CLI also returns 2 on a harness error)."""
    return EXIT_CODES.get(valid, 2)


def summary(data: ReportData) -> dict[str, Any]:
    runs = data.runs
    return {
        "format": FORMAT,
        "generated_at": data.generated_at,
        "results_dir": data.results_dir,
        "valid": data.valid,
        "exit_code": exit_code(data.valid),
        "totals": {"runs": len(runs),
                   "valid": sum(r["valid"] is True for r in runs),
                   "violated": sum(r["valid"] is False for r in runs),
                   "unknown": sum(r["valid"] == "unknown" for r in runs)},
        "checks": data.checks,
        "matrix": data.matrix,
        "runs": [{
            "run": r["label"], "campaign": r["campaign"], "run_id": r["run_id"],
            "suite": r["suite"], "scenario": r["scenario"], "kafka_version": r["kafka_version"],
            "client": r["client"], "valid": r["valid"], "repro": r["repro"],
            "failed_checks": [c for c, v in r["verdicts"].items() if v["valid"] is False],
            "unknown_checks": [c for c, v in r["verdicts"].items() if v["valid"] == "unknown"],
            "not_applicable_checks": [c for c, v in r["verdicts"].items() if v["valid"] == NOT_APPLICABLE],
            "allowed_checks": [c for c, v in r["verdicts"].items() if v.get("allowed")],
            "problems": r["problems"],
            "checks": {c: {"valid": v["valid"], "allowed": bool(v.get("allowed")),
                           "source": v.get("source"), "counts": v.get("counts", {})}
                       for c, v in r["verdicts"].items()},
        } for r in runs],
        "fetch": data.fetch,
        "trends": [{k: v for k, v in t.items()} for t in data.trends],
        "spark_python_disagreements": data.disagreements,
        "errors": data.errors,
    }


def write_summary(data: ReportData, path: Path) -> dict[str, Any]:
    s = summary(data)
    path.write_text(json.dumps(s, indent=2, default=str) + "\n", encoding="utf-8")
    return s
