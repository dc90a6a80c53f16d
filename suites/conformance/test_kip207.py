"""KIP-207 and the HW rules: across leader kills and elections, no client ever sees the high
watermark (ListOffsets latest from the leader, observed five times a second) go backwards.
The schedule is ``suites.scenario.PLANS["kip-207/leader-kills"]``."""

from __future__ import annotations

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.suites.findings import HW23_FAULTED_FOLLOWER, expect_hw13
from highwater.suites.nightly import nightly
from highwater.suites.scenario import PLANS, assert_verdicts, check_verdicts, run_plan

PLAN = PLANS["kip-207/leader-kills"]


def assert_hw_monotonic(verdicts: list[Verdict]) -> None:
    """The scenario's assertions: hw-regression, lost-write and uncommitted-read hold, on at
    least 50 pairs of HW observations."""
    check_verdicts(verdicts, PLAN.must_hold)
    hw = next(v for v in verdicts if v.check == "hw-regression")
    assert hw.counts["observation_pairs"] >= 50, "too few HW observations to judge"


@nightly("hw-regression judges every run in make test; the power-loss and fetching suites' runs kill leaders", 90)
def test_hw_never_goes_backwards_across_leader_kills(
    request: pytest.FixtureRequest, cluster, profile, campaign, results_root, repro
) -> None:  # type: ignore[no-untyped-def]
    expect_hw13(request)  # kafkajs's consumers stall past their bound when the leader they read dies
    HW23_FAULTED_FOLLOWER.expect(request)  # franz-go's rack consumers stay on the killed follower
    result = run_plan(
        cluster, PLAN, profile=profile, campaign=campaign, results_root=results_root, repro=repro, topic="kip207"
    )
    assert_verdicts(result, must_hold=PLAN.must_hold)
    assert_hw_monotonic(result.verdicts)
