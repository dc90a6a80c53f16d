"""KIP-207 and the HW rules: across leader kills and elections, no client ever sees the high
watermark (ListOffsets latest from the leader, observed five times a second) go backwards."""

from __future__ import annotations

from highwater.nemesis import Step, scripted
from suites.scenario import assert_verdicts, run_scenario


def test_hw_never_goes_backwards_across_leader_kills(cluster, profile, campaign, results_root, repro) -> None:  # type: ignore[no-untyped-def]
    steps = [Step(3, "kill --target leader:{topic}/0", 4), Step(2, "kill --target leader:{topic}/1", 4),
             Step(2, "kill --target leader:{topic}/2", 4)]
    result = run_scenario(cluster, suite="kip-207", scenario="leader-kills", profile=profile, campaign=campaign,
                          results_root=results_root, repro=repro, nemesis=scripted(steps),
                          topic="kip207", observe_interval=0.2, duration=max(profile.run_seconds, 25))
    assert_verdicts(result, must_hold=["hw-regression", "lost-write", "uncommitted-read"])
    hw = next(v for v in result.verdicts if v.check == "hw-regression")
    assert hw.counts["observation_pairs"] >= 50, "too few HW observations to judge"
