"""The share consumer over the worker protocol (KIP-932), on a real cluster: every kind of
acknowledgement does what Kafka promises, the library reports each outcome, and the group's
state says where it stands (its lag: nothing is owed). The contract the share-groups suite and its checks rely on.

Six records; a member acquires them all (delivery count 1), accepts four, releases r-3 and
rejects r-4: r-3 comes back with delivery count 2 and is accepted; r-4 and the accepted ones
never come back; the group's lag ends at 0."""

from __future__ import annotations

import time

import pytest

from highwater.harness.clients import get_driver
from highwater.harness.clients.share import (
    AckKind,
    AckOutcome,
    AcquiredRecord,
    ShareGroupSettings,
    ShareSettings,
    WorkerShareConsumer,
    share_refusal,
    share_start_offsets,
)
from highwater.harness.clients.worker import WorkerDriver
from highwater.harness.local.cluster import Cluster
from highwater.harness.workload.share import state_driver
from highwater.suites.nightly import cases, nightly

from .kafka_util import produce_through_driver

pytestmark = pytest.mark.integration

COUNT = 6
#: every client with a share consumer (``share.SHARE_CLIENTS``)
CLIENTS = ["java", "confluent-kafka", "franz-go"]
#: the findings' cases on franz-go, nightly: make test runs them on the other two, and franz-go's
#: contract test in make test covers its worker's outcomes
FINDINGS_NIGHTLY = {"franz-go": nightly("make test runs this finding's case on Java and confluent-kafka", 12)}


def _driver(client: str, cluster: Cluster) -> WorkerDriver:
    """The share client's driver, or the test skipped with the one line that says why not."""
    driver = get_driver(client)
    refused = share_refusal(driver.name, driver.version, cluster.kafka_version)
    if refused is not None:
        pytest.skip(refused)
    assert isinstance(driver, WorkerDriver)
    return driver


def _acquire(consumer: WorkerShareConsumer, until: int, timeout_s: float) -> list[AcquiredRecord]:
    got: list[AcquiredRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < until:
        assert time.monotonic() < deadline, f"only {[(r.offset, r.delivery_count) for r in got]} in {timeout_s:.0f} s"
        got += consumer.poll(500)
    return got


@pytest.mark.parametrize("client", CLIENTS)
def test_share_consumer_accepts_releases_and_rejects_as_kafka_promises(cluster: Cluster, client: str) -> None:
    driver = _driver(client, cluster)
    topic, group = f"share-driver-{driver.name}", f"share-driver-group-{driver.name}"
    produce_through_driver(driver, cluster, topic, COUNT, "share-driver-producer")
    cluster.observer().set_group_config(group, ShareGroupSettings(group, topic).group_configs())
    outcomes: list[AckOutcome] = []
    settings = ShareSettings(cluster.bootstrap(), "share-driver-member", group)
    consumer = WorkerShareConsumer(driver, settings, outcomes.append)
    try:
        consumer.subscribe([topic])
        first = _acquire(consumer, COUNT, 40)
        assert [(r.offset, r.value, r.delivery_count) for r in first] == [(i, f"r-{i}", 1) for i in range(COUNT)]
        kinds = {3: AckKind.RELEASE, 4: AckKind.REJECT}
        consumer.acknowledge([(r, kinds.get(r.offset, AckKind.ACCEPT)) for r in first])
        consumer.commit(15)
        acked = sorted(o for out in outcomes for o in out.offsets)
        assert acked == list(range(COUNT)) and {out.outcome for out in outcomes} == {"ok"}, outcomes

        again = _acquire(consumer, 1, 20)  # the released record, delivered a second time
        assert [(r.offset, r.delivery_count) for r in again] == [(3, 2)]
        consumer.acknowledge([(again[0], AckKind.ACCEPT)])
        consumer.commit(15)
        assert outcomes[-1].offsets == (3,) and outcomes[-1].outcome == "ok", outcomes

        deadline = time.monotonic() + 3  # nothing else comes back: accepted and rejected are settled
        while time.monotonic() < deadline:
            assert consumer.poll(500) == []
    finally:
        consumer.close()
    # Kafka writes the group's start offset down with the acknowledgements but moves it past the
    # last ones only at a later write (measured on 4.4.0: it stayed at 3, the released record,
    # after all six were settled), while the lag counts what is still owed, exactly
    (state,) = share_start_offsets(state_driver(driver), settings, topic, 1)
    assert state.partition == 0 and 3 <= state.start_offset <= COUNT and state.lag == 0, state


@pytest.mark.xfail(
    strict=True,
    reason="HW-18 (docs/findings.md): Kafka answers an acknowledgement of a record another member "
    "has since settled with success, and applies nothing (every share client: the broker's answer)",
)
@pytest.mark.parametrize("client", cases(CLIENTS, FINDINGS_NIGHTLY))
def test_finding_hw18_a_late_acknowledgement_is_refused(cluster: Cluster, client: str) -> None:
    """A member acquires a record and sits on it past its 2 s lock; another member gets it (delivery
    count 2) and accepts it. The first member's accept then comes too late: the record is no
    longer its. The client's documentation has the commit callback report an
    InvalidRecordStateException then; Kafka answers with success."""
    driver = _driver(client, cluster)
    topic, group = f"share-late-ack-{driver.name}", f"share-late-ack-group-{driver.name}"
    produce_through_driver(driver, cluster, topic, 1, "share-late-ack-producer")
    cluster.observer().set_group_config(group, ShareGroupSettings(group, topic, lock_ms=2000).group_configs())
    late: list[AckOutcome] = []
    on_time: list[AckOutcome] = []
    first = WorkerShareConsumer(driver, ShareSettings(cluster.bootstrap(), "share-late-ack-0", group), late.append)
    second = WorkerShareConsumer(driver, ShareSettings(cluster.bootstrap(), "share-late-ack-1", group), on_time.append)
    try:
        first.subscribe([topic])
        (held,) = _acquire(first, 1, 40)
        assert held.delivery_count == 1
        second.subscribe([topic])
        (again,) = _acquire(second, 1, 30)  # after the first member's lock expired
        assert (again.offset, again.delivery_count) == (0, 2)
        second.acknowledge([(again, AckKind.ACCEPT)])
        second.commit(15)
        assert [o.outcome for o in on_time] == ["ok"], on_time
        first.acknowledge([(held, AckKind.ACCEPT)])
        first.commit(15)
        assert late and late[-1].offsets == (0,), late
        assert late[-1].outcome == "fail", f"the late accept was answered {late[-1]}"
    finally:
        first.close()
        second.close()


HW21 = pytest.mark.xfail(
    strict=True,
    reason="HW-21 (docs/findings.md): Kafka's Java share consumer reports acknowledgements whose "
    "request was cut off by a lost connection as UnknownServerException, a server error that never happened",
)


@pytest.mark.parametrize("client", cases(CLIENTS, {"java": HW21, **FINDINGS_NIGHTLY}))
def test_finding_hw21_a_lost_connection_is_not_a_server_error(cluster: Cluster, client: str) -> None:
    """A member acquires a record; its connection to the partition's leader then stops carrying
    anything and is closed a second later (Toxiproxy's ``timeout`` toxic), and the member accepts
    the record and commits. The acknowledgement cannot have reached the broker: the callback
    must say so (a disconnection, or the ``NotLeaderOrFollowerException`` Kafka uses when it
    notices the lost session). The Java client 4.4.0 reports ``UnknownServerException``: "the
    server experienced an unexpected error when processing the request"."""
    driver = _driver(client, cluster)
    topic, group = f"share-cut-ack-{driver.name}", f"share-cut-ack-group-{driver.name}"
    produce_through_driver(driver, cluster, topic, 1, "share-cut-ack-producer")
    cluster.observer().set_group_config(group, ShareGroupSettings(group, topic).group_configs())
    outcomes: list[AckOutcome] = []
    consumer = WorkerShareConsumer(
        driver, ShareSettings(cluster.bootstrap(), "share-cut-ack-0", group), outcomes.append
    )
    link = cluster.client_link(cluster.default_client_rack, cluster.partition_state(topic, 0, offsets=False).leader)
    cut = False
    try:
        consumer.subscribe([topic])
        (held,) = _acquire(consumer, 1, 40)
        cluster.add_toxic(
            link, name="hw21", type="timeout", stream="upstream", toxicity=1.0, attributes={"timeout": 1000}
        )
        cut = True
        consumer.acknowledge([(held, AckKind.ACCEPT)])
        consumer.commit(15)
        assert outcomes and outcomes[-1].offsets == (0,), outcomes
        error = outcomes[-1].error
        assert error is not None, "an acknowledgement that never reached the broker was reported applied"
        assert not error.startswith("UnknownServerException"), f"the lost connection was reported as {error}"
    finally:
        if cut:
            cluster.remove_toxic(link, "hw21")
        consumer.close()
