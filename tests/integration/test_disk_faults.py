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

from highwater.core.history import HistoryWriter, read_history
from highwater.faults.inject import Injector
from highwater.faults.spec import parse_fault
from highwater.harness.diskfs import mounts_under
from highwater.harness.local.cluster import Cluster
from highwater.harness.paths import clusters_dir
from highwater.suites.nightly import nightly

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


def _end_offset(cluster: Cluster, topic: str = TOPIC) -> int:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap())
    try:
        tp = TopicPartition(topic, 0)
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


@nightly(
    "a power loss on lossyfs stays in make test (this module's first test and the power-loss suite's leader case)", 70
)
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


def _produce_one_by_one(cluster: Cluster, topic: str, count: int) -> None:
    """``count`` records, each acknowledged before the next is sent: one batch each."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks=1, linger_ms=0)
    try:
        for i in range(count):
            producer.send(topic, f"r-{i}".encode(), partition=0).get(30)
    finally:
        producer.close(5)


def _read_all(cluster: Cluster, topic: str) -> tuple[list[int], str | None]:
    """Every offset a consumer reads from the start (the client's CRC check on), and the error
    that stopped it, if any."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(), consumer_timeout_ms=5000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    offsets: list[int] = []
    try:
        for record in consumer:
            offsets.append(record.offset)
        return offsets, None
    except Exception as exc:  # noqa: BLE001 - what the client reports is what is judged
        return offsets, f"{type(exc).__name__}: {exc}"
    finally:
        consumer.close()


@nightly("the corruption faults' file operations are unit-tested in make test", 35)
def test_corrupted_segments_after_a_crash_and_after_a_clean_stop(cluster_factory: Any, tmp_path: Path) -> None:
    """What Kafka makes of a corrupted segment (one broker, RF 1: no replica to repair it from).
    Measured on Kafka 4.4.0 (50 records of one batch each):

    - a torn tail (30 bytes cut) after a crash: log recovery drops the torn batch, end offset 49;
    - a flipped bit mid-segment after a crash: recovery checks every batch's CRC above the
      recovery point and cuts the log at the bad one: every later record is gone too (end 28),
      and nothing corrupt is served;
    - the same bit flipped after a clean stop (flushed and checkpointed): nothing is re-read at
      start, the broker serves the bad batch as it is (end 50) and the consumer's own CRC check
      stops it there (kafka-python: CorruptRecordError at offset 28)."""
    cluster: Cluster = cluster_factory(brokers=1, racks=1)
    injector, history = _injector(cluster, tmp_path)
    seen = {}
    for case, fault in (
        ("cut", "truncate-file --target broker:1 --file '{t}-0/*.log' --bytes 30"),
        ("crash-flip", "flip-bits --target broker:1 --file '{t}-0/*.log' --count 1 --skip-bytes {half}"),
        ("clean-flip", "flip-bits --target broker:1 --file '{t}-0/*.log' --count 1 --skip-bytes {half} --clean true"),
    ):
        topic = f"corrupt-{case}"
        cluster.create_topic(topic, 1, 1)
        _produce_one_by_one(cluster, topic, 50)
        size = sum(f.stat().st_size for f in (cluster.data_dir(1) / f"{topic}-0").glob("*.log"))
        applied = injector.apply(parse_fault(fault.format(t=topic, half=size // 2)))
        injector.heal(applied)
        read, error = _read_all(cluster, topic)
        seen[case] = (applied.corrupted["kafka-1"], _end_offset(cluster, topic), read, error)
    history.close()
    done, end, read, error = seen["cut"]
    assert done["size_after"] == done["size_before"] - 30
    assert (end, read, error) == (49, list(range(49)), None), "the torn last batch is dropped, nothing else"
    done, end, read, error = seen["crash-flip"]
    assert len(done["flipped"]) == 1 and 0 < end < 50, "recovery cut the log at the corrupted batch"
    assert (read, error) == (list(range(end)), None), "nothing corrupt is served after recovery"
    _, end, read, error = seen["clean-flip"]
    assert end == 50 and 0 < len(read) < 50 and read == list(range(len(read))), (end, len(read))
    assert error is not None and "crc" in error.lower(), f"the consumer's CRC check stops it: {error}"
    corrupted = [e for e in read_history(history.path) if e["f"] == "fault" and e["type"] == "ok"]
    assert [sorted(e["value"]["corrupted"]) for e in corrupted] == [["kafka-1"]] * 3, "the history says what changed"
