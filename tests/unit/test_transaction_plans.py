"""The transactions suite's coordinator cut and pause (``coordinators-cut-pause``) are held too
short for any timed check to judge them, for every client alike: the scenario judges
transactions and groups, and a window that a timed check could judge in some runs and not in
others (the ISR shrink is seen between 4 and 7 s) would make a client's finding strike at random."""

from __future__ import annotations

from highwater.core.checks.bounds import stall_bound_name
from highwater.suites.scenario import TRANSACTION_PLANS

PLANS = {p.scenario: p for p in TRANSACTION_PLANS}


def test_the_coordinators_that_clients_still_reach_are_held_shorter_than_any_judged_move_or_stall() -> None:
    plan = PLANS["coordinators-cut-pause"]
    settings, bounds = plan.settings(), plan.bounds()
    earliest_judged_move_ms = settings.replica_lag_time_max_ms + bounds["follower_fetch_bound_ms"].ms
    assert [s.kind.value for s in plan.steps] == ["cut", "pause"]
    for step in plan.steps:
        window_ms = step.duration * 1000
        assert window_ms < earliest_judged_move_ms, step
        assert window_ms <= bounds[stall_bound_name(step.kind.value)].ms, step
        # long enough for the coordinator's logs to move: fenced after the session timeout
        assert window_ms > settings.broker_session_timeout_ms + settings.broker_heartbeat_interval_ms, step
