"""remote-reset (core.checks.tiered): on a tiered topic, a consumer reset by auto.offset.reset
away from an offset the log still held is found; a reset from below the log start (retention)
or past its end, a reset with nothing known before it, and a run without resets pass; a run
whose topics do not tier, or whose client does not report resets, is not judged."""

from __future__ import annotations

from typing import Any

import pytest

from highwater.core.checks.data import from_events
from highwater.core.checks.tiered import remote_reset
from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN, Verdict
from tests.synth.histories import HistoryBuilder


def history(
    *, reset_from: int | None, reset_to: int = 0, log_start: int = 0, tiered: bool = True, client: str = "kafka-python"
) -> HistoryBuilder:
    """Ten records acknowledged; consumer-0 reads ``reset_from`` of them (None: it is only
    assigned), then its library resets its position to ``reset_to`` and it reads on to the end."""
    b = HistoryBuilder({"tiered": True} if tiered else {}, client=f"{client} 1.0")
    for o in range(10):
        b.send("producer-0", "t", 0, f"v{o}", offset=o)
    b.assign("consumer-0", "t", 0, None if reset_from is None else 0)
    if reset_from:
        b.poll("consumer-0", [("t", 0, o, f"v{o}") for o in range(reset_from)])
    b.seek("consumer-0", "t", 0, reset_to, reason="reset")
    b.poll("consumer-0", [("t", 0, o, f"v{o}") for o in range(reset_to, 10)])
    for r in (1, 2, 3):
        b.final("t", 0, r, 10, [(o, f"v{o}") for o in range(log_start, 10)], log_start=log_start)
    return b


def judge(b: HistoryBuilder) -> Verdict:
    return remote_reset(from_events(b.header, b.events))


def test_a_reset_from_an_offset_the_log_held_is_found() -> None:
    v = judge(history(reset_from=4, reset_to=0))  # at 4, which existed: rewound to 0
    assert v.valid is False and v.counts == {"resets": 1, "judged": 1, "violations": 1}
    ex = v.examples[0]
    assert (ex["kind"], ex["was_at"], ex["reset_to"], ex["log_start"], ex["hw"]) == (
        "reset-from-an-offset-that-existed",
        4,
        0,
        0,
        10,
    )
    skipped = judge(history(reset_from=4, reset_to=10))  # or skipped to the end
    assert skipped.valid is False and skipped.examples[0]["reset_to"] == 10


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"reset_from": 2, "reset_to": 5, "log_start": 5}, "below the log start: retention deleted it"),
        ({"reset_from": 10, "reset_to": 10}, "at the log end: a reset that moved nothing"),
        ({"reset_from": None, "reset_to": 0}, "nothing known before it"),
    ],
)
def test_resets_the_log_explains_pass(kw: dict[str, Any], why: str) -> None:
    v = judge(history(**kw))
    assert v.valid is True and v.counts["violations"] == 0, why


def test_a_run_without_resets_passes_and_others_are_not_judged() -> None:
    b = history(reset_from=4, reset_to=0)
    calm = HistoryBuilder({"tiered": True}, client="kafka-python 3.0.12")
    calm.events = [e for e in b.events if e["f"] != "seek"]
    assert remote_reset(from_events(calm.header, calm.events)).valid is True
    assert judge(history(reset_from=4, tiered=False)).valid == NOT_APPLICABLE
    assert judge(history(reset_from=4, client="java")).valid == NOT_APPLICABLE
    no_final = HistoryBuilder({"tiered": True}, client="kafka-python 3.0.12")
    no_final.events = [e for e in b.events if e["f"] != "final-read"]
    assert remote_reset(from_events(no_final.header, no_final.events)).valid == UNKNOWN
