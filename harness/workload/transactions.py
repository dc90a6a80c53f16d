"""A transactional producer (KIP-98) that records every transaction honestly.

Each transaction ``<name>#<n>`` is a ``txn`` begin, ``records`` sends spread over the
partitions (each send carries ``"txn"`` in its value, with its own outcome as in
``ProducerWorker``), then a ``txn`` commit or, for a seeded share, an abort. What a raise proves:

- ``begin`` raising: ``fail`` (beginning is local to the client; nothing was started);
- ``commit`` raising: ``info`` (the coordinator may have written the commit before the error
  or timeout reached us), then an abort is tried to settle it: its ``ok`` proves the transaction
  aborted (a coordinator that had prepared the commit refuses the abort);
- ``abort`` raising: ``info``.

After a raise the producer may be unusable (fenced, fatal error, a timed-out call that must be
retried), so it is closed and a new one is made with the same ``transactional.id``: its
``init_transactions`` fences the old one and aborts whatever it left open, which the history
leaves unknown (no event claims it), as it must.
"""

from __future__ import annotations

import logging
import random
import time
import zlib
from dataclasses import dataclass, replace
from typing import Any

from highwater.core.errors import HighwaterError
from highwater.harness.clients import ClientDriver, TransactionalClient, TransactionalProducerDriver
from highwater.harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink
from .producer import ProducerConfig, ProducerWorker, in_flight

log = logging.getLogger(__name__)


class TransactionsUnsupported(HighwaterError):
    """The client under test has no transactional producer in highwater."""


@dataclass(frozen=True)
class TransactionConfig:
    transactional_id: str  # unique per run and producer: a new run must not fence an old one
    records: int = 4  # sends per transaction, spread round-robin over the partitions
    abort_share: float = 0.25  # share of transactions aborted on purpose (seeded)
    seed: int = 0
    end_timeout_s: float = 10.0  # how long a commit or abort may take
    # the coordinator aborts a transaction left open this long (librdkafka: >= the delivery timeout)
    transaction_timeout_ms: int = 20000


class TransactionalProducerWorker(ProducerWorker):
    def __init__(
        self,
        name: str,
        bootstrap: list[str],
        history: HistorySink,
        config: ProducerConfig,
        txn: TransactionConfig,
        client: str | ClientDriver,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.txn = txn
        super().__init__(name, bootstrap, history, config, client, security)
        if not isinstance(self.client, TransactionalClient):
            raise TransactionsUnsupported(f"client {self.client.name} has no transactional producer in highwater")
        self.settings = replace(
            self.settings,
            idempotence=True,
            max_in_flight=in_flight(replace(config, idempotence=True)),
            transactional_id=txn.transactional_id,
            transaction_timeout_ms=txn.transaction_timeout_ms,
        )
        self._txn_producer: TransactionalProducerDriver | None = None
        self._rng = random.Random(txn.seed ^ zlib.crc32(name.encode()))
        self.committed = self.aborted = self.unknown = 0
        self.open_failures = 0  # producers that could not be made or initialised

    def _make_producer(self) -> None:
        return None  # made (and re-made after a failure) in ``run``, where init may wait

    def stats(self) -> dict[str, int]:
        return {
            **super().stats(),
            "committed": self.committed,
            "aborted": self.aborted,
            "unknown": self.unknown,
            "open_failures": self.open_failures,
        }

    def _open(self) -> bool:
        assert isinstance(self.client, TransactionalClient)
        try:
            producer = self.client.transactional_producer(self.settings)
        except Exception as exc:  # noqa: BLE001 - e.g. no broker yet: logged, retried by run
            log.warning("%s: cannot make a transactional producer: %s", self.name, exc)
            self.open_failures += 1
            return False
        try:
            producer.init_transactions(self.txn.end_timeout_s)
        except Exception as exc:  # noqa: BLE001 - coordinator unavailable (a fault): retried by run
            log.warning("%s: init_transactions failed: %s", self.name, exc)
            self.open_failures += 1
            producer.close(5)
            return False
        self._txn_producer = producer
        self._producer = producer
        return True

    def _reset(self) -> None:
        producer, self._txn_producer, self._producer = self._txn_producer, None, None
        if producer is not None:
            try:
                producer.close(5)
            except Exception as exc:  # noqa: BLE001 - a broken producer may fail to close too
                log.warning("%s: close after a failed transaction: %s", self.name, exc)

    def run(self) -> None:
        per_txn = max(1, self.txn.records)
        interval = per_txn / self.config.rate  # the record rate of ProducerConfig.rate
        next_at = time.monotonic()
        n = 0
        while not self.stopping.is_set():
            if self._txn_producer is None and not self._open():
                self.stopping.wait(1.0)  # back off before the next init
                continue
            self._transaction(
                f"{self.name}#{n}", abort=self._rng.random() < self.txn.abort_share, first_value=n * per_txn
            )
            n += 1
            next_at = max(next_at + interval, time.monotonic() - interval)
            self.stopping.wait(max(0.0, next_at - time.monotonic()))  # pacing the offered load

    def _transaction(self, txn_id: str, abort: bool, first_value: int) -> None:
        if not self._begin(txn_id):
            return
        for i in range(max(1, self.txn.records)):
            self._send_one(i % self.config.partitions, self.value(first_value + i), txn=txn_id)
        self._flush(txn_id)
        self._finish(txn_id, abort)

    def _begin(self, txn_id: str) -> bool:
        """Begin ``txn_id``, recorded; False (and the producer reset) when it did not begin."""
        producer = self._txn_producer
        assert producer is not None
        begin = {"op": "begin", "txn": txn_id}
        self.history.invoke(self.name, "txn", begin)
        try:
            producer.begin_transaction()
        except Exception as exc:  # noqa: BLE001 - recorded: nothing began
            self.history.fail(self.name, "txn", begin, error=exc)
            self._reset()
            return False
        self.history.ok(self.name, "txn", begin)
        return True

    def _flush(self, txn_id: str) -> None:
        """Written before the end, so an aborted transaction leaves its records in the log for
        read_committed consumers to skip (aborting unsent batches would write nothing)."""
        assert self._txn_producer is not None
        try:
            self._txn_producer.flush(self.txn.end_timeout_s)
        except Exception as exc:  # noqa: BLE001 - the sends record their own outcomes
            log.warning("%s: flush before the end of %s: %s", self.name, txn_id, exc)

    def _finish(self, txn_id: str, abort: bool) -> bool:
        """Commit ``txn_id`` (or abort it when ``abort``); True only when it committed. An
        unknown commit is settled by an abort; an unknown end resets the producer."""
        producer = self._txn_producer
        assert producer is not None
        if not abort and self._end(producer.commit_transaction, "commit", txn_id):
            self.committed += 1
            return True
        if self._end(producer.abort_transaction, "abort", txn_id):
            self.aborted += 1
        else:
            self.unknown += 1
            self._reset()
        return False

    def _end(self, call: Any, op: str, txn_id: str) -> bool:
        value = {"op": op, "txn": txn_id}
        self.history.invoke(self.name, "txn", value)
        try:
            call(self.txn.end_timeout_s)
        except Exception as exc:  # noqa: BLE001 - recorded: the outcome is unknown
            self.history.info(self.name, "txn", value, error=exc)
            return False
        self.history.ok(self.name, "txn", value)
        return True

    def close(self) -> None:
        self._reset()
