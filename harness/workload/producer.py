"""A producer that writes unique values and records every outcome honestly.

Each send is an ``invoke`` with ``{"topic","partition","key","value"}``; its completion is ``ok``
with the ``offset`` Kafka acknowledged, ``fail`` only when the write definitely did not happen
(rejected before any byte reached a broker, or by a non-retriable broker error on the only
attempt), and ``info`` otherwise: a timeout or an error after retries may hide a write that
succeeded, so it is never claimed as failed.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from kafka import KafkaProducer
from kafka import errors as kerr

from .base import HistorySink, Worker

log = logging.getLogger(__name__)

# Errors that prove the broker did not append: each is returned before the write is applied.
DEFINITE_REJECTIONS = (kerr.MessageSizeTooLargeError, kerr.RecordListTooLargeError,
                       kerr.InvalidTopicError, kerr.TopicAuthorizationFailedError,
                       kerr.InvalidRequiredAcksError)


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


class ProducerWorker(Worker):
    def __init__(self, name: str, bootstrap: list[str], history: HistorySink, config: ProducerConfig) -> None:
        super().__init__(name, history)
        self.config = config
        self._sent = 0
        self._acked = 0
        self._lock = threading.Lock()
        acks: str | int = config.acks if str(config.acks) == "all" else int(config.acks)  # kafka-python wants 0, 1 or "all"
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap, client_id=name, acks=acks,
            enable_idempotence=config.idempotence, retries=config.retries, linger_ms=2,
            request_timeout_ms=config.request_timeout_ms, delivery_timeout_ms=config.delivery_timeout_ms,
            max_in_flight_requests_per_connection=1 if not config.idempotence else 5,
            max_block_ms=5000)

    def stats(self) -> dict[str, int]:
        return {"sent": self._sent, "acked": self._acked}

    def run(self) -> None:
        interval = 1.0 / self.config.rate
        next_at = time.monotonic()
        n = 0
        while not self.stopping.is_set():
            partition = n % self.config.partitions
            value = f"{self.name}-{n}"
            if self.config.value_size > len(value):
                value = (value + ":").ljust(self.config.value_size, ".")
            self._send_one(partition, value)
            n += 1
            next_at += interval
            # Pacing the offered load, not waiting for a condition.
            self.stopping.wait(max(0.0, next_at - time.monotonic()))
        self._producer.flush(timeout=self.config.delivery_timeout_ms / 1000 + 5)

    def _send_one(self, partition: int, value: str) -> None:
        topic = self.config.topic
        op: dict[str, Any] = {"topic": topic, "partition": partition, "key": None, "value": value}
        self.history.invoke(self.name, "send", op)
        self._sent += 1
        try:
            future = self._producer.send(topic, value=value.encode(), partition=partition)
        except kerr.KafkaTimeoutError as exc:  # metadata or buffer wait: nothing was sent
            self.history.fail(self.name, "send", op, error=exc)
            return
        except Exception as exc:  # noqa: BLE001 - recorded; unknown outcome
            self.history.info(self.name, "send", op, error=exc)
            return
        future.add_callback(self._on_ok, op)
        future.add_errback(self._on_error, op)

    def _on_ok(self, op: dict[str, Any], metadata: Any) -> None:
        with self._lock:
            self._acked += 1
        self.history.ok(self.name, "send", {**op, "offset": int(metadata.offset)})

    def _on_error(self, op: dict[str, Any], exc: BaseException) -> None:
        definite = isinstance(exc, DEFINITE_REJECTIONS) and self.config.retries == 0
        (self.history.fail if definite else self.history.info)(self.name, "send", op, error=exc)

    def close(self) -> None:
        try:
            self._producer.close(timeout=10)
        except Exception as exc:  # noqa: BLE001 - closing must not hide the run's outcome
            log.warning("%s: close failed: %s", self.name, exc)
