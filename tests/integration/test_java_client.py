"""The Java client driver beyond the contract every driver passes (test_workload.py): its
worker JVM never outlives the test process (closed, Ctrl-C, kill -9); on a real cluster a
rack-aware consumer names its rack's replica and reports an ``auto.offset.reset`` it applied
on its own as a ``reset`` before the records it then reads, and fault-free runs of the
workloads over it (rack consumers; a group with an idempotent producer) keep every promise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from highwater.core.history import read_history
from highwater.harness.clients import (
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    TopicPartition,
    get_driver,
)
from highwater.harness.local.cluster import Cluster
from highwater.harness.procs import is_zombie_or_gone
from highwater.harness.waiting import wait_until
from highwater.run_spec import RunSpec
from highwater.runner import execute_run
from tests.integration.kafka_util import produce_through_driver

# a consumer that cannot connect anywhere: the JVM starts all the same
_CHILD = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a Ctrl-C, even if our parent ignores it
from highwater.harness.clients import ConsumerSettings, get_driver
consumer = get_driver("java").consumer(ConsumerSettings(["127.0.0.1:1"], "java-orphan"), None)
print(consumer._worker.proc.pid, flush=True)
sys.stdin.read()  # until killed
"""


def _child_with_a_worker() -> tuple[subprocess.Popen[str], int]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    assert child.stdout is not None
    line = child.stdout.readline()  # the build (first time) and a JVM start come first
    assert line.strip().isdigit(), line
    return child, int(line)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_the_worker_dies_with_the_test_process(sig: signal.Signals) -> None:
    get_driver("java")  # builds the worker here, not inside the child's readline
    child, jvm = _child_with_a_worker()
    try:
        assert not is_zombie_or_gone(jvm)
        os.kill(child.pid, sig)
        child.wait(timeout=30)
        wait_until(lambda: is_zombie_or_gone(jvm), 10, f"the worker JVM {jvm} is gone after {sig.name}")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_close_ends_and_reaps_the_worker() -> None:
    consumer = get_driver("java").consumer(ConsumerSettings(["127.0.0.1:1"], "java-closed"), None)  # type: ignore[arg-type]
    proc = consumer._worker.proc
    consumer.close()
    assert proc.returncode == 0  # it exited on its close command, and was reaped


def test_rack_consumer_names_its_replica_and_reports_a_reset(cluster: Cluster) -> None:
    driver = get_driver("java")
    topic, count = "java-reset", 5
    produce_through_driver(driver, cluster, topic, count, "java-reset-producer")

    events: list[PositionChange | PolledRecord] = []

    class Listener:
        def on_position_change(self, change: PositionChange) -> None:
            events.append(change)

    rack = cluster.topo.racks[2]
    consumer = driver.consumer(
        ConsumerSettings(cluster.bootstrap(rack), "java-reset-consumer", client_rack=rack), Listener()
    )
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 1000)  # beyond the end: the Java client resets to earliest on its own
        deadline = time.monotonic() + 30
        while sum(isinstance(e, PolledRecord) for e in events) < count and time.monotonic() < deadline:
            polled = consumer.poll(200)
            assert isinstance(polled, list), polled
            events.extend(polled)
    finally:
        consumer.close()
    assert events[0] == PositionChange(topic, 0, 0, PositionReason.RESET), events
    records = [e for e in events[1:] if isinstance(e, PolledRecord)]
    assert [r.offset for r in records] == list(range(count)), events
    # KIP-392: every record came from the replica in the consumer's rack (the leader's, if it
    # is the one there)
    assert {cluster.rack_of(r.replica) for r in records if r.replica is not None} == {rack}, records
    assert all(r.replica is not None for r in records), records


def test_a_refused_configuration_is_one_line_and_leaves_no_worker() -> None:
    from highwater.harness.clients.worker import WorkerError, live_workers

    before = len(live_workers())
    with pytest.raises(WorkerError) as err:
        # Java refuses idempotence without acks=all when the producer is made
        get_driver("java").producer(ProducerSettings(["127.0.0.1:1"], "java-refused", acks=1, idempotence=True))
    assert str(err.value).startswith("ConfigException: ") and "\n" not in str(err.value)
    assert len(live_workers()) == before


@pytest.mark.parametrize(
    "mode, acks, idempotence", [("assign", "1", False), ("subscribe", "all", True)], ids=["assign", "group"]
)
def test_a_run_on_the_java_client_keeps_every_promise(
    cluster: Cluster, tmp_path: Path, mode: str, acks: str, idempotence: bool
) -> None:
    """The workloads over the Java driver, without faults: rack consumers (assign mode, every
    record attributed to a broker) or a group with auto-commit and an idempotent producer
    leave every check valid."""
    spec = RunSpec(
        suite="workload",
        scenario=f"java-{mode}",
        campaign="test",
        results_root=tmp_path,
        duration=10,
        partitions=3,
        rate=50,
        consumer_mode=mode,
        acks=acks,
        idempotence=idempotence,
        topic=f"java-{mode}",
        client="java",
    )
    result = execute_run(cluster, spec, progress=print)
    assert [v.check for v in result.verdicts if v.valid is False] == []
    history = read_history(result.dir / "history.jsonl")
    assert history.header["client"].startswith("java ")
    polls = [r for e in history if e["f"] == "poll" and e["type"] == "ok" for r in e["value"]["records"]]
    assert polls and all(r["leader_epoch"] is not None and r["replica"] in cluster.broker_ids for r in polls)
    assert sum(p["acked"] for p in result.stats["producers"].values()) > 0
