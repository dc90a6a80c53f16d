"""Client faults on a real cluster: a consumer group whose members are frozen (SIGSTOP, as a long
GC pause) and killed (SIGKILL, then started again on heal), with the group's checks judging the
run; two versions of one Python client side by side in one session; and workers that never
outlive a killed harness."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.clients import ConsumerSettings, ProducerSettings, SendOutcome, TopicPartition, WorkerGone, get_driver
from harness.clients.worker import live_workers
from harness.cluster import Cluster
from harness.history import read_history
from harness.procs import is_zombie_or_gone
from harness.waiting import wait_until
from highwater.nemesis import Step, scripted
from highwater.runner import RunSpec, execute_run

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms: a frozen member is evicted fast


# confluent-kafka only: kafka-python's group members are killed and restarted in the group
# scenario (suites/conformance/test_groups.py, on the session's client) and in the client bisect
# (tests/integration/test_client_bisect.py, three kafka-python releases); this 50 s run on
# kafka-python as well would cost make test a minute for no new path
@pytest.mark.parametrize("client", ["confluent-kafka"])
def test_group_members_frozen_and_killed_keep_every_promise(cluster: Cluster, tmp_path: Path, client: str) -> None:
    """consumer-1 is frozen for 2.5 session timeouts (evicted; its partitions move to the others;
    thawed, it rejoins), then consumer-2 is killed (evicted; on heal a new worker of the same id
    rejoins). Every check holds, and the history shows the freeze, the death and the rejoin."""
    spec = RunSpec(
        suite="client-faults",
        scenario=f"group-freeze-kill-{client}",
        campaign="test",
        results_root=tmp_path,
        duration=50,
        partitions=3,
        rate=50,
        consumer_mode="subscribe",
        session_timeout_ms=SESSION_MS,
        topic=f"cf-group-{client}",
        client=client,
    )
    nemesis = scripted(
        (
            Step(8, "client-freeze --target client:consumer-1", 15),
            Step(5, "client-kill --target client:consumer-2", 10),
        )
    )
    result = execute_run(cluster, spec, nemesis, progress=print)
    assert [v.check for v in result.verdicts if v.valid is False] == [], result.verdicts
    events = list(read_history(result.dir / "history.jsonl"))
    faults = [e for e in events if e["process"] == "nemesis" and e["f"] == "fault" and e["type"] == "ok"]
    assert [(e["value"]["kind"], e["value"]["targets"]) for e in faults] == [
        ("client_freeze", ["consumer-1"]),
        ("client_kill", ["consumer-2"]),
    ]
    killed_at = faults[1]["time_ns"]
    death = [e for e in events if e["process"] == "consumer-2" and e["type"] == "info" and e["time_ns"] >= killed_at]
    assert death and "WorkerGone" in str(death[0]["error"]) and "client-kill" in str(death[0]["error"]), death[:3]
    # the frozen member lost its partitions to the others while it was frozen, and both came back
    rebalances = [e for e in events if e["f"] == "assign" and e["value"]["reason"] == "rebalance"]
    assert {e["process"] for e in rebalances if e["time_ns"] > faults[0]["time_ns"]} >= {"consumer-0"}
    for member in ("consumer-1", "consumer-2"):
        back = [e for e in events if e["process"] == member and e["f"] == "poll" and e["type"] == "ok"]
        assert back and back[-1]["time_ns"] > killed_at, f"{member} read nothing after the faults"
    assert not [w for w in live_workers() if w.info.client_id.startswith("consumer-")]


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
from harness.clients import ConsumerSettings, get_driver
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
