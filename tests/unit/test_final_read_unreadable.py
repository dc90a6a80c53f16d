"""The final read of a tiered replica whose remote store lost segments
(``harness.workload.final_read.read_replica``): a fetch below the local log start that the broker
answers with an error is an unreadable range, recorded, and the read goes on at the local log
start; an error where no remote segment lies (at or above the local log start) still ends the
replica's read. The broker is a fake answering fetches of one log of 10 records."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.errors import OffsetOutOfRangeError, UnknownError
from kafka.record import MemoryRecordsBuilder

from highwater.harness.workload.final_read import read_replica

HW = 10
UNKNOWN_SERVER_ERROR = UnknownError.errno
OFFSET_OUT_OF_RANGE = OffsetOutOfRangeError.errno


def _records(lo: int, hi: int) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20, offset=lo)
    for o in range(lo, hi):
        b.append(timestamp=0, key=None, value=f"v{o}".encode(), headers=[])
    b.close()
    return bytes(b.buffer())


class _Broker:
    """Answers a fetch at offset o with the records from o to the end, or with ``error`` when o
    lies in ``failing`` (the store lost those segments); its local log starts at ``local``."""

    def __init__(self, failing: range, local: int | None, error: int = UNKNOWN_SERVER_ERROR) -> None:
        self.failing, self.local, self.error = failing, local, error
        self.asked: list[int] = []

    def send_to(self, node: int, request: Any) -> Any:
        offset = request.topics[0].partitions[0].fetch_offset
        self.asked.append(offset)
        if offset in self.failing:
            part = SimpleNamespace(error_code=self.error, high_watermark=-1, log_start_offset=-1, records=None)
        else:
            part = SimpleNamespace(error_code=0, high_watermark=HW, log_start_offset=0, records=_records(offset, HW))
        return SimpleNamespace(responses=[SimpleNamespace(partitions=[part])])

    def replica_log_start(self, broker: int, topic: str, partition: int, local: bool = False) -> int | None:
        return self.local if local else 0


def _read(broker: _Broker) -> dict[str, Any]:
    return read_replica(broker, 1, "t", uuid.uuid4(), 0)  # type: ignore[arg-type]


def test_a_lost_remote_range_is_recorded_and_the_local_log_is_read() -> None:
    broker = _Broker(failing=range(0, 6), local=6)
    value = _read(broker)
    assert value["unreadable"] == [[0, 6, "UnknownError"]]
    assert [o for o, _ in value["records"]] == list(range(6, HW))
    assert (value["log_start"], value["hw"]) == (0, HW)


def test_remote_segments_copied_after_the_loss_are_read_on() -> None:
    """The store lost 0-3; 4-5 were copied after it, the local log starts at 6: the read finds
    the first readable offset above the loss, not the local log start."""
    value = _read(_Broker(failing=range(0, 4), local=6))
    assert value["unreadable"] == [[0, 4, "UnknownError"]]
    assert [o for o, _ in value["records"]] == list(range(4, HW))


def test_a_readable_log_has_no_unreadable_range() -> None:
    value = _read(_Broker(failing=range(0), local=6))
    assert "unreadable" not in value and [o for o, _ in value["records"]] == list(range(HW))


def test_an_error_in_the_local_log_still_ends_the_read() -> None:
    """No remote segment lies below offset 0 of a log that is all local: the error is not a lost
    store's, and the replica's read fails as before (recorded by the caller as unreadable)."""
    with pytest.raises(UnknownError):
        _read(_Broker(failing=range(0, 6), local=0))
    with pytest.raises(UnknownError):
        _read(_Broker(failing=range(0, 6), local=None))


class _RetentionBroker(_Broker):
    """Answers three records a fetch; after the first, retention moves the log start to
    ``moved_to`` and a fetch below it is out of range (with neither log start nor high watermark,
    as Kafka answers)."""

    def __init__(self, moved_to: int) -> None:
        super().__init__(failing=range(0), local=None)
        self.start, self.moved_to = 0, moved_to

    def send_to(self, node: int, request: Any) -> Any:
        offset = request.topics[0].partitions[0].fetch_offset
        self.asked.append(offset)
        if offset < self.start:
            part = SimpleNamespace(error_code=OFFSET_OUT_OF_RANGE, high_watermark=-1, log_start_offset=-1, records=None)
        else:
            records = _records(offset, min(offset + 3, HW))
            part = SimpleNamespace(error_code=0, high_watermark=HW, log_start_offset=self.start, records=records)
        self.start = self.moved_to
        return SimpleNamespace(responses=[SimpleNamespace(partitions=[part])])

    def replica_log_start(self, broker: int, topic: str, partition: int, local: bool = False) -> int | None:
        return self.start


def test_retention_moving_the_log_start_under_the_read_is_no_unreadable_range() -> None:
    """Records retention deleted while the final read ran are deleted, not lost to a store: the
    read goes on from the new log start, which it reports, and names no unreadable range."""
    value = _read(_RetentionBroker(moved_to=5))
    assert "unreadable" not in value
    assert value["log_start"] == 5
    assert [o for o, _ in value["records"]] == [0, 1, 2, *range(5, HW)]
