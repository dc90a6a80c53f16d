"""A class-data-sharing archive per Kafka release and Java, so broker JVMs start faster.

On two cores a cluster's boot is mostly JVMs loading and verifying Kafka's classes: three nodes
formatting their storage, then three nodes starting at once. A dynamic AppCDS archive
(``-XX:ArchiveClassesAtExit``, JDK 13+) holds those classes pre-parsed; a JVM started with
``-XX:SharedArchiveFile`` maps it instead (measured: ``StorageTool format`` 0.65 s -> 0.34 s;
``benchmarks/cluster_boot.py`` shows the effect on a whole boot). Sweeps start many clusters, so
this is paid once per release and saved on every boot.

The archive is made by a *training run*: one combined KRaft node on loopback, formatted,
started with ``-XX:ArchiveClassesAtExit`` until it serves, then stopped cleanly (SIGTERM: the
JVM writes the archive on a normal exit; cluster teardown uses SIGKILL, which would not).
Speed must never cost correctness or a run: when training fails, or a JVM finds the archive
does not match its classpath, the JVM simply loads classes the usual way (``-Xshare:auto``).
"""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from highwater.core.errors import ClusterError, HighwaterError

from ..distribution import KafkaDistribution, _DirLock
from ..java_runtime import Java
from ..lifecycle import accepts_connection, pick_base_port
from ..procs import signal_and_wait, spawn
from ..waiting import wait_until

log = logging.getLogger(__name__)

TRAINING_TIMEOUT_S = 90.0
_HOST = "127.0.0.1"


def archive_path(dist: KafkaDistribution, java: Java) -> Path:
    return dist.libs.parent / f"classes-java{java.major}.jsa"


def archive_flags(dist: KafkaDistribution, java: Java) -> list[str]:
    """The JVM flag that maps the archive, or nothing when there is none yet."""
    path = archive_path(dist, java)
    return [f"-XX:SharedArchiveFile={path}"] if path.exists() else []


def _training_properties(data: Path, port: int) -> str:
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@{_HOST}:{port + 1}",
            f"listeners=PLAINTEXT://{_HOST}:{port},CONTROLLER://{_HOST}:{port + 1}",
            "controller.listener.names=CONTROLLER",
            f"log.dirs={data}",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "",
        ]
    )


def ensure_class_archive(
    dist: KafkaDistribution, java: Java, jvm_base: list[str], progress: Callable[[str], None]
) -> Path | None:
    """The archive of ``dist`` on ``java``, made by a training run if missing; None when it
    could not be made (the reason is logged; brokers then start without it).

    ``jvm_base`` is the java command and the flags the nodes use (heap, GC, JIT level), so the
    archive is made under the same settings it is used with."""
    path = archive_path(dist, java)
    if path.exists():
        return path
    with _DirLock(dist.libs.parent / ".classes.lock"):
        if path.exists():
            return path
        progress(f"training a class archive for Kafka {dist.version} on Java {java.major} (once per release)")
        t0 = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix="highwater-cds-"))
        try:
            made = _train(dist, jvm_base, work)
            if made is None:
                return None
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:6]}")
            shutil.move(str(made), tmp)
            tmp.replace(path)
            progress(f"class archive ready in {time.monotonic() - t0:.1f}s ({path})")
            return path
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _train(dist: KafkaDistribution, jvm_base: list[str], work: Path) -> Path | None:
    port = pick_base_port(2)
    props = work / "server.properties"
    props.write_text(_training_properties(work / "data", port))
    cp = ["-cp", dist.classpath]
    fmt = subprocess.run(
        [*jvm_base, *cp, "kafka.tools.StorageTool", "format", "-t", "highwaterCDStraining0", "-c", str(props)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if fmt.returncode != 0:
        log.warning("class archive: formatting the training node failed: %s", fmt.stderr[-300:])
        return None
    archive = work / "classes.jsa"
    proc = spawn(
        [*jvm_base, f"-XX:ArchiveClassesAtExit={archive}", *cp, "kafka.Kafka", str(props)],
        log_path=work / "node.log",
        cwd=work,
    )

    def serving() -> bool:
        if proc.poll() is not None:
            raise ClusterError(f"the training node exited (log: {work / 'node.log'})")
        return accepts_connection(_HOST, port, timeout=0.5)

    try:
        try:
            wait_until(serving, TRAINING_TIMEOUT_S, "the class-archive training node serves")
        except HighwaterError as exc:
            log.warning("class archive: %s", exc)
            return None
        # a clean exit writes the archive; give the dump its own deadline
        if not signal_and_wait(proc.pid, signal.SIGTERM, TRAINING_TIMEOUT_S):
            log.warning("class archive: the training node did not exit on SIGTERM")
            return None
    finally:
        if proc.poll() is None:
            signal_and_wait(proc.pid, signal.SIGKILL, 10)
        proc.wait(10)
    if not archive.exists() or archive.stat().st_size == 0:
        log.warning("class archive: the training node wrote no archive (log: %s)", work / "node.log")
        return None
    return archive
