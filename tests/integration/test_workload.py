"""Issue 3 end to end: a real workload on a real cluster with no faults keeps every promise."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from harness.clients import (
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    client_label,
    client_names,
    get_driver,
)
from harness.cluster import Cluster
from harness.history import read_history
from highwater.runner import RunSpec, execute_run

from .kafka_util import NOT_APPLICABLE_WITHOUT_TXN_COMMITS_OR_IDEMPOTENCE


def test_fault_free_run_is_valid_on_every_check(cluster: Cluster, tmp_path: Path) -> None:
    spec = RunSpec(
        suite="workload",
        scenario="no-faults",
        campaign="test",
        results_root=tmp_path,
        duration=12,
        partitions=2,
        rate=50,
        producers=2,
        topic="wl-assign",
    )
    result = execute_run(cluster, spec, progress=print)
    by_check = {v.check: v for v in result.verdicts}
    # every check holds, except exactly those whose inputs this history does not carry (no
    # transactions, no commits, producers not idempotent): they say not-applicable, no more
    assert {v.check: v.valid for v in result.verdicts if v.valid is not True} == dict.fromkeys(
        NOT_APPLICABLE_WITHOUT_TXN_COMMITS_OR_IDEMPOTENCE, "not-applicable"
    ), json.dumps([v.to_json() for v in result.verdicts if v.valid is not True], default=str)[:3000]
    assert by_check["lost-write"].counts  # it judged something
    history = read_history(result.dir / "history.jsonl")
    kinds = {(e["process"].split("-")[0], e["f"], e["type"]) for e in history}
    assert {
        ("producer", "send", "ok"),
        ("consumer", "poll", "ok"),
        ("consumer", "assign", "ok"),
        ("probe", "meta", "ok"),
        ("final", "final-read", "ok"),
    } <= kinds
    finals = [e for e in read_history(result.dir / "history.jsonl") if e["f"] == "final-read"]
    assert len(finals) == 2 * 3  # every replica of every partition
    acked = sum(p["acked"] for p in result.stats["producers"].values())
    assert acked > 0 and sum(len(e["value"]["records"]) for e in finals) == 3 * acked
    run = json.loads((result.dir / "run.json").read_text())
    assert run["valid"] is True and run["kafka_version"] == cluster.kafka.version  # type: ignore[union-attr]
    assert history.header["client"] == run["client"] == client_label(get_driver(spec.client))


@pytest.mark.xfail(
    strict=False,
    reason=(
        "FINDING CANDIDATE HW-7 (not yet diagnosed): now and then one member of a kafka-python 3.0.12 "
        "group is assigned a partition and never fetches it; the progress check flags a ~38 s stall "
        "until the coordinator evicts the member and another one reads the partition from 0. Seen in "
        "1 of 4 CI runs; see README, Findings."
    ),
)
@pytest.mark.parametrize("acks, idempotence", [("1", False), ("all", True)])
def test_group_consumers_with_acks_and_idempotence(
    cluster: Cluster, tmp_path: Path, acks: str, idempotence: bool
) -> None:
    """subscribe (group) mode records its assignments; acks and idempotence are recorded in the
    header, which is what the policy reads."""
    spec = RunSpec(
        suite="workload",
        scenario=f"group-acks{acks}",
        campaign="test",
        results_root=tmp_path,
        duration=10,
        partitions=3,
        rate=50,
        consumer_mode="subscribe",
        acks=acks,
        idempotence=idempotence,
        topic=f"wl-group-{acks}",
    )
    result = execute_run(cluster, spec, progress=print)
    assert [v.check for v in result.verdicts if v.valid is False] == []
    history = read_history(result.dir / "history.jsonl")
    assert history.config["acks"] == acks and history.config["idempotence"] is idempotence
    assigns = [e for e in history if e["f"] == "assign" and e["value"]["reason"] == "rebalance"]
    assert {(e["value"]["topic"], e["value"]["partition"]) for e in assigns} == {(spec.topic, p) for p in range(3)}


@pytest.mark.parametrize("client", client_names())
def test_client_driver_contract(cluster: Cluster, client: str) -> None:
    """What every driver must do on a real cluster, without faults: sends end ``ok`` with their
    offsets; a rack-aware consumer assigns, seeks, polls the records in order with values, leader
    epochs and the serving broker, commits, and seeks back to the beginning."""
    driver = get_driver(client)
    topic, count = f"wl-driver-{client}", 20
    cluster.create_topic(topic, 1, 3)
    outcomes: list[SendOutcome] = []
    lock = threading.Lock()

    def done(outcome: SendOutcome) -> None:
        with lock:
            outcomes.append(outcome)

    producer = driver.producer(ProducerSettings(cluster.bootstrap(), f"{client}-contract-producer"))
    try:
        for i in range(count):
            producer.send(topic, 0, f"v-{i}", done)
        producer.flush(30)
    finally:
        producer.close(10)
    assert [o.outcome.value for o in outcomes] == ["ok"] * count, outcomes
    assert sorted(o.offset for o in outcomes if o.offset is not None) == list(range(count))

    rack, group = cluster.topo.racks[1], f"{client}-contract"
    changes: list[PositionChange] = []

    class Listener:
        def on_position_change(self, change: PositionChange) -> None:
            changes.append(change)

    consumer = driver.consumer(
        ConsumerSettings(cluster.bootstrap(rack), f"{client}-contract-consumer", client_rack=rack, group_id=group),
        Listener(),
    )
    tp = TopicPartition(topic, 0)

    def read(n: int) -> list[PolledRecord]:
        got: list[PolledRecord] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            polled = consumer.poll(200)
            assert isinstance(polled, list | tuple), polled  # no truncation without faults
            got.extend(polled)
        return got

    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records = read(count)
        assert [(r.topic, r.partition, r.offset, r.value) for r in records] == [
            (topic, 0, i, f"v-{i}") for i in range(count)
        ]
        assert all(r.leader_epoch is not None and r.leader_epoch >= 0 for r in records)
        assert {r.replica for r in records} <= set(cluster.broker_ids)
        consumer.commit()
        consumer.seek_to_beginning(tp)
        again = read(1)
        assert again and again[0].offset == 0
    finally:
        consumer.close()
    # nothing else moved the position; a library that resolves the beginning lazily (kafka-python)
    # reports where seek_to_beginning landed as a reset
    assert all((c.offset, c.reason.value) == (0, "reset") for c in changes), changes
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap())  # observation, not the client under test
    try:
        committed = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    assert {(t.topic, t.partition): m.offset for t, m in committed.items()} == {(topic, 0): count}
