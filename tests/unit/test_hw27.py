"""HW-27's exact subtraction (suites/hw27.py): a progress stall is explained only when its
consumer's poll had failed with UnknownBrokerIdError on the broker that led the stalled
partition when the stall began (the upgrade suite's run: node 2 stranded at 12.3 s, partition 2
led by 2 again from 37 s, consumer-0 silent on it from 38.8 s); every look-alike is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.suites.hw27 import strandings, unexplained, without_hw27
from tests.synth.histories import HistoryBuilder

T = "hw"
S = 1_000_000_000
ERROR = "WorkerError: UnknownBrokerIdError: UnknownBrokerIdError: 2"


def roll(error_at_s: float = 12.3, leader_after: int = 2, consumer: str = "consumer-0") -> HistoryBuilder:
    """Partition 2 led by 2, then 3 while broker 2 restarts (the poll error), then 2 again."""
    b = HistoryBuilder({}, step_ms=0)
    b.meta(T, 2, leader=2, isr=[1, 2, 3], hw=0)
    b.advance(error_at_s * 1000)
    b.poll_error(consumer, ERROR, type_="info")
    b.advance(600)
    b.meta(T, 2, leader=3, isr=[1, 3], hw=100)
    b.advance(37_000 - b.now / 1_000_000)
    b.meta(T, 2, leader=leader_after, isr=[1, 2, 3], hw=1200)
    return b


def stall(consumer: str = "consumer-0", partition: int = 2, at_s: float = 39.9) -> dict[str, Any]:
    return {
        "kind": "consumer-stalled-after-heal",
        "topic": T,
        "partition": partition,
        "consumer": consumer,
        "owed_from_ns": int(at_s * S),
    }


def progress(*examples: dict[str, Any], stalls: int | None = None) -> Verdict:
    return Verdict("progress", False, {"stalls": len(examples) if stalls is None else stalls}, list(examples))


def test_the_stranding_is_read_from_the_poll_error() -> None:
    (s,) = strandings(roll().data())
    assert (s.consumer, s.broker, s.time) == ("consumer-0", 2, int(12.3 * S))


def test_a_stall_on_a_partition_the_stranded_broker_leads_again_is_explained() -> None:
    h = roll().data()
    assert unexplained([progress(stall()), Verdict("lost-write", True, {})], h) == []


@pytest.mark.parametrize(
    ("history", "verdicts", "why"),
    [
        (roll(leader_after=1), [progress(stall())], "(leader 1) had no poll fail"),  # led by another broker
        (roll(consumer="consumer-1"), [progress(stall())], "consumer-0 on hw-2"),  # another consumer's error
        (roll(error_at_s=40.0), [progress(stall())], "had no poll fail"),  # the error came after the stall
        (roll(), [progress(stall(), stalls=2)], "2 violation(s) counted, 1 shown"),  # one not shown
        (roll(), [progress(stall()), Verdict("lost-write", False, {})], "lost-write failed too"),
    ],
)
def test_look_alikes_are_not_explained(history: HistoryBuilder, verdicts: list[Verdict], why: str) -> None:
    found = unexplained(verdicts, history.data())
    assert found and any(why in w for w in found), found


def test_without_hw27_drops_progress_only_when_it_explains_it(tmp_path: Path) -> None:
    path = roll().write(tmp_path / "history.jsonl")
    kept = [Verdict("lost-write", True, {})]
    assert without_hw27([progress(stall()), *kept], path) == kept
    assert without_hw27([progress(stall(partition=1)), *kept], path)[0].check == "progress"  # not explained
    clean = [Verdict("progress", True, {}), *kept]
    assert without_hw27(clean, path) == clean
