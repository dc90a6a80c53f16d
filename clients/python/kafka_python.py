"""The kafka-python driver. Every import of kafka-python's client classes for the workloads,
and every patch of its private fetcher, lives here.

Producer outcomes: ``ok`` with the acknowledged offset; ``fail`` when ``send`` itself timed out
waiting for metadata or buffer space (nothing was sent), or for a non-retriable broker error
that proves the broker did not append, on the only attempt (``retries=0``); ``info`` otherwise:
a timeout or an error after retries may hide a write that succeeded.

Consumer: resets and KIP-320 seeks happen inside kafka-python, so the driver wraps three
methods of its *own* consumer's fetcher (instance attributes; no global patch):
``_reset_offset_if_needed`` to report resets, ``_handle_offset_for_leader_epoch_response`` to
report KIP-320 truncation seeks, and ``_handle_fetch_response`` to note which broker answered
each fetch at each fetch offset. A record's ``replica`` is the broker whose fetch at the
greatest fetch offset <= its offset came last: the client's view; the network-level truth is in
Toxiproxy's byte counters. (Asking for the preferred read replica at poll time would be wrong
with kafka-python 3.0.12, which clears it after every follower response: docs/findings.md,
HW-4.)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kafka
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KTopicPartition
from kafka import errors as kerr
from kafka.consumer.subscription_state import ConsumerRebalanceListener

from highwater.harness.client_common import (
    ConsumerListener,
    ConsumerSettings,
    FetchSources,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    Revocation,
    RevocationReason,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
    part_of,
    records_of,
    report_revocation,
)

# Errors that prove the broker did not append: each is returned before the write is applied.
DEFINITE_REJECTIONS = (
    kerr.MessageSizeTooLargeError,
    kerr.RecordListTooLargeError,
    kerr.InvalidTopicError,
    kerr.TopicAuthorizationFailedError,
    kerr.InvalidRequiredAcksError,
)


def classify_send_error(exc: BaseException, retries: int) -> SendOutcome:
    """A send that completed with ``exc``: ``fail`` only for a definite rejection on the only
    attempt, else ``info``."""
    definite = isinstance(exc, DEFINITE_REJECTIONS) and retries == 0
    return SendOutcome.fail(exc) if definite else SendOutcome.info(exc)


class KafkaPythonDriver:
    name = "kafka-python"
    version: str = kafka.__version__

    def producer(self, settings: ProducerSettings) -> KafkaPythonProducer:
        return KafkaPythonProducer(settings)

    def consumer(self, settings: ConsumerSettings, listener: ConsumerListener) -> KafkaPythonConsumer:
        return KafkaPythonConsumer(settings, listener)

    def transactional_producer(self, settings: ProducerSettings) -> KafkaPythonTransactionalProducer:
        return KafkaPythonTransactionalProducer(settings)


def producer_config(settings: ProducerSettings) -> dict[str, Any]:
    """``KafkaProducer``'s keyword arguments for ``settings`` (the driver's and the benchmark's
    bare library's producer: the same settings by construction)."""
    txn: dict[str, Any] = {}
    if settings.transactional_id:
        txn = {
            "transactional_id": settings.transactional_id,
            "transaction_timeout_ms": settings.transaction_timeout_ms,
        }
    return {
        "bootstrap_servers": list(settings.bootstrap),
        "client_id": settings.client_id,
        "acks": settings.acks if str(settings.acks) == "all" else int(settings.acks),  # 0, 1 or "all"
        "enable_idempotence": settings.idempotence or bool(settings.transactional_id),
        "retries": settings.retries,
        "linger_ms": settings.linger_ms,
        "request_timeout_ms": settings.request_timeout_ms,
        "delivery_timeout_ms": settings.delivery_timeout_ms,
        "max_in_flight_requests_per_connection": settings.max_in_flight,
        "max_block_ms": settings.max_block_ms,
        **settings.security.as_kafka_python(),
        **txn,
    }


class KafkaPythonProducer:
    def __init__(self, settings: ProducerSettings) -> None:
        self.settings = settings
        self._producer = KafkaProducer(**producer_config(settings))

    def send(self, topic: str, partition: int, value: str, on_outcome: Callable[[SendOutcome], None]) -> None:
        try:
            future = self._producer.send(topic, value=value.encode(), partition=partition)
        except kerr.KafkaTimeoutError as exc:  # metadata or buffer wait: nothing was sent
            on_outcome(SendOutcome.fail(exc))
            return
        retries = self.settings.retries
        future.add_callback(lambda metadata: on_outcome(SendOutcome.ok(int(metadata.offset))))
        future.add_errback(lambda exc: on_outcome(classify_send_error(exc, retries)))

    def flush(self, timeout_s: float) -> None:
        self._producer.flush(timeout=timeout_s)

    def close(self, timeout_s: float) -> None:
        self._producer.close(timeout=timeout_s)


class KafkaPythonTransactionalProducer(KafkaPythonProducer):
    """kafka-python's transactions, with a deadline on every call that waits for the
    coordinator: its own ``commit_transaction``, ``abort_transaction`` and
    ``send_offsets_to_transaction`` wait without one, which would hang a worker behind a
    partitioned coordinator, and ``init_transactions`` waits ``max_block_ms``; the same steps
    are taken here, waiting ``timeout_s``."""

    def init_transactions(self, timeout_s: float) -> None:
        # KafkaProducer.init_transactions with timeout_s for max_block_ms: a call after a
        # timeout waits for the same InitProducerId, one after a failure starts a new one
        producer = self._producer
        if producer._init_transactions_result is None:
            producer._init_transactions_result = producer._transaction_manager.initialize_transactions()
        try:
            self._end(producer._init_transactions_result, timeout_s, "initialisation")
        finally:
            if producer._init_transactions_result.failed:
                producer._init_transactions_result = None

    def begin_transaction(self) -> None:
        self._producer.begin_transaction()

    def commit_transaction(self, timeout_s: float) -> None:
        self._end(self._producer._transaction_manager.begin_commit(), timeout_s, "commit")

    def abort_transaction(self, timeout_s: float) -> None:
        self._end(self._producer._transaction_manager.begin_abort(), timeout_s, "abort")

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int], group_metadata: object, timeout_s: float
    ) -> None:
        """kafka-python's ``send_offsets_to_transaction`` waits without a deadline; its
        transaction manager's step is taken here and waited for ``timeout_s``.
        ``group_metadata`` is kafka-python's ``ConsumerGroupMetadata`` (KIP-447: the broker
        fences a stale member by its generation and member id) or a bare group id."""
        committed = {_ktp(tp): OffsetAndMetadata(int(o), "", -1) for tp, o in offsets.items()}
        result = self._producer._transaction_manager.send_offsets_to_transaction(committed, group_metadata)
        self._end(result, timeout_s, "offsets")

    def _end(self, result: Any, timeout_s: float, what: str) -> None:
        self._producer._sender.wakeup()
        if not result.wait(timeout_ms=timeout_s * 1000):  # raises the request's error
            raise kerr.KafkaTimeoutError(f"transaction {what} not acknowledged within {timeout_s:.0f}s")


def _ktp(tp: TopicPartition) -> KTopicPartition:
    return KTopicPartition(tp.topic, tp.partition)


class _Rebalances(ConsumerRebalanceListener):
    def __init__(self, listener: ConsumerListener) -> None:
        self.listener = listener

    def _gave_up(self, partitions: Any, reason: RevocationReason) -> None:
        for tp in sorted(partitions or ()):
            report_revocation(self.listener, Revocation(tp.topic, tp.partition, reason))

    def on_partitions_revoked(self, revoked: Any) -> None:
        # eager (kafka-python's default assignors): every partition at each rejoin, and at close
        self._gave_up(revoked, RevocationReason.REVOKED)

    def on_partitions_lost(self, lost: Any) -> None:
        # the generation was lost (evicted, fenced): kafka-python 3.x calls this instead of
        # on_partitions_revoked (KIP-429's callback; at a rejoin and at close)
        self._gave_up(lost, RevocationReason.LOST)

    def on_partitions_assigned(self, assigned: Any) -> None:
        # The position is not known inside the callback (kafka-python fails the rebalance if we
        # ask); None means "a new position".
        for tp in assigned:
            self.listener.on_position_change(PositionChange(tp.topic, tp.partition, None, PositionReason.REBALANCE))


class KafkaPythonConsumer:
    def __init__(self, settings: ConsumerSettings, listener: ConsumerListener) -> None:
        if settings.group_protocol != "classic":  # the runner refuses it up front (harness.clients.groups)
            raise ValueError(f"kafka-python has only the classic group protocol, not {settings.group_protocol!r}")
        self.settings = settings
        self.listener = listener
        extra: dict[str, Any] = {"client_rack": settings.client_rack} if settings.client_rack else {}
        if settings.session_timeout_ms is not None:
            extra["session_timeout_ms"] = int(settings.session_timeout_ms)
        self._consumer = KafkaConsumer(
            bootstrap_servers=list(settings.bootstrap),
            client_id=settings.client_id,
            group_id=settings.group_id,
            enable_auto_commit=settings.auto_commit,
            auto_offset_reset=settings.auto_offset_reset,
            max_poll_records=settings.max_poll_records,
            request_timeout_ms=settings.request_timeout_ms,
            metadata_max_age_ms=settings.metadata_max_age_ms,
            fetch_max_wait_ms=settings.fetch_max_wait_ms,
            isolation_level=settings.isolation_level,
            **settings.security.as_kafka_python(),
            **extra,
        )
        self.sources = FetchSources()
        self._hook_resets()
        self._hook_fetch_sources()
        self._hook_validation()

    def _moved(self, tp: Any, offset: int | None, reason: PositionReason) -> None:
        self.listener.on_position_change(PositionChange(tp.topic, tp.partition, offset, reason))

    def _hook_resets(self) -> None:
        fetcher = self._consumer._fetcher
        original = fetcher._reset_offset_if_needed
        subs = self._consumer._subscription

        def recording_reset(partition: KTopicPartition, timestamp: Any, offset: int) -> None:
            before = subs.assignment[partition].position if subs.is_assigned(partition) else None
            original(partition, timestamp, offset)
            after = subs.assignment[partition].position if subs.is_assigned(partition) else None
            if after is not None and after != before:
                self._moved(partition, after.offset, PositionReason.RESET)

        fetcher._reset_offset_if_needed = recording_reset

    def _hook_validation(self) -> None:
        """KIP-320 with a reset policy: kafka-python does not raise LogTruncationError when an
        OffsetsForLeaderEpoch answer shows the log diverged below our position; it seeks to the
        first diverging offset itself (``Fetcher._handle_offset_for_leader_epoch_response``,
        like Java's ``seekValidated``). Report that move as a ``truncation`` seek, or the
        history would show a silent jump back."""
        fetcher = self._consumer._fetcher
        original = fetcher._handle_offset_for_leader_epoch_response
        subs = self._consumer._subscription

        def recording_handler(response: Any, requested_positions: dict[KTopicPartition, Any]) -> Any:
            result = original(response, requested_positions)
            for tp, requested in requested_positions.items():
                after = subs.assignment[tp].position if subs.is_assigned(tp) else None
                if after is not None and requested is not None and after.offset < requested.offset:
                    self._moved(tp, after.offset, PositionReason.TRUNCATION)
            return result

        fetcher._handle_offset_for_leader_epoch_response = recording_handler

    def _hook_fetch_sources(self) -> None:
        fetcher = self._consumer._fetcher
        original = fetcher._handle_fetch_response
        sources = self.sources

        def noting_handler(
            node_id: int, fetch_offsets: dict[KTopicPartition, int], send_time: float, response: Any
        ) -> Any:
            for tp, offset in fetch_offsets.items():
                sources.note(tp, offset, node_id)
            return original(node_id, fetch_offsets, send_time, response)

        fetcher._handle_fetch_response = noting_handler

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._consumer.assign([_ktp(tp) for tp in partitions])

    def subscribe(self, topics: Sequence[str]) -> None:
        self._consumer.subscribe(list(topics), listener=_Rebalances(self.listener))
        # HW-7 (docs/findings.md): a leader whose first assignment predates its first metadata
        # of the topic re-joins on the metadata change, and kafka-python 3.0.12 can lose that
        # join's result and stall until evicted. Fetching the metadata now (a blocking Metadata
        # request; the coordinator's snapshot is updated from it) lets the first assignment see
        # the partitions, so that re-join does not happen. It avoids the trigger, not the bug.
        self._consumer.topics()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._consumer.seek(_ktp(tp), offset)

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        self._consumer.seek_to_beginning(_ktp(tp))

    def poll(self, timeout_ms: int) -> list[PolledRecord] | TruncationSignal:
        polled = self.poll_parts(timeout_ms)
        return polled if isinstance(polled, TruncationSignal) else records_of({"parts": polled})

    def poll_parts(self, timeout_ms: int) -> list[dict[str, Any]] | TruncationSignal:
        """A poll as the ``parts`` of its worker reply (``harness.clients.worker.part_of``),
        built from the library's records column by column: the worker sends these, and a
        ``PolledRecord`` per record only to be regrouped into columns cost the worker a tenth
        of its time per poll (kafka-python, 500 records)."""
        try:
            batches = self._consumer.poll(timeout_ms=timeout_ms)
        except kerr.LogTruncationError as exc:
            divergent = {
                TopicPartition(tp.topic, tp.partition): (o.offset if o is not None else None)
                for tp, o in exc.divergent_offsets.items()
            }
            return TruncationSignal(divergent, exc)
        parts: list[dict[str, Any]] = []
        for tp, recs in batches.items():
            if not recs:
                continue
            offsets = [r.offset for r in recs]
            values = [r.value.decode() if isinstance(r.value, bytes) else r.value for r in recs]
            epochs = [e if e is not None and e >= 0 else None for e in (r.leader_epoch for r in recs)]
            # one partition's records ascend: their sources come from one walk (sources_of);
            # an entry per run of one serving broker (nearly always one for the whole poll)
            start = 0
            for source, same in itertools.groupby(self.sources.sources_of(tp, offsets)):
                end = start + sum(1 for _ in same)
                parts.append(
                    part_of(tp.topic, tp.partition, source, offsets[start:end], values[start:end], epochs[start:end])
                )
                start = end
            self.sources.forget_below(tp, recs[-1].offset)
        return parts

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        if offsets is None:
            self._consumer.commit()
            return
        self._consumer.commit({_ktp(tp): OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})

    def group_metadata(self) -> object:
        """kafka-python's ``ConsumerGroupMetadata`` (group id, generation, member id, group
        instance id) as of the last join, for the transactional producer."""
        return self._consumer.group_metadata()

    def close(self) -> None:
        self._consumer.close()
