"""Share groups (KIP-932, "queues for Kafka"): which clients and releases have them, the settings
of a share consumer, and the driver of one over the worker protocol.

In a share group many consumers read the same partitions together: the partition's leader hands
each record to one consumer under an acquisition lock of ``share.record.lock.duration.ms``; the
consumer acknowledges it (``accept``: done, ``release``: give it to someone again, ``reject``:
archive it unprocessed); a record whose lock expires, or whose holder leaves, becomes available
again; after ``share.delivery.count.limit`` deliveries it is archived instead. Generally
available since Kafka 4.2 (the broker's ``share.version`` 1 is then on in new clusters) and in
Kafka's Java client 4.2 (``KafkaShareConsumer``), confluent-kafka 2.15 (``ShareConsumer``,
librdkafka's, a "Preview" there; 2.15.1 and 2.16.1 pass the contract test) and franz-go 1.21
(``ShareGroup``); kafka-python, kafkajs, ckjs and Sarama have none.

The share consumer is a role of the Java worker (``clients/java/.../ShareRole.java``), of the
Python worker for confluent-kafka (``clients/python/confluent_share.py``) and of the franz-go
worker (``clients/go/franz/share_kip932.go``), role ``share_consumer``
(docs/adding-a-client.md, "Share groups"): ``subscribe``, ``poll`` (the
records acquired, with their delivery counts), ``acknowledge`` (records of the last poll, each
with its kind), ``commit`` (``commitSync``) and ``close``; how each acknowledgement ended comes
as ``acked`` events from the library's commit callback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from highwater.core.errors import HighwaterError
from highwater.core.versions import major_minor
from highwater.harness.client_common import (  # noqa: F401 - the common module's, re-exported under the old names
    AckKind,
    ShareSettings,
)

from .base import client_label
from .worker import WorkerDriver, WorkerError, WorkerInfo, WorkerProcess

log = logging.getLogger(__name__)

#: the release from which share groups are generally available, on the broker and in the client
SHARE_GROUPS_SINCE = (4, 2)
#: the clients that have a share consumer, and since which of their releases
SHARE_CLIENTS: dict[str, tuple[int, int]] = {
    "java": SHARE_GROUPS_SINCE,
    "confluent-kafka": (2, 15),
    "franz-go": (1, 21),
}
#: the clients whose worker also reads a share group's state (the ``share_admin`` role:
#: ``Admin.listShareGroupOffsets``); confluent-kafka's admin client has no such call, so the
#: state of its groups is read through the Java worker's (``workload.share.state_driver``)
SHARE_ADMIN_CLIENTS = frozenset({"java"})
#: the library's errors for acknowledgements surely not applied: the broker refused them (the
#: record was no longer this consumer's: its lock had expired, or the broker released it), or no
#: leader took them (the client completes acknowledgements it could not send to the partition's
#: leader with this error; a broker that no longer leads applies nothing); the Java client
#: names them by exception, librdkafka by error code, franz-go by its kerr code (the Go worker
#: writes it as ``Error: <CODE>: ...``, and Kafka's NOT_LEADER_OR_FOLLOWER, code 6, keeps its
#: old name there)
REFUSED_ACKS = (
    "InvalidRecordStateException",
    "NotLeaderOrFollowerException",
    "KafkaError: INVALID_RECORD_STATE",
    "KafkaError: NOT_LEADER_OR_FOLLOWER",
    "Error: INVALID_RECORD_STATE",
    "Error: NOT_LEADER_FOR_PARTITION",
)


class ShareGroupError(HighwaterError):
    """A share group asked of a client or a Kafka release without them."""


def share_client_refusal(client: str, client_version: str) -> str | None:
    """Why ``client`` at ``client_version`` has no share consumer (one line), or None."""
    since = SHARE_CLIENTS.get(client)
    if since is None:
        return f"{client} {client_version} has no share consumer (KIP-932); share groups run on: {', '.join(SHARE_CLIENTS)}"
    have = major_minor(client_version)
    if have is None or have < since:
        return f"{client} {client_version} has no generally available share consumer (since {client} {since[0]}.{since[1]})"
    return None


def share_refusal(client: str, client_version: str, kafka_version: str) -> str | None:
    """Why ``client`` at ``client_version`` on Kafka ``kafka_version`` cannot run a share group (one
    line), or None when it can."""
    refused = share_client_refusal(client, client_version)
    if refused is not None:
        return refused
    kafka = major_minor(kafka_version)
    if kafka is None or kafka < SHARE_GROUPS_SINCE:
        return (
            f"Kafka {kafka_version} has no generally available share groups "
            f"(since Kafka {SHARE_GROUPS_SINCE[0]}.{SHARE_GROUPS_SINCE[1]})"
        )
    return None


@dataclass(frozen=True)
class AcquiredRecord:
    """One record a poll acquired, and its delivery count when the client tells it."""

    topic: str
    partition: int
    offset: int
    value: str | None
    delivery_count: int | None

    def to_event(self) -> list[Any]:
        """Its entry in an ``acquire`` event (docs/history-format.md)."""
        return [self.topic, self.partition, self.offset, self.value, self.delivery_count]


@dataclass(frozen=True)
class AckOutcome:
    """How the acknowledgements of some offsets of one partition ended, as the library said."""

    topic: str
    partition: int
    offsets: tuple[int, ...]
    error: str | None = None

    @property
    def outcome(self) -> str:
        """``ok``; ``fail`` when the broker refused them (surely not applied); else ``info``."""
        if self.error is None:
            return "ok"
        return "fail" if self.error.startswith(REFUSED_ACKS) else "info"


def acquired_of(reply: dict[str, Any]) -> list[AcquiredRecord]:
    """The records of a ``poll`` reply: one entry per partition, offsets, values and delivery
    counts as parallel lists."""
    out: list[AcquiredRecord] = []
    for part in reply.get("parts") or []:
        topic, partition = str(part["topic"]), int(part["partition"])
        for o, v, n in zip(part["offsets"], part["values"], part["deliveries"], strict=True):
            out.append(AcquiredRecord(topic, partition, int(o), v, None if n is None else int(n)))
    return out


def ack_outcome_of(event: dict[str, Any]) -> AckOutcome:
    err = event.get("error")
    return AckOutcome(
        str(event["topic"]), int(event["partition"]), tuple(int(o) for o in event.get("offsets") or []), err or None
    )


@runtime_checkable
class ShareLauncher(Protocol):
    """A worker launcher whose worker has the ``share_consumer`` role (the Java worker's)."""

    def share_config(self, settings: ShareSettings) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ShareGroupSettings:
    """A share group's own settings (group configs, set before its members join), and the
    bounds the share checks read from the history's header (``config.share``)."""

    group: str
    topic: str
    lock_ms: int = 5_000  # share.record.lock.duration.ms
    session_ms: int = 6_000  # share.session.timeout.ms
    heartbeat_ms: int = 1_000  # share.heartbeat.interval.ms
    delivery_limit: int = 3  # the broker's group.share.delivery.count.limit

    def group_configs(self) -> dict[str, str]:
        """The group configs: read from the earliest record (a group starts at the latest by
        default, and would miss what was written before its first member joined)."""
        return {
            "share.auto.offset.reset": "earliest",
            "share.record.lock.duration.ms": str(self.lock_ms),
            "share.session.timeout.ms": str(self.session_ms),
            "share.heartbeat.interval.ms": str(self.heartbeat_ms),
        }

    def header(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "lock_ms": self.lock_ms,
            "session_ms": self.session_ms,
            "delivery_limit": self.delivery_limit,
        }


def _no_send(line: dict[str, Any]) -> None:
    log.warning("a share worker sent a send outcome: %s", line)


def start_share_worker(driver: WorkerDriver, role: str, settings: ShareSettings) -> WorkerProcess:
    """A worker of ``driver``'s client in a share ``role`` (``share_consumer``, ``share_admin``)."""
    launcher = driver.launcher
    if not isinstance(launcher, ShareLauncher):
        raise ShareGroupError(f"the {driver.name} worker has no share group roles")
    info = WorkerInfo(settings.client_id, role, client_label(driver), None, settings.group_id)
    return WorkerProcess(launcher.launch(role, settings.client_id), info, launcher.share_config(settings), _no_send)


class WorkerShareConsumer:
    """A share consumer in a worker of its own (the Java worker's ``share_consumer`` role).
    ``on_acked`` gets each acknowledgement outcome, in the order the library reported them,
    before the command during which they arrived returns."""

    def __init__(self, driver: WorkerDriver, settings: ShareSettings, on_acked: Callable[[AckOutcome], None]) -> None:
        refused = share_client_refusal(driver.name, driver.version)
        if refused is not None:
            raise ShareGroupError(refused)
        self.settings = settings
        self.on_acked = on_acked
        self._closed = False
        self._worker = start_share_worker(driver, "share_consumer", settings)
        self._bound_s = settings.request_timeout_ms / 1000

    @property
    def process(self) -> WorkerProcess:
        return self._worker

    def _event(self, event: dict[str, Any]) -> None:
        if event.get("event") == "acked":
            self.on_acked(ack_outcome_of(event))

    def _call(self, op: str, bound_s: float, **fields: Any) -> dict[str, Any]:
        return self._worker.request(op, bound_s, self._event, **fields)

    def subscribe(self, topics: Sequence[str]) -> None:
        self._call("subscribe", self._bound_s, topics=list(topics))

    def poll(self, timeout_ms: int) -> list[AcquiredRecord]:
        reply = self._call("poll", timeout_ms / 1000 + self._bound_s, timeout_ms=int(timeout_ms))
        records = acquired_of(reply)
        if records:
            self._worker.launch.on_exercised()
        return records

    def acknowledge(self, acks: Sequence[tuple[AcquiredRecord, AckKind]]) -> None:
        """Mark records of the last poll (local to the client: sent by ``commit``)."""
        line = [[r.topic, r.partition, r.offset, kind.value] for r, kind in acks]
        self._call("acknowledge", self._bound_s, acks=line)

    def commit(self, timeout_s: float) -> None:
        """Send the acknowledgements and wait for their outcomes (``on_acked``), up to ``timeout_s``."""
        self._call("commit", timeout_s, timeout_ms=int(timeout_s * 1000))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._call("close", 10.0, timeout_ms=10_000)
        except WorkerError as exc:
            log.warning("%s: close: %s", self.settings.client_id, exc)
        finally:
            self._worker.stop(10.0)


@dataclass(frozen=True)
class ShareStartOffset:
    """What a share group's state says of one partition: every record below ``start_offset`` is
    acknowledged or archived; ``lag`` the records at or above it still to settle (when told)."""

    partition: int
    start_offset: int
    lag: int | None


class ShareAdmin:
    """A worker of the share client's own in the ``share_admin`` role, for reading a share group's
    state (``Admin.listShareGroupOffsets``) as often as needed from one process: a context
    manager (stopped on exit)."""

    def __init__(self, driver: WorkerDriver, settings: ShareSettings) -> None:
        self.settings = settings
        self._worker = start_share_worker(driver, "share_admin", settings)

    def start_offsets(self, topic: str, partitions: int, timeout_s: float = 10.0) -> list[ShareStartOffset]:
        reply = self._worker.request(
            "start_offsets",
            timeout_s,
            None,
            group=self.settings.group_id,
            topic=topic,
            partitions=partitions,
            timeout_ms=int(timeout_s * 1000),
        )
        return [
            ShareStartOffset(int(o["partition"]), int(o["start_offset"]), None if o["lag"] is None else int(o["lag"]))
            for o in reply.get("offsets") or []
        ]

    def close(self) -> None:
        try:
            self._worker.request("close", 10.0, None, timeout_ms=5000)
        except WorkerError as exc:
            log.info("share admin close: %s", exc)
        self._worker.stop(10.0)

    def __enter__(self) -> ShareAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def share_start_offsets(
    driver: WorkerDriver, settings: ShareSettings, topic: str, partitions: int, timeout_s: float = 10.0
) -> list[ShareStartOffset]:
    """The share group's start offsets for ``topic``, asked once (``ShareAdmin``)."""
    with ShareAdmin(driver, settings) as admin:
        return admin.start_offsets(topic, partitions, timeout_s)
