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


@pytest.mark.parametrize("client, marked", [("confluent-kafka", True), ("ckjs==1.10.1", True), ("kafkajs", False)])
def test_a_finding_of_a_library_marks_the_runs_of_every_client_built_on_it(client: str, marked: bool) -> None:
    token = RUN_OPTIONS.set(RunOptions(client))
    try:
        request = _Request()
        HW9.expect(request)  # type: ignore[arg-type]
    finally:
        RUN_OPTIONS.reset(token)
    assert request.marks == ([HW9.mark] if marked else [])


def test_strict_and_not_strict_findings() -> None:
    assert HW9.mark.kwargs["strict"] is True and HW9.clients == {"confluent-kafka", "ckjs"}
    assert HW13.mark.kwargs["strict"] is False and "HW-13" in HW13.mark.kwargs["reason"]


def _verdicts(**valid: Any) -> list[Any]:
    from highwater.core.checks.verdict import Verdict

    return [Verdict(check.replace("_", "-"), v) for check, v in valid.items()]


HW24 = ("HW-24", "power-loss/all", ("lost-write", "truncation-undetected"))
HW29 = ("HW-29", "groups/seeded-member-faults-classic", ("lost-write",))


@pytest.mark.parametrize(
    "finding, client, verdicts, explained",
    [
        # HW-24's own check alone failed, on kafka-python: explained
        (HW24, "kafka-python", {"lost_write": True, "truncation_undetected": False}, True),
        # another check failed too: the finding does not explain the run
        (HW24, "kafka-python", {"lost_write": False, "truncation_undetected": False}, False),
        # a must-hold check that could not judge is a failure the finding does not explain
        (HW24, "kafka-python", {"lost_write": "unknown", "truncation_undetected": False}, False),
        # the same failure on another client is not this finding's
        (HW24, "java", {"lost_write": True, "truncation_undetected": False}, False),
        # nothing failed: nothing to explain
        (HW24, "kafka-python", {"lost_write": True, "truncation_undetected": True}, False),
        # HW-29: a ckjs group run whose next owner started below a commit that had returned
        (HW29, "ckjs", {"lost_write": True, "rebalance_rewind": False, "commit_regression": False}, True),
        # a lost write beside it is not HW-29's
        (HW29, "ckjs", {"lost_write": False, "rebalance_rewind": False, "commit_regression": True}, False),
        # the same rewind on confluent-kafka (a synchronous commit) is not this finding's
        (HW29, "confluent-kafka", {"lost_write": True, "rebalance_rewind": False, "commit_regression": True}, False),
    ],
)
def test_a_finding_explains_a_run_only_when_it_is_all_the_run_broke(
    finding: tuple[str, str, tuple[str, ...]], client: str, verdicts: dict[str, Any], explained: bool
) -> None:
    from highwater.suites.findings import explained_only_by

    fid, scenario, must_hold = finding
    token = RUN_OPTIONS.set(RunOptions(client))
    try:
        why = explained_only_by(fid, scenario, _verdicts(**verdicts), must_hold)
    finally:
        RUN_OPTIONS.reset(token)
    assert (why is not None) == explained
    assert why is None or why.startswith(f"FINDING {fid}")
