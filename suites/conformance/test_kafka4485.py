"""KAFKA-4485: a follower that keeps up with a high-rate stream of small produce requests stays
in the ISR (no shrink/expand churn); a follower slowed beyond replica.lag.time.max.ms leaves the
ISR once and comes back once after the slowdown ends. The schedules are
``suites.scenario.PLANS["kafka-4485/..."]``."""

from __future__ import annotations

import json
from pathlib import Path

from highwater.core.checks.verdict import Verdict
from highwater.core.history import read_history
from highwater.core.run_dir import RunDir
from highwater.runner import RunResult
from highwater.suites.findings import HW23_FAULTED_FOLLOWER, expect_hw9
from highwater.suites.nightly import nightly
from highwater.suites.scenario import PLANS, assert_verdicts, check_verdicts, run_plan

HIGH_RATE = 150  # sends/s per producer, at least
PRODUCERS = 3


def isr_transitions(history: Path, topic: str, partition: int) -> list[tuple[str, int]]:
    """("leave"|"join", broker) for every change of the observed ISR, in order."""
    out: list[tuple[str, int]] = []
    last: set[int] | None = None
    for e in read_history(history):
        v = e["value"] or {}
        if e["f"] != "meta" or e["type"] != "ok" or v.get("topic") != topic or v.get("partition") != partition:
            continue
        isr = set(v["isr"])
        if last is not None:
            out += [("leave", b) for b in sorted(last - isr)] + [("join", b) for b in sorted(isr - last)]
        last = isr
    # no observation at all would make "no churn" true of any run: a wrong topic name is an error
    assert last is not None, f"no ISR observation of {topic}/{partition} in {history}"
    return out


def run_topic(result: RunResult) -> str:
    """The topic the run used: the scenario's, with the client's suffix on any client but the
    default one (``suites.scenario.client_topic``)."""
    return str(json.loads(RunDir(result.dir).run_json.read_text())["spec"]["topic"])


def acked_sends(history: Path) -> int:
    return sum(1 for e in read_history(history) if e["f"] == "send" and e["type"] == "ok")


def assert_no_isr_churn(verdicts: list[Verdict], history: Path, topic: str, min_acked: float) -> None:
    """The scenario's assertions: isr-stability and lost-write hold, enough writes were
    acknowledged, and the observed ISR never changed."""
    check_verdicts(verdicts, PLANS["kafka-4485/high-rate-small"].must_hold)
    sends = acked_sends(history)
    assert sends >= min_acked, f"only {sends} writes acknowledged"
    assert isr_transitions(history, topic, 0) == []


def slowed_broker(history: Path) -> int:
    fault = next(e for e in read_history(history) if e["f"] == "fault" and e["type"] == "ok")
    return int(str(fault["value"]["targets"][0]).split("-")[1])


def assert_leaves_once_returns_once(verdicts: list[Verdict], history: Path, topic: str) -> None:
    """The scenario's assertions: isr-stability and lost-write hold, and the slowed follower
    left the ISR exactly once and came back exactly once."""
    check_verdicts(verdicts, PLANS["kafka-4485/slowed-follower"].must_hold)
    slowed = slowed_broker(history)
    moves = [m for m in isr_transitions(history, topic, 0) if m[1] == slowed]
    assert moves == [("leave", slowed), ("join", slowed)], moves


@nightly("the suite's slowed follower, which leaves the ISR once and returns once, runs in make test", 30)
def test_keeping_up_under_many_small_requests_means_no_isr_churn(
    cluster, profile, campaign, results_root, repro
) -> None:  # type: ignore[no-untyped-def]
    p = PLANS["kafka-4485/high-rate-small"]
    rate = max(profile.rate, HIGH_RATE)
    result = run_plan(
        cluster,
        p,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic="k4485",
        producers=PRODUCERS,
        rate=rate,
        partitions=1,
    )
    assert_verdicts(result, must_hold=p.must_hold)
    assert_no_isr_churn(
        result.verdicts,
        RunDir(result.dir).history,
        run_topic(result),
        0.5 * PRODUCERS * rate * p.duration(profile.run_seconds),
    )


def test_slowed_follower_leaves_once_and_returns_once(request, cluster, profile, campaign, results_root, repro) -> None:  # type: ignore[no-untyped-def]
    expect_hw9(request)
    HW23_FAULTED_FOLLOWER.expect(request)  # franz-go's rack consumer stays on the slowed follower
    p = PLANS["kafka-4485/slowed-follower"]
    result = run_plan(
        cluster,
        p,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic="k4485slow",
        partitions=1,
    )
    assert_verdicts(result, must_hold=p.must_hold)
    assert_leaves_once_returns_once(result.verdicts, RunDir(result.dir).history, run_topic(result))
