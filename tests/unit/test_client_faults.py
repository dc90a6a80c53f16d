"""Client faults as data and their selection among live workers (no process needed), and the
pure parts of the one worker protocol."""

from __future__ import annotations

import pytest

from highwater.faults.clients import select
from highwater.faults.common import FaultError
from highwater.faults.spec import FaultKind, parse_fault
from highwater.faults.target import ClientTarget, TargetKind, parse_target
from highwater.harness.client_common import WorkerError, part_of, parts_of, records_of
from highwater.harness.clients import PolledRecord, SendOutcome
from highwater.harness.clients.worker import WorkerInfo, classify_send_result, stated_outcome

WORKERS = [
    WorkerInfo("producer-0", "producer", "kafka-python 3.0.12"),
    WorkerInfo("consumer-0", "consumer", "kafka-python 3.0.12", "rack-a", "g"),
    WorkerInfo("consumer-1", "consumer", "kafka-python 3.0.12", "rack-b", "g"),
    WorkerInfo("reader", "consumer", "kafka-python 3.0.12", "rack-b", None),
]


@pytest.mark.parametrize(
    "text, chosen",
    [
        ("client:consumer-1", ["consumer-1"]),
        ("client:nobody", []),
        ("consumers", ["consumer-0", "consumer-1", "reader"]),
        ("consumers:rack-b", ["consumer-1", "reader"]),
        ("producers", ["producer-0"]),
        ("group:g", ["consumer-0", "consumer-1"]),
    ],
)
def test_client_selectors_name_the_workers_they_say(text: str, chosen: list[str]) -> None:
    target = parse_target(text)
    assert isinstance(target, ClientTarget) and str(target) == text
    assert select(target, WORKERS) == chosen


def test_client_faults_take_client_targets_and_only_they() -> None:
    spec = parse_fault("client-freeze --target group:g")
    assert (
        spec.kind is FaultKind.CLIENT_FREEZE and spec.kind.is_client and str(spec) == "client-freeze --target group:g"
    )
    for bad, says in [
        ("client-kill --target broker:1", "client workers"),
        ("kill --target client:consumer-0", "names client workers"),
        ("client-kill --target client:consumer-0 --peer broker:1", "takes no --peer"),
    ]:
        with pytest.raises(FaultError, match=says) as err:
            parse_fault(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(FaultError, match="malformed"):
        parse_target("group:")
    assert parse_target("consumers").what is TargetKind.CONSUMERS


def test_poll_replies_round_trip_through_their_runs() -> None:
    records = [
        PolledRecord("t", 0, 5, "a", 1, 2),
        PolledRecord("t", 0, 6, "b", 1, 2),
        PolledRecord("t", 0, 8, None, 2, 2),  # a gap (compaction, a transaction marker)
        PolledRecord("t", 0, 9, "d", 2, 3),  # another replica: its own entry
        PolledRecord("t", 1, 0, "e", None, None),
    ]
    parts = parts_of(records)
    assert [p["offsets"] for p in parts] == [[5, 2, 8, 1], [9, 1], [0, 1]]
    assert parts[0]["epochs"] == [1, 2, 2, 1]
    assert records_of({"parts": parts}) == records


def test_a_part_s_runs_take_the_fast_path_only_when_it_is_exact() -> None:
    # consecutive offsets of one epoch: one run each
    part = part_of("t", 0, 2, [7, 8, 9], ["a", "b", "c"], [4, 4, 4])
    assert (part["offsets"], part["epochs"]) == ([7, 3], [4, 3])
    # spans that look consecutive by their ends but are not (a seek back inside one poll)
    assert part_of("t", 0, 2, [5, 7, 6, 8], ["a"] * 4, [1] * 4)["offsets"] == [5, 1, 7, 1, 6, 1, 8, 1]
    assert part_of("t", 0, 2, [5, 6, 8], ["a"] * 3, [1] * 3)["offsets"] == [5, 2, 8, 1]
    # epochs that change, unknown epochs, and no records at all
    assert part_of("t", 0, None, [1, 2, 3], ["a"] * 3, [None, None, 3])["epochs"] == [None, 2, 3, 1]
    empty = part_of("t", 0, None, [], [], [])
    assert (empty["offsets"], empty["epochs"], empty["values"]) == ([], [], [])
    records = [PolledRecord("t", 0, o, v, e, 1) for o, v, e in [(5, "a", 1), (7, None, 1), (8, "c", None)]]
    assert records_of({"parts": [part_of("t", 0, 1, [5, 7, 8], ["a", None, "c"], [1, 1, None])]}) == records


def test_a_worker_that_classifies_its_outcomes_is_taken_at_its_word() -> None:
    assert classify_send_result({"send": 1, "outcome": "ok", "offset": 7}, True) == SendOutcome.ok(7)
    assert classify_send_result({"send": 1, "outcome": "fail", "error": "E: x"}, False) == SendOutcome.fail("E: x")
    assert classify_send_result({"send": 1, "outcome": "info", "error": "E: y"}, True) == SendOutcome.info("E: y")
    # without a stated outcome, the rule for workers that report where a send failed
    assert classify_send_result({"send": 1, "error": "T: z", "sync": True}, False).outcome.value == "fail"
    assert classify_send_result({"send": 1, "error": "T: z"}, False).outcome.value == "info"
    # a batch states its outcomes the same way; anything but ok / fail / info is the worker's error
    assert stated_outcome("ok", 9, None) == SendOutcome.ok(9)
    assert stated_outcome("info", None, None) == SendOutcome.info("unknown error")
    with pytest.raises(WorkerError, match="'maybe'"):
        stated_outcome("maybe", None, "E")


def test_consumers_name_a_share_group_s_members_too() -> None:
    """A hunt's share run draws client faults on ``consumers`` (its members set no client.rack):
    they must name the share consumers' workers (2026-12-07: a client-kill named none), never an
    admin or a producer."""
    share = [
        WorkerInfo("producer-0", "producer", "java 4.4.0"),
        WorkerInfo("consumer-0", "share_consumer", "java 4.4.0", None, "sg"),
        WorkerInfo("consumer-1", "share_consumer", "java 4.4.0", None, "sg"),
        WorkerInfo("share-admin", "share_admin", "java 4.4.0", None, "sg"),
    ]
    assert select(parse_target("consumers"), share) == ["consumer-0", "consumer-1"]  # type: ignore[arg-type]
