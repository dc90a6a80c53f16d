"""The compose backend on real containers (local images, no registry): boot, a rack consumer
served by its rack's broker (proven by the proxies' byte counters), a leader kill and a leader
partition judged by the durability checks, CPU and memory limits on every node container, no
container left after teardown, a dead owner's containers reaped, and a rendered file (with
limits) brought up and down once with Debian's docker-compose.

Run it under ``flock /tmp/highwater-cluster.lock``. It skips, with one line, only where no
Docker daemon can answer."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from highwater.core.history import read_history
from highwater.harness.compose.backend import ComposeCluster, docker_available, docker_client
from highwater.harness.compose.images import build_images, kafka_image, toxiproxy_image
from highwater.harness.compose.reaping import LABEL_CLUSTER, LABEL_NODE, owner_labels, reap_dead_owners
from highwater.harness.config import ClusterSpec
from highwater.harness.distribution import default_version
from highwater.harness.waiting import wait_until
from highwater.profiles import get_profile
from highwater.suites.nightly import nightly
from highwater.suites.scenario import PLANS, TIMED_CHECKS, Plan, check_verdicts, run_plan

from .kafka_util import bytes_served, consume_all, produce

_REASON = docker_available()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"compose backend: {_REASON}")


def _ours(cluster_id: str | None = None) -> list[object]:
    label = LABEL_CLUSTER if cluster_id is None else f"{LABEL_CLUSTER}={cluster_id}"
    return list(docker_client().containers.list(all=True, filters={"label": label}))


@pytest.fixture(scope="module")
def version() -> str:
    v = default_version()
    build_images(v, lambda m: print(f"[images] {m}", flush=True))  # cached: seconds when built
    return v


MEMORY = "1g"  # the module cluster's limit: three times what a broker with a 320 MB heap uses


def _host_cpus() -> float:
    """The module cluster's CPU limit: every CPU the engine has. The tests here prove that the
    engine carries the limit; a binding quota would only slow the others (CFS throttling)."""
    return float(docker_client().info()["NCPU"])


@pytest.fixture(scope="module")
def cluster(version: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeCluster]:
    spec = ClusterSpec(kafka_version=version, name="hwcompose", broker_cpus=_host_cpus(), broker_memory=MEMORY)
    c = ComposeCluster(spec, lambda m: print(m, flush=True))
    c.start()
    cid = c.cluster_id
    try:
        yield c
    finally:
        c.stop(collect_logs_to=tmp_path_factory.mktemp("compose-logs"))
        assert _ours(cid) == [], "containers of the cluster survived its teardown"


def test_boots_with_racks_and_the_rack_aware_selector(cluster: ComposeCluster) -> None:
    assert cluster.broker_ids == [1, 2, 3]
    for b in cluster.broker_ids:
        assert cluster.observer().describe_broker_config(b, "broker.rack") == cluster.rack_of(b)
    assert len(_ours(cluster.cluster_id)) == 4  # three brokers and the proxy


def _container(cluster_id: str, node: str) -> Any:
    """The container of ``node`` in full (a listed one lacks most of ``HostConfig``)."""
    listed: list[Any] = _ours(cluster_id)
    return docker_client().containers.get(next(c.id for c in listed if c.labels[LABEL_NODE] == node))


def _limits(container: Any) -> tuple[int, int]:
    """What the engine enforces on a container: (NanoCpus, Memory in bytes); 0 means no limit."""
    host = container.attrs["HostConfig"]
    return host["NanoCpus"], host["Memory"]


def test_every_node_container_carries_the_cpu_and_memory_limits(cluster: ComposeCluster) -> None:
    for b in cluster.broker_ids:
        assert _limits(_container(cluster.cluster_id, f"kafka-{b}")) == (round(_host_cpus() * 1e9), 1024**3)
    assert _limits(_container(cluster.cluster_id, "toxiproxy")) == (0, 0)  # not a Kafka node: unlimited


def test_rack_consumer_reads_from_its_racks_broker(cluster: ComposeCluster) -> None:
    cluster.create_topic("cff", partitions=1, replication_factor=3)
    count, size = 2000, 1000
    produce(cluster, "cff", count, size)  # type: ignore[arg-type]
    state = cluster.partition_state("cff", 0)
    follower = next(r for r in state.replicas if r != state.leader)
    rack = cluster.rack_of(follower)
    before = cluster.client_bytes(rack)
    assert consume_all(cluster, "cff", count, rack=rack, client_rack=rack) == count  # type: ignore[arg-type]
    served = bytes_served(cluster, rack, before)
    assert served[follower] >= count * size, f"the {rack} follower {follower} did not serve: {served}"
    assert served[state.leader] < count * size / 10, f"the leader served too much: {served}"


#: the durability suite's leader-kill and leader-partition faults in one run (one run is ~40 s
#: of make test less than two): the kill goes through the engine, the cut through the Toxiproxy
#: container
KILL_THEN_CUT = Plan(
    "durability",
    "leader-kill-then-cut",
    (*PLANS["durability/leader-kill"].steps, *PLANS["durability/leader-partition"].steps),
    PLANS["durability/leader-kill"].must_hold,
    what="leader killed, then the (new) leader cut off: no loss, no uncommitted read, no skip",
)


@nightly(
    "the compose backend's boot, racks, rack reads, faults through the engine and reaping run in make test; "
    "the durability suite's faults run there on the local backend",
    80,
)
def test_durability_under_leader_faults(cluster: ComposeCluster, tmp_path: Path) -> None:
    """The durability suite's own faults (suites.scenario.PLANS), on containers."""
    result = run_plan(
        cluster,
        KILL_THEN_CUT,
        profile=get_profile("ci"),
        campaign="compose",
        results_root=tmp_path,
        repro="pytest tests/integration/test_compose.py -k durability",
        acks="all",
        min_insync_replicas=2,
        topic="cdur",
    )
    check_verdicts([v for v in result.verdicts if v.check not in TIMED_CHECKS], KILL_THEN_CUT.must_hold)
    faults = [e for e in read_history(result.dir / "history.jsonl") if e["f"] == "fault" and e["type"] == "ok"]
    assert [e["value"]["kind"] for e in faults] == ["kill", "cut"]


def test_pause_and_restart_go_through_the_engine(cluster: ComposeCluster) -> None:
    node = cluster.node(3)
    node.pause()  # type: ignore[attr-defined]
    assert docker_client().containers.get(f"{cluster.cluster_id}-kafka-3").status == "paused"
    node.resume()  # type: ignore[attr-defined]
    node.restart(clean=True)  # type: ignore[attr-defined]
    cluster.wait_for_brokers(90)


def test_a_dead_owners_container_is_reaped(version: str) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    labels = {**owner_labels("hw-orphan", "toxiproxy"), "highwater.owner-pid": str(dead.pid)}
    c = docker_client().containers.create(toxiproxy_image(), ["-help"], labels=labels, name=f"hw-orphan-{dead.pid}")
    assert c.name in reap_dead_owners(docker_client())
    assert _ours("hw-orphan") == []


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose is not installed")
def test_a_rendered_file_comes_up_and_down_with_docker_compose(version: str, tmp_path: Path) -> None:
    f = tmp_path / "docker-compose.yml"
    project = f"hwrender{int(time.time())}"
    cmd = [
        sys.executable,
        "-m",
        "highwater.cli",
        "compose",
        "render",
        "--kafka-version",
        version,
        "--brokers",
        "1",
        "--racks",
        "1",
        "--slot",
        "48",
        "--base-port",
        "29092",
        "--name",
        project,
        "--broker-cpus",
        "1.5",
        "--broker-memory",
        "768m",
        "-o",
        str(f),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    assert kafka_image(version) in f.read_text()
    compose = ["docker-compose", "-p", project, "-f", str(f)]
    try:
        subprocess.run([*compose, "up", "-d"], check=True, capture_output=True, timeout=120)
        from kafka import KafkaAdminClient

        def answers() -> bool:
            try:
                admin = KafkaAdminClient(bootstrap_servers="127.148.200.1:29094", request_timeout_ms=3000)
            except Exception:  # noqa: BLE001 - not up yet
                return False
            try:
                return bool(admin.describe_cluster()["brokers"])
            finally:
                admin.close()

        wait_until(answers, 90, "the docker-compose cluster answers through its client proxy")
        assert _limits(_container(project, "kafka-1")) == (1_500_000_000, 768 * 1024**2)
    finally:
        subprocess.run([*compose, "down", "-v"], capture_output=True, timeout=120)
    assert _ours(project) == []
