"""Consumer groups: through a member's death and its return, every partition keeps being read.

A group of three members (one per rack) reads a 3-partition topic, committing after each poll.
consumer-1 is killed (SIGKILL: its session expires, the group rebalances without it) and started
again (it rejoins: a second rebalance). With the eager protocol every member gives up all its
partitions at each rebalance and may get some of them back. The promise judged here is the
group's delivery, at least once: every acknowledged record that the final log holds was returned
by some member by the end of the run (``unread_by_group``). Together with the group's safety
checks (``rebalance-skip``, ``commit-ahead``, ``commit-regression``) and the durability ones.

kafka-python 3.0.0 .. 3.0.8 break it: a member that kept a partition across a rebalance never
fetched it again when a rebalance listener was set (kafka-python #3131, fixed in 3.0.9); the
scenario is what ``tests/integration/test_client_bisect.py`` bisects kafka-python over.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from harness.history import read_history
from suites.scenario import PLANS, assert_verdicts, run_plan

PLAN = PLANS["groups/member-restart"]


def unread_by_group(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The acknowledged records of the final log that no consumer returned: a send ``ok`` at
    ``(topic, partition, offset)`` whose value the final read (its most complete replica) holds
    at that offset, and that no ``poll`` returned. Returns ``{"acked": n, "unread": [{"topic",
    "partition", "offset", "value"}, ...]}``; a history without a final read of a partition is
    not judged there (``unjudged`` lists such partitions). Records the final log lacks are
    lost-write's; a record read at another offset is inconsistent-offsets'."""
    acked: dict[tuple[str, int, int], Any] = {}
    polled: set[tuple[str, int, int]] = set()
    final: dict[tuple[str, int], dict[int, Any]] = {}
    for e in events:
        if e.get("type") != "ok":
            continue
        value = e.get("value") or {}
        if e["f"] == "send" and value.get("offset") is not None:
            acked[(value["topic"], int(value["partition"]), int(value["offset"]))] = value["value"]
        elif e["f"] == "poll":
            polled.update((r["topic"], int(r["partition"]), int(r["offset"])) for r in value.get("records") or ())
        elif e["f"] == "final-read":
            tp = (value["topic"], int(value["partition"]))
            records = {int(o): v for o, v in value.get("records") or ()}
            if len(records) >= len(final.get(tp, {})):
                final[tp] = records
    unread, unjudged, count = [], set(), 0
    for (topic, partition, offset), v in sorted(acked.items()):
        log = final.get((topic, partition))
        if log is None:
            unjudged.add(f"{topic}-{partition}")
            continue
        if log.get(offset) != v:
            continue
        count += 1
        if (topic, partition, offset) not in polled:
            unread.append({"topic": topic, "partition": partition, "offset": offset, "value": v})
    return {"acked": count, "unread": unread, "unjudged": sorted(unjudged)}


def assert_group_read_everything(events: Iterable[Mapping[str, Any]]) -> None:
    """The scenario's own assertion: the group returned every acknowledged record of the final
    log, on a history that acknowledged some and judged every partition."""
    found = unread_by_group(events)
    assert not found["unjudged"], f"no final read of {found['unjudged']}"
    assert found["acked"] > 0, "nothing acknowledged: nothing to judge"
    unread = found["unread"]
    by_partition: dict[int, int] = {}
    for r in unread:
        by_partition[r["partition"]] = by_partition.get(r["partition"], 0) + 1
    assert not unread, (
        f"the group never returned {len(unread)} of {found['acked']} acknowledged records "
        f"(per partition: {by_partition}); first: {json.dumps(unread[:3])}"
    )


def test_every_partition_is_read_through_a_member_restart(cluster, profile, campaign, results_root, repro) -> None:  # type: ignore[no-untyped-def]
    result = run_plan(
        cluster,
        PLAN,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic="groups-restart",
        partitions=3,
        consumer_mode="subscribe",
        session_timeout_ms=6000,
        settle_timeout=10.0,
    )
    assert_verdicts(result, must_hold=PLAN.must_hold)
    assert_group_read_everything(read_history(result.dir / "history.jsonl"))
