"""Client workers on a real cluster: two versions of one Python client side by side in one
session, and workers that never outlive a killed harness. Group members frozen and killed (the
client faults) are the groups suite's member-faults scenario, on both group protocols
(suites/conformance/test_groups.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from highwater.harness.clients import (
    ConsumerSettings,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    WorkerGone,
    get_driver,
)
from highwater.harness.clients.worker import live_workers
from highwater.harness.local.cluster import Cluster
from highwater.harness.procs import is_zombie_or_gone
from highwater.harness.waiting import wait_until


def test_two_versions_of_one_client_run_side_by_side(cluster: Cluster) -> None:
    """kafka-python 3.0.5 and the installed release, each in its own worker, in one process."""
    topic = "cf-two-versions"
    cluster.create_topic(topic, 1, 3)
    drivers = [get_driver("kafka-python==3.0.5"), get_driver("kafka-python")]
    assert drivers[0].version == "3.0.5" and drivers[1].version != "3.0.5"
    for n, driver in enumerate(drivers):
        outcomes: list[SendOutcome] = []
        producer = driver.producer(ProducerSettings(cluster.bootstrap(), f"two-{n}"))
        try:
            producer.send(topic, 0, f"v{n}", outcomes.append)
            producer.flush(30)
        finally:
            producer.close(10)
        assert [o.outcome.value for o in outcomes] == ["ok"], outcomes
    reader = drivers[0].consumer(ConsumerSettings(cluster.bootstrap(), "two-reader"), _Quiet())
    try:
        reader.assign([TopicPartition(topic, 0)])
        reader.seek(TopicPartition(topic, 0), 0)
        got: list[str | None] = []
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            polled = reader.poll(200)
            assert isinstance(polled, list), polled
            got.extend(r.value for r in polled)
        assert got[:2] == ["v0", "v1"]
    finally:
        reader.close()


class _Quiet:
    def on_position_change(self, change: object) -> None:
        return None


_CHILD = """
import sys
from highwater.harness.clients import ConsumerSettings, get_driver
consumer = get_driver(sys.argv[1]).consumer(ConsumerSettings(sys.argv[2].split(","), "orphan"), None)
print(consumer.process.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_a_killed_harness_leaves_no_worker(cluster: Cluster, client: str) -> None:
    """The test process dies by SIGKILL: its Python worker ends itself within a second."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, client, ",".join(cluster.bootstrap())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    pid = int(child.stdout.readline())
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    wait_until(lambda: is_zombie_or_gone(pid), 10, f"worker {pid} ended after its parent was killed")


def test_a_dead_worker_is_reported_not_silent(cluster: Cluster) -> None:
    """A worker killed under its owner: the next call raises WorkerGone at once, naming how it
    died, and a producer's sends in flight end ``info``."""
    driver = get_driver("kafka-python")
    consumer = driver.consumer(ConsumerSettings(cluster.bootstrap(), "doomed"), _Quiet())
    try:
        consumer.process.crash("killed by the fault f9 (client-kill)")
        started = time.monotonic()
        with pytest.raises(WorkerGone, match="f9"):
            consumer.poll(100)
        assert time.monotonic() - started < 10
    finally:
        consumer.close()
    assert consumer.process not in live_workers()
