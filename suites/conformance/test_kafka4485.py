"""KAFKA-4485: a follower that keeps up with a high-rate stream of small produce requests stays
in the ISR (no shrink/expand churn); a follower slowed beyond replica.lag.time.max.ms leaves the
ISR once and comes back once after the slowdown ends."""

from __future__ import annotations

import json
from pathlib import Path

from harness.history import read_history
from highwater.nemesis import Step, scripted
from suites.scenario import assert_verdicts, run_scenario


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
    return out


def test_keeping_up_under_many_small_requests_means_no_isr_churn(cluster, profile, campaign, results_root, repro) -> None:  # type: ignore[no-untyped-def]
    result = run_scenario(cluster, suite="kafka-4485", scenario="high-rate-small", profile=profile,
                          campaign=campaign, results_root=results_root, repro=repro, topic="k4485",
                          producers=3, rate=max(profile.rate, 150), partitions=1, observe_interval=0.25)
    assert_verdicts(result, must_hold=["isr-stability", "lost-write"])
    sends = sum(p["acked"] for p in result.stats["producers"].values())
    assert sends >= 0.5 * 3 * max(profile.rate, 150) * profile.run_seconds, f"only {sends} writes acknowledged"
    assert isr_transitions(result.dir / "history.jsonl", "k4485", 0) == []


def test_slowed_follower_leaves_once_and_returns_once(cluster, profile, campaign, results_root, repro) -> None:  # type: ignore[no-untyped-def]
    slow = "latency --target broker:{follower} --peer broker:{leader} --flow out --listener replication --latency 8000"
    result = run_scenario(cluster, suite="kafka-4485", scenario="slowed-follower", profile=profile,
                          campaign=campaign, results_root=results_root, repro=repro, topic="k4485slow",
                          partitions=1, nemesis=scripted([Step(3, slow, 14)]), observe_interval=0.25,
                          duration=max(profile.run_seconds, 25))
    assert_verdicts(result, must_hold=["isr-stability", "lost-write"])
    fault = next(json.loads(line) for line in (result.dir / "history.jsonl").read_text().splitlines()
                 if '"f":"fault"' in line and '"type":"ok"' in line)
    slowed = int(fault["value"]["targets"][0].split("-")[1])
    moves = [m for m in isr_transitions(result.dir / "history.jsonl", "k4485slow", 0) if m[1] == slowed]
    assert moves == [("leave", slowed), ("join", slowed)], moves
