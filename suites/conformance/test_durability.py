"""Durability: with acks=all and min.insync.replicas=2, a leader kill, a partitioned leader or a
paused leader loses no acknowledged write, shows no consumer an uncommitted record, and makes
no consumer skip an offset. The schedules are ``suites.scenario.PLANS["durability/..."]``."""

from __future__ import annotations

import pytest

from harness.checks.verdict import Verdict
from suites.scenario import PLANS, assert_verdicts, check_verdicts, run_plan

SCENARIOS = {p.scenario: list(p.steps) for p in PLANS.values() if p.suite == "durability"}


def assert_durable(verdicts: list[Verdict], scenario: str) -> None:
    """The scenario's assertions: no lost write, no uncommitted read, no skip, consistent offsets."""
    check_verdicts(verdicts, PLANS[f"durability/{scenario}"].must_hold)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_loss_no_uncommitted_read_no_skip(cluster, profile, campaign, results_root, repro, scenario) -> None:  # type: ignore[no-untyped-def]
    p = PLANS[f"durability/{scenario}"]
    result = run_plan(cluster, p, profile=profile, campaign=campaign, results_root=results_root, repro=repro,
                      acks="all", min_insync_replicas=2, topic=f"dur-{scenario}")
    assert_verdicts(result, must_hold=p.must_hold)
