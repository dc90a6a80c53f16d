"""One KRaft node (broker, controller or both) as a JVM process: start/stop/kill/pause/resume
(a :class:`harness.backend.ControlledNode` of the local backend)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from pathlib import Path

from highwater.core.errors import ClusterError

from .. import tiered
from ..backend import NodeState
from ..clock import CLOCK_FILE, faked_env, find_libfaketime, remove_shm
from ..config import ClusterSpec, properties_text, render_properties
from ..distribution import KafkaDistribution, tiered_store_jar
from ..java_runtime import Java, jvm_base
from ..procs import ProcessRegistry, is_zombie_or_gone, signal_and_wait, spawn
from ..topology import Node, NodeHandle, Topology
from .broker_class_archive import archive_flags

log = logging.getLogger(__name__)


__all__ = ["KafkaNode", "NodeState"]


class KafkaNode(NodeHandle):
    """A node's files live in ``<cluster dir>/nodes/<name>/``: ``server.properties``, ``hosts``
    (the JVM's only name resolution, see harness.topology), ``data/`` and ``node.log``.

    ``die_with_parent``: the JVMs this handle starts die with this process (a test's cluster),
    or outlive it (a handle on a ``highwater cluster up`` cluster, see ``Cluster.attach``)."""

    def __init__(
        self,
        node: Node,
        topo: Topology,
        spec: ClusterSpec,
        dist: KafkaDistribution,
        java: Java,
        cluster_dir: Path,
        registry: ProcessRegistry,
        die_with_parent: bool = True,
    ) -> None:
        self.node = node
        self.dir = cluster_dir / "nodes" / node.name
        self.data_dir = self.dir / "data"
        self.log_path = self.dir / "node.log"
        self._topo = topo
        self._spec = spec
        self._dist = dist
        self._java = java
        self._cluster_dir = cluster_dir
        self._registry = registry
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None  # set with _proc, or alone for a JVM adopted by pid
        self.state = NodeState.NEW
        self.die_with_parent = die_with_parent

    @property
    def pid(self) -> int | None:
        return self._pid

    def adopt(self, pid: int) -> None:
        """Take over a JVM started by another highwater process (``highwater fault`` acting on a
        cluster that ``highwater cluster up`` started)."""
        self._proc, self._pid = None, pid
        if is_zombie_or_gone(pid):
            self.state = NodeState.STOPPED
        else:
            stat = Path(f"/proc/{pid}/stat").read_text()
            self.state = NodeState.PAUSED if stat[stat.rindex(")") + 2] == "T" else NodeState.RUNNING

    def _jvm_args(self) -> list[str]:
        return [
            *jvm_base(self._java, self._spec.heap_mb),
            *archive_flags(self._dist, self._java),
            f"-Djdk.net.hosts.file={self.dir / 'hosts'}",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.NetworkClient=warn",
            # A marker that proves this JVM belongs to this cluster dir (see harness.procs).
            f"-Dhighwater.cluster={self._cluster_dir}",
            "-cp",
            self._dist.classpath,
        ]

    @property
    def release(self) -> str:
        """The Kafka release this node runs (or runs next, after ``switch_release``)."""
        return self._dist.version

    def _write_config(self) -> None:
        (self.dir / "hosts").write_text(self._topo.hosts_file(self.node))
        props = render_properties(self._spec, self._topo, self.node, str(self.data_dir), self._dist.version)
        if self._spec.tiered:  # the store's jar is the release's: a roll writes it again
            jar = tiered_store_jar(self._dist.version)
            props = {**tiered.broker_config(self._cluster_dir / tiered.STORE_DIR, jar, "REPLICATION"), **props}
        (self.dir / "server.properties").write_text(properties_text(props))

    def switch_release(self, dist: KafkaDistribution, java: Java) -> None:
        """Run ``dist`` from the next start on, on the same data: its configuration is written
        again for that release (``render_properties`` differs by release). The node must be down."""
        if self.state in (NodeState.RUNNING, NodeState.PAUSED):
            raise ClusterError(f"cannot switch {self.name} to Kafka {dist.version}: it is {self.state.value}")
        self._dist, self._java = dist, java
        self._write_config()

    def prepare(self, cluster_id: str) -> None:
        """Write configs and format the storage (KRaft needs a formatted log dir)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        cmd = [
            *self._jvm_args(),
            "kafka.tools.StorageTool",
            "format",
            "-t",
            cluster_id,
            "-c",
            str(self.dir / "server.properties"),
            "--ignore-formatted",
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        (self.dir / "format.log").write_text(res.stdout + res.stderr)
        if res.returncode != 0:
            last = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise ClusterError(f"formatting storage of {self.name} failed: {last[0]} (see {self.dir / 'format.log'})")

    def start(self, die_with_parent: bool | None = None) -> None:
        if self.state in (NodeState.RUNNING, NodeState.PAUSED):
            raise ClusterError(f"{self.name} is already {self.state.value}")
        if die_with_parent is None:
            die_with_parent = self.die_with_parent
        cmd = [*self._jvm_args(), "kafka.Kafka", str(self.dir / "server.properties")]
        env = None
        if self._spec.clock == "faked":  # its wall clock reads the node's clock file (harness.clock)
            env = faked_env(self.dir / CLOCK_FILE, find_libfaketime())
            if self._pid is not None:
                remove_shm(self._pid)  # what libfaketime kept for the JVM before, if it was killed
        self._proc = spawn(cmd, log_path=self.log_path, cwd=self.dir, env=env, die_with_parent=die_with_parent)
        self._pid = self._proc.pid
        self._registry.add(self.name, self._proc.pid, str(self._cluster_dir))
        self.state = NodeState.RUNNING
        log.info("started %s (pid %d)", self.name, self._proc.pid)

    def is_alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self._pid is not None and not is_zombie_or_gone(self._pid)

    def _signal(self, sig: int, timeout: float) -> bool:
        if self._pid is None:
            return True
        gone = signal_and_wait(self._pid, sig, timeout)
        if gone and self._proc is not None:
            self._proc.wait(timeout=5)
        if gone and self._spec.clock == "faked":
            remove_shm(self._pid)  # a SIGKILLed JVM leaves libfaketime's /dev/shm objects behind
        return gone

    def _send(self, sig: int) -> None:
        if self._pid is not None:
            os.kill(self._pid, sig)

    def stop(self, timeout: float = 30.0) -> None:
        """Clean shutdown (SIGTERM: controlled shutdown), SIGKILL if it overruns ``timeout``."""
        if self.state == NodeState.PAUSED:
            self.resume()
        if not self._signal(signal.SIGTERM, timeout):
            log.warning("%s did not stop within %.0fs of SIGTERM; killing it", self.name, timeout)
            self._signal(signal.SIGKILL, 10)
        self.state = NodeState.STOPPED

    def kill(self) -> None:
        """SIGKILL: a crash; the log keeps whatever reached the page cache."""
        self._signal(signal.SIGKILL, 10)
        self.state = NodeState.STOPPED

    def pause(self) -> None:
        if self.state != NodeState.RUNNING or self._pid is None:
            raise ClusterError(f"cannot pause {self.name}: it is {self.state.value}")
        self._send(signal.SIGSTOP)
        self.state = NodeState.PAUSED

    def resume(self) -> None:
        if self.state != NodeState.PAUSED or self._pid is None:
            raise ClusterError(f"cannot resume {self.name}: it is {self.state.value}")
        self._send(signal.SIGCONT)
        self.state = NodeState.RUNNING

    def restart(self, clean: bool = True, die_with_parent: bool | None = None) -> None:
        """Stop (cleanly or by SIGKILL) and start again on the same data."""
        if self.state in (NodeState.RUNNING, NodeState.PAUSED):
            self.stop() if clean else self.kill()
        self.start(die_with_parent=die_with_parent)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def exit_cause(self) -> str:
        """Why the node's JVM exited, as its log says (``exit_cause``)."""
        try:
            return exit_cause(self.log_path.read_text(errors="replace"))
        except OSError:
            return "(no log)"


def exit_cause(log_text: str, lines: int = 3) -> str:
    """The last ``ERROR``/``FATAL`` lines of a node's log, or its last line when there is none:
    a Kafka that cannot start logs the cause, then a page of shutdown lines, so the log's tail
    alone hides it."""
    text = log_text.splitlines()
    causes = [line for line in text if " ERROR " in line or " FATAL " in line]
    return " | ".join(causes[-lines:] or text[-1:]) or "(an empty log)"
