"""Durability: with acks=all and min.insync.replicas=2, a leader kill, a partitioned leader or a
paused leader loses no acknowledged write, shows no consumer an uncommitted record, and makes
no consumer skip an offset. The schedules are ``suites.scenario.PLANS["durability/..."]``; each
fault outlasts the timed checks' bounds, so the same run also judges the consumers' liveness
(``test_consumers_keep_up_under_leader_faults``)."""

from __future__ import annotations

import pytest

from harness.checks.verdict import Verdict
from highwater.runner import RunResult
from suites.scenario import PLANS, TIMED_CHECKS, check_verdicts, describe, run_plan

SCENARIOS = {p.scenario: list(p.steps) for p in PLANS.values() if p.suite == "durability"}
_RUNS: dict[tuple[str, str], RunResult] = {}


def assert_durable(verdicts: list[Verdict], scenario: str) -> None:
    """The scenario's assertions: no lost write, no uncommitted read, no skip, consistent offsets
    (and no other safety check violated; the timed checks are judged by the liveness test)."""
    check_verdicts([v for v in verdicts if v.check not in TIMED_CHECKS], PLANS[f"durability/{scenario}"].must_hold)


def assert_live(verdicts: list[Verdict]) -> None:
    """No timed check (follower-fetch, progress, isr-stability) is violated."""
    bad = [v for v in verdicts if v.check in TIMED_CHECKS and v.valid is False]
    assert not bad, "liveness under a leader fault:\n" + describe(bad)


def _run(cluster, profile, campaign, results_root, repro, scenario: str, kafka_version: str) -> RunResult:  # type: ignore[no-untyped-def]
    """One run per scenario and Kafka version; both tests judge it."""
    key = (kafka_version, scenario)
    if key not in _RUNS:
        _RUNS[key] = run_plan(
            cluster,
            PLANS[f"durability/{scenario}"],
            profile=profile,
            campaign=campaign,
            results_root=results_root,
            repro=repro,
            acks="all",
            min_insync_replicas=2,
            topic=f"dur-{scenario}",
        )
    return _RUNS[key]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_loss_no_uncommitted_read_no_skip(
    cluster,
    profile,
    campaign,
    results_root,
    repro,
    kafka_version,  # type: ignore[no-untyped-def]
    scenario,
) -> None:
    result = _run(cluster, profile, campaign, results_root, repro, scenario, kafka_version)
    try:
        assert_durable(result.verdicts, scenario)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n(results: {result.dir}; repro: {repro})") from None


CANDIDATE_HW8 = pytest.mark.xfail(
    strict=False,
    reason=(
        "FINDING CANDIDATE HW-8 (seen once, Kafka 4.4.0, kafka-python 3.0.12, not yet diagnosed): the partition-0 "
        "leader, broker 1, was also the active KRaft controller (combined mode). Cut off from its peers on every "
        "replication and controller link for 20 s (client links intact), its controller fenced brokers 2 and 3 "
        "('Fencing broker 3 at epoch 12 because its session has timed out': their heartbeats could not reach it) "
        "and its own broker took leadership of partitions 1 and 2 at a new epoch ('Transitioning 4 partition(s) to "
        "local leaders', 'starts at leader epoch 1 ... ISR [1,2]'), while brokers 2 and 3 went on with a new "
        "controller. Clients that asked broker 1 saw that view: the observer saw leader 1 with ISR [1] for all three "
        "partitions, and the rack-a consumer polled nothing of partition 0 for the whole window while writes were "
        "acknowledged elsewhere (follower-fetch, progress and isr-stability violated). Invisible with the former "
        "8 s window; whether it recurs depends on which node is the active controller. "
        "Repro: .venv/bin/pytest 'suites/conformance/test_durability.py' -k leader-partition --runxfail"
    ),
)


@pytest.mark.parametrize(
    "scenario", [pytest.param(s, marks=CANDIDATE_HW8) if s == "leader-partition" else s for s in SCENARIOS]
)
def test_consumers_keep_up_under_leader_faults(
    cluster,
    profile,
    campaign,
    results_root,
    repro,
    kafka_version,  # type: ignore[no-untyped-def]
    scenario,
) -> None:
    result = _run(cluster, profile, campaign, results_root, repro, scenario, kafka_version)
    try:
        assert_live(result.verdicts)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n(results: {result.dir}; repro: {repro})") from None
