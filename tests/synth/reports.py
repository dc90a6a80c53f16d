"""Synthetic results directories for the report's tests and demos.

Each run is a small, plausible history (producers, consumers with racks, an observer, one
broker fault and its heal, final reads of every replica) built with
``tests.synth.histories.HistoryBuilder``, with anomalies injected on request. Its
``verdict.json`` comes from the real Python checks, so reports built on these runs show what
the harness would say. Not for real runs: ``HistoryWriter`` records those.

Anomalies: ``skip`` (a consumer jumps over committed offsets), ``lost`` (an acknowledged write
is missing from the final log), ``no-final`` (a partition has no final read: unknown),
``edges`` (seeks, wildcard assigns, failed and uncertain sends, null values, a log start above
0) to exercise the corners of the checks' definitions.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from highwater.core.checks import run_all_checks
from highwater.core.manifest import NemesisRecord, Racks, RunManifest
from tests.synth.histories import HistoryBuilder

TOPIC = "t"
RACKS = ("rack-a", "rack-b", "rack-c")
ANOMALIES = ("skip", "lost", "no-final", "edges")


@dataclass
class RunSpec:
    """One synthetic run: where it goes and what it contains."""

    campaign: str
    run_id: str
    seed: int
    anomalies: tuple[str, ...] = ()
    writes: int = 120
    partitions: int = 2
    kafka_version: str = "4.3.1"
    client: str = "kafka-python 3.0.12"
    suite: str = "chaos"
    scenario: str = "kill-follower"
    started_at: str = "2025-01-01T00:00:00Z"


def build_history(spec: RunSpec) -> HistoryBuilder:
    """A seeded workload with the requested anomalies (see the module doc)."""
    rnd = random.Random(spec.seed)
    edges = "edges" in spec.anomalies
    brokers = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
    consumers = {"consumer-0": "rack-a", "consumer-1": "rack-b"}
    b = HistoryBuilder(
        {
            "acks": "all",
            "idempotence": True,
            "unclean_leader_election": False,
            "min_insync_replicas": 2,
            # short bounds: a synthetic run lasts seconds, not minutes
            "follower_fetch_grace_ms": 100,
            "follower_fetch_bound_ms": 3000,
            "progress_bound_ms": 3000,
            "replica_lag_time_max_ms": 500,
            "isr_slack_ms": 500,
            "isr_rejoin_bound_ms": 3000,
            # the fault window lasts ~0.9 s: bounds below it, so every window is judged
            "isr_leave_bound_ms": 400,
            "consumer_stall_bound_ms": 300,
            "consumer_stall_hang_bound_ms": 300,
        },
        run_id=spec.run_id,
        kafka_version=spec.kafka_version,
        client=spec.client,
        racks={"brokers": {str(k): v for k, v in brokers.items()}, "clients": consumers},
        step_ms=5,
    )
    parts = list(range(spec.partitions))
    logs: dict[int, list[tuple[int, Any]]] = {p: [] for p in parts}
    acked: list[tuple[int, int, Any]] = []
    isr = [1, 2, 3]
    leader = {p: 1 + p % 2 for p in parts}
    pos = {(c, p): 0 for c in consumers for p in parts}
    skip_done = False
    for c in consumers:
        if edges and c == "consumer-1":
            b.assign(c, None, None, None, reason="subscribe")  # position change of all partitions
        else:
            for p in parts:
                b.assign(c, TOPIC, p, 0)
    fault_at, heal_at = spec.writes // 3, 2 * spec.writes // 3
    for i in range(spec.writes):
        if i == fault_at:
            b.fault("kill", [3])
            isr = [1, 2]
            b.advance(200)
        if i == heal_at:
            b.heal("kill", [3])
            isr = [1, 2, 3]
        p = parts[i % len(parts)]
        value: Any = f"{spec.run_id}-v{i}"
        if edges and i == 7:
            value = {"n": i}  # a JSON value: compared by its text form
        outcome = "ok"
        if edges and rnd.random() < 0.05:
            outcome = rnd.choice(["fail", "info"])
        if outcome == "fail":
            b.send("producer-0", TOPIC, p, value, outcome="fail", error="NotEnoughReplicas")
        else:
            off = len(logs[p])
            logs[p].append((off, value))
            b.send("producer-0", TOPIC, p, value, offset=off if outcome == "ok" else None, outcome=outcome)
            if outcome == "ok":
                acked.append((p, off, value))
        if edges and i == 11:
            b.send("producer-0", TOPIC, p, None, outcome="info")  # null value, unknown outcome
        if i % 10 == 9:
            for q in parts:
                b.meta(TOPIC, q, leader=leader[q], isr=isr, hw=len(logs[q]), leo={k: len(logs[q]) for k in isr})
        if i % 6 == 5:
            for c, rack in consumers.items():
                _poll(
                    b,
                    rnd,
                    c,
                    rack,
                    parts,
                    logs,
                    pos,
                    brokers,
                    isr,
                    leader,
                    skip=("skip" in spec.anomalies and c == "consumer-0" and not skip_done and i > spec.writes // 2),
                )
                if "skip" in spec.anomalies and c == "consumer-0" and i > spec.writes // 2:
                    skip_done = True
        if edges and i == spec.writes // 2:
            q = parts[-1]
            target = max(0, pos[("consumer-0", q)] - 2)
            b.seek("consumer-0", TOPIC, q, target, reason="seek")  # re-read: not a skip
            pos[("consumer-0", q)] = target
    for c, rack in consumers.items():  # drain what is left
        _poll(b, rnd, c, rack, parts, logs, pos, brokers, isr, leader, skip=False, limit=10**6)
    final = {p: list(log) for p, log in logs.items()}
    if "lost" in spec.anomalies and acked:
        lp, lo, _ = acked[len(acked) * 3 // 4]
        final[lp][lo] = (lo, f"{spec.run_id}-other")  # the acked value is gone from every replica
    for p in parts:
        if "no-final" in spec.anomalies and p == parts[-1]:
            continue
        log_start = 2 if edges and p == 0 else 0
        recs = [r for r in final[p] if r[0] >= log_start]
        for rep in (1, 2, 3):
            short = rep == 3 and "lost" not in spec.anomalies
            hw = len(final[p]) - (1 if short else 0)
            b.final(TOPIC, p, rep, hw, recs[: len(recs) - (1 if short else 0)], log_start=log_start)
    return b


def _poll(
    b: HistoryBuilder,
    rnd: random.Random,
    consumer: str,
    rack: str,
    parts: list[int],
    logs: dict[int, list[tuple[int, Any]]],
    pos: dict[tuple[str, int], int],
    brokers: dict[int, str],
    isr: list[int],
    leader: dict[int, int],
    *,
    skip: bool,
    limit: int = 6,
) -> None:
    """One poll of up to ``limit`` records per partition, served by the consumer's rack
    replica while it is in the ISR (KIP-392), else by the leader."""
    recs = []
    local = next((k for k, r in brokers.items() if r == rack), None)
    replica_for = {p: local if local in isr else leader[p] for p in parts}
    for p in parts:
        start = pos[(consumer, p)]
        if skip and p == parts[0] and start + 2 < len(logs[p]):
            start += 2  # jump over two committed offsets: the poll-skip anomaly
        chunk = logs[p][start : start + rnd.randint(1, limit) if limit < 10**6 else None]
        for off, val in chunk:
            recs.append((TOPIC, p, off, val, replica_for[p]))
        pos[(consumer, p)] = start + len(chunk)
    by_replica: dict[int | None, list[tuple[str, int, int, Any]]] = {}
    for t, p, off, val, rep in recs:
        by_replica.setdefault(rep, []).append((t, p, off, val))
    if not by_replica:
        b.poll(consumer, [])
    for rep, rs in by_replica.items():
        b.poll(consumer, rs, replica=rep)


def write_run(root: Path, spec: RunSpec, *, with_verdict: bool = True) -> Path:
    """Write ``<root>/<campaign>/<run_id>/`` with history.jsonl, verdict.json and run.json."""
    d = root / spec.campaign / spec.run_id
    d.mkdir(parents=True, exist_ok=True)
    b = build_history(spec)
    hist = b.write(d / "history.jsonl")
    repro = (
        f"highwater campaign --suite {spec.suite} --scenario {spec.scenario} "
        f"--seed {spec.seed} --kafka-version {spec.kafka_version}"
    )
    schedule = {
        "format": "highwater.schedule/1",
        "seed": spec.seed,
        "faults": [{"id": 0, "start": 5.0, "duration": 10.0, "cli": "kill --target broker:3"}],
    }
    RunManifest(
        run_id=spec.run_id,
        campaign=spec.campaign,
        suite=spec.suite,
        scenario=spec.scenario,
        kafka_version=spec.kafka_version,
        client=spec.client,
        config=b.header["config"],
        seed=spec.seed,
        repro=repro,
        started_at=spec.started_at,
        racks=Racks.from_json(b.header["racks"]),
        nemesis=NemesisRecord("scheduled", schedule=schedule),
        client_bytes={"rack-a": {"1": 52_000, "2": 1_000, "3": 0}, "rack-b": {"1": 2_000, "2": 48_000, "3": 0}},
    ).write(d / "run.json")
    if with_verdict:
        verdicts = run_all_checks(hist)
        from highwater.core.checks import overall

        (d / "verdict.json").write_text(
            json.dumps(
                {"history": str(hist), "valid": overall(verdicts), "verdicts": [v.to_json() for v in verdicts]},
                indent=2,
                default=str,
            ),
            encoding="utf-8",
        )
    return d


def write_results(root: Path, specs: Iterable[RunSpec], *, with_verdict: bool = True) -> list[Path]:
    return [write_run(root, s, with_verdict=with_verdict) for s in specs]


def demo_specs() -> list[RunSpec]:
    """A small store: two campaigns, two Kafka versions, one clean run, one skip, one lost
    write, one run without a final read of a partition (unknown), one with edge cases; and two
    runs with other clients for attribution (``reports.attribution``): on 4.3.1 the Java client
    skips too (poll-skip: every client failed, the broker), on 3.9.1 confluent-kafka is clean
    where kafka-python lost a write (lost-write: kafka-python)."""
    return [
        RunSpec("nightly-1", "run-clean", 1, started_at="2025-01-01T00:00:00Z"),
        RunSpec("nightly-1", "run-skip", 2, ("skip",), started_at="2025-01-01T00:10:00Z"),
        RunSpec("nightly-1", "run-lost", 3, ("lost",), kafka_version="3.9.1", started_at="2025-01-01T00:20:00Z"),
        RunSpec("nightly-2", "run-clean2", 4, kafka_version="3.9.1", started_at="2025-01-02T00:00:00Z"),
        RunSpec(
            "nightly-2", "run-nofinal", 5, ("no-final",), scenario="partition-rack", started_at="2025-01-02T00:10:00Z"
        ),
        RunSpec("nightly-2", "run-edges", 6, ("edges",), scenario="partition-rack", started_at="2025-01-02T00:20:00Z"),
        *attribution_specs(),
    ]


def attribution_specs() -> list[RunSpec]:
    """Runs of other clients beside ``demo_specs``' kafka-python runs of chaos/kill-follower."""
    return [
        RunSpec("nightly-2", "java-skip", 7, ("skip",), client="java 4.4.0", started_at="2025-01-02T00:30:00Z"),
        RunSpec(
            "nightly-2",
            "rdk-clean",
            8,
            kafka_version="3.9.1",
            client="confluent-kafka 2.6.1",
            started_at="2025-01-02T00:40:00Z",
        ),
    ]
