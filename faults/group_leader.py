"""Who leads a consumer group: what its coordinator says, for the ``group-leader`` selector.

The classic protocol's group coordinator picks one member as the group's leader (it computes
the assignment at each rebalance). No client says whether it leads (Java's consumer and
librdkafka keep it internal) and DescribeGroups does not name it; the coordinator writes it to
the group's metadata record in ``__consumer_offsets`` at the end of every rebalance
(``GroupMetadataKey`` version 2 -> ``GroupMetadataValue``: protocol type, generation, protocol,
leader member id, and each member's id and client id). :class:`LiveGroups` reads that record
from the leader of the ``__consumer_offsets`` partition the group id hashes to, with
ListGroups (the group's type: ``classic`` or KIP-848's ``consumer``) and DescribeGroups (its
state and members) beside it, as a :class:`faults.clients.GroupSnapshot`; the pure
:func:`faults.clients.group_leader` judges it. The parsing here is pure and unit-tested.

Observation, not a client under test: kafka-python's admin (``harness.observe.Observer``).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka.errors import for_code
from kafka.record import MemoryRecords

from highwater.faults.clients import GroupSnapshot
from highwater.harness.observe import Observer

OFFSETS_TOPIC = "__consumer_offsets"
GROUP_METADATA_KEY = 2  # the key version of a classic group's metadata record


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group``: Kafka's ``Utils.abs(hashCode) % n``,
    where ``Utils.abs`` is the absolute value, and 0 for ``Integer.MIN_VALUE``."""
    h = java_string_hash(group)
    return (0 if h == -(2**31) else abs(h)) % partitions


class _Reader:
    """Kafka's encodings: classic (int16/int32 lengths) and flexible (unsigned varints)."""

    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data, self.pos, self.flexible = data, 0, flexible

    def _take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def int16(self) -> int:
        return int(self._take(">h"))

    def int32(self) -> int:
        return int(self._take(">i"))

    def int64(self) -> int:
        return int(self._take(">q"))

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def _length(self, wide: bool = False) -> int:
        if self.flexible:
            return self.uvarint() - 1
        return self.int32() if wide else self.int16()

    def string(self) -> str | None:
        n = self._length()
        if n < 0:
            return None
        text = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return text

    def bytes_(self) -> None:
        n = self._length(wide=True)
        self.pos += max(0, n)

    def array(self, item: Callable[[], Any]) -> list[Any]:
        n = self._length(wide=True)
        return [item() for _ in range(max(0, n))]

    def tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.pos += self.uvarint()


@dataclass(frozen=True)
class StoredGroup:
    """A classic group's metadata record, as far as ``group-leader`` needs it."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: dict[str, str]  # member id -> client id


def group_of_key(key: bytes | None) -> str | None:
    """The group id of a group metadata record's key; None for any other record (offset
    commits, KIP-848's records)."""
    if not key or len(key) < 2:
        return None
    r = _Reader(key)
    if r.int16() != GROUP_METADATA_KEY:
        return None
    return r.string()


def parse_group_metadata(value: bytes) -> StoredGroup:
    """A ``GroupMetadataValue`` (versions 0-4; 4 is flexible): its leader and members."""
    version = _Reader(value).int16()
    if not 0 <= version <= 4:
        raise ValueError(f"unknown GroupMetadataValue version {version}")
    r = _Reader(value, flexible=version >= 4)
    r.pos = 2
    protocol_type = r.string() or ""
    generation = r.int32()
    protocol = r.string()
    leader = r.string()
    if version >= 2:
        r.int64()  # current state timestamp

    def member() -> tuple[str, str]:
        member_id = r.string() or ""
        if version >= 3:
            r.string()  # group instance id
        client_id = r.string() or ""
        r.string()  # client host
        if version >= 1:
            r.int32()  # rebalance timeout
        r.int32()  # session timeout
        r.bytes_()  # subscription
        r.bytes_()  # assignment
        r.tags()
        return member_id, client_id

    members = dict(r.array(member))
    return StoredGroup(protocol_type, generation, protocol, leader, members)


def last_stored(records: list[tuple[bytes | None, bytes | None]], group: str) -> StoredGroup | None:
    """The group's last metadata record among ``records`` (key, value) in log order; None when
    there is none or the last is a tombstone (the group was deleted)."""
    found: StoredGroup | None = None
    for key, value in records:
        if group_of_key(key) == group:
            found = None if value is None else parse_group_metadata(value)
    return found


def snapshot(
    group: str,
    group_type: str,
    described: dict[str, Any] | None,
    stored: StoredGroup | None,
) -> GroupSnapshot:
    """The coordinator's answers as one :class:`GroupSnapshot` (``described``: kafka-python's
    ``describe_groups`` entry of the group, None if it has none)."""
    members = {str(m["member_id"]): str(m["client_id"]) for m in (described or {}).get("members") or ()}
    return GroupSnapshot(
        group,
        group_type,
        str((described or {}).get("group_state") or ""),
        members,
        None if stored is None else stored.generation,
        None if stored is None else stored.leader,
        frozenset(stored.members) if stored is not None else frozenset(),
    )


class LiveGroups:
    """A :class:`faults.clients.GroupView` over a live cluster's shared admin connection."""

    def __init__(self, observer: Callable[[], Observer]) -> None:
        self._observer = observer

    def group_type(self, group: str) -> str:
        """ListGroups' type of ``group`` at its coordinator (``""``: unlisted, or not said)."""
        obs = self._observer()
        return self._listed_type(obs, obs.coordinator("group", group), group)

    @staticmethod
    def _listed_type(obs: Observer, coordinator: int, group: str) -> str:
        listed = [g for g in obs.admin.list_groups(broker_ids=[coordinator]) if g.get("group_id") == group]
        return str(listed[0].get("group_type") or "") if listed else ""

    def group(self, group: str) -> GroupSnapshot:
        obs = self._observer()
        coordinator = obs.coordinator("group", group)
        group_type = self._listed_type(obs, coordinator, group)
        described = obs.admin.describe_groups([group], group_coordinator_id=coordinator).get(group)
        if described is not None and described.get("error"):
            raise RuntimeError(f"DescribeGroups {group}: {described['error']}")
        stored = None if group_type == "consumer" else last_stored(self._records(obs, group), group)
        return snapshot(group, group_type, described, stored)

    @staticmethod
    def _records(obs: Observer, group: str) -> list[tuple[bytes | None, bytes | None]]:
        from highwater.harness.workload.final_read import _fetch

        meta = obs.admin.describe_topics([OFFSETS_TOPIC])[0]
        topic_id = meta["topic_id"]
        topic_id = topic_id if isinstance(topic_id, uuid.UUID) else uuid.UUID(str(topic_id))
        parts = {int(p["partition_index"]): p for p in meta["partitions"]}
        p = offsets_partition(group, len(parts))
        leader = int(parts[p]["leader_id"])
        out: list[tuple[bytes | None, bytes | None]] = []
        offset, hw = 0, None
        while hw is None or offset < hw:
            resp = _fetch(obs, leader, OFFSETS_TOPIC, topic_id, p, offset)
            if resp.error_code == 1 and offset == 0:  # OFFSET_OUT_OF_RANGE: start at the log start
                offset = max(0, int(resp.log_start_offset))
                continue
            if resp.error_code != 0:
                raise for_code(resp.error_code)(f"fetch {OFFSETS_TOPIC}-{p}@{offset} from broker {leader}")
            hw, before = int(resp.high_watermark), offset
            batches = MemoryRecords(resp.records) if resp.records else None
            while batches is not None and batches.has_next():
                batch = batches.next_batch()
                if batch is None:
                    break
                for rec in batch:
                    if rec.offset >= offset and not batch.is_control_batch and rec.offset < hw:
                        out.append((rec.key, rec.value))
                    offset = max(offset, int(rec.offset) + 1)
            if offset == before:  # no progress: an empty answer
                break
        return out
