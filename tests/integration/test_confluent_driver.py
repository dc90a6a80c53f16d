"""The confluent-kafka driver on a real cluster, beyond the contract every driver passes
(tests/integration/test_workload.py): an ``auto.offset.reset`` librdkafka applies on its own
reaches the listener as a ``reset`` to the offset it landed on, before the records it then
reads; group mode with an idempotent producer keeps every promise."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from highwater.core.history import read_history
from highwater.harness.clients import (
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    PositionReason,
    TopicPartition,
    get_driver,
)
from highwater.harness.local.cluster import Cluster
from highwater.run_spec import RunSpec
from highwater.runner import execute_run
from tests.integration.kafka_util import produce_through_driver


def test_out_of_range_position_is_reported_as_a_reset(cluster: Cluster) -> None:
    driver = get_driver("confluent-kafka")
    topic, count = "ck-reset", 5
    produce_through_driver(driver, cluster, topic, count, "ck-reset-producer")

    events: list[PositionChange | PolledRecord] = []

    class Listener:
        def on_position_change(self, change: PositionChange) -> None:
            events.append(change)

    before = set(threading.enumerate())
    consumer = driver.consumer(ConsumerSettings(cluster.bootstrap(), "ck-reset-consumer"), Listener())
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 1000)  # beyond the end: librdkafka resets to earliest on its own
        deadline = time.monotonic() + 30
        while sum(isinstance(e, PolledRecord) for e in events) < count and time.monotonic() < deadline:
            polled = consumer.poll(200)
            assert isinstance(polled, list), polled
            events.extend(polled)
    finally:
        consumer.close()
    assert events[0] == PositionChange(topic, 0, 0, PositionReason.RESET), events
    assert [e.offset for e in events[1:]] == list(range(count)), events
    assert set(threading.enumerate()) <= before  # no thread of ours outlives close


def test_group_mode_with_an_idempotent_producer_keeps_every_promise(cluster: Cluster, tmp_path: Path) -> None:
    """subscribe (group) mode on librdkafka: every assignment reaches the history as a
    ``rebalance``, auto-commit and the idempotent producer leave every check valid."""
    spec = RunSpec(
        suite="workload",
        scenario="ck-group",
        campaign="test",
        results_root=tmp_path,
        duration=10,
        partitions=3,
        rate=50,
        consumer_mode="subscribe",
        acks="all",
        idempotence=True,
        topic="ck-group",
        client="confluent-kafka",
    )
    result = execute_run(cluster, spec, progress=print)
    assert [v.check for v in result.verdicts if v.valid is False] == []
    history = read_history(result.dir / "history.jsonl")
    assert history.header["client"].startswith("confluent-kafka ") and history.config["idempotence"] is True
    assigns = [e for e in history if e["f"] == "assign" and e["value"]["reason"] == "rebalance"]
    assert {(e["value"]["topic"], e["value"]["partition"]) for e in assigns} == {(spec.topic, p) for p in range(3)}
    assert sum(p["acked"] for p in result.stats["producers"].values()) > 0
