"""Clock faults on a real cluster whose node JVMs read their wall clock through libfaketime
(``ClusterSpec(clock="faked")``, ``harness.clock``): a broker's clock jumps an hour ahead and back
and then drifts, proven by the broker's own timestamps (the log append time it stamps on a record
of a ``LogAppendTime`` topic and returns in the produce response); nothing is left running after
the cluster is gone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from highwater.core.history import HistoryWriter, read_history
from highwater.faults.inject import Injector
from highwater.faults.spec import parse_fault
from highwater.harness.clock import SHM_DIR, ClockError, find_libfaketime
from highwater.harness.local.cluster import Cluster
from highwater.harness.procs import ProcessRegistry, is_zombie_or_gone
from highwater.harness.waiting import wait_until
from highwater.suites.nightly import nightly


def _libfaketime_missing() -> str | None:
    try:
        find_libfaketime()
    except ClockError as exc:
        return str(exc)
    return None


pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(_libfaketime_missing() is not None, reason=str(_libfaketime_missing())),
]

TOPIC = "clock"
#: how far a measured offset may be from the one set: the produce round trip on loopback
SLACK_S = 1.0


def _broker_ahead(producer: KafkaProducer) -> float:
    """Seconds the broker's wall clock is ahead of ours: the log append time it stamped on a record
    minus the middle of our send-to-ack window."""
    before = time.time()
    stamped = producer.send(TOPIC, b"tick", partition=0).get(30).timestamp / 1000
    return float(stamped - (before + time.time()) / 2)


def _until(producer: KafkaProducer, good: Callable[[float], bool], what: str) -> float:
    """The broker's offset once ``good`` holds for it (libfaketime reads a new offset within ~1 s)."""
    seen: list[float] = []

    def check() -> bool:
        seen.append(_broker_ahead(producer))
        return good(seen[-1])

    wait_until(check, 15, lambda: f"the broker's clock is {what} (last seen {seen[-1:]})")
    return seen[-1]


def test_a_broker_s_clock_jumps_drifts_and_heals(cluster_factory: Any, tmp_path: Path) -> None:
    cluster: Cluster = cluster_factory(brokers=1, racks=1, clock="faked")
    cluster.create_topic(TOPIC, 1, 1, config={"message.timestamp.type": "LogAppendTime"})
    history = HistoryWriter(tmp_path / "history.jsonl", run_id="clock", kafka_version=cluster.kafka_version)
    injector = Injector(cluster, history)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks=1, linger_ms=0)
    try:
        assert abs(_broker_ahead(producer)) < SLACK_S, "a faked clock starts at the machine's time"

        jump = injector.apply(parse_fault("clock-jump --target broker:1 --offset 3600"))
        ahead = _until(producer, lambda s: s > 3000, "an hour ahead")
        assert abs(ahead - 3600) < SLACK_S, ahead
        injector.heal(jump)
        back = _until(producer, lambda s: abs(s) < SLACK_S, "back to the machine's")

        drift = injector.apply(parse_fault("clock-drift --target broker:1 --rate 2000"))  # 2 s per second
        clock = cluster.clock(1)
        assert clock.drifting() and cluster.dir is not None
        registry = ProcessRegistry(cluster.dir / "processes.json")
        stepper = [r.pid for r in registry.load() if r.name == "clock-drift-kafka-1"]
        first = _until(producer, lambda s: s > 1.5, "drifting ahead")
        later = _until(producer, lambda s: s > first + 1.5, "further ahead")
        injector.heal(drift)
        assert not clock.drifting() and clock.offset() == 0.0
        healed = _until(producer, lambda s: abs(s) < SLACK_S, "back after the drift")
    finally:
        producer.close(5)
        history.close()
    print(
        f"broker ahead: jump {ahead:+.3f}s, healed {back:+.3f}s; drift {first:+.3f}s then {later:+.3f}s, healed {healed:+.3f}s"
    )

    events = [e for e in read_history(history.path) if e["process"] == "nemesis" and e["type"] == "ok"]
    applied = [e["value"] for e in events if e["f"] == "fault"]
    assert applied[0]["params"] == {"offset": 3600.0} and applied[0]["clock"] == {"kafka-1": 3600.0}
    assert applied[1]["params"] == {"rate": 2000.0}
    healed_drift = [e["value"] for e in events if e["f"] == "heal"][1]
    assert healed_drift["clock"]["kafka-1"] > first, "the heal records where the drift had got to"

    cdir = cluster.dir
    assert cdir is not None
    processes = [r.pid for r in ProcessRegistry(cdir / "processes.json").load()]
    node_pid = cluster.node(1).pid
    assert node_pid is not None and len(stepper) == 1 and is_zombie_or_gone(stepper[0]), "healed: stepper gone"
    cluster.stop()
    assert all(is_zombie_or_gone(pid) for pid in processes), "nothing of the cluster is left running"
    assert not list(SHM_DIR.glob(f"*faketime_*_{node_pid}")), "libfaketime's objects of the killed JVM are gone"
    assert not cdir.exists()


def _created_within(cluster: Cluster, name: str, timeout: float) -> float | None:
    """Seconds until topic ``name`` (RF 3) exists with a leader and a full ISR (None: not within
    ``timeout``: the controller did not commit it)."""
    started = time.monotonic()
    try:
        cluster.create_topic(name, 1, 3, timeout=timeout)
    except Exception:  # noqa: BLE001 - a creation that does not finish is what is measured
        return None
    return time.monotonic() - started


def _produce_until(cluster: Cluster, topic: str, stop: threading.Event) -> None:
    """acks=all writes to ``topic`` until ``stop``: the load under which the stall shows."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks="all")
    try:
        while not stop.wait(0.005):
            producer.send(topic, b"x")
    finally:
        producer.close(5)


@nightly("HW-20 is intermittent; the clock faults' own test runs in make test", 35)
@pytest.mark.xfail(
    strict=False,  # seen in 1 of 5 runs of this test (and in both clock-suite runs): intermittent
    reason=(
        "FINDING HW-20 (Kafka 4.4.0): after the active KRaft controller's wall clock jumps back (ten minutes "
        "ahead for 20 s, then back, under a producer's load), the controller may stop committing: topic "
        "creations time out and brokers log 'Unable to send a heartbeat because the RPC got timed out before "
        "it could be sent' every second. See docs/findings.md."
    ),
)
def test_hw20_the_controller_s_clock_going_back_stalls_its_writes(cluster_factory: Any, tmp_path: Path) -> None:
    """The controller's writes after its clock went back: every topic creation in the next 60 s
    completes within 10 s, as before the jump and during it."""
    cluster: Cluster = cluster_factory(brokers=3, racks=3, clock="faked")
    assert _created_within(cluster, "load", 30) is not None
    history = HistoryWriter(tmp_path / "history.jsonl", run_id="hw20", kafka_version=cluster.kafka_version)
    injector = Injector(cluster, history)
    stop = threading.Event()
    load = threading.Thread(target=_produce_until, args=(cluster, "load", stop), daemon=True)
    load.start()
    try:
        jump = injector.apply(parse_fault("clock-jump --target controller --offset 600"))
        time.sleep(20)  # scenario time: the controller's clock stays ten minutes ahead under load
        ahead = _created_within(cluster, "ahead", 10)
        injector.heal(jump)  # its clock goes back ten minutes
        after = [_created_within(cluster, f"after-{i}", 10) for i in range(6)]
    finally:
        stop.set()
        load.join(10)
        history.close()
    print(f"HW-20: creation while ahead {ahead} s; after the jump back {after} (None: not within 10 s)")
    assert ahead is not None, "while its clock is ahead the controller commits"
    assert None not in after, f"after its clock went back the controller stopped committing: {after}"


def test_a_client_worker_s_clock_jumps_and_its_records_carry_it(cluster_factory: Any, tmp_path: Path) -> None:
    """A client's clock (``harness.clients.clocks``): a kafka-python worker started with faked
    clocks stamps its records' CreateTime from its own clock, ten minutes ahead once jumped."""
    from kafka import KafkaConsumer, TopicPartition

    from highwater.harness.client_common import ProducerSettings
    from highwater.harness.clients import get_driver
    from highwater.harness.clients.clocks import client_clock, fake_client_clocks

    cluster: Cluster = cluster_factory(brokers=1, racks=1)
    cluster.create_topic("client-clock", 1, 1)
    fake_client_clocks(tmp_path / "client-clocks")
    try:
        producer = get_driver("kafka-python").producer(ProducerSettings(cluster.bootstrap(), "clocked-producer"))
        try:
            producer.send("client-clock", 0, "now", lambda _: None)
            producer.flush(30)
            client_clock("clocked-producer").set_offset(600.0)
            time.sleep(1.5)  # scenario time: libfaketime re-reads the file once the second changes
            producer.send("client-clock", 0, "ahead", lambda _: None)
            producer.flush(30)
        finally:
            producer.close(10)
    finally:
        fake_client_clocks(None)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(), consumer_timeout_ms=5000)
    try:
        tp = TopicPartition("client-clock", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        stamps = {r.value.decode(): r.timestamp / 1000 for r in consumer}
    finally:
        consumer.close()
    assert abs(stamps["now"] - time.time()) < 60, stamps
    assert 590 < stamps["ahead"] - stamps["now"] < 620, f"the worker's clock moved ten minutes: {stamps}"
