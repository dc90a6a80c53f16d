"""A share-group member (KIP-932) that records what it acquires and how it acknowledges it, over
the share consumer of a worker (``harness.clients.share``).

Events (process = the member's name; docs/history-format.md):
- ``acquire`` ok ``{"since_ns", "acquired": [[topic, partition, offset, value, delivery count],
  ...]}`` for every poll that returned records. A share consumer fetches ahead and hands out
  what it fetched at later polls, so a record may have been acquired long before the poll that
  returned it (a member stuck in a commit, or frozen, returns records whose locks expired
  meanwhile). ``since_ns`` bounds the acquisition from below: the start of this member's last
  poll that returned nothing (its buffer was empty then), or of its worker;
  ``acquire`` info with the error for a poll that failed (a worker that died: ``WorkerGone``);
- ``ack`` invoke ``{"topic", "partition", "offsets", "kinds"}`` before the acknowledgements of a
  poll's records are sent, one per partition; then ``ack`` ok / fail / info ``{"topic",
  "partition", "offsets"}`` as the library reported them (``fail``: the broker refused them, the
  records were no longer ours; ``info``: unknown, e.g. the worker died first).

Every record is acknowledged before the next poll, with a kind chosen from the record's value and
delivery count by a seeded hash (``AckPolicy``): most are accepted, a share released (delivered
again) or rejected (archived), so redelivery and archiving happen in every run, and a rerun with
the same seed makes the same choices for the same deliveries.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from highwater.harness.clients import WorkerGone, resolve_driver
from highwater.harness.clients.base import ClientDriver
from highwater.harness.clients.share import (
    SHARE_ADMIN_CLIENTS,
    AckKind,
    AckOutcome,
    AcquiredRecord,
    ShareAdmin,
    ShareGroupError,
    ShareGroupSettings,
    ShareSettings,
    WorkerShareConsumer,
)
from highwater.harness.clients.worker import WorkerDriver
from highwater.harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink, Worker

log = logging.getLogger(__name__)

Key = tuple[str, int, int]  # topic, partition, offset
#: how long the group's state may take to show a settled run settled, and how often it is read
STATE_SETTLE_S = 10.0
STATE_POLL_S = 0.5


def share_driver(client: str | ClientDriver) -> WorkerDriver:
    """The driver of ``client`` (a name or a driver) for share groups, which run in workers."""
    driver = resolve_driver(client)
    if not isinstance(driver, WorkerDriver):
        raise ShareGroupError(f"share groups run in a worker; {driver!r} is no worker driver")
    return driver


def state_driver(driver: WorkerDriver) -> WorkerDriver:
    """The driver whose worker reads the state of ``driver``'s share groups (``ShareAdmin``): its
    own when it has the ``share_admin`` role, else Kafka's Java client's of the default release
    (confluent-kafka's admin client cannot list share group offsets; the state is the broker's,
    whoever asks)."""
    return driver if driver.name in SHARE_ADMIN_CLIENTS else share_driver("java")


@dataclass(frozen=True)
class AckPolicy:
    """Which kind each delivery gets: ``release_share`` of deliveries released, ``reject_share``
    rejected, the rest accepted; a function of (seed, value, delivery count) only."""

    release_share: float = 0.1
    reject_share: float = 0.03
    seed: int = 0

    def kind(self, record: AcquiredRecord) -> AckKind:
        draw = zlib.crc32(f"{self.seed}:{record.value}:{record.delivery_count}".encode()) % 10_000 / 10_000
        if draw < self.release_share:
            return AckKind.RELEASE
        if draw < self.release_share + self.reject_share:
            return AckKind.REJECT
        return AckKind.ACCEPT


class ShareLedger:
    """What a run's share members settled, so the run can wait until every record of the log is
    accepted or archived (``settled_below``). Shared by the members (thread-safe)."""

    def __init__(self, delivery_limit: int) -> None:
        self.delivery_limit = delivery_limit
        self._lock = threading.Lock()
        self._settled: dict[tuple[str, int], set[int]] = {}
        self._deliveries: dict[Key, int] = {}

    def delivered(self, record: AcquiredRecord) -> int:
        """Note one delivery; its number: the client's delivery count (a new partition leader may
        count again from lower: KIP-932's count is not precise), else the deliveries seen."""
        key = (record.topic, record.partition, record.offset)
        with self._lock:
            n = record.delivery_count if record.delivery_count is not None else self._deliveries.get(key, 0) + 1
            self._deliveries[key] = n
            return n

    def acknowledged(self, key: Key, kind: AckKind, outcome: str) -> None:
        with self._lock:
            last = self._deliveries.get(key, 0) >= self.delivery_limit  # archived whatever happened
            if last or (outcome == "ok" and kind in (AckKind.ACCEPT, AckKind.REJECT)):
                self._settled.setdefault(key[:2], set()).add(key[2])

    def settled_below(self, topic: str, high_watermarks: Sequence[int]) -> bool:
        """Every offset below each partition's high watermark settled (a log starting at 0)."""
        with self._lock:
            return all(
                sum(1 for o in self._settled.get((topic, p), ()) if o < hw) >= hw
                for p, hw in enumerate(high_watermarks)
            )


class GroupOwes:
    """Whether a share group's state says Kafka owes nothing more (lag 0 on every partition of
    the topic), for the settle wait: an acknowledgement whose answer was lost with its
    connection (``info``) but which Kafka applied never reaches the ``ShareLedger``, whose wait
    then ran to its deadline (60 s: 3 of 4 confluent-kafka share scenarios, 2026-11-27). Asked only
    after ``after_s`` of waiting (a lost acknowledgement that was not applied comes back once
    its lock expires, and the ledger sees it settled), then at most every ``STATE_POLL_S``,
    through one ``ShareAdmin`` worker opened at the first asking; ``close`` stops it."""

    def __init__(
        self, client: str | ClientDriver, settings: ShareSettings, topic: str, partitions: int, after_s: float
    ) -> None:
        self.client = client
        self.settings = settings
        self.topic = topic
        self.partitions = partitions
        self.after_s = after_s
        self._started: float | None = None
        self._next = 0.0
        self._admin: ShareAdmin | None = None

    def nothing(self) -> bool:
        now = time.monotonic()
        if self._started is None:
            self._started = now
        if now < self._started + self.after_s or now < self._next:
            return False
        self._next = now + STATE_POLL_S
        try:
            if self._admin is None:
                self._admin = ShareAdmin(state_driver(share_driver(self.client)), self.settings)
            offsets = self._admin.start_offsets(self.topic, self.partitions)
        except Exception as exc:  # noqa: BLE001 - the ledger's wait goes on; the run records the state later
            log.info("the share group's state could not be read while settling: %s", exc)
            return False
        return len(offsets) == self.partitions and all(o.lag == 0 for o in offsets)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None


@dataclass(frozen=True)
class ShareConfig:
    topic: str
    group: ShareGroupSettings
    policy: AckPolicy = AckPolicy()
    poll_timeout_ms: int = 200
    max_poll_records: int = 200
    commit_timeout_s: float = 10.0


class ShareConsumerWorker(Worker):
    def __init__(
        self,
        name: str,
        bootstrap: list[str],
        history: HistorySink,
        config: ShareConfig,
        ledger: ShareLedger,
        client: str | ClientDriver = "java",
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        super().__init__(name, history)
        self.config = config
        self.ledger = ledger
        self.records_read = 0  # deliveries, redeliveries included
        self.driver = share_driver(client)
        self.settings = ShareSettings(
            bootstrap=bootstrap,
            client_id=name,
            group_id=config.group.group,
            max_poll_records=config.max_poll_records,
            security=security,
        )
        # acknowledgements sent and not yet reported on, by record: the kind asked for
        self._pending: dict[Key, AckKind] = {}
        self._drained_ns = history.clock_ns()  # see ``acquire`` above
        self.consumer = WorkerShareConsumer(self.driver, self.settings, self._on_acked)

    def run(self) -> None:
        self.consumer.subscribe([self.config.topic])
        while not self.stopping.is_set():
            self.poll_once()

    def poll_once(self) -> int:
        started = self.history.clock_ns()
        try:
            records = self.consumer.poll(self.config.poll_timeout_ms)
        except WorkerGone as exc:
            self.history.info(self.name, "acquire", None, error=exc)
            self._restart_after_death(exc)
            return 0
        except Exception as exc:  # noqa: BLE001 - recorded; the member keeps going
            self.history.info(self.name, "acquire", None, error=exc)
            self.stopping.wait(0.2)  # back off before the next poll
            return 0
        if not records:
            self._drained_ns = started  # what comes next was acquired after this poll began
            return 0
        self.history.ok(
            self.name, "acquire", {"since_ns": self._drained_ns, "acquired": [r.to_event() for r in records]}
        )
        self.records_read += len(records)
        for r in records:
            self.ledger.delivered(r)
        self._acknowledge(records)
        return len(records)

    def _acknowledge(self, records: Sequence[AcquiredRecord]) -> None:
        """Acknowledge every record of the poll (one ``ack`` invoke per partition), then commit:
        the outcomes arrive through ``_on_acked`` before ``commit`` returns."""
        chosen = [(r, self.config.policy.kind(r)) for r in records]
        by_tp: dict[tuple[str, int], list[tuple[AcquiredRecord, AckKind]]] = {}
        for r, kind in chosen:
            by_tp.setdefault((r.topic, r.partition), []).append((r, kind))
        for (topic, part), acks in by_tp.items():
            self.history.invoke(
                self.name,
                "ack",
                {
                    "topic": topic,
                    "partition": part,
                    "offsets": [r.offset for r, _ in acks],
                    "kinds": [k.value for _, k in acks],
                },
            )
            for r, kind in acks:
                self._pending[(topic, part, r.offset)] = kind
        try:
            self.consumer.acknowledge(chosen)
            self.consumer.commit(self.config.commit_timeout_s)
        except WorkerGone as exc:
            self._end_pending(exc)
            self._restart_after_death(exc)
        except Exception as exc:  # noqa: BLE001 - the outcomes may still come (next poll, close)
            log.info("%s: acknowledging: %s", self.name, exc)

    def _on_acked(self, outcome: AckOutcome) -> None:
        """The library's report on some acknowledgements: recorded for those still pending."""
        mine = [o for o in outcome.offsets if (outcome.topic, outcome.partition, o) in self._pending]
        if not mine:
            return
        value = {"topic": outcome.topic, "partition": outcome.partition, "offsets": mine}
        kind = outcome.outcome
        if kind == "ok":
            self.history.ok(self.name, "ack", value)
        elif kind == "fail":
            self.history.fail(self.name, "ack", value, error=outcome.error)
        else:
            self.history.info(self.name, "ack", value, error=outcome.error)
        for o in mine:
            key = (outcome.topic, outcome.partition, o)
            self.ledger.acknowledged(key, self._pending.pop(key), kind)

    def _end_pending(self, error: BaseException | str) -> None:
        """Acknowledgements never reported on (the worker died, or closed without a word): each
        may or may not have been applied."""
        by_tp: dict[tuple[str, int], list[int]] = {}
        for topic, part, o in sorted(self._pending):
            by_tp.setdefault((topic, part), []).append(o)
        for (topic, part), offsets in by_tp.items():
            self.history.info(self.name, "ack", {"topic": topic, "partition": part, "offsets": offsets}, error=error)
            for o in offsets:
                self.ledger.acknowledged((topic, part, o), self._pending[(topic, part, o)], "info")
        self._pending.clear()

    def _restart_after_death(self, exc: BaseException) -> None:
        """The worker died (a client fault): once a restart is asked for, a new member with the
        same name joins the group."""
        self._end_pending(exc)
        if not self.await_restart():
            return
        self.consumer.close()
        self._drained_ns = self.history.clock_ns()
        self.consumer = WorkerShareConsumer(self.driver, self.settings, self._on_acked)
        self.consumer.subscribe([self.config.topic])

    def close(self) -> None:
        try:
            self.consumer.close()
        except Exception as exc:  # noqa: BLE001 - closing must not hide the run's outcome
            log.warning("%s: close failed: %s", self.name, exc)
        if self._pending:
            self._end_pending("the member closed before the library reported these acknowledgements")


def record_share_state(
    history: HistorySink,
    client: str | ClientDriver,
    bootstrap: list[str],
    group: str,
    topic: str,
    partitions: int,
    security: ClientSecurity = PLAINTEXT,
) -> None:
    """After the run settled: the group's start offset and lag per partition, as ``share-state``
    events (process ``final``) ``{"group", "topic", "partition", "start_offset", "lag"}``, read
    again while some lag is left, up to ``STATE_SETTLE_S``; one ``info``
    with the error when the group's state could not be read. What the share checks weigh an
    acknowledgement of unknown outcome against (docs/checks.md)."""
    settings = ShareSettings(bootstrap=bootstrap, client_id="share-state", group_id=group, security=security)
    try:
        with ShareAdmin(state_driver(share_driver(client)), settings) as admin:  # one worker for every read
            deadline = time.monotonic() + STATE_SETTLE_S
            offsets = admin.start_offsets(topic, partitions)
            # a lock that expired on a record's last delivery archives it with a write of its
            # own, which may still be on its way: read again while Kafka owes anything, up to a
            # deadline (then the last reading is recorded, lag and all)
            while any(o.lag for o in offsets) and time.monotonic() < deadline:
                time.sleep(STATE_POLL_S)
                offsets = admin.start_offsets(topic, partitions)
    except Exception as exc:  # noqa: BLE001 - recorded; the checks then cannot use the state
        history.info("final", "share-state", {"group": group, "topic": topic}, error=exc)
        return
    for o in offsets:
        history.ok(
            "final",
            "share-state",
            {"group": group, "topic": topic, "partition": o.partition, "start_offset": o.start_offset, "lag": o.lag},
        )
