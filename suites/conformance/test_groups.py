"""Consumer groups: through a member's death and its return, every partition keeps being read.

A group of three members (one per rack) reads a 3-partition topic, committing after each poll.
consumer-1 is killed (SIGKILL: its session expires, the group rebalances without it) and started
again (it rejoins: a second rebalance). With the eager protocol every member gives up all its
partitions at each rebalance and may get some of them back. The promise judged here is the
group's delivery, at least once: every acknowledged record that the final log holds was returned
by some member by the end of the run (the ``group-delivery`` check). Together with the group's
safety checks (``rebalance-skip``, ``commit-ahead``, ``commit-regression``) and the durability
ones.

kafka-python 3.0.0 .. 3.0.8 break it: a member that kept a partition across a rebalance never
fetched it again when a rebalance listener was set (kafka-python #3131, fixed in 3.0.9); the
scenario is what ``tests/integration/test_client_bisect.py`` bisects kafka-python over.
"""

from __future__ import annotations

from harness.checks.verdict import Verdict
from suites.scenario import PLANS, assert_verdicts, check_verdicts, run_plan

PLAN = PLANS["groups/member-restart"]


def assert_group_delivered(verdicts: list[Verdict]) -> None:
    """The scenario's own assertion: group-delivery holds, and judged something: records were
    owed and every partition had a final read."""
    check_verdicts(verdicts, ("group-delivery",))
    delivery = next(v for v in verdicts if v.check == "group-delivery")
    assert delivery.counts["owed"] > 0, "nothing acknowledged: nothing to judge"
    assert delivery.counts["unjudged"] == 0, f"partitions without a final read: {delivery.counts}"


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
    assert_group_delivered(result.verdicts)
