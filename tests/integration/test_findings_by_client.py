"""Findings re-judged on every client: is a behaviour one library's, or the broker's?

Each test states a promise once and runs it through each client's driver (``harness.clients``),
so the docs/findings.md can say "kafka-python only", "shared" or "a broker behaviour" from a
run rather than from reading code. A client that breaks the promise is a strict xfail naming
its finding; a client that keeps it passes."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kafka import KafkaAdminClient

from highwater.faults.inject import Injector
from highwater.faults.spec import parse_fault
from highwater.harness.clients import (
    ConsumerSettings,
    Outcome,
    PositionChange,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    TransactionalClient,
    client_names,
    get_driver,
)
from highwater.harness.lifecycle import accepts_connection
from highwater.harness.local.cluster import Cluster
from highwater.harness.toxiproxy import ByteCounters
from highwater.harness.waiting import WaitTimeout, wait_until, wait_until_steady
from highwater.suites.nightly import nightly

from .kafka_util import BackgroundProducer, produce

pytestmark = pytest.mark.integration

#: client -> the finding it shows for HW-1 (absent: the client keeps the promise)
HW1_BREAKS = {
    "kafka-python": "HW-1: kafka-python keeps the preferred replica after failed fetches until metadata_max_age_ms",
    # librdkafka 2.16: 0 of 200 records in 20 s, the follower's connection refused throughout
    "confluent-kafka": "HW-1 (shared): librdkafka keeps fetching from the unreachable preferred replica",
    # Kafka's Java client 4.4.0: 0 of 200 in 20 s, no poll error (CI, 2026-11-25): every client
    # fails, so the fault lies with the broker, whose leader keeps naming the unreachable follower
    "java": "HW-1 (shared, so the broker's): the Java client reads nothing either",
}


#: clients these findings are not yet judged on: kafkajs (five tests of ~20 s each would pass
#: make test's budget; its own findings are HW-12, HW-13 and HW-17 in the suites, and HW-14, HW-15
#: and HW-16 here), franz-go, Sarama and ckjs (their workers are new: the contract test and the
#: suites come first)
NOT_YET = frozenset({"kafkajs", "franz-go", "sarama", "ckjs"})


def every_client(
    breaks: dict[str, str], also: frozenset[str] = frozenset(), nightly: Mapping[str, pytest.MarkDecorator] = {}
) -> list[Any]:
    """Every client (but those ``NOT_YET`` judged, unless in ``also``) as a test parameter;
    those in ``breaks`` a strict xfail naming their finding, those in ``nightly`` its mark."""
    return [
        pytest.param(
            c,
            marks=[
                *([pytest.mark.xfail(strict=True, reason=f"FINDING {breaks[c]}")] if c in breaks else []),
                *([nightly[c]] if c in nightly else []),
            ],
        )
        for c in client_names()
        if c not in NOT_YET or c in also
    ]


#: a finding's run on a client that keeps or breaks it the same way as another run here
SAME_AS = "another client's run in make test shows the finding the same way"


class _Quiet:
    def on_position_change(self, change: PositionChange) -> None:
        return None


def _consume(client: str, cluster: Cluster, topic: str, count: int, rack: str, timeout: float) -> int:
    """Records of partition 0 read from the start through ``rack``'s proxies, with
    ``client.rack`` set to ``rack`` (KIP-392)."""
    consumer = get_driver(client).consumer(
        ConsumerSettings(bootstrap=cluster.bootstrap(rack), client_id=f"hw1-{client}", client_rack=rack), _Quiet()
    )
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)  # an explicit start: no group coordinator is asked
        seen = 0
        deadline = time.monotonic() + timeout
        errors: list[str] = []
        while seen < count and time.monotonic() < deadline:
            try:
                polled = consumer.poll(500)
            except Exception as exc:  # noqa: BLE001 - a failed poll is retried, as the workloads do
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            seen += len(polled) if isinstance(polled, list) else 0
        if seen < count:
            print(f"{client}: {seen} of {count} read; poll errors: {errors[:3]}")
        return seen
    finally:
        consumer.close()


@pytest.mark.parametrize(
    "client",
    every_client(
        HW1_BREAKS,
        nightly={
            "kafka-python": nightly(
                "test_faults.py's rack client cut off from its follower shows HW-1 in make test", 25
            ),
            "confluent-kafka": nightly(SAME_AS + " (HW-1 is the broker's: every client)", 25),
            "java": nightly(SAME_AS + " (HW-1 is the broker's: kafka-python shows it)", 25),
        },
    ),
)
def test_hw1_consumer_cut_off_from_its_preferred_replica_keeps_reading(cluster: Cluster, client: str) -> None:
    """KIP-392 liveness: a consumer whose rack's in-sync follower is unreachable (only that
    client link is cut) still reads everything within 20 s: the leader keeps naming the follower
    (it is in the ISR), so the client must fall back to the leader after failed fetches."""
    topic = f"hw1-{client}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    produce(cluster, topic, 200)
    state = cluster.partition_state(topic, 0)
    follower = next(r for r in state.replicas if r != state.leader)
    rack = cluster.rack_of(follower)
    link = cluster.client_link(rack, follower)
    cluster.set_links_enabled([link], False)
    try:
        assert not accepts_connection(
            cluster.topo.client_address(rack, cluster.topo.node(follower)), cluster.topo.client_port(rack)
        )
        assert _consume(client, cluster, topic, 200, rack, timeout=20) == 200
    finally:
        cluster.set_links_enabled([link], True)


#: client -> the finding it shows for HW-10 (absent: the client keeps the promise)
HW10_BREAKS = {
    "kafka-python": "HW-10: kafka-python commits a transaction one of whose records expired unsent "
    "(a failed batch leaves the transaction manager in its ready state: Sender._dispatch_error makes no "
    "transition for a retriable error whose retries or delivery timeout ran out)",
    "kafkajs": "HW-15: kafkajs commits a transaction one of whose sends failed for good "
    "(KafkaJSNumberOfRetriesExceeded): a failed send leaves its transaction manager in its transaction, "
    "and EndTxn(COMMIT) succeeds without the record",
}


@pytest.mark.parametrize("client", every_client(HW10_BREAKS, also=frozenset({"kafkajs"})))
def test_hw10_a_transaction_whose_send_failed_does_not_commit(cluster: Cluster, client: str) -> None:
    """KIP-98 atomicity: a transaction is all or nothing, so when one of its records could not be
    written (its partition leader unreachable from the producer until the delivery timeout), the
    commit must fail (the application then aborts), never report a commit without that record.
    Kafka's Java producer moves the transaction to an abortable error on any failed batch."""
    driver = get_driver(client)  # not at collection: making the Java driver may build its worker
    if not isinstance(driver, TransactionalClient):
        pytest.skip(f"{client} has no transactional producer in highwater yet")
    topic, tid = f"hw10-{client}", f"hw10-{client}"
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    settings = ProducerSettings(
        bootstrap=cluster.bootstrap(),
        client_id=tid,
        request_timeout_ms=1500,
        delivery_timeout_ms=4000,
        transactional_id=tid,
        transaction_timeout_ms=10000,
    )
    producer = driver.transactional_producer(settings)
    try:
        producer.init_transactions(20)
        coordinator = cluster.observer().coordinator("txn", tid)
        part, leader = next(
            (p, s.leader)
            for p in range(3)
            if (s := cluster.partition_state(topic, p, offsets=False)).leader != coordinator
        )

        def send_one(value: str) -> SendOutcome:
            got: list[SendOutcome] = []
            producer.send(topic, part, value, got.append)
            producer.flush(10)
            return wait_until(lambda: got[0] if got else None, 15, f"the outcome of the send of {value}")

        producer.begin_transaction()  # a committed transaction first: the partition is known
        assert send_one("before").outcome is Outcome.OK
        producer.commit_transaction(20)
        links = [cluster.client_link(rack, leader) for rack in cluster.topo.client_racks]
        cluster.set_links_enabled(links, False)
        try:
            producer.begin_transaction()
            failed = send_one("unsent")
            assert failed.outcome is not Outcome.OK, "the partition leader was unreachable"
            committed = True
            try:
                producer.commit_transaction(20)
            except Exception as exc:  # noqa: BLE001 - the expected answer: the commit is refused
                committed = False
                print(f"{client}: commit refused after the failed send: {exc}")
            assert not committed, f"{client} committed a transaction whose record failed: {failed.error}"
        finally:
            cluster.set_links_enabled(links, True)
    finally:
        producer.close(5)


#: client -> the finding it shows for HW-4 (absent: the client keeps the promise)
HW4_BREAKS = {
    "kafka-python": "HW-4: kafka-python clears its preferred read replica on every fetch response carrying "
    "preferred_read_replica=-1 (every follower response does), so every other fetch goes back to the leader",
}

#: a rack consumer that fetches from its follower sends the leader (another rack) at most this
#: share of the request bytes it sends the follower; ping-pong (every other fetch) sends about 1.0
HW4_MAX_LEADER_SHARE = 0.25
HW4_TAIL_S = 8.0


def _settled_client_bytes(cluster: Cluster, rack: str) -> dict[int, ByteCounters]:
    """``rack``'s client byte counters once they stop moving: Toxiproxy adds a connection's bytes
    a moment after it ended (``harness.toxiproxy.ByteCounters``)."""
    return wait_until_steady(lambda: cluster.client_bytes(rack), 1.0, 20, f"{rack}'s client byte counters")


@pytest.mark.parametrize("client", every_client(HW4_BREAKS))
def test_hw4_tailing_rack_consumer_fetches_from_its_follower_not_the_leader(cluster: Cluster, client: str) -> None:
    """KIP-392 efficiency, measured outside the client: a consumer in the rack of an in-sync
    follower, tailing a partition whose leader is in another rack, sends its fetches to the
    follower, not every other one to the leader. Toxiproxy counts the bytes of each client link
    (rack, broker) whatever the library; the consumer is the only client of its rack's proxies
    (the producer and the observer use the rack-less ones), so the bytes it *sent* each broker
    count its requests: ping-pong sends the leader about as many as the follower, clean follower
    fetching a few (bootstrap, metadata, the first fetch that the leader redirects)."""
    topic = f"hw4-{client}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    state = cluster.partition_state(topic, 0)
    follower = next(r for r in state.replicas if r != state.leader)
    rack = cluster.rack_of(follower)
    assert cluster.rack_of(state.leader) != rack
    before = _settled_client_bytes(cluster, rack)
    consumer = get_driver(client).consumer(
        ConsumerSettings(bootstrap=cluster.bootstrap(rack), client_id=f"hw4-{client}", client_rack=rack), _Quiet()
    )
    read = 0
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        with BackgroundProducer(cluster, topic, interval=0.02) as producer:
            deadline = time.monotonic() + HW4_TAIL_S
            while time.monotonic() < deadline:
                polled = consumer.poll(200)
                read += len(polled) if isinstance(polled, list) else 0
            written = producer.sent
    finally:
        consumer.close()
    # the consumer's connections have ended: wait until the follower's shows, then until all settle
    wait_until(
        lambda: cluster.client_bytes(rack)[follower].upstream > before[follower].upstream,
        20,
        "the consumer's connection to its follower is counted",
    )
    after = _settled_client_bytes(cluster, rack)
    sent = {b: after[b].upstream - before[b].upstream for b in after}
    received = {b: after[b].downstream - before[b].downstream for b in after}
    share = sent[state.leader] / max(sent[follower], 1)
    figures = (
        f"{client}: leader {state.leader}, follower {follower} ({rack}); {read} of {written} records read in "
        f"{HW4_TAIL_S:.0f} s; bytes sent per broker {sent}, received {received}; leader/follower request bytes "
        f"{share:.2f}"
    )
    print(figures)
    assert read >= 0.5 * written > 50, figures
    assert sent[follower] > 2000, f"too few requests to the follower to judge: {figures}"
    assert share <= HW4_MAX_LEADER_SHARE, figures


#: client -> the finding it shows for HW-5 (absent: the client keeps the promise)
HW5_BREAKS = {
    "kafka-python": "HW-5: kafka-python gives its whole bootstrap timeout to one bootstrap server chosen at "
    "random (KafkaManager._do_bootstrap), so a paused one fails about one new client in three",
}
#: producers started per client: a client that picks the paused server one time in three (as
#: kafka-python does) misses it in all of them with probability (2/3)^16 < 0.2 %
HW5_PRODUCERS = 16
#: each producer's record must be acknowledged within this long of the producer's creation:
#: time for one hung request to time out (5 s), for the send to wait for metadata (max_block
#: 15 s) and for a JVM to start on a busy machine; kafka-python's bootstrap gives up after 30 s
HW5_DEADLINE_S = 40.0


def _start_and_send(client: str, bootstrap: list[str], topic: str, i: int) -> str | None:
    """Make a producer, send one record and wait for its outcome: None when it was acknowledged
    within the deadline (how long it took is printed), else what went wrong."""
    started = time.monotonic()
    got: list[SendOutcome] = []
    try:
        producer = get_driver(client).producer(
            ProducerSettings(bootstrap=bootstrap, client_id=f"hw5-{client}-{i}", acks=1, max_block_ms=15000)
        )
    except Exception as exc:  # noqa: BLE001 - a client that could not start is the failure measured
        return f"not started after {time.monotonic() - started:.1f} s: {type(exc).__name__}: {exc}"
    try:
        producer.send(topic, 0, f"hw5-{i}", got.append)
        producer.flush(max(HW5_DEADLINE_S - (time.monotonic() - started), 0.0))
        left = HW5_DEADLINE_S - (time.monotonic() - started)
        outcome = wait_until(lambda: got[0] if got else None, max(left, 0.1), f"producer {i}'s outcome")
    except Exception as exc:  # noqa: BLE001 - no outcome in time is the failure measured
        return f"no outcome within {HW5_DEADLINE_S:.0f} s: {type(exc).__name__}: {exc}"
    finally:
        producer.close(5)
    if outcome.outcome is not Outcome.OK:
        return f"{outcome.outcome.value}: {outcome.error}"
    print(f"{client} producer {i}: acknowledged {time.monotonic() - started:.1f} s after it was made")
    return None


@pytest.mark.parametrize(
    "client",
    every_client(
        HW5_BREAKS,
        nightly={
            "kafka-python": nightly(
                "java's and confluent-kafka's runs in make test bootstrap past the paused server; kafka-python's "
                "is HW-5's strict xfail",
                35,
            )
        },
    ),
)
def test_hw5_new_clients_bootstrap_past_a_paused_server(cluster: Cluster, client: str) -> None:
    """Bootstrap liveness: with three bootstrap servers of which one broker is paused (SIGSTOP:
    its kernel still accepts connections, nothing answers), every new producer gets a record of
    a partition led by a running broker acknowledged within ``HW5_DEADLINE_S``: a client must
    not give all its time to the one server that hangs."""
    get_driver(client)  # built or imported once, before the clock of any producer starts
    topic = f"hw5-{client}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    leader = cluster.partition_state(topic, 0, offsets=False).leader
    paused = next(b for b in sorted(cluster.nodes) if b != leader)
    with Injector(cluster) as nemesis:
        nemesis.apply(parse_fault(f"pause --target broker:{paused}"))
        with ThreadPoolExecutor(max_workers=HW5_PRODUCERS) as pool:
            failures = [
                f
                for f in pool.map(
                    lambda i: _start_and_send(client, cluster.bootstrap(), topic, i), range(HW5_PRODUCERS)
                )
                if f is not None
            ]
    print(f"{client}: {len(failures)} of {HW5_PRODUCERS} producers failed with broker {paused} paused: {failures[:3]}")
    assert not failures, f"{len(failures)} of {HW5_PRODUCERS} new producers failed: {failures[:3]}"


#: client -> the finding it shows for HW-11 (absent: the client keeps the promise)
HW11_BREAKS = {
    "kafka-python": "HW-11: kafka-python sends the metadata refresh that should find a frozen leader's successor to "
    "the frozen broker (KafkaManager.least_loaded_node ranks a broker it has no connection to, no request in flight, "
    "above connected brokers that carry the consumer's long-poll fetches; the Java client prefers any ready "
    "connection), so it waits a second request timeout before it reads the partition again",
}
#: Kafka's default metadata.max.age.ms, in every client: no periodic refresh comes to the rescue
#: before the consumer's fetch to the frozen broker times out
HW11_METADATA_MAX_AGE_MS = 300_000
HW11_REQUEST_TIMEOUT_S = ConsumerSettings.request_timeout_ms / 1000
#: consumers per client: a kafka-python consumer escaped the second request timeout in one run of
#: four (its metadata refresh met a broker between two fetches), all of four in none of them
HW11_CONSUMERS = 4
#: how long past the deadline the reads are waited for, so that the figures say how late they were
HW11_LATE_S = 5.0


class _Reads:
    """A consumer polled in a thread, and when it read each partition."""

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer
        self.times: list[tuple[float, int]] = []  # (monotonic time, partition) of every record
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                polled = self.consumer.poll(200)
            except Exception:  # noqa: BLE001 - a failed poll is retried, as the workloads do
                continue
            if isinstance(polled, list | tuple):
                now = time.monotonic()
                self.times += [(now, r.partition) for r in polled]

    def first(self, partition: int, after: float) -> float | None:
        return next((t for t, p in self.times if p == partition and t > after), None)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


@pytest.mark.parametrize("client", every_client(HW11_BREAKS, nightly={"confluent-kafka": nightly(SAME_AS, 25)}))
def test_hw11_consumer_reads_a_frozen_leader_s_partition_from_its_successor(cluster: Cluster, client: str) -> None:
    """Liveness when a leader freezes (SIGSTOP: its kernel accepts connections, nothing answers)
    and its partition moves: with Kafka's default metadata.max.age.ms, a consumer of three
    partitions reads the moved one again within half a request timeout of the later of its hung
    fetch timing out (the pause + request.timeout.ms) and the new leader's first acknowledged
    record. The frozen broker may cost a consumer one request timeout, not two."""
    driver = get_driver(client)
    topic = f"hw11-{client}"
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    frozen = cluster.partition_state(topic, 0, offsets=False).leader
    # the writer is librdkafka's producer whichever client reads: any producer would do, as the
    # deadline counts from its first acknowledgement by the new leader
    writer = get_driver("confluent-kafka").producer(
        ProducerSettings(bootstrap=cluster.bootstrap(), client_id=f"hw11-writer-{client}", acks=1)
    )
    acked: list[float] = []

    def on_outcome(o: SendOutcome) -> None:
        if o.outcome is Outcome.OK:
            acked.append(time.monotonic())

    tps = [TopicPartition(topic, p) for p in range(3)]
    readers = []
    for i in range(HW11_CONSUMERS):
        consumer = driver.consumer(
            ConsumerSettings(
                bootstrap=cluster.bootstrap(),
                client_id=f"hw11-{client}-{i}",
                metadata_max_age_ms=HW11_METADATA_MAX_AGE_MS,
            ),
            _Quiet(),
        )
        consumer.assign(tps)
        for tp in tps:
            consumer.seek_to_beginning(tp)
        readers.append(_Reads(consumer))
    try:
        with Injector(cluster) as nemesis:
            n = 0

            def write(until: Any) -> Any:
                """One record more to partition 0, then ``until()``: every wait below keeps the
                writer writing, so that the new leader has records to acknowledge and serve."""
                nonlocal n
                writer.send(topic, 0, f"hw11-{n}", on_outcome)
                n += 1
                return until()

            wait_until(
                lambda: write(lambda: all(r.first(0, 0.0) for r in readers)),
                30,
                f"every {client} consumer reads partition 0",
                interval=0.05,
            )
            paused = time.monotonic()
            nemesis.apply(parse_fault(f"pause --target broker:{frozen}"))
            wait_until(
                lambda: write(lambda: cluster.partition_state(topic, 0, offsets=False).leader not in (frozen, -1)),
                30,
                f"partition 0's leadership leaves the frozen broker {frozen}",
                interval=0.05,
            )
            moved = time.monotonic()
            wait_until(
                lambda: write(lambda: any(t > moved for t in acked)),
                30,
                "a write acknowledged by the new leader",
                interval=0.05,
            )
            first_ack = min(t for t in acked if t > moved)
            deadline = max(first_ack, paused + HW11_REQUEST_TIMEOUT_S) + HW11_REQUEST_TIMEOUT_S / 2
            try:
                wait_until(
                    lambda: write(lambda: all(r.first(0, moved) for r in readers)),
                    deadline + HW11_LATE_S - time.monotonic(),
                    f"every {client} consumer reads partition 0 from its new leader",
                    interval=0.05,
                )
            except WaitTimeout:
                pass  # the figures below say which consumers did not
            reads = [r.first(0, moved) for r in readers]
    finally:
        for r in readers:
            r.close()
        writer.close(5)
    late = [t for t in reads if t is None or t > deadline]
    figures = (
        f"{client}: broker {frozen} frozen at 0 s, leadership moved {moved - paused:.1f} s, first write acknowledged "
        f"by the new leader {first_ack - paused:.1f} s, deadline {deadline - paused:.1f} s; its {len(reads)} "
        "consumers read partition 0 again at "
        + ", ".join(
            f"{t - paused:.1f} s" if t is not None else f"> {deadline + HW11_LATE_S - paused:.0f} s" for t in reads
        )
    )
    print(figures)
    assert not late, figures


#: client -> the finding it shows for HW-14 (absent: the client keeps the promise)
HW14_BREAKS = {
    "kafkajs": "HW-14: kafkajs's filterAbortedMessages steps into at most one aborted transaction per "
    "record, so when a fetch's list of aborted transactions holds one that began earlier, a "
    "read_committed consumer returns the first record of the next one",
}


#: make test runs it on kafkajs alone (its budget); Java's client passed it beside kafkajs
#: (docs/findings.md, HW-14), and `--client`-free runs of this module take it as a parameter:
#: `pytest tests/integration/test_findings_by_client.py -k "hw14 and java"`
HW14_CLIENTS = ("java", "kafkajs")


@pytest.mark.parametrize(
    "client",
    [
        c
        for c in every_client(HW14_BREAKS, also=frozenset({"kafkajs"}), nightly={"java": nightly(SAME_AS, 25)})
        if getattr(c, "values", [c])[0] in HW14_CLIENTS
    ],
)
def test_hw14_read_committed_never_returns_an_aborted_record(cluster: Cluster, client: str) -> None:
    """KIP-98: a read_committed consumer never returns a record of an aborted transaction. Two
    producers' transactions overlap in one partition (A's first record, then B's two) and both
    abort; a third transaction commits a last record. A consumer that starts at B's first record
    fetches them in one response whose aborted-transaction list names A (begun before the fetch
    offset) and B: it must return the committed record only. Java's consumer is the second client
    beside kafkajs (make test's budget: the Python clients are not run here)."""
    driver = get_driver(client)
    assert isinstance(driver, TransactionalClient)
    topic = f"hw14-{client}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    producers = [
        driver.transactional_producer(
            ProducerSettings(cluster.bootstrap(), f"hw14-{client}-{i}", transactional_id=f"hw14-{client}-{i}")
        )
        for i in range(2)
    ]
    offsets: dict[str, int] = {}

    def send(p: Any, value: str) -> None:
        got: list[SendOutcome] = []
        p.send(topic, 0, value, got.append)
        p.flush(10)
        outcome = wait_until(lambda: got[0] if got else None, 15, f"the outcome of {value}")
        assert outcome.outcome is Outcome.OK, outcome
        offsets[value] = int(outcome.offset)

    try:
        for p in producers:
            p.init_transactions(20)
            p.begin_transaction()
        a, b = producers
        send(a, "a-aborted")
        send(b, "b-aborted-1")
        send(b, "b-aborted-2")
        a.abort_transaction(20)
        b.abort_transaction(20)
        a.begin_transaction()
        send(a, "committed")
        a.commit_transaction(20)
    finally:
        for p in producers:
            p.close(5)
    assert offsets["a-aborted"] < offsets["b-aborted-1"] < offsets["b-aborted-2"] < offsets["committed"]

    consumer = driver.consumer(
        ConsumerSettings(cluster.bootstrap(), f"hw14-{client}-reader", isolation_level="read_committed"), _Quiet()
    )
    tp = TopicPartition(topic, 0)
    read: list[str] = []
    try:
        consumer.assign([tp])
        consumer.seek(tp, offsets["b-aborted-1"])
        deadline = time.monotonic() + 30
        while "committed" not in read and time.monotonic() < deadline:
            polled = consumer.poll(500)
            read += [str(r.value) for r in polled] if isinstance(polled, list) else []
    finally:
        consumer.close()
    assert read == ["committed"], f"{client} read_committed returned {read}"


HW16_BREAKS = {
    "kafkajs": "HW-16: kafkajs's consumer.commitOffsets resolves without committing while its consumer is "
    "not running (crashed and waiting to restart, kafkajs's Runner#commitOffsets returns early)",
    "ckjs": "HW-29: ckjs's consumer.commitOffsets resolves once librdkafka has queued the commit "
    "(commitAsync), not once the coordinator stored it",
}

#: as HW-14: make test runs it on kafkajs and ckjs (HW-29, the same promise broken another way);
#: the Java client is the second client beside them
HW16_CLIENTS = ("java", "kafkajs", "ckjs")
#: how long the coordinator stays cut off while commits are tried: kafkajs's consumer exhausts its
#: retries and crashes within ~15 s; a client that keeps the promise raises on every try
HW16_CUT_S = 45.0


def _committed(cluster: Cluster, group: str, tp: TopicPartition) -> int | None:
    """The group's committed offset of ``tp``, read by the harness's own admin client (through
    the no-rack proxies, which the test's cut leaves alone)."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), client_id=f"{group}-admin")
    try:
        found = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return next((int(m.offset) for t, m in found.items() if (t.topic, t.partition) == tp and m.offset >= 0), None)


@pytest.mark.parametrize(
    "client",
    [
        c
        for c in every_client(
            HW16_BREAKS,
            also=frozenset({"kafkajs", "ckjs"}),
            nightly={"java": nightly("it waits out Java's 60 s commit timeout; kafkajs shows HW-16 in ~25 s", 70)},
        )
        if getattr(c, "values", [c])[0] in HW16_CLIENTS
    ],
)
def test_hw16_a_commit_that_returned_is_committed(cluster: Cluster, client: str) -> None:
    """A consumer's synchronous commit returns only once the group's coordinator stored the
    offsets (``ConsumerDriver.commit``: it raises when the commit failed or its outcome is
    unknown). A group member whose link to the coordinator is cut commits a rising offset once a
    second; every commit that returns must be found in the group afterwards."""
    driver = get_driver(client)
    topic, group, rack = f"hw16-{client}", f"hw16-{client}-group", cluster.topo.racks[0]
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    produce(cluster, topic, 50)
    tp = TopicPartition(topic, 0)
    consumer = driver.consumer(
        ConsumerSettings(cluster.bootstrap(rack), f"hw16-{client}", client_rack=rack, group_id=group), _Quiet()
    )
    returned: list[int] = []  # offsets whose commit returned while the coordinator was cut off
    raised: list[str] = []
    try:
        consumer.subscribe([topic])
        wait_until(lambda: _polled_any(consumer), 30, f"{client}'s first records in group {group}")
        consumer.commit({tp: 1})
        assert _committed(cluster, group, tp) == 1, "the commit before the cut was not stored"
        with Injector(cluster) as nemesis:
            nemesis.apply(parse_fault(f"cut --target clients:{rack} --peer coordinator:group/{group}"))
            deadline, offset = time.monotonic() + HW16_CUT_S, 2
            while time.monotonic() < deadline and not returned:
                try:
                    consumer.commit({tp: offset})
                    returned.append(offset)
                except Exception as exc:  # noqa: BLE001 - a commit that says it failed keeps the promise
                    raised.append(f"{type(exc).__name__}: {str(exc)[:120]}")
                offset += 1
                time.sleep(1.0)  # a commit a second, as an application's loop would
            stored = _committed(cluster, group, tp)
    finally:
        consumer.close()
    print(f"{client}: {len(raised)} commit(s) raised ({raised[:2]}), {returned} returned; the group holds {stored}")
    assert not returned or (stored is not None and stored >= max(returned)), (
        f"{client}: commit({returned}) returned while cut off from the coordinator, but the group holds {stored}"
    )


def _polled_any(consumer: Any) -> bool:
    polled = consumer.poll(500)
    return isinstance(polled, list) and len(polled) > 0
