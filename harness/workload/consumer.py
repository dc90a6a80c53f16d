"""A consumer that records every poll and every position change, over any client driver
(``harness.clients``).

Events (process = the worker's name):
- ``assign`` ok ``{"topic","partition","offset","reason"}``: an assignment (``assign`` mode,
  or a group rebalance in ``subscribe`` mode) and the position it starts from;
- ``seek`` ok, same fields: every other position change, with ``reason`` ``reset`` (the
  client's auto.offset.reset) or ``truncation`` (a KIP-320 move to the divergence point, made
  by the client itself or by this worker on a ``TruncationSignal``);
- ``revoke`` ok ``{"topic","partition","reason"}`` (``subscribe`` mode): a partition the client
  gave up, as its library reported it (``revoked``, ``lost``; kafkajs: ``rebalancing``,
  ``rejoin``), when it did;
- ``poll`` ok ``{"records":[{"topic","partition","offset","value","leader_epoch","replica"}]}``
  for every poll that returned records; ``poll`` fail ``{"divergent_offsets"}`` for a
  truncation signal; ``poll`` info with the error for any other failed poll;
- ``commit`` (``subscribe`` mode): after every poll that returned records, the group's offsets
  are committed synchronously, one event per partition ``{"group","topic","partition","offset"}``
  with the next offset to read (the last returned + 1): ``ok``, or ``info`` with the error
  (a commit that raised may still have been written; never counted as committed).

The driver reports the records (with the serving replica where it knows it) and the position
changes the client library makes on its own; this worker records them, counts what was read
and reacts to truncation signals, the same way for every client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from highwater.harness.clients import (
    DEFAULT_CLIENT,
    ClientDriver,
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    PositionReason,
    Relaunch,
    Revocation,
    TopicPartition,
    TruncationSignal,
    WorkerGone,
    resolve_driver,
    take_relaunch,
)
from highwater.harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink, Worker, relaunched_driver

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsumerConfig:
    topic: str
    partitions: int = 1
    mode: str = "assign"  # or "subscribe"
    client_rack: str | None = None
    group_id: str | None = None  # subscribe mode
    poll_timeout_ms: int = 200
    max_poll_records: int = 500
    isolation_level: str = "read_uncommitted"  # or "read_committed" (KIP-98)
    # subscribe mode: commit after every poll (an exactly-once copy commits inside its transaction)
    commit_after_poll: bool = True
    session_timeout_ms: int | None = None  # subscribe mode: None is the client's default
    group_protocol: str = "classic"  # subscribe mode: or KIP-848's "consumer" (harness.clients.groups)
    group_remote_assignor: str | None = None
    preferred_replica_recheck_ms: int | None = None  # franz-go's alone (ConsumerSettings)


class ConsumerWorker(Worker):
    def __init__(
        self,
        name: str,
        bootstrap: list[str],
        history: HistorySink,
        config: ConsumerConfig,
        client: str | ClientDriver = DEFAULT_CLIENT,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        super().__init__(name, history)
        self.config = config
        self.records_read = 0
        self.client = resolve_driver(client)
        subscribe = config.mode == "subscribe"
        self._next: dict[TopicPartition, int] = {}  # after the last record returned, per partition
        self.settings = ConsumerSettings(
            bootstrap=bootstrap,
            client_id=name,
            client_rack=config.client_rack,
            group_id=config.group_id if subscribe else None,
            auto_commit=False,  # subscribe mode commits after each poll, recorded
            auto_offset_reset="earliest",
            max_poll_records=config.max_poll_records,
            isolation_level=config.isolation_level,
            security=security,
            session_timeout_ms=config.session_timeout_ms,
            group_protocol=config.group_protocol if subscribe else "classic",
            group_remote_assignor=config.group_remote_assignor if subscribe else None,
            preferred_replica_recheck_ms=config.preferred_replica_recheck_ms,
        )
        self.consumer = self.client.consumer(self.settings, self)
        #: highwater's own tests only (``harness.workload.plant``): when it says so, a poll's first
        #: record is dropped, a skip by construction
        self.plant: Callable[[], bool] | None = None

    def on_position_change(self, change: PositionChange) -> None:
        """The driver's report of a move the client made on its own (``ConsumerListener``)."""
        self.record_position(change)

    def record_position(self, change: PositionChange) -> None:
        self.history.ok(self.name, change.f, change.to_event_value())

    def on_revocation(self, revocation: Revocation) -> None:
        """The driver's report of a partition the client gave up (``RevocationListener``)."""
        self.history.ok(self.name, revocation.f, revocation.to_event_value())

    def run(self) -> None:
        self._start()
        while not self.stopping.is_set():
            self.poll_once()

    def _start(self) -> None:
        """Subscribe, or assign the topic's partitions from where this consumer stopped (the
        start at first)."""
        cfg = self.config
        if cfg.mode == "subscribe":
            self.consumer.subscribe([cfg.topic])
            return
        tps = [TopicPartition(cfg.topic, p) for p in range(cfg.partitions)]
        self.consumer.assign(tps)
        for tp in tps:
            offset = self._next.get(tp, 0)
            self.consumer.seek(tp, offset)
            self.record_position(PositionChange(tp.topic, tp.partition, offset, PositionReason.ASSIGN))

    def _restart_after_death(self) -> None:
        """The worker died: once a restart is asked for, a new consumer with the same settings
        (a group member rejoins; an assign-mode consumer resumes after its last record), or on
        what the restart asked for (``Relaunch``: another version of the client, a group member
        on the other group protocol), kept for every later restart."""
        if not self.await_restart():
            return
        self.close()
        self._relaunch(take_relaunch(self.name))
        self.consumer = self.client.consumer(self.settings, self)
        self._start()

    def _relaunch(self, relaunch: Relaunch) -> None:
        self.client = relaunched_driver(self.client, relaunch)
        protocol = relaunch.group_protocol
        if protocol is None or self.settings.group_id is None or protocol == self.settings.group_protocol:
            return
        # a classic member names no server-side assignor (``group_protocol_refusal``)
        assignor = None if protocol == "classic" else self.settings.group_remote_assignor
        self.settings = replace(self.settings, group_protocol=protocol, group_remote_assignor=assignor)
        self.config = replace(self.config, group_protocol=protocol, group_remote_assignor=assignor)

    def read_past(self, topic: str, partition: int) -> int:
        """The offset after the last record of ``topic``-``partition`` this consumer returned (0:
        none yet)."""
        return self._next.get(TopicPartition(topic, partition), 0)

    def poll_once(self) -> int:
        return len(self.poll_records())

    def poll_records(self) -> Sequence[PolledRecord]:
        """One poll, recorded: the records it returned (none after a failure or a truncation
        signal, which are recorded and handled here)."""
        try:
            polled = self.consumer.poll(self.config.poll_timeout_ms)
        except WorkerGone as exc:  # its last polls are what it reported before it died
            self.history.info(self.name, "poll", None, error=exc)
            self._restart_after_death()
            return ()
        except Exception as exc:  # noqa: BLE001 - recorded; the consumer keeps going
            self.history.info(self.name, "poll", None, error=exc)
            self.stopping.wait(0.2)  # back off before the next poll
            return ()
        if isinstance(polled, TruncationSignal):
            self._on_truncation(polled)
            return ()
        if polled and self.plant is not None and self.plant():
            dropped, polled = polled[0], polled[1:]  # planted: neither recorded nor returned, but read
            self.records_read += 1
            self._next[TopicPartition(dropped.topic, dropped.partition)] = dropped.offset + 1
        if polled:
            self.history.ok(self.name, "poll", {"records": [r.to_event_value() for r in polled]})
            self.records_read += len(polled)
            for r in polled:
                self._next[TopicPartition(r.topic, r.partition)] = r.offset + 1
            if self.config.mode == "subscribe" and self.config.group_id and self.config.commit_after_poll:
                self._commit(polled)
        return polled

    def _commit(self, polled: Sequence[PolledRecord]) -> None:
        """Commit, for the group, the offset after the last record returned from each partition."""
        nxt: dict[TopicPartition, int] = {}
        for r in polled:
            tp = TopicPartition(r.topic, r.partition)
            nxt[tp] = max(nxt.get(tp, 0), r.offset + 1)
        ops = [
            {"group": self.config.group_id, "topic": tp.topic, "partition": tp.partition, "offset": o}
            for tp, o in nxt.items()
        ]
        for op in ops:
            self.history.invoke(self.name, "commit", op)
        try:
            self.consumer.commit(nxt)
        except Exception as exc:  # noqa: BLE001 - recorded; unknown outcome, the consumer goes on
            for op in ops:
                self.history.info(self.name, "commit", op, error=exc)
            return
        for op in ops:
            self.history.ok(self.name, "commit", op)

    def _on_truncation(self, signal: TruncationSignal) -> None:
        """KIP-320: the log was truncated below our position. Record the signal, then move to
        the divergence point (or, with none known, to the start) and record that move."""
        divergent = {f"{tp.topic}-{tp.partition}": o for tp, o in signal.divergent.items()}
        self.history.fail(self.name, "poll", {"divergent_offsets": divergent}, error=signal.error)
        for tp, o in signal.divergent.items():
            if o is not None:
                self.consumer.seek(tp, o)
            else:
                self.consumer.seek_to_beginning(tp)
            self.record_position(PositionChange(tp.topic, tp.partition, o, PositionReason.TRUNCATION))

    def close(self) -> None:
        try:
            self.consumer.close()
        except Exception as exc:  # noqa: BLE001 - closing must not hide the run's outcome
            log.warning("%s: close failed: %s", self.name, exc)
