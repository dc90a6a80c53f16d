"""Protocol probes: raw Fetch requests sent to a chosen replica, and where their results go.

A probe is a consumer Fetch (``replica_id = -1``, ``rack_id`` set: Fetch v11+ lets a consumer
read from a follower, KIP-392) sent with :meth:`harness.observe.Observer.send_to` to one broker
at one offset, optionally with ``current_leader_epoch`` (KIP-320). :func:`fetch_probe` returns
the request and the response fields the checks care about as a plain dict; :func:`record_probe`
writes it (plus the Kafka version) to ``<results_root>/<campaign>/probes/<name>.json`` for the
report.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from kafka.errors import for_code
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.record import MemoryRecords

from highwater.harness.observe import DEBUGGING_REPLICA_ID, Observer

_Topic = FetchRequest.FetchTopic
_Partition = FetchRequest.FetchTopic.FetchPartition

NONE = 0
OFFSET_OUT_OF_RANGE = 1
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
OFFSET_NOT_AVAILABLE = 78

PROBE_RACK = "highwater-probe"
MAX_BYTES = 1024 * 1024


def error_name(code: int) -> str:
    return "NONE" if code == 0 else for_code(code).__name__


def topic_id(obs: Observer, topic: str) -> uuid.UUID:
    tid = obs.admin.describe_topics([topic])[0]["topic_id"]
    return tid if isinstance(tid, uuid.UUID) else uuid.UUID(str(tid))


def replica_leo(obs: Observer, node: int, topic: str, partition: int = 0) -> int:
    """A replica's own log end offset (ListOffsets LATEST with replica_id=-2)."""
    return obs.list_offset(node, topic, partition, replica_id=DEBUGGING_REPLICA_ID)


def _count_records(raw: Any) -> tuple[int, int | None, int | None]:
    """(number of records, first offset, last offset) in a Fetch response's records."""
    if not raw:
        return 0, None, None
    n, first, last = 0, None, None
    batches = MemoryRecords(raw)
    while batches.has_next():
        batch = batches.next_batch()
        if batch is None:
            break
        for rec in batch:
            n += 1
            first = rec.offset if first is None else first
            last = rec.offset
    return n, first, last


def fetch_probe(
    obs: Observer,
    node: int,
    topic: str,
    tid: uuid.UUID,
    partition: int,
    offset: int,
    *,
    leader_epoch: int = -1,
    max_version: int | None = None,
) -> dict[str, Any]:
    """One consumer Fetch to broker ``node`` at ``offset``: the request and the response fields.

    ``leader_epoch`` is sent as ``current_leader_epoch`` (-1: none, the pre-KIP-320 way).
    ``max_wait_ms=0``: the broker answers at once, so an empty answer means "nothing to give".
    """
    kwargs: dict[str, Any] = {} if max_version is None else {"max_version": max_version}
    req = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=MAX_BYTES,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        rack_id=PROBE_RACK,
        forgotten_topics_data=[],
        topics=[
            _Topic(
                topic=topic,
                topic_id=tid,
                partitions=[
                    _Partition(
                        partition=partition,
                        current_leader_epoch=leader_epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=MAX_BYTES,
                    )
                ],
            )
        ],
        **kwargs,
    )
    resp = obs.send_to(node, req)
    if resp.error_code:
        raise for_code(resp.error_code)(f"Fetch to broker {node}: top-level error")
    part = resp.responses[0].partitions[0]
    n, first, last = _count_records(part.records)
    return {
        "request": {
            "broker": node,
            "topic": topic,
            "partition": partition,
            "fetch_offset": offset,
            "current_leader_epoch": leader_epoch,
            "replica_id": -1,
            "rack_id": PROBE_RACK,
            "api_version": getattr(req, "API_VERSION", None),
        },
        "response": {
            "error_code": int(part.error_code),
            "error": error_name(int(part.error_code)),
            "high_watermark": int(part.high_watermark),
            "log_start_offset": int(part.log_start_offset),
            "last_stable_offset": int(part.last_stable_offset),
            "preferred_read_replica": int(part.preferred_read_replica),
            "records": n,
            "first_offset": first,
            "last_offset": last,
        },
    }


def replica_hw(obs: Observer, node: int, topic: str, tid: uuid.UUID, partition: int = 0) -> tuple[int, int]:
    """A replica's own (high watermark, log start offset), from a Fetch at offset 0 sent to it
    (a follower answers with its own HW and log start; an out-of-range 0 is retried at log start)."""
    p = fetch_probe(obs, node, topic, tid, partition, 0)["response"]
    if p["error_code"] == OFFSET_OUT_OF_RANGE:
        # below the log start: ListOffsets EARLIEST (-2) to the replica gives it
        start = obs.list_offset(node, topic, partition, replica_id=DEBUGGING_REPLICA_ID, timestamp=-2)
        p = fetch_probe(obs, node, topic, tid, partition, start)["response"]
    if p["error_code"] != NONE:
        raise for_code(p["error_code"])(f"fetch {topic}-{partition} from broker {node}")
    return p["high_watermark"], p["log_start_offset"]


def record_probe(results_root: Path, campaign: str, name: str, kafka_version: str, data: dict[str, Any]) -> Path:
    """Write one probe record to ``<results_root>/<campaign>/probes/<name>.json``."""
    out = results_root / campaign / "probes"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    body = {
        "format": "highwater.probe/1",
        "name": name,
        "kafka_version": kafka_version,
        "recorded_at": time.time(),
        **data,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=2, default=str))
    tmp.replace(path)
    return path
