"""Kafka's replication rules, one promise per scenario, for sweeps and bisects
(``highwater sweep`` names each test; ``highwater bisect`` narrows a failing one to a release).

Each scenario is a plan in ``suites.scenario.SWEEP_PLANS`` with acks=all and
min.insync.replicas=2; its promise, and where it comes from, is in docs/sweeps.md ("Scenario
set"). Each assertion function is pure (verdicts in, AssertionError out), so
``tests/unit/test_broken_twins.py`` feeds it a clean generated history and a broken twin.
"""

from __future__ import annotations

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.suites.findings import expect_hw9, expect_hw17
from highwater.suites.scenario import PLANS, RUN_OPTIONS, SWEEP_PLANS, assert_verdicts, check_verdicts, run_plan

SCENARIOS = [p.scenario for p in SWEEP_PLANS]


def assert_follower_stop(verdicts: list[Verdict]) -> None:
    """A cleanly stopped follower only shrinks the ISR: every acknowledged write survives, no
    consumer skips an offset, and every consumer keeps progressing (moving off the stopped
    replica within the bound)."""
    check_verdicts(verdicts, PLANS["sweep/follower-stop"].must_hold)


def assert_leader_stop(verdicts: list[Verdict]) -> None:
    """A controlled shutdown of the leader moves leadership to an in-sync follower first: no
    acknowledged write lost, no uncommitted read, no skip, consumers keep progressing."""
    check_verdicts(verdicts, PLANS["sweep/leader-stop"].must_hold)


def assert_follower_cut_hw(verdicts: list[Verdict]) -> None:
    """A follower cut off from replication leaves the ISR and catches up after the heal; the
    leader's high watermark (observed five times a second) never goes backwards."""
    check_verdicts(verdicts, PLANS["sweep/follower-cut-hw"].must_hold)
    hw = next(v for v in verdicts if v.check == "hw-regression")
    assert hw.counts["observation_pairs"] >= 50, "too few HW observations to judge"


def assert_follower_pause(verdicts: list[Verdict]) -> None:
    """A frozen follower (requests hang, no connection closes) is dropped from the ISR by the
    leader's lag timer (and, as the frozen broker leads another partition, that partition's
    leadership moves when its heartbeats stop): no acknowledged write lost, no skip, consumers
    keep progressing within the hanging-fault stall bound."""
    check_verdicts(verdicts, PLANS["sweep/follower-pause"].must_hold)


ASSERTIONS = {
    "follower-stop": assert_follower_stop,
    "leader-stop": assert_leader_stop,
    "follower-cut-hw": assert_follower_cut_hw,
    "follower-pause": assert_follower_pause,
}


#: the scenarios whose follower leaves the ISR but still answers: librdkafka's rack consumer stays
#: on it (HW-9; follower-cut-hw on Kafka 4.4.0 with confluent-kafka 2.16.1: 16.9 s, bound 13.5 s)
HW9_SCENARIOS = ("follower-cut-hw",)

#: HW-11 (docs/findings.md): kafka-python sends its metadata refreshes to the frozen broker. Its
#: strict xfail is tests/integration/test_findings_by_client.py (Kafka's 5-minute metadata age);
#: here the 5 s metadata age usually finds a healthy broker first, so it strikes now and then
HW11_PAUSED_FOLLOWER = pytest.mark.xfail(
    strict=False,
    reason=(
        "FINDING HW-11 (kafka-python 3.0.12), seen on 4.4.0 and on 4.3.1: the frozen broker also led partition 2; "
        "after its leadership moved (8.2 s) the rack consumer kept sending metadata and fetch requests to the frozen "
        "broker (RequestTimedOutError again and again) and read nothing of p2 until the heal (23.9 s > 23.5 s): "
        "KafkaManager.least_loaded_node prefers a broker it holds no connection to over brokers carrying its "
        "fetches. In the 2026-11-25 sweep (3.3.2 to 4.4.0, one run each) it failed this way on 4.3.1 and passed on "
        "the 11 others; on 4.4.0 it passed 3 of 3 runs. Java and confluent-kafka are not marked: they keep the "
        "promise (HW-11's test). Repro: .venv/bin/pytest tests/integration/test_findings_by_client.py -k hw11 -s"
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_replication_rule(request, cluster, profile, campaign, results_root, repro, scenario) -> None:  # type: ignore[no-untyped-def]
    if scenario in HW9_SCENARIOS:
        expect_hw9(request)
    if scenario == "follower-pause" and RUN_OPTIONS.get().client.startswith("kafka-python"):
        # kafka-python was seen failing this way; kafkajs fails its own way (HW-17)
        request.applymarker(HW11_PAUSED_FOLLOWER)
    if scenario == "follower-pause":
        expect_hw17(request)
    plan = PLANS[f"sweep/{scenario}"]
    result = run_plan(
        cluster,
        plan,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        acks="all",
        min_insync_replicas=2,
        topic=f"sw-{scenario}",
    )
    assert_verdicts(result, must_hold=plan.must_hold)
    try:
        ASSERTIONS[scenario](result.verdicts)
    except AssertionError as exc:
        raise type(exc)(f"{exc}\n(results: {result.dir}; repro: {repro})") from None
