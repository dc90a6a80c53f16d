"""The report's table of power-loss cases: each power-loss run's measures
(``core.checks.power_measures``, written by the runner as ``power-measures.json``) gathered per
scenario, Kafka release, client, eligible leader replicas and unclean election, next to what the
policy table (``core.policy``) says Kafka promises in that case.

Plain Python, not Spark: one small JSON file per power-loss run."""

from __future__ import annotations

from typing import Any

from highwater.core.policy import allowed
from highwater.core.run_dir import POWER_MEASURES
from highwater.reports.layout import RunInfo


def _worst(a: int | None, b: int | None) -> int | None:
    """The larger count; unknown (None) wins, so a run that could not be judged shows."""
    return None if a is None or b is None else max(a, b)


def power_rows(runs: list[RunInfo]) -> list[dict[str, Any]]:
    """One row per (suite/scenario, Kafka release, client, ELR level, unclean election) with
    power-loss runs: ``runs``; ``replicas`` lost at once; ``promised`` (the policy allows no lost
    write there); the most ``acked_lost`` and ``served_vanished`` of one run (and ``lost_bytes``: what the disks
    dropped, every file of the node counted, preallocated indexes too, so it grows with the
    topics a cluster holds: in the JSON, not the table) (None:
    a run could not judge); ``longest_unavailable_ms`` (None: a partition never took a write again
    in some run)."""
    acc: dict[tuple[str, str, str, str, bool], dict[str, Any]] = {}
    never: set[tuple[str, str, str, str, bool]] = set()
    for r in runs:
        m = r.measures(POWER_MEASURES)
        if m is None:
            continue
        elr = m.get("eligible_leader_replicas")
        unclean = bool(m.get("unclean_leader_election", False))
        key = (f"{r.suite}/{r.scenario}", r.kafka_version, r.client, "-" if elr is None else str(elr), unclean)
        config = {
            "acks": "all",
            "min_insync_replicas": m.get("min_insync_replicas", 1),
            "power_loss_replicas": m.get("power_loss_replicas", 0),
            "unclean_leader_election": unclean,
        }
        row = acc.setdefault(
            key,
            {
                "runs": 0,
                "replicas": int(m.get("power_loss_replicas", 0)),
                "promised": allowed("lost-write", config) is None,
                "acked_lost": 0,
                "served_vanished": 0,
                "lost_bytes": 0,
                "longest_unavailable_ms": 0,
            },
        )
        row["runs"] += 1
        row["acked_lost"] = _worst(row["acked_lost"], m.get("acked_lost"))
        row["served_vanished"] = _worst(row["served_vanished"], m.get("served_vanished"))
        row["lost_bytes"] = max(row["lost_bytes"], int(m.get("lost_bytes", 0)))
        for u in m.get("unavailable") or []:
            if u.get("unavailable_ms") is None:
                never.add(key)
            else:
                row["longest_unavailable_ms"] = max(row["longest_unavailable_ms"], int(u["unavailable_ms"]))
    out = []
    for key in sorted(acc):
        scenario, kafka, client, elr, unclean = key
        row = {"scenario": scenario, "kafka_version": kafka, "client": client, "elr": elr, "unclean": unclean}
        row.update(acc[key])
        if key in never:
            row["longest_unavailable_ms"] = None
        out.append(row)
    return out
