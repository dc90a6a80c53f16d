"""A consumer that records every poll and every position change.

Events (process = the worker's name):
- ``assign`` ok ``{"topic","partition","offset","reason"}``: an assignment (``assign`` mode,
  or a group rebalance in ``subscribe`` mode) and the position it starts from;
- ``seek`` ok, same fields: every other position change, with ``reason`` ``reset`` (the
  client's auto.offset.reset) or ``truncation`` (our reaction to KIP-320's LogTruncationError);
- ``poll`` ok ``{"records":[{"topic","partition","offset","value","leader_epoch","replica"}]}``
  for every poll that returned records; ``poll`` fail/info with the error otherwise.

Resets happen inside kafka-python, so the worker wraps three methods of its *own* consumer's
fetcher (instance attributes; no global patch): ``_reset_offset_if_needed`` to record resets,
``_handle_offset_for_leader_epoch_response`` to record KIP-320 truncation seeks, and
``_handle_fetch_response`` to note which broker answered each fetch at each fetch offset. A
record's ``replica`` is the broker whose fetch at the greatest fetch offset <= its offset came
last: the client's view; the network-level truth is in Toxiproxy's byte counters. (Asking for
the preferred read replica at poll time would be wrong with kafka-python 3.0.12, which clears it
after every follower response: README, Findings, HW-4.)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka import errors as kerr
from kafka.consumer.subscription_state import ConsumerRebalanceListener

from .base import HistorySink, Worker

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


class _Listener(ConsumerRebalanceListener):
    def __init__(self, worker: "ConsumerWorker") -> None:
        self.worker = worker

    def on_partitions_revoked(self, revoked: Any) -> None:
        return None

    def on_partitions_assigned(self, assigned: Any) -> None:
        # The position is not known inside the callback (kafka-python fails the rebalance if we
        # ask); None means "a new position": the checks restart their skip judgement there.
        for tp in assigned:
            self.worker._record_position("assign", tp, None, "rebalance")


class ConsumerWorker(Worker):
    def __init__(self, name: str, bootstrap: list[str], history: HistorySink, config: ConsumerConfig) -> None:
        super().__init__(name, history)
        self.config = config
        extra: dict[str, Any] = {"client_rack": config.client_rack} if config.client_rack else {}
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, client_id=name, group_id=config.group_id if config.mode == "subscribe" else None,
            enable_auto_commit=config.mode == "subscribe", auto_offset_reset="earliest",
            max_poll_records=config.max_poll_records, request_timeout_ms=10000,
            metadata_max_age_ms=5000, **extra)
        self.records_read = 0
        self._fetch_sources: dict[TopicPartition, dict[int, int]] = {}
        self._hook_resets()
        self._hook_fetch_sources()
        self._hook_validation()

    def _hook_resets(self) -> None:
        fetcher = self.consumer._fetcher
        original = fetcher._reset_offset_if_needed
        subs = self.consumer._subscription

        def recording_reset(partition: TopicPartition, timestamp: Any, offset: int) -> None:
            before = subs.assignment[partition].position if subs.is_assigned(partition) else None
            original(partition, timestamp, offset)
            after = subs.assignment[partition].position if subs.is_assigned(partition) else None
            if after is not None and after != before:
                self._record_position("seek", partition, after.offset, "reset")

        fetcher._reset_offset_if_needed = recording_reset

    def _hook_validation(self) -> None:
        """KIP-320 with a reset policy: kafka-python does not raise LogTruncationError when an
        OffsetsForLeaderEpoch answer shows the log diverged below our position; it seeks to the
        first diverging offset itself (``Fetcher._handle_offset_for_leader_epoch_response``,
        like Java's ``seekValidated``). Record that move as a ``truncation`` seek, or the
        history would show a silent jump back."""
        fetcher = self.consumer._fetcher
        original = fetcher._handle_offset_for_leader_epoch_response
        subs = self.consumer._subscription

        def recording_handler(response: Any, requested_positions: dict[TopicPartition, Any]) -> Any:
            result = original(response, requested_positions)
            for tp, requested in requested_positions.items():
                after = subs.assignment[tp].position if subs.is_assigned(tp) else None
                if after is not None and requested is not None and after.offset < requested.offset:
                    self._record_position("seek", tp, after.offset, "truncation")
            return result

        fetcher._handle_offset_for_leader_epoch_response = recording_handler

    def _hook_fetch_sources(self) -> None:
        fetcher = self.consumer._fetcher
        original = fetcher._handle_fetch_response
        sources = self._fetch_sources

        def noting_handler(node_id: int, fetch_offsets: dict[TopicPartition, int], send_time: float,
                           response: Any) -> Any:
            for tp, offset in fetch_offsets.items():
                sources.setdefault(tp, {})[int(offset)] = int(node_id)
            return original(node_id, fetch_offsets, send_time, response)

        fetcher._handle_fetch_response = noting_handler

    def _source_of(self, tp: TopicPartition, offset: int) -> int | None:
        by_offset = self._fetch_sources.get(tp)
        if not by_offset:
            return None
        starts = [o for o in by_offset if o <= offset]
        return by_offset[max(starts)] if starts else None

    def _forget_sources_below(self, tp: TopicPartition, offset: int) -> None:
        by_offset = self._fetch_sources.get(tp)
        if by_offset and len(by_offset) > 64:
            keep = max((o for o in by_offset if o <= offset), default=None)
            for o in [o for o in by_offset if o < offset and o != keep]:
                by_offset.pop(o, None)

    def _record_position(self, f: str, tp: TopicPartition, offset: int | None, reason: str) -> None:
        self.history.ok(self.name, f, {"topic": tp.topic, "partition": tp.partition,
                                       "offset": offset, "reason": reason})

    def run(self) -> None:
        cfg = self.config
        tps = [TopicPartition(cfg.topic, p) for p in range(cfg.partitions)]
        if cfg.mode == "subscribe":
            self.consumer.subscribe([cfg.topic], listener=_Listener(self))
        else:
            self.consumer.assign(tps)
            for tp in tps:
                self.consumer.seek(tp, 0)
                self._record_position("assign", tp, 0, "assign")
        while not self.stopping.is_set():
            self.poll_once()

    def poll_once(self) -> int:
        try:
            batches = self.consumer.poll(timeout_ms=self.config.poll_timeout_ms)
        except kerr.LogTruncationError as exc:
            self._on_truncation(exc)
            return 0
        except Exception as exc:  # noqa: BLE001 - recorded; the consumer keeps going
            self.history.info(self.name, "poll", None, error=exc)
            self.stopping.wait(0.2)  # back off before the next poll
            return 0
        records = []
        for tp, recs in batches.items():
            for r in recs:
                records.append({"topic": r.topic, "partition": r.partition, "offset": r.offset,
                                "value": r.value.decode() if isinstance(r.value, bytes) else r.value,
                                "leader_epoch": r.leader_epoch if r.leader_epoch is not None and r.leader_epoch >= 0 else None,
                                "replica": self._source_of(tp, r.offset)})
            if recs:
                self._forget_sources_below(tp, recs[-1].offset)
        if records:
            self.history.ok(self.name, "poll", {"records": records})
            self.records_read += len(records)
        return len(records)

    def _on_truncation(self, exc: kerr.LogTruncationError) -> None:
        """KIP-320: the log was truncated below our position. Record the error, then move to
        the divergence point (or, with none known, to the start) and record that move."""
        divergent = {f"{tp.topic}-{tp.partition}": (o.offset if o is not None else None)
                     for tp, o in exc.divergent_offsets.items()}
        self.history.fail(self.name, "poll", {"divergent_offsets": divergent}, error=exc)
        for tp, o in exc.divergent_offsets.items():
            if o is not None:
                self.consumer.seek(tp, o.offset)
                self._record_position("seek", tp, o.offset, "truncation")
            else:
                self.consumer.seek_to_beginning(tp)
                self._record_position("seek", tp, None, "truncation")

    def close(self) -> None:
        try:
            self.consumer.close()
        except Exception as exc:  # noqa: BLE001 - closing must not hide the run's outcome
            log.warning("%s: close failed: %s", self.name, exc)
