"""Checks over a final read that could not read part of a partition back (``unreadable``: remote
segments of a tiered topic that the store lost, ``harness.workload.final_read``): what consumers
read there is neither agreeing with the log nor absent from it (truncation-undetected and
uncommitted-read do not judge it), and passing over it silently is a poll-skip. The same
histories whose final read does not name the range are the look-alikes: there the reads look
truncated, and the silent pass over unknown offsets is invisible."""

from __future__ import annotations

from highwater.core.checks import run_all_checks
from highwater.core.checks.verdict import Verdict
from tests.synth.histories import HistoryBuilder

T = "t"
LOST = [0, 6, "UnknownError"]  # offsets 0-5: in segments the store lost


def _history(*, skip: bool, unreadable: bool) -> HistoryBuilder:
    """Ten acknowledged records; a consumer reads 0-4 before the loss. Then either it is moved
    past the loss by a seek to 6 and reads 6-9 (``skip`` False), or it reads 6-9 at once, passing
    over offset 5 with no position change (``skip``). The final read holds 6-9, with the range
    0-5 named unreadable or not."""
    b = HistoryBuilder({"acks": "all", "tiered": True})
    for i in range(10):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
    b.assign("consumer-0", T, 0, 0)
    b.poll("consumer-0", [(T, 0, o, f"v{o}") for o in range(5)], replica=1)
    if not skip:
        b.seek("consumer-0", T, 0, 6)
    b.poll("consumer-0", [(T, 0, o, f"v{o}") for o in range(6, 10)], replica=1)
    for rep in (1, 2, 3):
        ev = b.final(T, 0, rep, 10, [(o, f"v{o}") for o in range(6, 10)], log_start=0)
        if unreadable:
            ev["value"]["unreadable"] = [LOST]
    return b


def _verdicts(b: HistoryBuilder) -> dict[str, Verdict]:
    return {v.check: v for v in run_all_checks(b.data())}


def test_reads_of_a_lost_range_are_not_judged_against_the_log() -> None:
    v = _verdicts(_history(skip=False, unreadable=True))
    assert v["truncation-undetected"].valid is True, v["truncation-undetected"]
    # what was read there cannot be vouched for: unknown, never a violation
    assert (v["uncommitted-read"].valid, v["uncommitted-read"].counts["records_unjudged"]) == ("unknown", 5)
    assert v["poll-skip"].valid is True, v["poll-skip"]
    assert v["lost-write"].counts["lost"] == 6  # the store lost them: lost, as the policy may allow


def test_without_the_range_the_same_reads_look_truncated() -> None:
    v = _verdicts(_history(skip=False, unreadable=False))
    assert v["uncommitted-read"].valid is False
    assert v["truncation-undetected"].valid is False


def test_passing_over_a_lost_range_silently_is_a_skip() -> None:
    v = _verdicts(_history(skip=True, unreadable=True))
    assert v["poll-skip"].valid is False and v["poll-skip"].counts["skipped_offsets"] == 1
    # the look-alike: without the range, offset 5 is nothing the log holds, and the pass is unseen
    assert _verdicts(_history(skip=True, unreadable=False))["poll-skip"].valid is True
