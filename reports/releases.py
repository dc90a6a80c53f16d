"""The release × scenario view: each scenario's verdict on every Kafka release a campaign ran it
on (a sweep), with the releases where the verdict changes marked. Pure: built from the report's
run rows, no Spark.

A cell is the verdict of all the runs of one (suite/scenario, client) on one release: ``fail``
when any run was violated, else ``unknown`` when any could not be settled (unknown never counts
as a pass), else ``pass``. A cell is ``changed`` when its verdict differs from that of the
nearest earlier release in the same row whose verdict is known; an unknown cell is no evidence
either way, so it is never a change nor the side a change is measured from.

Each change comes with the ``highwater bisect`` command that finds the release where it
happened among those the sweep did not run (``bisect_command``, from a run's repro command):
good is the release that passed, bad the one that failed, whichever is newer.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from highwater.core.checks.verdict import NOT_APPLICABLE

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
        repro = next((str(r["repro"]) for rel in releases for r in cells.get(rel, []) if r.get("repro")), None)
        row: dict[str, Any] = {"suite": suite, "scenario": scenario, "client": client, "cells": {}, "repro": repro}
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


def changes(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each verdict change: the row, the release where it changed (``release``), the nearest
    earlier release with a known verdict (``from_release``), from/to, and the ``bisect``
    command for it (None when no run of the row recorded a repro command)."""
    out = []
    for row in view["rows"]:
        last: tuple[str, str] | None = None  # (release, verdict)
        for rel in view["releases"]:
            cell = row["cells"].get(rel)
            if cell is None:
                continue
            if cell["changed"] and last is not None:
                good, bad = (last[0], rel) if last[1] == PASS else (rel, last[0])
                out.append(
                    {
                        "suite": row["suite"],
                        "scenario": row["scenario"],
                        "client": row["client"],
                        "release": rel,
                        "from_release": last[0],
                        "from": last[1],
                        "to": cell["verdict"],
                        "bisect": bisect_command(row.get("repro"), good, bad),
                    }
                )
            if cell["verdict"] != UNKNOWN:
                last = (rel, cell["verdict"])
    return out


def bisect_command(repro: str | None, good: str, bad: str) -> str | None:
    """``highwater bisect NODE --good GOOD --bad BAD`` with the client, profile and backend of a
    run's repro command (``highwater run ... 'suites/...::test[param]'``); None without one, or
    when it names no test."""
    if not repro:
        return None
    try:
        words = shlex.split(repro)
    except ValueError:
        return None
    node = next((w for w in reversed(words) if "::" in w or w.endswith(".py")), None)
    if node is None:
        return None
    kept: list[str] = []
    for flag in ("--client", "--profile", "--backend"):
        if flag in words[:-1]:
            kept += [flag, words[words.index(flag) + 1]]
    return shlex.join(["highwater", "bisect", node, "--good", good, "--bad", bad, *kept])
