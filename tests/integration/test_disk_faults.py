"""Disk faults on a real cluster whose brokers' log directories sit on lossyfs
(``ClusterSpec(disk="lossy")``, ``harness.diskfs``): a power loss loses what was not fsynced,
proven by reading the broker's log files back; a full and a slowed disk are applied and healed;
nothing stays mounted after the cluster is gone."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from faults.inject import Injector
from faults.spec import parse_fault
from harness.cluster import Cluster
from harness.diskfs import mounts_under
from harness.history import HistoryWriter, read_history
from harness.paths import clusters_dir

pytestmark = pytest.mark.integration

TOPIC = "lossy"


def _produce(cluster: Cluster, count: int, acks: int | str) -> list[int]:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks=acks, linger_ms=0)
    try:
        futures = [producer.send(TOPIC, f"r-{i}".encode(), partition=0) for i in range(count)]
        producer.flush(30)
        return [f.get(30).offset for f in futures]
    finally:
        producer.close(5)


def _segment_bytes(cluster: Cluster, broker: int) -> int:
    """The bytes of the partition's log segments in the broker's real directory (under lossyfs)."""
    part = cluster.node(broker).dir / "disk" / f"{TOPIC}-0"
    return sum(f.stat().st_size for f in part.glob("*.log"))


def _end_offset(cluster: Cluster) -> int:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap())
    try:
        tp = TopicPartition(TOPIC, 0)
        return int(consumer.end_offsets([tp])[tp])
    finally:
        consumer.close()


def _injector(cluster: Cluster, tmp_path: Path) -> tuple[Injector, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl", run_id="disk", kafka_version=cluster.kafka_version)
    return Injector(cluster, history), history


def test_power_loss_loses_what_an_acks_1_write_left_unsynced(cluster_factory: Any, tmp_path: Path) -> None:
    cluster: Cluster = cluster_factory(brokers=1, racks=1, disk="lossy")
    cluster.create_topic(TOPIC, 1, 1)
    offsets = _produce(cluster, 20, acks=1)
    assert offsets == list(range(20))
    written = _segment_bytes(cluster, 1)
    assert written > 0, "the records are in the broker's segment (page cache and all)"
    injector, history = _injector(cluster, tmp_path)
    fault = injector.apply(parse_fault("power-loss --target broker:1"))
    lost = fault.lost["kafka-1"]
    assert lost["bytes"] >= written and lost["truncated"] + lost["removed"] > 0, lost
    assert _segment_bytes(cluster, 1) == 0, "Kafka never fsynced the segment: its records are gone from disk"
    injector.heal(fault)
    assert _end_offset(cluster) == 0, "the restarted broker serves none of the acknowledged records"
    history.close()
    applied = [e for e in read_history(history.path) if e["f"] == "fault" and e["type"] == "ok"]
    assert applied[0]["value"]["lost"]["kafka-1"] == lost, "the history says what the power loss took"


def test_disk_full_and_slow_are_applied_and_healed(cluster_factory: Any, tmp_path: Path) -> None:
    cluster: Cluster = cluster_factory(brokers=1, racks=1, disk="lossy")
    cluster.create_topic(TOPIC, 1, 1)
    assert _produce(cluster, 5, acks=1) == list(range(5))
    injector, history = _injector(cluster, tmp_path)
    disk = cluster.disk(1)

    slow = injector.apply(parse_fault("disk-slow --target broker:1 --write-ms 100 --fsync-ms 100"))
    assert disk.status()["write_ms"] == 100
    started = time.monotonic()
    assert _produce(cluster, 3, acks=1) == [5, 6, 7]
    slowed_s = time.monotonic() - started
    injector.heal(slow)
    assert disk.status()["write_ms"] == 0 and slowed_s >= 0.1, slowed_s

    full = injector.apply(parse_fault("disk-full --target broker:1"))
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks=1, retries=0, request_timeout_ms=5000)
    try:
        with pytest.raises(Exception):  # noqa: B017 - any error: the broker cannot append
            producer.send(TOPIC, b"refused", partition=0).get(30)
    finally:
        producer.close(5)
    assert disk.status()["refused"] > 0
    injector.heal(full)  # writable again; a broker that stopped itself is started again
    assert _produce(cluster, 2, acks=1)[-1] >= 8
    history.close()
    cdir = cluster.dir
    cluster.stop()
    assert cdir is not None and mounts_under(cdir) == [] and not cdir.exists()
    assert mounts_under(clusters_dir()) == [] or all(cdir not in p.parents for p in mounts_under(clusters_dir()))
