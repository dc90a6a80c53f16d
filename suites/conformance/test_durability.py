"""Durability: with acks=all and min.insync.replicas=2, a leader kill, a partitioned leader or a
paused leader loses no acknowledged write, shows no consumer an uncommitted record, and makes
no consumer skip an offset."""

from __future__ import annotations

import pytest

from highwater.nemesis import Step, scripted
from suites.scenario import assert_verdicts, run_scenario

SCENARIOS = {
    "leader-kill": [Step(4, "kill --target leader:{topic}/0", 6)],
    "leader-partition": [Step(4, "cut --target leader:{topic}/0", 8)],
    "leader-pause": [Step(4, "pause --target leader:{topic}/0", 8)],
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_loss_no_uncommitted_read_no_skip(cluster, profile, campaign, results_root, repro, scenario) -> None:  # type: ignore[no-untyped-def]
    result = run_scenario(cluster, suite="durability", scenario=scenario, profile=profile, campaign=campaign,
                          results_root=results_root, repro=repro, nemesis=scripted(SCENARIOS[scenario]),
                          acks="all", min_insync_replicas=2, topic=f"dur-{scenario}")
    assert_verdicts(result, must_hold=["lost-write", "uncommitted-read", "poll-skip", "inconsistent-offsets"])
