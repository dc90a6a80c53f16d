"""No leaks after a kill -9 of the test process, and one clear line for bad input."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from highwater.core.errors import JavaError, PortInUseError
from highwater.harness.config import ClusterSpec
from highwater.harness.diskfs import mounts_under
from highwater.harness.distribution import UnknownKafkaVersion, ensure_kafka
from highwater.harness.java_runtime import find_java
from highwater.harness.lifecycle import listening_sockets, reap_stale
from highwater.harness.local.cluster import Cluster
from highwater.harness.procs import is_zombie_or_gone
from highwater.harness.topology import TopologyError
from highwater.harness.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _run_child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )


def _read_ready(proc: subprocess.Popen[str], timeout: float = 180) -> dict:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("READY "):
            return json.loads(line[len("READY ") :])
        if not line and proc.poll() is not None:
            raise AssertionError(f"child exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
    raise AssertionError("child never became ready")


def test_kill_9_of_the_test_process_leaves_nothing_running(kafka_version: str) -> None:
    """The run's brokers, Toxiproxy and disk layers (``disk="lossy"``: one FUSE mount per node)
    die with it; a disk layer killed at the same moment leaves its mount behind, dead, and the
    next start's reaper detaches it."""
    child = _run_child(f"""
        import json, time
        from highwater.harness.local.cluster import Cluster
        from highwater.harness.config import ClusterSpec
        c = Cluster(ClusterSpec(brokers=3, racks=3, kafka_version={kafka_version!r}, disk="lossy")).start()
        pids = [n.pid for n in c.nodes.values()] + [c._toxiproxy_proc.pid]
        disks = [d.proc.pid for d in c.disks.values()]
        print("READY " + json.dumps({{"dir": str(c.dir), "pids": pids, "disks": disks,
              "addresses": c.topo.all_listen_addresses()}}), flush=True)
        time.sleep(600)
    """)
    try:
        ready = _read_ready(child)
        toxiproxy_api = tuple(ready["addresses"][0])
        assert toxiproxy_api in listening_sockets(), "the check below must be able to see a listener"
    finally:
        child.kill()  # SIGKILL: no teardown code of the child runs
        if "ready" in locals():
            os.kill(ready["disks"][0], signal.SIGKILL)  # it cannot unmount: its mount stays, dead
        child.wait(10)
    pids = ready["pids"] + ready["disks"]
    # PR_SET_PDEATHSIG takes the brokers and Toxiproxy down with the killed process; the other
    # disk layers see their parent die and unmount themselves.
    wait_until(lambda: all(is_zombie_or_gone(p) for p in pids), 15, f"processes {pids} are gone")
    stale = Path(ready["dir"])
    assert stale.exists(), "the dead run's directory stays until the next run starts"
    assert len(mounts_under(stale)) == 1, "the killed disk layer's mount is left behind"
    # The next start reaps the dead run's directory and can bind every address it used.
    reaped = reap_stale()
    assert stale in [r.cluster_dir for r in reaped]
    assert not stale.exists() and mounts_under(stale) == []
    # No socket of the dead run still listens (sockets the kernel is still closing, in FIN_WAIT
    # or TIME_WAIT, hold no process and are not ours to reap).
    listening = listening_sockets()
    still = [tuple(a) for a in ready["addresses"] if tuple(a) in listening or ("0.0.0.0", a[1]) in listening]
    assert not still, f"{still} still listen after the dead run was reaped"


def test_reaper_kills_only_processes_it_can_prove_are_ours(tmp_path: Path) -> None:
    """A leftover process whose parent-death signal did not fire (here: started without it) is
    killed by the next run's reaper; a process with a recycled-looking record is left alone."""
    child = _run_child("""
        import json, os, sys, time
        from highwater.harness.paths import clusters_dir
        from highwater.harness.procs import OwnerLock, ProcessRegistry, spawn
        d = clusters_dir() / f"reaptest-{os.getpid()}"
        d.mkdir()
        lock = OwnerLock(d / "owner.lock"); assert lock.try_acquire()
        reg = ProcessRegistry(d / "processes.json")
        p = spawn([sys.executable, "-c", "import time; time.sleep(300)", str(d)], log_path=d / "sleep.log", die_with_parent=False)
        reg.add("sleeper", p.pid, str(d))
        print("READY " + json.dumps({"dir": str(d), "pid": p.pid}), flush=True)
        time.sleep(600)
    """)
    try:
        ready = _read_ready(child, 60)
    finally:
        child.kill()
        child.wait(10)
    innocent = subprocess.Popen(["sleep", "300"])  # same kind of process, not recorded: not ours
    try:
        assert not is_zombie_or_gone(ready["pid"]), "the orphan survives its parent's kill -9"
        reaped = {r.cluster_dir: r for r in reap_stale()}
        assert [k.pid for k in reaped[Path(ready["dir"])].killed] == [ready["pid"]]
        assert is_zombie_or_gone(ready["pid"])
        assert innocent.poll() is None
    finally:
        innocent.kill()
        innocent.wait()


def test_unknown_kafka_version_is_one_clear_error() -> None:
    with pytest.raises(UnknownKafkaVersion, match=r"Kafka 9\.9\.9 is not on Maven Central"):
        ensure_kafka("9.9.9")
    with pytest.raises(UnknownKafkaVersion, match="older than 3.3.1"):
        ensure_kafka("2.8.0")
    with pytest.raises(UnknownKafkaVersion, match="bad Kafka version"):
        ensure_kafka("latest-ish")


def test_more_racks_than_brokers_fails_fast() -> None:
    t0 = time.monotonic()
    with pytest.raises(TopologyError, match=r"more racks \(4\) than brokers \(3\)"):
        Cluster(ClusterSpec(brokers=3, racks=4)).start()
    assert time.monotonic() - t0 < 5


def test_missing_java_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(JavaError, match="has no bin/java"):
        find_java("4.1.0")
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaError, match="Java not found"):
        find_java("4.1.0")
    fake = tmp_path / "java"
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    fake.chmod(0o755)
    with pytest.raises(JavaError, match="Java 11 .* too old: Kafka 4.1.0 needs Java 17"):
        find_java("4.1.0")


def test_port_already_taken_is_one_clear_error(kafka_version: str) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        cluster = Cluster(ClusterSpec(brokers=3, racks=3, kafka_version=kafka_version, base_port=port))
        with pytest.raises(PortInUseError, match=f"port {port} is already in use"):
            cluster.start()
    assert cluster.nodes == {}  # nothing was started


def test_cli_bad_input_prints_one_line(tmp_path: Path) -> None:
    highwater = Path(sys.executable).parent / "highwater"
    cases = [
        (["cluster", "up", "--brokers", "2", "--racks", "3"], "more racks (3) than brokers (2)"),
        (["setup", "--kafka-version", "9.9.9"], "Kafka 9.9.9 is not on Maven Central"),
    ]
    for argv, expected in cases:
        res = subprocess.run([str(highwater), *argv], capture_output=True, text=True, timeout=300)
        assert res.returncode == 4, res  # refused: highwater.exit_codes.Exit.HARNESS
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert lines[-1].startswith("highwater: error: ") and expected in lines[-1], res.stderr
        assert "Traceback" not in res.stderr
