"""A client's finding marks its own runs only: any version or local build of that client, never
another client whose name it begins (``suites.findings.ClientFinding``)."""

from __future__ import annotations

from typing import Any

import pytest

from highwater.suites.findings import HW9, HW13
from highwater.suites.scenario import RUN_OPTIONS, RunOptions


class _Request:
    def __init__(self) -> None:
        self.marks: list[Any] = []

    def applymarker(self, mark: Any) -> None:
        self.marks.append(mark)


@pytest.mark.parametrize(
    "client, marked",
    [
        ("kafkajs", True),
        ("kafkajs==2.1.0", True),
        ("kafkajs:2.1.0", True),
        ("kafka-python", False),
        ("java", False),
        ("kafkajsx", False),  # another client's name that begins with it
    ],
)
def test_a_finding_marks_its_clients_runs_only(client: str, marked: bool) -> None:
    token = RUN_OPTIONS.set(RunOptions(client))
    try:
        request = _Request()
        HW13.expect(request)  # type: ignore[arg-type]
    finally:
        RUN_OPTIONS.reset(token)
    assert request.marks == ([HW13.mark] if marked else [])


def test_strict_and_not_strict_findings() -> None:
    assert HW9.mark.kwargs["strict"] is True and HW9.client == "confluent-kafka"
    assert HW13.mark.kwargs["strict"] is False and "HW-13" in HW13.mark.kwargs["reason"]
