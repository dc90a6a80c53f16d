"""The external backend against a real cluster it did not start: a local cluster kept up by
``highwater cluster up`` in another process, described by a cluster file (its bootstrap servers
per rack, its Toxiproxy API and proxy names, and fault commands that call ``highwater fault``).
Every run here goes through the external backend only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from highwater.cli_cluster import manual_dir
from highwater.faults.capability import CapabilityError
from highwater.harness.backend import LinkControl, ProcessControl
from highwater.harness.config import NO_RACK, ClusterSpec
from highwater.harness.external import ExternalCluster, connect
from highwater.harness.paths import clusters_dir
from highwater.harness.toxiproxy import ToxiproxyAPI
from highwater.nemesis import Step, scripted
from highwater.run_spec import RunSpec
from highwater.runner import execute_run
from highwater.suites.nightly import nightly

HW = [sys.executable, "-m", "highwater.cli"]
HIGHWATER = str(Path(sys.executable).parent / "highwater")  # the installed command
PREFIX = "hwx-"


@pytest.fixture(scope="module")
def kept_up(kafka_version: str) -> Iterator[dict]:
    """A 3-broker, 3-rack local cluster in its own supervisor process; its cluster.json (plus
    what ``highwater cluster up`` printed). The one cluster of the CLI's own test too
    (``test_cluster_cli_status_and_faults_by_name``): ``highwater cluster down`` must stop it and
    leave no cluster directory behind."""
    name = f"ext-{os.getpid()}"
    up = subprocess.run(
        [
            HIGHWATER,
            "cluster",
            "up",
            "--name",
            name,
            "--brokers",
            "3",
            "--racks",
            "3",
            "--kafka-version",
            kafka_version,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        assert up.returncode == 0, up.stderr
        state = json.loads((manual_dir() / f"{name}.json").read_text())
        info = json.loads((Path(state["cluster_dir"]) / "cluster.json").read_text())
        info["name"] = name
        info["up_stdout"] = up.stdout
        yield info
    finally:
        down = subprocess.run(
            [HIGHWATER, "cluster", "down", "--name", name], capture_output=True, text=True, timeout=180
        )
    assert down.returncode == 0 and "is down" in down.stdout, down
    assert not [d for d in clusters_dir().iterdir() if d.name.startswith(name)]


def cluster_file(tmp: Path, info: dict, *, toxiproxy: bool, commands: bool, prefix: str = "") -> Path:
    lines = ["[cluster]", f'name = "{info["name"]}"', f'topic_prefix = "{prefix}"', "", "[bootstrap]"]
    for rack, servers in info["bootstrap"].items():
        key = "default" if rack == NO_RACK else rack
        lines.append(f"{key} = {json.dumps(servers)}")
    for name, node in sorted(info["nodes"].items()):
        lines += ["", "[[brokers]]", f"id = {node['node_id']}", f'rack = "{node["rack"]}"', f'host = "{name}"']
    if toxiproxy:
        host, port = info["toxiproxy"].rsplit(":", 1)
        api = ToxiproxyAPI(host, int(port))
        try:
            names = sorted(api.proxies())
        finally:
            api.close()
        lines += ["", "[toxiproxy]", f'api = "http://{info["toxiproxy"]}"', "[toxiproxy.proxies]"]
        lines += [f'"{n}" = "{n}"' for n in names]  # the local backend names proxies after links
    if commands:
        hw = " ".join(HW)
        lines += [
            "",
            "[commands]",
            f'kill = "{hw} fault apply --name {info["name"]} kill --target broker:{{id}}"',
            f'start = "{hw} fault heal --name {info["name"]}"',
        ]
    path = tmp / f"cluster-{int(toxiproxy)}{int(commands)}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def full_file(kept_up: dict, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cluster_file(tmp_path_factory.mktemp("ext"), kept_up, toxiproxy=True, commands=True)


@nightly(
    "the external backend's discovery, refusals and its command-line faults run in make test; the checks of a "
    "leader kill run there on the local backend",
    35,
)
def test_leader_kill_through_commands_passes_the_same_checks(full_file: Path, tmp_path: Path) -> None:
    ext = connect(ClusterSpec(brokers=3, racks=3), print, full_file)
    try:
        assert isinstance(ext, LinkControl) and isinstance(ext, ProcessControl)
        assert ext.broker_ids == [1, 2, 3] and ext.rack_of(2) == "rack-b"
        spec = RunSpec(
            suite="external",
            scenario="leader-kill",
            campaign="test",
            results_root=tmp_path,
            topic=PREFIX + "kill",
            duration=16,
            rate=50,
        )
        nemesis = scripted([Step(3, "kill --target leader:{topic}/0", 8)])
        result = execute_run(ext, spec, nemesis, progress=print)
        verdicts = {v.check: v for v in result.verdicts}
        for check in ("lost-write", "uncommitted-read", "poll-skip", "inconsistent-offsets"):
            assert verdicts[check].valid is True, verdicts[check].to_json()
        history = (result.dir / "history.jsonl").read_text()
        assert '"kill"' in history
    finally:
        ext.stop()
    # the topic it created is deleted at stop; nothing else was touched
    obs = ExternalCluster(ext.file, ClusterSpec(brokers=1, racks=1)).start()
    try:
        assert PREFIX + "kill" not in obs.observer().admin.list_topics()
    finally:
        obs.stop()


def test_partition_scenario_is_refused_without_toxiproxy(kept_up: dict, tmp_path: Path) -> None:
    path = cluster_file(tmp_path, kept_up, toxiproxy=False, commands=True, prefix=PREFIX)
    ext = connect(ClusterSpec(brokers=3, racks=3), None, path)
    try:
        assert not isinstance(ext, LinkControl)
        spec = RunSpec(suite="external", scenario="cut", results_root=tmp_path, topic=PREFIX + "cut", duration=5)
        with pytest.raises(CapabilityError) as exc:
            execute_run(ext, spec, scripted([Step(1, "cut --target leader:{topic}/0", 2)]))
        assert str(exc.value) == "fault 'cut' needs link control, which backend 'external' does not have"
        assert PREFIX + "cut" not in ext.observer().admin.list_topics()  # refused before anything started
    finally:
        ext.stop()


def run_rack_suite_on_external(cluster_file: Path, results: Path) -> subprocess.CompletedProcess[str]:
    """The fault-free KIP-392 rack suite in a child pytest with ``--backend external``."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "suites/conformance/test_kip392_fetching.py::test_each_rack_reads_from_its_own_replica",
            "--backend",
            "external",
            "--cluster-file",
            str(cluster_file),
            "--results",
            str(results),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


@nightly("the external backend's discovery, refusals and command-line faults stay in make test", 30)
def test_conformance_suite_runs_through_pytest_on_external(full_file: Path, tmp_path: Path) -> None:
    """A fault-free conformance suite (rack fetching) with ``--backend external --cluster-file``."""
    res = run_rack_suite_on_external(full_file, tmp_path)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]


def test_brokers_and_racks_discovered_from_metadata(kept_up: dict, tmp_path: Path) -> None:
    text = cluster_file(tmp_path, kept_up, toxiproxy=False, commands=False).read_text()
    head, _, _ = text.partition("\n[[brokers]]")
    path = tmp_path / "discover.toml"
    path.write_text(head.replace("[cluster]\n", "[cluster]\ndiscover = true\n", 1) + "\n")
    ext = connect(ClusterSpec(brokers=3, racks=3), None, path)
    try:
        assert ext.broker_ids == [1, 2, 3]
        assert [ext.rack_of(b) for b in ext.broker_ids] == ["rack-a", "rack-b", "rack-c"]
        assert not isinstance(ext, LinkControl) and not isinstance(ext, ProcessControl)
        # the timed checks' bounds come from the cluster's own settings
        assert ext.spec.broker_config["replica.lag.time.max.ms"] == "4000"
    finally:
        ext.stop()


def _proc_state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_cluster_cli_status_and_faults_by_name(kept_up: dict, kafka_version: str) -> None:
    """The cluster CLI on the kept-up cluster: ``up`` printed each rack's bootstrap servers and
    where the logs are; ``status --name`` and ``fault apply/heal --name`` act on it (a pause, a
    timed cut that heals itself, a bad fault kind as one line, then the heal); ``down`` is
    checked when the module ends. Last in this module: it leaves the cluster healed."""
    name = kept_up["name"]
    for rack in ("rack-a", "rack-b", "rack-c"):
        assert f"  {rack}: 127." in kept_up["up_stdout"]
    assert "logs: " in kept_up["up_stdout"]
    status = subprocess.run([HIGHWATER, "cluster", "status", "--name", name], capture_output=True, text=True)
    assert f"cluster {name}: Kafka {kafka_version}" in status.stdout
    pid2 = int(re.search(r"kafka-2: node.id=2 .* pid=(\d+)", status.stdout).group(1))  # type: ignore[union-attr]

    def fault(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [HIGHWATER, "fault", *argv[:1], "--name", name, *argv[1:]], capture_output=True, text=True, timeout=180
        )

    res = fault("apply", "pause", "--target", "broker:2")
    assert res.returncode == 0 and "applied pause --target broker:2 -> kafka-2" in res.stdout, res
    assert _proc_state(pid2) == "T"
    res = fault("apply", "cut", "--target", "broker:1", "--listener", "replication", "--duration", "1")
    assert res.returncode == 0 and "healed cut" in res.stdout, res
    bad = fault("apply", "explode", "--target", "broker:1")
    assert bad.returncode == 4 and bad.stderr.strip().startswith("highwater: error: unknown fault kind"), bad
    res = fault("heal")
    assert res.returncode == 0, res
    assert _proc_state(pid2) in ("S", "R")
