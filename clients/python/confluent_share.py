"""confluent-kafka's share consumer (KIP-932: ``confluent_kafka.ShareConsumer``, librdkafka's,
a "Preview" there) in the Python worker's ``share_consumer`` role (docs/adding-a-client.md,
"Share groups"): the same commands and events as the Java worker's ``ShareRole``.

Imported only inside the worker, like ``confluent.py``. librdkafka mirrors Kafka's Java client
here: explicit acknowledgement (``share.acknowledgement.mode=explicit``), ``acknowledge_offset``
recording a kind locally, ``commit_sync`` sending what was recorded, and a commit callback that
runs on the application's thread inside ``poll``, ``commit_sync`` and ``close``, so each
``acked`` event is written before the reply of the command that completed it. An error is
written as every confluent-kafka error of the history is (``confluent.error_text``:
``KafkaError: INVALID_RECORD_STATE: ...``), which ``share.REFUSED_ACKS`` knows beside the Java
client's exception names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from highwater.clients.python.confluent import error_text
from highwater.harness.client_common import AckKind, ShareSettings

log = logging.getLogger(__name__)

#: how one partition's acknowledgements ended: topic, partition, offsets, error text or None
Acked = Callable[[str, int, list[int], "str | None"], None]


def share_config(settings: ShareSettings) -> dict[str, Any]:
    """librdkafka's configuration of a share consumer for ``settings``: as the Java worker's
    properties (``java.share_properties``), no offset reset, isolation level or session timeout,
    which are the group's."""
    return {
        "bootstrap.servers": ",".join(settings.bootstrap),
        "client.id": settings.client_id,
        "group.id": settings.group_id,
        "share.acknowledgement.mode": "explicit",  # each record acknowledged with its own kind
        "max.poll.records": int(settings.max_poll_records),
        "socket.timeout.ms": int(settings.request_timeout_ms),
        "topic.metadata.refresh.interval.ms": int(settings.metadata_max_age_ms),
        **settings.security.as_librdkafka(),
    }


class ConfluentShareMember:
    """One ``confluent_kafka.ShareConsumer``, driven by the worker's share commands; ``acked`` is
    told each acknowledgement outcome as the library's commit callback reports it."""

    def __init__(self, ck: Any, settings: ShareSettings, acked: Acked) -> None:
        self.ck = ck
        self.kinds = {
            AckKind.ACCEPT: ck.AcknowledgeType.ACCEPT,
            AckKind.RELEASE: ck.AcknowledgeType.RELEASE,
            AckKind.REJECT: ck.AcknowledgeType.REJECT,
        }
        self.acked = acked
        self.consumer = ck.ShareConsumer(share_config(settings))
        self.consumer.set_acknowledgement_commit_callback(self._on_commit)
        self.closed = False

    def _on_commit(self, offsets: dict[Any, set[int]], exc: Any) -> None:
        # the callback's KafkaException carries the KafkaError that names the code
        error = None if exc is None else error_text(exc.args[0] if exc.args else exc)
        for tp, acked in offsets.items():
            self.acked(str(tp.topic), int(tp.partition), sorted(int(o) for o in acked), error)

    def subscribe(self, topics: Sequence[str]) -> None:
        self.consumer.subscribe(list(topics))

    def poll(self, timeout_ms: int) -> list[dict[str, Any]]:
        """The records acquired, one entry per partition: ``{"topic", "partition", "offsets",
        "values", "deliveries"}``. A message carrying an error is raised when librdkafka calls
        it fatal, else logged (librdkafka recovers from it on its own)."""
        parts: dict[tuple[str, int], dict[str, Any]] = {}
        for m in self.consumer.poll(timeout_ms / 1000):
            err = m.error()
            if err is not None:
                if err.fatal():
                    raise self.ck.KafkaException(err)
                log.warning("share consumer: %s", err)
                continue
            key = (m.topic(), m.partition())
            part = parts.get(key)
            if part is None:
                part = parts[key] = {
                    "topic": key[0],
                    "partition": key[1],
                    "offsets": [],
                    "values": [],
                    "deliveries": [],
                }
            value = m.value()
            part["offsets"].append(m.offset())
            part["values"].append(None if value is None else value.decode("utf-8", errors="replace"))
            part["deliveries"].append(m.delivery_count())
        return list(parts.values())

    def acknowledge(self, acks: Sequence[Sequence[Any]]) -> None:
        """Record ``[topic, partition, offset, kind]`` acknowledgements of the last poll's records
        (sent by ``commit``); a record not in it is refused by librdkafka."""
        for topic, partition, offset, kind in acks:
            self.consumer.acknowledge_offset(str(topic), int(partition), int(offset), self.kinds[AckKind(kind)])

    def commit(self, timeout_ms: int) -> None:
        """Send the recorded acknowledgements and wait for their outcomes, which reach ``acked``
        through the commit callback (the per-partition result ``commit_sync`` also returns says
        the same, so it is not reported twice)."""
        self.consumer.commit_sync(timeout_ms / 1000)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()
