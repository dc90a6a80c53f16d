"""The final read: every replica's log of every partition, after healing.

Each replica is read with raw Fetch requests sent to that broker (Fetch v11+ lets a consumer
read from a follower, KIP-392), from its log start up to its own high watermark. Those are the
replica's *committed* records, what the checks compare with what clients saw. One ``final-read``
ok event per (partition, replica): ``{"topic","partition","replica","hw","log_start",
"records":[[offset,value],...]}``; a replica that cannot be read gets an ``info`` event.

Transactions (KIP-98): ``records`` holds only *committed* data, what a read_committed consumer
could return: non-transactional records and those of transactions whose COMMIT marker is in the
replica's log below its high watermark. Records of transactions with an ABORT marker are listed
under ``aborted``, those with no marker yet under ``open`` (both ``[[offset, value], ...]``,
present only when non-empty); control records (the markers) are left out. The split is done here,
from the batches' producer ids and the markers, the way a consumer does it (not with the
broker's read_committed fetch, which stops at the last stable offset and would hide an open
transaction's records instead of naming them).

This is observation, not a client under test: the raw requests use kafka-python's protocol
classes whichever client driver (``harness.clients``) the run's producers and consumers use.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka.errors import OffsetOutOfRangeError, for_code
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.record import MemoryRecords

from highwater.harness.observe import Observer
from highwater.harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink

_Topic = FetchRequest.FetchTopic
_Partition = FetchRequest.FetchTopic.FetchPartition
MAX_BYTES = 4 * 1024 * 1024
#: how often, and how long each time, an empty answer below the high watermark is asked again: a
#: read of a segment in tiered storage (KIP-405) answers empty until the broker's remote reader has
#: it, for up to its ``remote.fetch.max.wait.ms`` (500 ms by default)
REMOTE_WAITS = 5
#: Fetch's OFFSET_OUT_OF_RANGE, and how often a read that met it starts again at the log start
OFFSET_OUT_OF_RANGE = OffsetOutOfRangeError.errno
OUT_OF_RANGE_TRIES = 3
REMOTE_WAIT_MS = 1000


def _fetch(
    obs: Observer, node: int, topic: str, topic_id: uuid.UUID, partition: int, offset: int, max_wait_ms: int = 0
) -> Any:
    req = FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
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


@dataclass(frozen=True)
class BatchView:
    """What the transaction split needs of one record batch."""

    producer_id: int
    transactional: bool
    control: bool
    records: list[tuple[int, Any]]  # (offset, value); for a control batch the value is "commit"/"abort"


@dataclass
class ReplicaRecords:
    committed: list[list[Any]] = field(default_factory=list)
    aborted: list[list[Any]] = field(default_factory=list)
    open: list[list[Any]] = field(default_factory=list)


def split_transactions(batches: Iterable[BatchView]) -> ReplicaRecords:
    """Split a replica's data records (in log order) into committed, aborted and open ones.

    A transactional batch's records wait under their producer id until that producer's next
    control marker: COMMIT makes them committed, ABORT aborted; with no marker they stay open.
    Non-transactional records are committed as they come; control records are dropped."""
    out = ReplicaRecords()
    pending: dict[int, list[list[Any]]] = {}
    for b in batches:
        if b.control:
            for _, marker in b.records:
                waiting = pending.pop(b.producer_id, [])
                (out.committed if marker == "commit" else out.aborted).extend(waiting)
        elif b.transactional:
            pending.setdefault(b.producer_id, []).extend([o, v] for o, v in b.records)
        else:
            out.committed.extend([o, v] for o, v in b.records)
    for waiting in pending.values():
        out.open.extend(waiting)
    for part in (out.committed, out.aborted, out.open):
        part.sort(key=lambda r: int(r[0]))
    return out


def _view(batch: Any, lo: int, hi: int) -> BatchView:
    records: list[tuple[int, Any]] = []
    for rec in batch:
        if lo <= rec.offset < hi:
            if batch.is_control_batch:
                value: Any = "commit" if rec.commit else "abort"
            else:
                value = rec.value.decode() if isinstance(rec.value, bytes) else rec.value
            records.append((int(rec.offset), value))
    return BatchView(int(batch.producer_id), bool(batch.is_transactional), bool(batch.is_control_batch), records)


def _first_fetch(obs: Observer, node: int, topic: str, topic_id: uuid.UUID, partition: int) -> tuple[Any, int]:
    """The first fetch of a replica's log, and the offset it asked for: from offset 0; when that
    is out of range (retention deleted the start of the log, and the answer then names neither
    the log start nor the high watermark), from the replica's log start, asked again while
    retention moves it on under the read."""
    asked = 0
    first = _fetch(obs, node, topic, topic_id, partition, asked)
    for _ in range(OUT_OF_RANGE_TRIES):
        start = _log_start_past(obs, node, topic, partition, asked) if first.error_code == OFFSET_OUT_OF_RANGE else None
        if start is None:
            break
        asked = start
        first = _fetch(obs, node, topic, topic_id, partition, asked)
    if first.error_code not in (0, OFFSET_OUT_OF_RANGE):
        # a read of a segment the remote store cannot give back fails; the high watermark and
        # the log start come with a read of the local log instead
        local = _local_start_above(obs, node, topic, partition, asked)
        if local is None:
            raise for_code(first.error_code)(f"fetch {topic}-{partition}@{asked} from broker {node}")
        asked, first = local, _fetch(obs, node, topic, topic_id, partition, local)
        if first.error_code != 0:
            raise for_code(first.error_code)(f"fetch {topic}-{partition}@{asked} from broker {node}")
    return first, asked


def _log_start_past(obs: Observer, node: int, topic: str, partition: int, offset: int) -> int | None:
    """The replica's log start when retention has moved it past ``offset`` (a fetch there was
    out of range), else None."""
    start = obs.replica_log_start(node, topic, partition)
    return start if start is not None and start > offset else None


def _first_readable(
    obs: Observer, node: int, topic: str, topic_id: uuid.UUID, partition: int, failed: int, local: int
) -> int:
    """The lowest offset in (``failed``, ``local``] a fetch is answered without an error, by
    bisection: a fetch at ``failed`` failed and the local log at ``local`` is readable, and what
    a store lost is whole segments, the ones copied before it lost them, so the failures form a
    run from ``failed`` (a later run of them is met, and searched, when the read reaches it).
    Each probe waits for the broker's remote reader (``REMOTE_WAIT_MS``), which answers a read it
    could not do with an error, not with an empty answer."""
    lo, hi = failed, local
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fetch(obs, node, topic, topic_id, partition, mid, REMOTE_WAIT_MS).error_code == 0:
            hi = mid
        else:
            lo = mid
    return hi


def _local_start_above(obs: Observer, node: int, topic: str, partition: int, offset: int) -> int | None:
    """Where the replica's local log begins when ``offset`` lies below it (a read there goes to
    the tiered remote store), else None."""
    local = obs.replica_log_start(node, topic, partition, local=True)
    return local if local is not None and local > offset else None


def read_replica(obs: Observer, node: int, topic: str, topic_id: uuid.UUID, partition: int) -> dict[str, Any]:
    first, asked = _first_fetch(obs, node, topic, topic_id, partition)
    hw, log_start = int(first.high_watermark), max(0, int(first.log_start_offset))
    views: list[BatchView] = []
    offset = log_start
    resp = first if first.error_code == 0 and log_start == asked else None
    waits = 0  # empty answers below the high watermark asked again (a remote read still pending)
    unreadable: list[list[Any]] = []  # [from, to, error]: remote segments the broker could not read
    while offset < hw:
        if resp is None:
            resp = _fetch(obs, node, topic, topic_id, partition, offset, REMOTE_WAIT_MS if waits else 0)
            if resp.error_code == OFFSET_OUT_OF_RANGE:
                # retention moved the log start past the read while it ran (retention-race): the
                # records below it are deleted, not unreadable; the read goes on from the new start
                start = _log_start_past(obs, node, topic, partition, offset)
                if start is None:
                    raise for_code(resp.error_code)(f"fetch {topic}-{partition}@{offset} from broker {node}")
                offset = log_start = start
                resp, waits = None, 0
                continue
            if resp.error_code != 0:
                local = _local_start_above(obs, node, topic, partition, offset)
                error = for_code(resp.error_code)
                if local is None:
                    raise error(f"fetch {topic}-{partition}@{offset} from broker {node}")
                # the remote store lost or cannot give back what lies below the local log: the
                # records there are unreadable to everyone, and the read goes on where it can
                end = _first_readable(obs, node, topic, topic_id, partition, offset, local)
                unreadable.append([offset, end, error.__name__])
                offset, resp, waits = end, None, 0
                continue
        before = offset
        batches = MemoryRecords(resp.records) if resp.records else None
        while batches is not None and batches.has_next():
            batch = batches.next_batch()
            if batch is None:
                break
            view = _view(batch, offset, hw)
            if view.records:
                views.append(view)
                offset = view.records[-1][0] + 1
        resp = None
        if offset == before:  # no progress: a gap (compaction), or an empty answer
            # a segment in tiered storage is read by the broker's remote reader threads: a fetch
            # that does not wait for them (max_wait 0) is answered empty, not with an error
            waits += 1
            if waits > REMOTE_WAITS:
                break
        else:
            waits = 0
    split = split_transactions(views)
    value: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "replica": node,
        "hw": hw,
        "log_start": log_start,
        "records": split.committed,
    }
    if split.aborted:
        value["aborted"] = split.aborted
    if split.open:
        value["open"] = split.open
    if unreadable:
        value["unreadable"] = unreadable
    return value


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
