"""``suites.scenario.check_verdicts``: which error a scenario's verdicts raise. A finding about a
client's slowness is an xfail for ``TimedChecksOnly`` alone, so that error must never stand for a
broken promise about data."""

from __future__ import annotations

import pytest

from highwater.core.checks.verdict import UNKNOWN, Verdict
from highwater.suites.scenario import TimedChecksOnly, check_verdicts


def verdicts(**valid: object) -> list[Verdict]:
    return [Verdict(name.replace("_", "-"), v) for name, v in valid.items()]  # type: ignore[arg-type]


def test_all_held_raises_nothing() -> None:
    check_verdicts(verdicts(lost_write=True, progress=True), ["lost-write", "progress"])


def test_a_stall_alone_is_timed_checks_only() -> None:
    with pytest.raises(TimedChecksOnly, match="progress"):
        check_verdicts(verdicts(lost_write=True, progress=False, follower_fetch=True), ["lost-write"])


def test_an_unjudged_timed_check_that_must_hold_is_timed_checks_only() -> None:
    with pytest.raises(TimedChecksOnly, match="follower-fetch"):
        check_verdicts(verdicts(lost_write=True, follower_fetch=UNKNOWN), ["lost-write", "follower-fetch"])


@pytest.mark.parametrize(
    "broken",
    [
        verdicts(lost_write=False, progress=False),  # a loss beside a stall
        verdicts(lost_write=False, progress=True),
        verdicts(lost_write=UNKNOWN, progress=False),  # a data check that could not judge
    ],
)
def test_a_data_check_that_fails_or_cannot_judge_is_no_timing_matter(broken: list[Verdict]) -> None:
    with pytest.raises(AssertionError) as caught:
        check_verdicts(broken, ["lost-write"])
    assert not isinstance(caught.value, TimedChecksOnly)
