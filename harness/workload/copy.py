"""An exactly-once copy (KIP-98, KIP-447): consume, transform, produce, with the consumed
offsets committed inside the producing transaction, as Kafka's own transaction system tests
copy a topic (``tests/kafkatest`` ``TransactionalMessageCopier``).

A copier is a member of the copy group reading the source topic ``read_committed`` in
subscribe mode, and a transactional producer writing the sink topic. For every poll that
returned records it runs one transaction ``<name>#<n>``:

- ``txn`` begin;
- for each record, a ``send`` to the same partition of the sink with the value
  ``<source value>@<txn id>`` (unique per send, so a record copied again after an abort is a new
  value; ``core.checks.copy`` maps it back to its source by the text before the last ``@``);
- ``commit`` events ``{"group","topic","partition","offset","txn"}`` around
  ``send_offsets_to_transaction`` (the source offsets after the last record of each partition):
  ``ok`` means the offsets joined the transaction; they are committed only if it commits;
- ``txn`` commit, or for a seeded share abort; an unknown commit is settled by an abort, as in
  ``TransactionalProducerWorker``.

When the transaction did not commit, the copier moves back to the first offset it copied of each
partition (a ``seek`` with reason ``rewind``), so those records are copied again in a later
transaction: with the offsets inside the transaction, each committed source record is in the
committed sink exactly once (the ``copy-exactly-once`` check).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from highwater.core.history.format import copy_value
from highwater.harness.clients import (
    ClientDriver,
    PolledRecord,
    PositionChange,
    PositionReason,
    TopicPartition,
)
from highwater.harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink
from .consumer import ConsumerConfig, ConsumerWorker
from .producer import ProducerConfig
from .transactions import TransactionalProducerWorker, TransactionConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CopyConfig:
    source: str  # the topic read
    sink: str  # the topic written, partition for partition
    partitions: int
    group_id: str  # the copy group (subscribe mode, read_committed)
    client_rack: str | None = None
    # at most one transaction per this many seconds: records gather into fewer, larger
    # transactions (each costs begin, AddOffsetsToTxn, TxnOffsetCommit and EndTxn round trips)
    txn_interval_s: float = 0.25


class CopyWorker(TransactionalProducerWorker):
    """One copier: the transactional producer of ``TransactionalProducerWorker`` (its begin /
    end / reset and its honest outcomes), fed by a ``ConsumerWorker`` of the copy group that it
    polls itself, in this thread (the consumer's events carry the copier's name)."""

    def __init__(
        self,
        name: str,
        bootstrap: list[str],
        history: HistorySink,
        copy: CopyConfig,
        txn: TransactionConfig,
        client: str | ClientDriver,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        producing = ProducerConfig(copy.sink, copy.partitions, acks="all", idempotence=True)
        super().__init__(name, bootstrap, history, producing, txn, client, security)
        self.copy = copy
        self.source = ConsumerWorker(
            name,
            bootstrap,
            history,
            ConsumerConfig(
                copy.source,
                copy.partitions,
                mode="subscribe",
                client_rack=copy.client_rack,
                group_id=copy.group_id,
                isolation_level="read_committed",
                commit_after_poll=False,  # the offsets go into the transaction instead
            ),
            client=self.client,
            security=security,
        )
        self.copied = 0  # records of committed copy transactions

    @property
    def records_read(self) -> int:
        return self.source.records_read

    def stats(self) -> dict[str, int]:
        return {**super().stats(), "copied": self.copied, "read": self.source.records_read}

    def stop(self, timeout: float = 30.0) -> None:
        self.source.stopping.set()  # its back-off waits end with ours
        super().stop(timeout)

    def run(self) -> None:
        self.source.consumer.subscribe([self.copy.source])
        n = 0
        next_at = time.monotonic()
        while not self.stopping.is_set():
            self.stopping.wait(max(0.0, next_at - time.monotonic()))  # pacing the transactions
            next_at = time.monotonic() + self.copy.txn_interval_s
            if self._txn_producer is None and not self._open():
                self.stopping.wait(1.0)  # back off before the next init
                continue
            polled = self.source.poll_records()
            if polled:
                self._copy(f"{self.name}#{n}", polled, abort=self._rng.random() < self.txn.abort_share)
                n += 1

    def _copy(self, txn_id: str, polled: Sequence[PolledRecord], abort: bool) -> None:
        first: dict[TopicPartition, int] = {}
        nxt: dict[TopicPartition, int] = {}
        for r in polled:
            tp = TopicPartition(r.topic, r.partition)
            first[tp] = min(first.get(tp, r.offset), r.offset)
            nxt[tp] = max(nxt.get(tp, 0), r.offset + 1)
        if not self._begin(txn_id):
            self._rewind(first)
            return
        for r in polled:
            self._send_one(r.partition, copy_value(r.value, txn_id), txn=txn_id)
        offsets_in = self._send_offsets(txn_id, nxt)
        self._flush(txn_id)
        if self._finish(txn_id, abort=abort or not offsets_in):
            self.copied += len(polled)
        else:
            self._rewind(first)

    def _send_offsets(self, txn_id: str, nxt: dict[TopicPartition, int]) -> bool:
        """The source offsets into the transaction, one ``commit`` event per partition."""
        producer = self._txn_producer
        assert producer is not None
        ops = [
            {"group": self.copy.group_id, "topic": tp.topic, "partition": tp.partition, "offset": o, "txn": txn_id}
            for tp, o in nxt.items()
        ]
        for op in ops:
            self.history.invoke(self.name, "commit", op)
        try:
            producer.send_offsets_to_transaction(nxt, self.source.consumer.group_metadata(), self.txn.end_timeout_s)
        except Exception as exc:  # noqa: BLE001 - recorded; the transaction is then aborted
            for op in ops:
                self.history.info(self.name, "commit", op, error=exc)
            return False
        for op in ops:
            self.history.ok(self.name, "commit", op)
        return True

    def _rewind(self, first: dict[TopicPartition, int]) -> None:
        """Back to the first offset this transaction copied of each partition: it did not commit,
        so those records are still to be copied. A partition the group took away meanwhile is
        not ours to move (its new owner starts from the committed offset)."""
        for tp, offset in first.items():
            try:
                self.source.consumer.seek(tp, offset)
            except Exception as exc:  # noqa: BLE001 - e.g. revoked by a rebalance: not recorded as a move
                log.info("%s: no rewind of %s: %s", self.name, tp, exc)
                continue
            self.source.record_position(PositionChange(tp.topic, tp.partition, offset, PositionReason.REWIND))

    def close(self) -> None:
        try:
            self.source.close()
        finally:
            super().close()
