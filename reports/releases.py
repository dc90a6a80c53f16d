"""The release × scenario view: each scenario's verdict on every Kafka release a campaign ran it
on (a sweep), with the releases where the verdict changes marked. Pure: built from the report's
run rows, no Spark.

A cell is the verdict of all the runs of one (suite/scenario, client) on one release: ``fail``
when any run was violated, else ``unknown`` when any could not be settled (unknown never counts
as a pass), else ``pass``. A cell is ``changed`` when its verdict differs from that of the
nearest earlier release in the same row whose verdict is known; an unknown cell is no evidence
either way, so it is never a change nor the side a change is measured from.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from harness.checks.verdict import NOT_APPLICABLE

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"


def release_key(version: str) -> tuple[int, ...]:
    """Numeric order (3.10.0 after 3.9.2); a version that is not dotted numbers sorts last."""
    try:
        return tuple(int(x) for x in version.split("."))
    except ValueError:
        return (1 << 30,)


def cell_verdict(valids: Iterable[Any]) -> str:
    vs = [v for v in valids if v != NOT_APPLICABLE]
    if any(v is False for v in vs):
        return FAIL
    if not vs or any(v is not True for v in vs):
        return UNKNOWN
    return PASS


def release_view(runs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"releases": [...], "rows": [...]}``; rows only where a campaign spans two releases or
    more (else the matrix says it all). Each row: suite, scenario, client and per release a cell
    ``{"verdict", "runs", "passed", "failed", "failing": [run labels and paths], "changed"}``."""
    by_row: dict[tuple[str, str, str], dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        by_row[(str(r["suite"]), str(r["scenario"]), str(r["client"]))][str(r["kafka_version"])].append(r)
    releases = sorted({rel for cells in by_row.values() for rel in cells}, key=release_key)
    if len(releases) < 2:
        return {"releases": releases, "rows": []}
    rows = []
    for (suite, scenario, client), cells in sorted(by_row.items()):
        row: dict[str, Any] = {"suite": suite, "scenario": scenario, "client": client, "cells": {}}
        previous: str | None = None
        for rel in releases:
            if rel not in cells:
                continue
            group = cells[rel]
            verdict = cell_verdict(r["valid"] for r in group)
            failing = [{"label": r["label"], "path": r.get("path")} for r in group if r["valid"] is False]
            changed = previous is not None and UNKNOWN not in (previous, verdict) and verdict != previous
            row["cells"][rel] = {
                "verdict": verdict,
                "runs": len(group),
                "passed": sum(r["valid"] is True for r in group),
                "failed": len(failing),
                "failing": failing,
                "changed": changed,
            }
            if verdict != UNKNOWN:
                previous = verdict
        rows.append(row)
    return {"releases": releases, "rows": rows}


def changes(view: Mapping[str, Any]) -> list[dict[str, str]]:
    """Each verdict change: the row, the release where it changed, and from/to."""
    out = []
    for row in view["rows"]:
        last: str | None = None
        for rel in view["releases"]:
            cell = row["cells"].get(rel)
            if cell is None:
                continue
            if cell["changed"] and last is not None:
                out.append(
                    {
                        "suite": row["suite"],
                        "scenario": row["scenario"],
                        "client": row["client"],
                        "release": rel,
                        "from": last,
                        "to": cell["verdict"],
                    }
                )
            if cell["verdict"] != UNKNOWN:
                last = cell["verdict"]
    return out
