"""``highwater cluster up --backend compose`` keeps a compose cluster up for other processes:
``fault apply``/``heal`` attach to its containers (found by the label recorded in its state),
``cluster status`` shows it, ``cluster down`` removes every container. The real CLI, real
containers, real Kafka.

Run it under ``flock /tmp/hw-cluster.lock`` (one cluster at a time on the machine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from highwater.harness.compose.backend import docker_available, docker_client
from highwater.harness.compose.images import build_images
from highwater.harness.compose.reaping import LABEL_CLUSTER, LABEL_NODE
from highwater.harness.distribution import default_version

_REASON = docker_available()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"compose backend: {_REASON}")

HIGHWATER = str(Path(sys.executable).parent / "highwater")


def _cli(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HIGHWATER, *argv], capture_output=True, text=True, timeout=timeout)


def _containers(cluster_prefix: str) -> dict[str, Any]:
    """Every container of ours whose cluster label starts with ``cluster_prefix``, by node."""
    found = docker_client().containers.list(all=True, filters={"label": LABEL_CLUSTER})
    return {c.labels[LABEL_NODE]: c for c in found if c.labels[LABEL_CLUSTER].startswith(cluster_prefix)}


def test_cluster_up_keeps_a_compose_cluster_for_faults_status_and_down() -> None:
    version = default_version()
    build_images(version, lambda m: print(f"[images] {m}", flush=True))  # cached: seconds when built
    name = f"hwcli{os.getpid()}"
    up = _cli("cluster", "up", "--backend", "compose", "--name", name, "--kafka-version", version, "--broker-cpus", "1")
    try:
        assert up.returncode == 0, up.stderr
        assert "backend compose" in up.stdout and "  rack-b: 127." in up.stdout, up.stdout
        cluster_id = re.search(r"container=(\S+)-kafka-1\b", up.stdout).group(1)  # type: ignore[union-attr]
        assert cluster_id.startswith(name) and sorted(_containers(name)) == [
            "kafka-1",
            "kafka-2",
            "kafka-3",
            "toxiproxy",
        ]

        kill = _cli("fault", "apply", "--name", name, "kill", "--target", "broker:2")
        assert kill.returncode == 0 and "applied kill --target broker:2 -> kafka-2" in kill.stdout, kill
        assert _containers(name)["kafka-2"].status == "exited"  # killed through the engine, left down

        status = _cli("cluster", "status", "--name", name)
        assert f"cluster {name}: Kafka {version}" in status.stdout and "backend compose" in status.stdout, status

        heal = _cli("fault", "heal", "--name", name)
        assert heal.returncode == 0, heal  # heal waits until the restarted broker is back
        assert {n: c.status for n, c in _containers(name).items()} == dict.fromkeys(
            ("kafka-1", "kafka-2", "kafka-3", "toxiproxy"), "running"
        )
        for node in ("kafka-1", "kafka-2", "kafka-3"):  # the limit survives a kill and restart
            assert docker_client().containers.get(f"{cluster_id}-{node}").attrs["HostConfig"]["NanoCpus"] == 10**9
    finally:
        down = _cli("cluster", "down", "--name", name, timeout=180)
    assert down.returncode == 0 and "is down" in down.stdout, down
    assert _containers(name) == {}, "containers of the cluster survived 'cluster down'"
    assert "no cluster is up" in _cli("cluster", "status", "--name", name).stdout
