"""Share groups (KIP-932, queues for Kafka): through member and broker faults, every record is
accepted or archived, none is held by two members at once, none comes back after it was
accepted, none goes past the delivery limit but across a leader change.

Three members of one share group (one per rack) read a 3-partition topic. Each acknowledges
every record it acquires, one by one: most are accepted, a seeded share released (delivered
again) or rejected (archived), and a record released ``group.share.delivery.count.limit`` times
is archived by Kafka (``harness.workload.share``). The group's acquisition lock is 5 s
(``share.record.lock.duration.ms``, a group config the runner sets with the session timeout and
``share.auto.offset.reset=earliest``). The checks are docs/checks.md's "Share groups".

- ``member-coordinator-kill`` (``make test``, on Kafka's Java client): a member killed and
  started again, then the broker coordinating the group killed and restarted.
- ``member-freezes``, ``coordinator-cut-pause`` and ``leader-kills`` (nightly, on Kafka's Java
  client and on franz-go: ``make test`` leaves them out): a member frozen past its lock (its
  records must come back to the others, after the lock and not before) and one frozen for less;
  the coordinator's broker cut off, then frozen; two partition leaders killed in turn.

Share groups are generally available from Kafka 4.2, in Kafka's Java client from 4.2, in
confluent-kafka (librdkafka's share consumer, a "Preview" there) from 2.15 and in franz-go from
1.21; kafka-python, kafkajs, ckjs, Sarama or an older release is skipped with the one line that
says so.
"""

from __future__ import annotations

from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.core.history import read_history
from highwater.core.run_dir import RunDir
from highwater.harness.clients import get_driver
from highwater.harness.clients.share import share_refusal
from highwater.suites.nightly import nightly
from highwater.suites.scenario import PLANS, RUN_OPTIONS, SHARE_LOCK_MS, assert_verdicts, check_verdicts, run_plan

KILLS = PLANS["share-groups/member-coordinator-kill"]
NIGHTLY = [
    PLANS["share-groups/member-freezes"],
    PLANS["share-groups/coordinator-cut-pause"],
    PLANS["share-groups/leader-kills"],
]


def _refused(cluster: Any) -> None:
    driver = get_driver(RUN_OPTIONS.get().client)
    refused = share_refusal(driver.name, driver.version, cluster.kafka_version)
    if refused is not None:
        pytest.skip(refused)


def assert_share_judged(verdicts: list[Verdict]) -> None:
    """The share checks held and judged something: records settled, redeliveries (the releases
    made on purpose) judged for exclusivity, releases delivered again."""
    check_verdicts(verdicts, ("share-delivery", "share-exclusive", "share-release-redelivered"))
    by = {v.check: v for v in verdicts}
    assert by["share-delivery"].counts["settled"] > 0, by["share-delivery"].counts
    assert by["share-exclusive"].counts["redeliveries"] > 0, by["share-exclusive"].counts
    assert by["share-release-redelivered"].counts["released"] > 0, by["share-release-redelivered"].counts


def faults_of(events: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    return [
        (e["value"]["kind"], e["value"]["targets"])
        for e in events
        if e["process"] == "nemesis" and e["f"] == "fault" and e["type"] == "ok"
    ]


@pytest.mark.client_rotation("scenario", ["member-coordinator-kill"], first="java")
@pytest.mark.parametrize("scenario", ["member-coordinator-kill"])
def test_share_group_through_a_member_kill_and_a_coordinator_kill(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, scenario
) -> None:
    _refused(cluster)
    result = run_plan(
        cluster, KILLS, profile=profile, campaign=campaign, results_root=results_root, repro=repro,
        topic="share-kills", partitions=3, consumer_mode="share", share_lock_ms=SHARE_LOCK_MS, settle_timeout=60.0,
    )  # fmt: skip
    assert_verdicts(result, must_hold=KILLS.must_hold)
    assert_share_judged(result.verdicts)
    events = list(read_history(RunDir(result.dir).history))
    kinds = [k for k, _ in faults_of(events)]
    assert kinds == ["client_kill", "kill"], kinds
    killed_at = next(e["time_ns"] for e in events if e["f"] == "fault" and e["value"]["kind"] == "client_kill")
    # Between the fault's invoke and the kill itself the member may still see its last
    # acknowledgements end (an info of the broker's error, as CI saw once): the death is the
    # info that names the gone worker, not necessarily the first info after the invoke.
    after = [e for e in events if e["process"] == "consumer-1" and e["type"] == "info" and e["time_ns"] >= killed_at]
    death = [e for e in after if "WorkerGone" in str(e.get("error"))]
    assert death, after[:3]
    again = [e for e in events if e["process"] == "consumer-1" and e["f"] == "acquire" and e["time_ns"] > killed_at]
    assert any(e["type"] == "ok" for e in again), "the killed member never acquired a record after its restart"


@nightly("the member-and-coordinator kill runs in make test", 75)
@pytest.mark.client_turns("java", "franz-go")  # the rotation's kafka-python and kafkajs have no share consumer
@pytest.mark.parametrize("plan", NIGHTLY, ids=[p.scenario for p in NIGHTLY])
def test_share_group_through_freezes_and_leader_kills(  # type: ignore[no-untyped-def]
    cluster, profile, campaign, results_root, repro, plan
) -> None:
    _refused(cluster)
    result = run_plan(
        cluster, plan, profile=profile, campaign=campaign, results_root=results_root, repro=repro,
        topic=f"share-{plan.scenario}", partitions=3, consumer_mode="share", share_lock_ms=SHARE_LOCK_MS,
        settle_timeout=60.0,
    )  # fmt: skip
    assert_verdicts(result, must_hold=plan.must_hold)
    assert_share_judged(result.verdicts)
    if plan.scenario == "member-freezes":
        assert_frozen_member_s_records_came_back(list(read_history(RunDir(result.dir).history)))


def assert_frozen_member_s_records_came_back(events: list[dict[str, Any]]) -> None:
    """consumer-2, frozen past its lock, reads again after the thaw. What it held when it froze
    (records returned to it, or fetched ahead into its buffer) depends on timing:
    share-exclusive judges that none went to another member before its lock expired, and
    share-delivery that every one was settled by someone."""
    frozen = [e for e in events if e["f"] == "fault" and e["type"] == "ok" and e["value"]["targets"] == ["consumer-2"]]
    thawed = [e for e in events if e["f"] == "heal" and e["type"] == "ok" and e["value"]["targets"] == ["consumer-2"]]
    assert frozen and thawed, "the freeze of consumer-2 is not in the history"
    during = [
        e
        for e in events
        if e["process"] == "consumer-2"
        and e["f"] == "acquire"
        and frozen[0]["time_ns"] + 1_000_000_000 < e["time_ns"] < thawed[0]["time_ns"]
    ]
    assert not during, "consumer-2 acquired records while frozen"
    after = [
        e
        for e in events
        if e["process"] == "consumer-2"
        and e["f"] == "acquire"
        and e["type"] == "ok"
        and e["time_ns"] > thawed[0]["time_ns"]
    ]
    assert after, "consumer-2 never acquired a record after its thaw"
