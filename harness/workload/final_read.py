"""The final read: every replica's log of every partition, after healing.

Each replica is read with raw Fetch requests sent to that broker (Fetch v11+ lets a consumer
read from a follower, KIP-392), from its log start up to its own high watermark. Those are the
replica's *committed* records, what the checks compare with what clients saw. One ``final-read``
ok event per (partition, replica): ``{"topic","partition","replica","hw","log_start",
"records":[[offset,value],...]}``; a replica that cannot be read gets an ``info`` event.

This is observation, not a client under test: the raw requests use kafka-python's protocol
classes whichever client driver (``harness.clients``) the run's producers and consumers use.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.errors import for_code
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.record import MemoryRecords

from harness.observe import Observer
from harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink

_Topic = FetchRequest.FetchTopic
_Partition = FetchRequest.FetchTopic.FetchPartition
MAX_BYTES = 4 * 1024 * 1024


def _fetch(obs: Observer, node: int, topic: str, topic_id: uuid.UUID, partition: int, offset: int) -> Any:
    req = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=MAX_BYTES,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        rack_id="highwater-final-read",
        forgotten_topics_data=[],
        topics=[
            _Topic(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    _Partition(
                        partition=partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=MAX_BYTES,
                    )
                ],
            )
        ],
    )
    return obs.send_to(node, req).responses[0].partitions[0]


def read_replica(obs: Observer, node: int, topic: str, topic_id: uuid.UUID, partition: int) -> dict[str, Any]:
    first = _fetch(obs, node, topic, topic_id, partition, 0)
    if first.error_code not in (0, 1):  # 1 = OFFSET_OUT_OF_RANGE: start again at log start
        raise for_code(first.error_code)(f"fetch {topic}-{partition} from broker {node}")
    hw, log_start = int(first.high_watermark), max(0, int(first.log_start_offset))
    records: list[list[Any]] = []
    offset = log_start
    resp = first if first.error_code == 0 and log_start == 0 else None
    while offset < hw:
        if resp is None:
            resp = _fetch(obs, node, topic, topic_id, partition, offset)
            if resp.error_code != 0:
                raise for_code(resp.error_code)(f"fetch {topic}-{partition}@{offset} from broker {node}")
        before = offset
        batches = MemoryRecords(resp.records) if resp.records else None
        while batches is not None and batches.has_next():
            batch = batches.next_batch()
            if batch is None:
                break
            for rec in batch:
                if offset <= rec.offset < hw:
                    value = rec.value.decode() if isinstance(rec.value, bytes) else rec.value
                    records.append([rec.offset, value])
                    offset = rec.offset + 1
        resp = None
        if offset == before:  # no progress: a gap (compaction/aborted) or an empty answer
            break
    return {
        "topic": topic,
        "partition": partition,
        "replica": node,
        "hw": hw,
        "log_start": log_start,
        "records": records,
    }


def final_read(
    bootstrap: list[str],
    history: HistorySink,
    topic: str,
    partitions: int,
    security: ClientSecurity = PLAINTEXT,
) -> None:
    with Observer(bootstrap, client_id="highwater-final-read", security=security) as obs:
        meta = obs.admin.describe_topics([topic])[0]
        topic_id = meta["topic_id"]
        topic_id = topic_id if isinstance(topic_id, uuid.UUID) else uuid.UUID(str(topic_id))
        for part in sorted(meta["partitions"], key=lambda p: p["partition_index"]):
            p = int(part["partition_index"])
            for node in part["replica_nodes"]:
                try:
                    value = read_replica(obs, int(node), topic, topic_id, p)
                except Exception as exc:  # noqa: BLE001 - an unreadable replica is recorded, not fatal
                    history.info(
                        "final", "final-read", {"topic": topic, "partition": p, "replica": int(node)}, error=exc
                    )
                    continue
                history.ok("final", "final-read", value)
