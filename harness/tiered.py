"""Tiered storage (KIP-405) on a local cluster: old log segments copied to a remote store that is a
directory of this machine, and read back through the brokers.

The remote store is Kafka's own ``LocalTieredStorage`` (``org.apache.kafka.server.log.remote.
storage``), the RemoteStorageManager its integration tests use: one directory every broker shares
(``rsm.config.dir``), a file per segment and index named by the segment's base offset, under
``kafka-tiered-storage/<topic>-<partition>-<topic id>/``. It is not in a Kafka release's runtime
jars: Maven Central serves it in ``kafka-storage``'s test jar for 3.6-4.3 (classifier ``test``)
and, since 4.4, in its ``test-fixtures`` jar; it needs nothing beyond what a broker's classpath
already holds (kafka-clients, kafka-storage, kafka-storage-api, slf4j). The broker loads it
from that one jar through ``remote.log.storage.manager.class.path`` (its own class loader), so
the jar stays out of the broker's classpath. Why Kafka's rather than a store of ours: it is the
store Kafka's tiered-storage tests judge Kafka against, and it has a hook for copy failures.

The remote log metadata goes to Kafka's topic-based manager (``__remote_log_metadata``), whose
clients reach the brokers through the replication listener (``remote.log.metadata.manager.
listener.name``). The defaults that make tiering wait (the copy task every 30 s, the local
retention check every 5 min, its first run 30 s after start, 50 metadata partitions) are
lowered (one metadata partition) so that a segment is copied and deleted locally within a second or two (measured on
4.4.0: every offset of a 3-replica topic tiered and deleted locally within ~2 s).

A topic tiers when created with :func:`topic_config`: ``remote.storage.enable``, a local
retention of one second, and short segments: rolled by time, every ``SEGMENT_MS`` (a roll on the
first append a second after a segment's first record), the same from 3.6 to 4.4
(``segment.bytes`` may not go below 1 MiB from 4.1; KIP-1030 raises ``segment.ms``'s minimum to a
minute in 5.0, when this must change). Not by a tiny offset index
(``segment.index.bytes`` of a few entries with ``index.interval.bytes=1``, what Kafka's own
tiered-storage harness does): since KAFKA-806 one follower append may add an index entry per
batch, and a follower whose fetch carried more batches than its active segment's index had room
for failed the partition ("Attempt to append to a full index") and left the ISR for good (HW-25).

Releases: early access in 3.6, production-ready in 3.9 (KIP-405); :func:`tiered_refusal` says in
one line why an older release cannot.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from highwater.core.errors import HighwaterError
from highwater.core.versions import release_at_least

if TYPE_CHECKING:  # the backend protocol imports this module's names
    from highwater.harness.backend import ClusterBackend

#: the first release with tiered storage (early access; production-ready in 3.9)
TIERED_SINCE = (3, 6)
#: since when ``LocalTieredStorage`` is in ``kafka-storage``'s ``test-fixtures`` jar, not its ``test`` jar
TEST_FIXTURES_SINCE = (4, 4)
RSM_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
#: the remote store's directory, in the cluster's directory (every node shares it)
STORE_DIR = "remote-store"
#: the remote store as a fault's party (``--target store``): its disk layer, on a tiered cluster
#: whose disks are lossy (``DiskControl.disk(STORE_PARTY)``)
STORE_PARTY = "remote-store"
#: how long a tiered topic's segment takes records before it rolls (``segment.ms``)
SEGMENT_MS = 1000
#: how long a tiered topic keeps a segment locally once it is in the remote store
LOCAL_RETENTION_MS = 1000
#: the period of the tasks that copy segments and delete them locally
TASK_INTERVAL_MS = 500


@runtime_checkable
class RemoteStore(Protocol):
    """A cluster whose remote store is a directory of this machine (the local backend's)."""

    @property
    def remote_store(self) -> Path: ...


class TieredStorageError(HighwaterError):
    """A release without tiered storage, or its store's jar that could not be fetched."""


def tiered_refusal(kafka_version: str) -> str | None:
    """Why Kafka ``kafka_version`` cannot run tiered storage (one line), or None."""
    if release_at_least(kafka_version, TIERED_SINCE):
        return None
    return (
        f"Kafka {kafka_version} has no tiered storage (KIP-405: early access in "
        f"{TIERED_SINCE[0]}.{TIERED_SINCE[1]}, production-ready in 3.9)"
    )


def store_artifact(kafka_version: str) -> tuple[str, str]:
    """The Maven artifact (``group:artifact:version:jar:classifier``) that holds
    ``LocalTieredStorage`` for ``kafka_version``, and the jar's file name."""
    classifier = "test-fixtures" if release_at_least(kafka_version, TEST_FIXTURES_SINCE) else "test"
    return (
        f"org.apache.kafka:kafka-storage:{kafka_version}:jar:{classifier}",
        f"kafka-storage-{kafka_version}-{classifier}.jar",
    )


#: the topic-based remote log metadata manager's topic (one partition here: ``broker_config``)
METADATA_TOPIC = "__remote_log_metadata"


def broker_config(store: Path, jar: Path, listener: str) -> dict[str, str]:
    """What every node of a tiered cluster adds to its ``server.properties`` (a controller too:
    it validates topic configs against ``remote.log.storage.system.enable``)."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": RSM_CLASS,
        "remote.log.storage.manager.class.path": str(jar),
        "rsm.config.dir": str(store),
        "remote.log.metadata.manager.listener.name": listener,
        # one partition: the metadata of every tiered partition has one leader, the one
        # tiered/metadata-leader-kill kills (``METADATA_TOPIC``)
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "3",
        "remote.log.manager.task.interval.ms": str(TASK_INTERVAL_MS),
        "log.retention.check.interval.ms": str(TASK_INTERVAL_MS),
        "log.initial.task.delay.ms": str(TASK_INTERVAL_MS),
    }


#: a tiered run's topics keep every record (``retention.ms``): their log start may not move,
#: which the ``log-start`` check holds them to (the header records it as ``retention_ms``)
RETENTION_MS = -1


def topic_config(retention_ms: int = RETENTION_MS) -> dict[str, str]:
    """A topic that tiers: copied to the remote store as soon as a segment rolls (every
    ``SEGMENT_MS``), deleted locally ``LOCAL_RETENTION_MS`` later, kept remotely for good
    (``RETENTION_MS``) or ``retention_ms``."""
    return {
        "remote.storage.enable": "true",
        "retention.ms": str(retention_ms),
        "local.retention.ms": str(LOCAL_RETENTION_MS),
        "segment.ms": str(SEGMENT_MS),
    }


def _partition_dirs(store: Path, topic: str) -> dict[int, list[Path]]:
    """The remote store's folders of ``topic``, by partition: ``LocalTieredStorage`` names each
    ``<topic>-<partition>-<topic id>``, the id 22 characters of URL-safe base64 (which may hold
    ``-``, so the name is matched whole, never split)."""
    pattern = re.compile(re.escape(topic) + r"-(\d+)-[A-Za-z0-9_-]{22}")
    out: dict[int, list[Path]] = {}
    for d in (store / "kafka-tiered-storage").glob(f"{topic}-*"):
        m = pattern.fullmatch(d.name)
        if m and d.is_dir():
            out.setdefault(int(m.group(1)), []).append(d)
    return out


def remote_segments(store: Path, topic: str, partition: int) -> list[int]:
    """The base offsets of ``topic``-``partition``'s segments in the remote store, sorted (its
    ``.log`` files are named ``<20-digit base offset>-<uuid>.log``)."""
    out: set[int] = set()
    for d in _partition_dirs(store, topic).get(partition, []):
        out.update(int(f.name.split("-", 1)[0]) for f in d.glob("*.log") if f.name[:20].isdigit())
    return sorted(out)


def remote_bytes(store: Path, topic: str) -> int:
    """What the remote store holds of ``topic``: every file of its partitions' folders (segments,
    their indexes and the leader-epoch and producer snapshots copied with them)."""
    return sum(
        f.stat().st_size
        for ds in _partition_dirs(store, topic).values()
        for d in ds
        for f in d.iterdir()
        if f.is_file()
    )


#: the topic a tiered cluster's readiness probe writes (``wait_until_tiering``)
PROBE_TOPIC = "__highwater_tiered_probe"


def wait_until_tiering(cluster: ClusterBackend, timeout: float = 90.0) -> float:
    """Until the cluster's brokers tier: a probe topic's records are copied to the store and
    deleted from the local log (its local log start moves), the seconds that took. Before 3.7 a
    broker's first retention check runs 30 s after it started, whatever the settings
    (``LogManager``'s fixed initial task delay; ``log.initial.task.delay.ms`` sets it from 3.7):
    a run started sooner keeps everything local for its first half minute, and its catch-up
    read never crosses to the store (seen on 3.6.2: the first local deletion 28.7 s into the
    run). Later releases pass in a few seconds (the copy and retention tasks every 500 ms)."""
    import time

    from kafka import KafkaProducer

    from highwater.harness.waiting import wait_until

    started = time.monotonic()
    cluster.create_topic(PROBE_TOPIC, config=topic_config())
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap(), acks="all", **cluster.client_security.as_kafka_python()
    )
    try:

        def tiered_away() -> bool:
            producer.send(PROBE_TOPIC, b"probe")  # a segment rolls only when a record comes after SEGMENT_MS
            (state,) = cluster.observer().partition_states(PROBE_TOPIC, [0], starts=True)
            return bool(state.local_start)

        wait_until(tiered_away, timeout, f"the brokers did not tier the probe topic within {timeout:.0f} s", 0.5)
    finally:
        producer.close(timeout=5)
    return time.monotonic() - started
