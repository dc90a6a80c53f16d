"""Exactly-once copying through every client's driver, on a real cluster (KIP-98, KIP-447).

A read_committed consumer of a group reads topic A; the same client's transactional producer
copies the records to topic B and sends the consumer's offsets into the transaction
(``send_offsets_to_transaction`` with ``ConsumerDriver.group_metadata()``). A committed
transaction commits the group's offsets with its copies; an aborted one leaves the group's
offsets where they were and its copies invisible to read_committed readers (they are in the
log: a read_uncommitted reader sees them). The group's offsets are read with an admin request
(kafka-python's admin client, as an observer: not the client under test) and, through the
client under test, by where a new member of the group starts."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient

from highwater.harness.clients import (
    TRANSACTIONAL_CLIENTS,
    ClientDriver,
    ConsumerDriver,
    ConsumerSettings,
    Outcome,
    PolledRecord,
    PositionChange,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    TransactionalClient,
    TransactionalProducerDriver,
    client_names,
    get_driver,
)
from highwater.harness.local.cluster import Cluster
from highwater.harness.waiting import wait_until
from highwater.suites.nightly import cases, nightly

from .kafka_util import produce_through_driver

pytestmark = pytest.mark.integration

COUNT = 10  # records in topic A: 0-4 copied by a committed transaction, 5-9 by an aborted one
TIMEOUT_S = 20.0  # for each transactional call


class _Quiet:
    def on_position_change(self, change: PositionChange) -> None:
        return None


def _poll_until(
    consumer: ConsumerDriver, done: Callable[[list[PolledRecord]], bool], timeout_s: float, what: str
) -> list[PolledRecord]:
    records: list[PolledRecord] = []
    deadline = time.monotonic() + timeout_s
    while not done(records):
        assert time.monotonic() < deadline, (
            f"{what}: only {[(r.offset, r.value) for r in records]} in {timeout_s:.0f} s"
        )
        polled = consumer.poll(500)
        assert isinstance(polled, list), polled
        records.extend(polled)
    return records


def _values(driver: ClientDriver, cluster: Cluster, topic: str, isolation: str, last: str, name: str) -> list[str]:
    """Every value of ``topic``'s partition 0 up to and including ``last``, as a reader with
    ``isolation`` sees them."""
    reader = driver.consumer(
        ConsumerSettings(cluster.bootstrap(), f"{name}-{isolation}", isolation_level=isolation), _Quiet()
    )
    try:
        tp = TopicPartition(topic, 0)
        reader.assign([tp])
        reader.seek_to_beginning(tp)
        records = _poll_until(reader, lambda rs: any(r.value == last for r in rs), 30, f"{isolation} read of {topic}")
        return [str(r.value) for r in records]
    finally:
        reader.close()


def _copy(producer: TransactionalProducerDriver, topic: str, records: list[PolledRecord]) -> None:
    """Send a copy of each record to ``topic`` partition 0; every send acknowledged."""
    outcomes: list[SendOutcome] = []
    for r in records:
        producer.send(topic, 0, f"copy-{r.value}", outcomes.append)
    producer.flush(TIMEOUT_S)
    got = wait_until(lambda: outcomes if len(outcomes) == len(records) else None, 15, "the copies' outcomes")
    assert [o.outcome for o in got] == [Outcome.OK] * len(records), got


def _group_offsets(cluster: Cluster, group: str) -> dict[TopicPartition, int]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), client_id=f"{group}-admin")
    try:
        found = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {TopicPartition(tp.topic, tp.partition): int(om.offset) for tp, om in found.items() if om.offset >= 0}


#: make test's budget: the newest client's transactional driver is judged in the nightly slices,
#: every other client's in make test (as is the newest one's driver contract)
NEWEST = {"sarama": nightly("Sarama's transactional driver; its driver contract stays in make test", 15)}


@pytest.mark.parametrize("client", cases([c for c in client_names() if c in TRANSACTIONAL_CLIENTS], NEWEST))
def test_offsets_sent_to_a_transaction_commit_and_abort_with_it(cluster: Cluster, client: str) -> None:
    started = time.monotonic()
    driver = get_driver(client)  # not at collection: making the Java driver may build its worker
    assert isinstance(driver, TransactionalClient), f"{client} has no transactional producer"
    source, sink, group = f"eos-a-{client}", f"eos-b-{client}", f"eos-{client}"
    produce_through_driver(driver, cluster, source, COUNT, f"eos-{client}-source")  # r-0 .. r-9
    cluster.create_topic(sink, 1, 3)
    tp = TopicPartition(source, 0)

    consumer = driver.consumer(
        ConsumerSettings(
            cluster.bootstrap(), f"eos-{client}-consumer", group_id=group, isolation_level="read_committed"
        ),
        _Quiet(),
    )
    producer = driver.transactional_producer(
        ProducerSettings(cluster.bootstrap(), f"eos-{client}-txn", transactional_id=f"eos-{client}")
    )
    try:
        consumer.subscribe([source])
        read = _poll_until(consumer, lambda rs: len(rs) >= COUNT, 40, f"{client} group read of {source}")
        assert [(r.offset, r.value) for r in read] == [(i, f"r-{i}") for i in range(COUNT)]
        metadata = consumer.group_metadata()
        producer.init_transactions(TIMEOUT_S)

        # committed: copies of r-0..r-4, the group's offset 5 with them
        producer.begin_transaction()
        _copy(producer, sink, read[:5])
        producer.send_offsets_to_transaction({tp: 5}, metadata, TIMEOUT_S)
        producer.commit_transaction(TIMEOUT_S)
        # the offsets are applied when the coordinator writes the commit marker to the group's
        # partition, which may follow the commit's answer
        wait_until(lambda: _group_offsets(cluster, group) == {tp: 5}, 15, f"{group}'s committed offset 5")

        # aborted: copies of r-5..r-9 and the offset 10 sent, then the abort
        producer.begin_transaction()
        _copy(producer, sink, read[5:])
        producer.send_offsets_to_transaction({tp: 10}, metadata, TIMEOUT_S)
        producer.abort_transaction(TIMEOUT_S)

        # A third transaction can begin writing only once the abort's markers are all written
        # (the coordinator answers CONCURRENT_TRANSACTIONS until then), the group's partition
        # included: after its commit, what the abort did to the group's offsets is final.
        producer.begin_transaction()
        _copy(producer, sink, [PolledRecord(source, 0, -1, "end")])
        producer.commit_transaction(TIMEOUT_S)
    finally:
        producer.close(10)
        consumer.close()

    assert _group_offsets(cluster, group) == {tp: 5}, "the aborted transaction's offsets were committed"
    committed = _values(driver, cluster, sink, "read_committed", "copy-end", f"eos-{client}-reader")
    assert committed == [f"copy-r-{i}" for i in range(5)] + ["copy-end"]
    everything = _values(driver, cluster, sink, "read_uncommitted", "copy-end", f"eos-{client}-reader")
    assert everything == [f"copy-r-{i}" for i in range(COUNT)] + ["copy-end"], "the aborted copies are in the log"

    # through the client under test: a new member of the group starts at the committed offset
    fresh = driver.consumer(
        ConsumerSettings(cluster.bootstrap(), f"eos-{client}-fresh", group_id=group, isolation_level="read_committed"),
        _Quiet(),
    )
    try:
        fresh.subscribe([source])
        resumed = _poll_until(fresh, lambda rs: len(rs) > 0, 40, f"{client} new member of {group}")
    finally:
        fresh.close()
    assert resumed[0].offset == 5, resumed
    print(f"{client}: {time.monotonic() - started:.1f} s")


#: clients whose library may give up on the commit itself before the deadline, and why (a raise
#: then comes from the library, not from the deadline, and cannot be retried)
GIVES_UP_FIRST = {
    "kafkajs": "kafkajs's retries of EndTxn on a refused connection (3, from 300 ms, doubling) end in "
    "1.5-2.5 s, and a failed commit leaves its transaction COMMITTING, which nothing can retry",
}


@pytest.mark.parametrize(
    "client, timeout_s",
    # Java's own bound is max.block.ms (5 s): a longer timeout is kept by calling again
    [
        pytest.param(c, 2.0, marks=NEWEST[c]) if c in NEWEST else (c, 2.0)
        for c in client_names()
        if c in TRANSACTIONAL_CLIENTS
    ]
    + [("java", 7.0)],
)
def test_a_commit_behind_an_unreachable_coordinator_keeps_its_deadline(
    cluster: Cluster, client: str, timeout_s: float
) -> None:
    """The transaction coordinator cut off from the producer (every client link to it) after
    the transaction's records were written: commit_transaction raises once its timeout has
    passed, not before and not long after (Java's own bound would be max.block.ms, 5 s here;
    kafka-python's none)."""
    driver = get_driver(client)
    assert isinstance(driver, TransactionalClient)
    topic = tid = f"deadline-{client}-{timeout_s:.0f}s"
    cluster.create_topic(topic, 1, 3)
    producer = driver.transactional_producer(ProducerSettings(cluster.bootstrap(), tid, transactional_id=tid))
    try:
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        _copy(producer, topic, [PolledRecord(topic, 0, -1, "r")])
        coordinator = cluster.observer().coordinator("txn", tid)
        links = [cluster.client_link(rack, coordinator) for rack in cluster.topo.client_racks]
        cluster.set_links_enabled(links, False)
        try:
            started = time.monotonic()
            with pytest.raises(Exception) as raised:  # noqa: B017, PT011 - each library has its own error
                producer.commit_transaction(timeout_s)
            took = time.monotonic() - started
        finally:
            cluster.set_links_enabled(links, True)
    finally:
        producer.close(5)
    print(f"{client}: the commit raised after {took:.1f} s: {raised.value}")
    assert took < timeout_s + 2.0, took
    if client in GIVES_UP_FIRST and "did not complete within" not in str(raised.value):
        return  # the library's own answer, before the deadline: GIVES_UP_FIRST says why
    assert timeout_s - 0.1 <= took, took
