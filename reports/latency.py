"""The report's latency table: how long a record took from its acknowledgement to a consumer,
served by the partition's leader or by an in-sync follower (KIP-392), per Kafka release and
client, from every run's ``follower-latency`` verdict (``core.checks.latency``: the medians of
quiet records, outside faults, and the bound that judges the follower's extra delay).

Plain Python over the report's run rows, no Spark: one verdict per run. A run whose check judged
nothing (fewer quiet records of a kind than its minimum) counts under ``not_judged``; the medians
shown are the medians over the judged runs of each run's median."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from highwater.reports.releases import release_key

CHECK = "follower-latency"


def _ms(us: Any) -> float | None:
    return round(us / 1000, 1) if isinstance(us, (int, float)) and not isinstance(us, bool) else None


def _median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 1) if xs else None


def latency_rows(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (Kafka release, client) whose runs carry a follower-latency verdict, in release
    order: ``runs``, ``judged``, ``violated``, ``not_judged``; the median over judged runs of the
    leader-served and follower-served medians and of the follower's extra (ms), and the largest
    bound (ms); ``records`` leader and follower records measured in all."""
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for r in runs:
        v = (r.get("verdicts") or {}).get(CHECK)
        if not v or v.get("valid") == "not-applicable":
            continue
        c = v.get("counts") or {}
        row = acc.setdefault(
            (str(r["kafka_version"]), str(r["client"])),
            {
                "runs": 0,
                "violated": 0,
                "not_judged": 0,
                "leader": [],
                "follower": [],
                "extra": [],
                "bound": [],
                "records": [0, 0],
            },
        )
        row["runs"] += 1
        row["violated"] += v.get("valid") is False
        leader, follower, extra = (
            _ms(c.get("leader_median_us")),
            _ms(c.get("follower_median_us")),
            _ms(c.get("extra_us")),
        )
        if leader is None or follower is None or extra is None:
            row["not_judged"] += 1
            continue
        row["leader"].append(leader)
        row["follower"].append(follower)
        row["extra"].append(extra)
        if (b := _ms(c.get("bound_us"))) is not None:
            row["bound"].append(b)
        row["records"][0] += int(c.get("leader_records") or 0)
        row["records"][1] += int(c.get("follower_records") or 0)
    out = []
    for (release, client), row in sorted(acc.items(), key=lambda kv: (release_key(kv[0][0]), kv[0][1])):
        out.append(
            {
                "kafka_version": release,
                "client": client,
                "runs": row["runs"],
                "judged": len(row["extra"]),
                "violated": row["violated"],
                "not_judged": row["not_judged"],
                "leader_median_ms": _median(row["leader"]),
                "follower_median_ms": _median(row["follower"]),
                "extra_median_ms": _median(row["extra"]),
                "bound_ms": max(row["bound"], default=None),
                "leader_records": row["records"][0],
                "follower_records": row["records"][1],
            }
        )
    return out
