"""my-app under faults: the auditor stands in for highwater's consumers (one per rack, each
through its rack's proxies) while highwater's producers write unique orders; its audit lines are
judged by highwater's checks. Run with ``pytest`` from this folder (docs/writing-scenarios.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from highwater.scenarios import App, Scenario, Step, Workload, assert_holds

PROJECT = Path(__file__).resolve().parents[1]

AUDITOR = App(
    name="my-app",
    version="0.1.0",
    argv=(sys.executable, "-m", "my_app.auditor"),
    cwd=PROJECT,  # the package is importable from here, installed or not
)

LEADER_KILL_AND_RACK_CUT = Scenario(
    suite="my-app",
    name="leader-kill-and-rack-cut",
    what="partition 0's leader killed, then the clients of rack-a cut off from every broker: "
    "the auditor audits every acknowledged order once, in order, and only committed ones",
    steps=(
        Step(3, "kill --target leader:{topic}/0", 20),
        Step(2, "cut --target clients:rack-a", 15),
    ),
    checks=("lost-write", "uncommitted-read", "poll-skip", "nonmonotonic-poll", "unseen", "progress"),
    workload=Workload(topic="orders", partitions=3, producers=2, rate=50, acks="all", min_insync_replicas=2),
    app=AUDITOR,
)


def test_the_auditor_reads_every_order_through_a_leader_kill_and_a_rack_cut(cluster, highwater_run) -> None:  # type: ignore[no-untyped-def]
    result = highwater_run(cluster, LEADER_KILL_AND_RACK_CUT)
    assert_holds(result, LEADER_KILL_AND_RACK_CUT)
    # the audit lines were the consumers' polls: every rack's auditor read something
    assert all(result.stats["consumers"][f"consumer-{i}"] > 0 for i in range(3)), result.stats
