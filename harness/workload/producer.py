"""A producer that writes unique values and records every outcome honestly, over any client
driver (``harness.clients``).

Each send is an ``invoke`` with ``{"topic","partition","key","value"}``; its completion is ``ok``
with the ``offset`` Kafka acknowledged, ``fail`` only when the write definitely did not happen,
and ``info`` otherwise: a timeout or an error after retries may hide a write that succeeded, so
it is never claimed as failed. Which errors prove a write did not happen is the driver's call
(``SendOutcome``); pacing, values, counting and recording are this worker's, for every client.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from highwater.harness.clients import (
    DEFAULT_CLIENT,
    ClientDriver,
    Outcome,
    ProducerDriver,
    ProducerSettings,
    SendOutcome,
    WorkerGone,
    resolve_driver,
    take_relaunch,
)
from highwater.harness.clients.base import ClientGone, send_batch
from highwater.harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink, Worker, relaunched_driver

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProducerConfig:
    topic: str
    partitions: int = 1
    acks: str | int = "all"
    idempotence: bool = False
    rate: float = 200.0  # sends per second (paced)
    retries: int = 3
    request_timeout_ms: int = 5000
    delivery_timeout_ms: int = 20000
    value_size: int = 0  # pad values to this many bytes (0: no padding); they stay unique
    linger_ms: int = 2
    # requests in flight per connection; None: 1 without idempotence (retries stay in order), 5 with
    max_in_flight: int | None = None


def in_flight(config: ProducerConfig) -> int:
    """The producer's requests in flight per connection: the config's, or by default one without
    idempotence (a retry cannot overtake a later batch) and five with it (the most the broker's
    sequence checks keep in order)."""
    if config.max_in_flight is not None:
        return config.max_in_flight
    return 5 if config.idempotence else 1


#: the most sends handed over at once (a producer far behind its rate catches up in several)
MAX_BATCH = 10_000


class ProducerWorker(Worker):
    def __init__(
        self,
        name: str,
        bootstrap: list[str],
        history: HistorySink,
        config: ProducerConfig,
        client: str | ClientDriver = DEFAULT_CLIENT,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        super().__init__(name, history)
        self.config = config
        self._sent = 0
        self._acked = 0
        self._lock = threading.Lock()
        self.client = resolve_driver(client)
        self.settings = ProducerSettings(
            bootstrap=bootstrap,
            client_id=name,
            acks=config.acks,
            idempotence=config.idempotence,
            retries=config.retries,
            request_timeout_ms=config.request_timeout_ms,
            delivery_timeout_ms=config.delivery_timeout_ms,
            linger_ms=config.linger_ms,
            max_in_flight=in_flight(config),
            security=security,
        )
        self._producer: ProducerDriver | None = self._make_producer()

    def _make_producer(self) -> ProducerDriver | None:
        """The producer the run starts with (a transactional worker makes its own later)."""
        return self.client.producer(self.settings)

    def stats(self) -> dict[str, int]:
        return {"sent": self._sent, "acked": self._acked}

    def value(self, n: int) -> str:
        """The ``n``-th value of this producer: unique across the run, padded to ``value_size``."""
        value = f"{self.name}-{n}"
        if self.config.value_size > len(value):
            value = (value + ":").ljust(self.config.value_size, ".")
        return value

    def run(self) -> None:
        interval = 1.0 / self.config.rate
        next_at = time.monotonic()
        n = 0
        while not self.stopping.is_set():
            # every send whose time has come: one, unless the loop fell behind a high rate
            due = min(MAX_BATCH, 1 + max(0, int((time.monotonic() - next_at) / interval)))
            if due == 1:
                self._send_one(n % self.config.partitions, self.value(n))
            else:
                self._send_many(n, due)
            n += due
            next_at += due * interval
            # Pacing the offered load, not waiting for a condition.
            self.stopping.wait(max(0.0, next_at - time.monotonic()))
        if self._producer is not None:
            self._producer.flush(self.config.delivery_timeout_ms / 1000 + 5)

    def _send_many(self, n: int, count: int) -> None:
        """Sends ``n`` to ``n + count - 1`` as one batch (``send_batch``): each recorded as
        ``_send_one`` records it (its ``invoke`` before it is handed over, its outcome once),
        the acknowledgements of a worker reaching ``_Outcomes`` as the lists they came in."""
        topic, partitions = self.config.topic, self.config.partitions
        ops: list[dict[str, Any]] = []
        for i in range(n, n + count):
            op = {"topic": topic, "partition": i % partitions, "key": None, "value": self.value(i)}
            self.history.invoke(self.name, "send", op)
            ops.append(op)
        self._sent += count
        try:
            assert self._producer is not None, "a send needs a producer"
            send_batch(
                self._producer,
                topic,
                [op["partition"] for op in ops],
                [op["value"] for op in ops],
                _Outcomes(self, ops),
            )
        except ClientGone:  # killed: its sends ended info already
            self._replace_after_death()

    def _send_one(self, partition: int, value: str, txn: str | None = None) -> None:
        topic = self.config.topic
        op: dict[str, Any] = {"topic": topic, "partition": partition, "key": None, "value": value}
        if txn is not None:
            op["txn"] = txn
        self.history.invoke(self.name, "send", op)
        self._sent += 1
        try:
            assert self._producer is not None, "a send needs a producer"
            self._producer.send(topic, partition, value, lambda outcome: self._on_outcome(op, outcome))
        except WorkerGone as exc:  # killed: this send is unknown
            self.history.info(self.name, "send", op, error=exc)
            self._replace_after_death()
        except Exception as exc:  # noqa: BLE001 - recorded; unknown outcome
            self.history.info(self.name, "send", op, error=exc)

    def _replace_after_death(self) -> None:
        """The producer's worker was killed: a new producer once a restart is asked for."""
        if self.await_restart():
            self.close()
            self.client = relaunched_driver(self.client, take_relaunch(self.name))  # --version
            self._producer = self._make_producer()

    def _record_acked(self, ops: Sequence[dict[str, Any]], offsets: Sequence[int]) -> None:
        with self._lock:
            self._acked += len(ops)
        for op, offset in zip(ops, offsets):
            self.history.ok(self.name, "send", {**op, "offset": offset})

    def _on_outcome(self, op: dict[str, Any], outcome: SendOutcome) -> None:
        if outcome.outcome is Outcome.OK:
            self._record_acked((op,), (outcome.offset,))  # type: ignore[arg-type]
        elif outcome.outcome is Outcome.FAIL:
            self.history.fail(self.name, "send", op, error=outcome.error)
        else:
            self.history.info(self.name, "send", op, error=outcome.error)

    def close(self) -> None:
        if self._producer is None:
            return
        try:
            self._producer.close(10)
        except Exception as exc:  # noqa: BLE001 - closing must not hide the run's outcome
            log.warning("%s: close failed: %s", self.name, exc)


class _Outcomes:
    """The outcomes of one ``_send_many`` batch (``BatchOutcomes``), recorded by its worker."""

    __slots__ = ("ops", "worker")

    def __init__(self, worker: ProducerWorker, ops: list[dict[str, Any]]) -> None:
        self.worker = worker
        self.ops = ops

    def acked(self, indexes: Sequence[int], offsets: Sequence[int]) -> None:
        self.worker._record_acked([self.ops[i] for i in indexes], offsets)

    def ended(self, index: int, outcome: SendOutcome) -> None:
        self.worker._on_outcome(self.ops[index], outcome)
