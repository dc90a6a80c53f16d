"""The report's table of tiered runs (KIP-405): each tiered run's measures
(``core.checks.tiered_measures``, written by the runner as ``tiered-measures.json``) gathered per
scenario, Kafka release and client: how much of what the consumers read came from the remote
store, how long a poll waited on each tier, and what the remote store held.

Plain Python, not Spark: one small JSON file per tiered run."""

from __future__ import annotations

from typing import Any

from highwater.core.run_dir import TIERED_MEASURES
from highwater.reports.layout import RunInfo


def _most(a: float | None, b: Any) -> float | None:
    """The larger of two figures, either missing (None) leaving the other."""
    if not isinstance(b, (int, float)):
        return a
    return float(b) if a is None else max(a, float(b))


def tiered_rows(runs: list[RunInfo]) -> list[dict[str, Any]]:
    """One row per (suite/scenario, Kafka release, client) with tiered runs: ``runs``; the
    ``records`` the consumers read and the ``remote_records`` among them, ``remote_from_followers``
    of those (summed over the runs);
    per tier the slowest run's ``median_ms`` and ``p95_ms`` poll wait (``remote_wait``,
    ``local_wait``; None: no such poll); and the most ``remote_bytes`` a run's topic left in
    the remote store (None: not measured)."""
    acc: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in runs:
        m = r.measures(TIERED_MEASURES)
        if m is None:
            continue
        row = acc.setdefault(
            (f"{r.suite}/{r.scenario}", r.kafka_version, r.client),
            {
                "runs": 0,
                "records": 0,
                "remote_records": 0,
                "remote_from_followers": 0,
                "remote_wait": {"median_ms": None, "p95_ms": None},
                "local_wait": {"median_ms": None, "p95_ms": None},
                "remote_bytes": None,
            },
        )
        row["runs"] += 1
        row["records"] += int(m.get("records") or 0)
        row["remote_records"] += int(m.get("remote_records") or 0)
        row["remote_from_followers"] += int(m.get("remote_from_followers") or 0)
        waits = m.get("waits") or {}
        for tier in ("remote", "local"):
            got = waits.get(tier) or {}
            for stat in ("median_ms", "p95_ms"):
                row[f"{tier}_wait"][stat] = _most(row[f"{tier}_wait"][stat], got.get(stat))
        row["remote_bytes"] = _most(row["remote_bytes"], m.get("remote_bytes"))
    out = []
    for (scenario, kafka, client), row in sorted(acc.items()):
        share = row["remote_records"] / row["records"] if row["records"] else None
        out.append({"scenario": scenario, "kafka_version": kafka, "client": client, **row, "remote_share": share})
    return out
