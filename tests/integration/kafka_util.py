"""Small produce/consume helpers for the cluster tests (the workloads proper live in harness/)."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from highwater.core.checks import CHECKS, NEEDS, Input
from highwater.harness.backend import LinkControl
from highwater.harness.clients import ClientDriver, ProducerSettings, SendOutcome
from highwater.harness.local.cluster import Cluster
from highwater.harness.toxiproxy import ByteCounters
from highwater.harness.waiting import wait_until_steady

#: the checks a fault-free assign-mode run without transactions, commits or idempotent producers
#: gives no input to (core.checks: their verdict is not-applicable)
#: the inputs a plain run (no transactions, groups, copy, share group or release step) does not record
_EXTRA_INPUTS = frozenset({Input.TXNS, Input.COMMITS, Input.COPY, Input.SHARE, Input.RELEASE_STEPS})
#: the checks such a run cannot judge (they say not-applicable), in report order: derived from
#: what each check needs, so a new check of transactions, groups or share groups is in it at once;
#: nonmonotonic-send is not applicable because the producers are not idempotent, remote-reset
#: and log-start because the run's topic does not tier
NOT_APPLICABLE_WITHOUT_TXN_COMMITS_OR_IDEMPOTENCE = tuple(
    c
    for c in CHECKS
    if c in ("nonmonotonic-send", "remote-reset", "log-start") or any(group <= _EXTRA_INPUTS for group in NEEDS[c])
)


def live_bootstrap(cluster: Cluster, rack: str | None = None) -> list[str]:
    """Bootstrap servers of brokers that are running, not paused: kafka-python 3.0.12 spends its
    whole bootstrap timeout on one unresponsive server (docs/findings.md, HW-5)."""
    servers = cluster.bootstrap(rack)
    return [s for s, b in zip(servers, cluster.topo.brokers) if cluster.nodes[b.node_id].state.value == "running"]


def produce(
    cluster: Cluster, topic: str, count: int, size: int = 100, rack: str | None = None, partition: int = 0
) -> None:
    producer = KafkaProducer(bootstrap_servers=live_bootstrap(cluster, rack), acks="all", linger_ms=5)
    try:
        for i in range(count):
            producer.send(topic, value=(b"%08d" % i).ljust(size, b"x"), partition=partition)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)


def produce_through_driver(driver: ClientDriver, cluster: Cluster, topic: str, count: int, client_id: str) -> None:
    """Create ``topic`` (1 partition, 3 replicas) and write ``count`` records ``r-<i>`` to its
    partition 0 through the driver's producer; every send is acknowledged at offsets 0..count-1."""
    cluster.create_topic(topic, 1, 3)
    outcomes: list[SendOutcome] = []
    producer = driver.producer(ProducerSettings(cluster.bootstrap(), client_id))
    try:
        for i in range(count):
            producer.send(topic, 0, f"r-{i}", outcomes.append)
        producer.flush(30)
    finally:
        producer.close(10)
    assert [o.offset for o in outcomes] == list(range(count)), outcomes


def consume_all(
    cluster: Cluster, topic: str, count: int, rack: str, client_rack: str | None, timeout: float = 30.0
) -> int:
    """Read ``count`` records of partition 0 from the start through ``rack``'s proxies."""
    kwargs = {"client_rack": client_rack} if client_rack else {}
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap(rack), enable_auto_commit=False, auto_offset_reset="earliest", **kwargs
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        seen = 0
        deadline = time.monotonic() + timeout
        while seen < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                seen += len(records)
        return seen
    finally:
        consumer.close()


def bytes_served(cluster: LinkControl, rack: str, before: dict[int, ByteCounters]) -> dict[int, int]:
    """Bytes each broker sent through ``rack``'s client proxies since ``before``, read once the
    counters settle: Toxiproxy adds a connection's bytes a moment after the client closed it."""
    after = wait_until_steady(lambda: cluster.client_bytes(rack), 0.5, 15, f"{rack}'s client byte counters")
    return {b: after[b].downstream - before[b].downstream for b in after}


class BackgroundProducer:
    """Keeps writing (acks=1, so a shrinking ISR never blocks it) while a fault is on: a follower
    leaves the ISR only when it falls *behind*, and with no writes a silent follower is never
    behind (Kafka judges lag by log end offset, then by time since last caught up)."""

    def __init__(self, cluster: Cluster, topic: str, interval: float = 0.05) -> None:
        import threading

        self._producer = KafkaProducer(
            bootstrap_servers=live_bootstrap(cluster), acks=1, linger_ms=0, request_timeout_ms=5000, max_block_ms=5000
        )
        self._topic = topic
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.sent = 0

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._producer.send(self._topic, value=b"bg-%d" % self.sent, partition=0)
            self.sent += 1

    def __enter__(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._producer.close(timeout=10)
