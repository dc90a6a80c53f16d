"""The settle wait of a share run asks the group's state only when the ledger stalled: Kafka
owing nothing (lag 0 on every partition) ends it; anything else, or a state that cannot be read,
does not. The worker that reads the state is stood in for by a list of readings: what is tested
is when it is asked and how its answer is read."""

from __future__ import annotations

from typing import Any

import pytest

from highwater.harness.clients.share import ShareSettings, ShareStartOffset
from highwater.harness.workload import share as share_module
from highwater.harness.workload.share import GroupOwes


class _Admin:
    """Answers each ``start_offsets`` with the next reading (an exception is raised)."""

    def __init__(self, readings: list[Any]) -> None:
        self.readings = readings
        self.asked = 0
        self.closed = False

    def start_offsets(self, topic: str, partitions: int, timeout_s: float = 10.0) -> list[ShareStartOffset]:
        reading = self.readings[min(self.asked, len(self.readings) - 1)]
        self.asked += 1
        if isinstance(reading, Exception):
            raise reading
        return [ShareStartOffset(p, 10, lag) for p, lag in enumerate(reading)]

    def close(self) -> None:
        self.closed = True


def _owes(monkeypatch: pytest.MonkeyPatch, readings: list[Any], after_s: float = 0.0) -> tuple[GroupOwes, list[_Admin]]:
    made: list[_Admin] = []

    def admin(_driver: Any, _settings: Any) -> _Admin:
        made.append(_Admin(readings))
        return made[-1]

    monkeypatch.setattr(share_module, "ShareAdmin", admin)
    monkeypatch.setattr(share_module, "state_driver", lambda driver: driver)
    monkeypatch.setattr(share_module, "share_driver", lambda client: client)
    monkeypatch.setattr(share_module, "STATE_POLL_S", 0.0)
    return GroupOwes("java", ShareSettings(["127.0.0.1:9092"], "s", "g"), "t", 3, after_s), made


def test_kafka_owing_nothing_on_every_partition_ends_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    owes, made = _owes(monkeypatch, [[0, 1, 0], [0, 0, 0]])
    assert owes.nothing() is False  # one record still owed on partition 1
    assert owes.nothing() is True
    assert len(made) == 1 and made[0].asked == 2  # one worker for every reading
    owes.close()
    assert made[0].closed


@pytest.mark.parametrize(
    "reading",
    [[0, None, 0], [0, 0], RuntimeError("the state's worker died")],
    ids=["lag-not-told", "a-partition-missing", "unreadable"],
)
def test_anything_short_of_nothing_owed_goes_on_waiting(monkeypatch: pytest.MonkeyPatch, reading: Any) -> None:
    owes, _ = _owes(monkeypatch, [reading])
    assert owes.nothing() is False


def test_the_state_is_not_asked_before_a_lost_acknowledgement_could_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    owes, made = _owes(monkeypatch, [[0, 0, 0]], after_s=60.0)
    assert owes.nothing() is False
    assert made == []  # no worker started
    owes.close()
