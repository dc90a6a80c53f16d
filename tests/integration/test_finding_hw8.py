"""HW-8 (docs/findings.md), the broker's part, asked of the brokers themselves: no client library
is involved, only Metadata requests sent to one broker at a time through the client proxies.

A partition leader cut off from every other node (replication and controller links, both ways)
but not from its clients is fenced by the controller after ``broker.session.timeout.ms`` and
replaced. The promise stated here: once its session with the controller has expired, the cut-off
broker no longer tells clients that it leads the partition. Kafka has no leader lease, so the
cut-off broker keeps its last metadata image and keeps naming itself leader at its old epoch for
as long as the cut lasts; a client that asks it (and a consumer fetching from it gets no error,
only no new records) stays with it. That is what makes the rack consumer of the cut-off leader's
rack stall in ``durability/leader-partition`` on every client."""

from __future__ import annotations

import time

import pytest

from highwater.faults.inject import Injector
from highwater.faults.spec import parse_fault
from highwater.harness.local.cluster import Cluster
from highwater.harness.waiting import wait_until

pytestmark = pytest.mark.integration

#: how long the cut-off broker is asked after its session expired and another leader was named
HOLD_S = 5.0
#: slack over broker.session.timeout.ms + broker.heartbeat.interval.ms (a loaded machine)
SLACK_S = 2.0


def _setting_s(cluster: Cluster, broker: int, key: str) -> float:
    value = cluster.observer().describe_broker_config(broker, key)
    assert value is not None, f"broker {broker} does not report {key}"
    return int(value) / 1000


@pytest.mark.xfail(
    strict=True,
    reason="FINDING HW-8 (the broker's): a leader cut off from the controller keeps naming itself leader "
    "to its clients after the controller replaced it (no leader lease)",
)
def test_hw8_a_leader_cut_off_from_the_controller_stops_claiming_leadership(cluster: Cluster) -> None:
    topic = "hw8-zombie"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    before = cluster.partition_state(topic, 0, offsets=False)
    zombie = before.leader
    others = [b for b in cluster.broker_ids if b != zombie]
    session_s = _setting_s(cluster, zombie, "broker.session.timeout.ms") + _setting_s(
        cluster, zombie, "broker.heartbeat.interval.ms"
    )
    # the zombie's own rack: its client proxy of the zombie is the one its rack's consumer uses
    observer = cluster.observer(cluster.rack_of(zombie))
    with Injector(cluster) as nemesis:
        cut_at = time.monotonic()
        fault = nemesis.apply(parse_fault(f"cut --target broker:{zombie}"))
        try:
            leader, epoch = wait_until(
                lambda: next(
                    (
                        named
                        for b in others
                        if (named := observer.leader_named_by(b, topic, 0))[0] not in (zombie, -1)
                        and named[1] > before.leader_epoch
                    ),
                    None,
                ),
                session_s + 30,
                f"a broker other than {zombie} names a new leader of {topic}-0",
            )
            moved_s = time.monotonic() - cut_at
            # from here on the zombie's session has expired and the controller has replaced it
            time.sleep(max(0.0, cut_at + session_s + SLACK_S - time.monotonic()))
            answers: list[tuple[float, tuple[int, int]]] = []
            deadline = time.monotonic() + HOLD_S
            while time.monotonic() < deadline:
                answers.append((time.monotonic() - cut_at, observer.leader_named_by(zombie, topic, 0)))
                time.sleep(0.5)
        finally:
            nemesis.heal(fault)
    cluster.wait_for_isr(topic, 0, lambda s: len(s.isr) == 3, 90, f"{topic}-0 has its full ISR back")
    claims = [(round(t, 1), named) for t, named in answers if named[0] == zombie]
    figures = (
        f"broker {zombie} (leader at epoch {before.leader_epoch}) cut off; {leader} named leader at epoch {epoch} "
        f"{moved_s:.1f} s later (session {session_s:.1f} s); the cut-off broker's answers after "
        f"{session_s + SLACK_S:.1f} s: {[(round(t, 1), named) for t, named in answers]}"
    )
    print(figures)
    assert answers, figures
    assert not claims, f"the cut-off broker still names itself leader: {figures}"
