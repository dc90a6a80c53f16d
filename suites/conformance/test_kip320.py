"""KIP-320: after an unclean leader election truncates the log below a consumer's position, the
consumer detects it (LogTruncationError, or its own seek back to the divergence point) and never
silently carries on past a gap or re-reads other data at the same offsets.

The scenario (partition 0, replicas L = leader, F1, F2; min.insync.replicas=1, acks=all,
``unclean.leader.election.enable=true`` on the topic):

1. F1's replication links are cut: F1 leaves the ISR, its log stops at some offset x.
2. Producers keep writing; L and F2 commit well past x and the consumers read those records.
3. F2 and L are killed (SIGKILL). When L is fenced the controller has no live ISR member and,
   the topic allowing it, elects F1 uncleanly (``PartitionChangeBuilder.electAnyLeader``:
   ISR, then ELR, then - with ``Election.UNCLEAN``, set from the topic config by
   ``ReplicationControlManager`` when a broker is fenced - any live replica). F1's links are
   healed. If the controller has not elected F1 within the bound, the test asks for it with
   ElectLeaders(UNCLEAN); before 3.9.0 it asks at once (below).
4. Producers write new values at offsets x, x+1, ...: the same offsets the consumers already
   read with other values.
5. L and F2 restart, find the diverging epoch and truncate to F1's log.

Kafka 4.x and ELR (KIP-966): where ``eligible.leader.replicas.version=1`` is on, a fenced last
ISR member moves to the ELR instead of staying in the ISR, and an *ELR* member would be elected
cleanly. F1 is in neither, so only an unclean election can pick it, and ELR does not block that:
``electAnyLeader`` tries ISR, ELR, the last known leader, then (``Election.UNCLEAN``) any live
replica; ``ReplicationControlManager`` sets ``Election.UNCLEAN`` from the topic config
(``uncleanLeaderElectionEnabledForTopic``) when it fences a broker, and the same code is in the
4.3.1 bytecode. So from 3.9.0 nothing beyond the topic config is needed (the unclean-recovery
configs of KIP-966 are not involved). Before 3.9.0 a KRaft controller never elects uncleanly on
its own: ``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic`` answered false
whatever the configs said, until KAFKA-12670 (3.9.0) made it read them; there the test asks for
the election with ElectLeaders(UNCLEAN) at once, which is also the fallback on later releases
if the automatic election does not happen (seen in the nightly over 23 releases, 2026-11-27:
every release before 3.9.0 waited its 19 s in vain). The test records which election happened and the partition state
before and after (``scenario.json`` in the run's directory).

The verdicts: ``truncation-undetected``, ``nonmonotonic-poll``, ``poll-skip`` and
``inconsistent-offsets`` must hold (the policy never allows them); ``lost-write`` and
``uncommitted-read`` are allowed by the policy for unclean elections but must be *seen* (else
the scenario did not truncate anything and proves nothing).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.core.run_dir import RunDir
from highwater.faults.inject import Injector
from highwater.faults.spec import parse_fault
from highwater.harness.distribution import parse_version
from highwater.harness.local.cluster import Cluster
from highwater.harness.observe import DEBUGGING_REPLICA_ID, PartitionState
from highwater.harness.waiting import wait_until
from highwater.profiles import Profile
from highwater.run_spec import RunSpec
from highwater.runner import RunResult, execute_run
from highwater.suites.findings import expect_hw12, expect_hw28, finding_mark
from highwater.suites.nightly import nightly
from highwater.suites.scenario import KIP320_WINDOW_SECONDS, PLANS, RUN_OPTIONS

TOPIC = "kip320"
#: the checks that must hold (the policy never allows them); the plan is PLANS["kip-320/unclean-truncation"]
MUST_HOLD = PLANS["kip-320/unclean-truncation"].must_hold
#: every fault window of the scenario lasts at least this long (the timed checks' bounds plus
#: margin: tests/unit/test_scenario_windows.py walks PLANS["kip-320/unclean-truncation"])
WINDOW_S = KIP320_WINDOW_SECONDS
LAG_MS = 4000  # replica.lag.time.max.ms: how fast the cut follower leaves the ISR
SESSION_MS = 4000  # broker.session.timeout.ms: how fast a killed broker is fenced
#: the first release whose KRaft controller elects uncleanly on its own (KAFKA-12670)
AUTOMATIC_UNCLEAN_SINCE = (3, 9, 0)


def _hold(seconds: float) -> None:
    """A gap in the fault script (time is the point: producers write, consumers read)."""
    time.sleep(seconds)


def unclean_truncation(notes: dict[str, Any]):  # type: ignore[no-untyped-def]
    """The nemesis of the scenario above; ``notes`` receives what happened, for the asserts."""

    def run(injector: Injector, cluster: Cluster, spec: RunSpec) -> None:
        obs = cluster.observer()
        _hold(3)  # the workload gets going
        s = cluster.partition_state(spec.topic, 0)
        leader = s.leader
        f1, f2 = sorted(r for r in s.replicas if r != leader)
        notes.update(leader=leader, f1=f1, f2=f2, before=s.to_event_value())
        cut = injector.apply(parse_fault(f"cut --target broker:{f1} --listener replication"))
        t_cut = time.monotonic()
        cluster.wait_for_isr(
            spec.topic, 0, lambda st: f1 not in st.isr, 3 * LAG_MS / 1000 + 10, f"cut broker {f1} leaves the ISR"
        )
        x = obs.list_offset(f1, spec.topic, 0, replica_id=DEBUGGING_REPLICA_ID)
        notes["f1_leo_at_cut"] = x
        # committed well past x (acks=all with ISR {L, F2}), and the consumers have time to read it
        wait_until(
            lambda: (cluster.partition_state(spec.topic, 0).hw or 0) >= x + 100,
            30,
            f"the partition's HW passes F1's LEO {x} by 100",
        )
        _hold(max(2.0, WINDOW_S - (time.monotonic() - t_cut)))  # consumers read it; the window is long enough
        notes["hw_before_kill"] = cluster.partition_state(spec.topic, 0).hw
        kill_f2 = injector.apply(parse_fault(f"kill --target broker:{f2}"))
        kill_leader = injector.apply(parse_fault(f"kill --target broker:{leader}"))
        t_kill = time.monotonic()
        injector.heal(cut)
        t0 = time.monotonic()
        st: PartitionState | None = None
        if parse_version(cluster.kafka_version) < AUTOMATIC_UNCLEAN_SINCE:
            notes["automatic_election_error"] = (
                f"Kafka {cluster.kafka_version}'s controller never elects uncleanly on its own"
            )
        else:
            try:
                st = cluster.wait_for_isr(
                    spec.topic,
                    0,
                    lambda st: st.leader == f1,
                    SESSION_MS / 1000 + 15,
                    f"broker {f1} is elected (uncleanly) once {leader} is fenced",
                )
                notes["election"] = "automatic (topic config unclean.leader.election.enable=true)"
            except Exception as exc:  # noqa: BLE001 - then ask for it explicitly
                notes["automatic_election_error"] = str(exc)
        if st is None:

            def elected() -> PartitionState | None:  # asked again until F1 leads: the first may reach no controller
                notes["elect_leaders_response"] = obs.elect_unclean(spec.topic, [0])
                now = cluster.partition_state(spec.topic, 0)
                return now if now.leader == f1 else None

            st = wait_until(elected, SESSION_MS / 1000 + 20, f"broker {f1} is elected by ElectLeaders(UNCLEAN)")
            notes["election"] = "ElectLeaders(UNCLEAN)"
        notes["election_seconds"] = round(time.monotonic() - t0, 1)
        notes["after_election"] = st.to_event_value()
        # new values land at the truncated offsets, on F1 (at least 4 s; the window long enough)
        _hold(max(4.0, WINDOW_S - (time.monotonic() - t_kill)))
        notes["f1_leo_before_restart"] = obs.list_offset(f1, spec.topic, 0, replica_id=DEBUGGING_REPLICA_ID)
        injector.heal(kill_leader)  # restart on the same data: they truncate to F1's log
        injector.heal(kill_f2)
        st = cluster.wait_for_isr(
            spec.topic, 0, lambda st: len(st.isr) == 3, 60, f"brokers {leader} and {f2} rejoin F1's ISR"
        )
        notes["after_restart"] = st.to_event_value()

    return run


def _events(history: Path) -> list[dict[str, Any]]:
    lines = history.read_text().splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


class Outcome:
    """One run of the scenario: its verdicts, what the nemesis noted, and each consumer's story,
    from the history alone (so the assertions below also judge generated histories and their
    broken twins: tests/unit/test_broken_twins.py)."""

    def __init__(
        self, history: Path, verdicts: list[Verdict], notes: dict[str, Any], result: RunResult | None = None
    ) -> None:
        self.result, self.notes, self.history = result, notes, history
        self.verdicts = {v.check: v for v in verdicts}
        self.summary = {k: (v.valid, v.allowed, v.counts) for k, v in self.verdicts.items()}
        events = _events(history)
        final = next(
            (
                e["value"]
                for e in events
                if e["f"] == "final-read" and e["type"] == "ok" and e["value"]["replica"] == notes.get("f1")
            ),
            None,
        )
        self.final_log = {o: v for o, v in final["records"]} if final else {}
        # per consumer: did it read a record the final log does not hold (a truncated read),
        # and how did its position move afterwards
        self.truncated_reads: dict[str, int] = {}
        self.moves: dict[str, list[dict[str, Any]]] = {}
        self.truncation_errors: dict[str, int] = {}
        for e in events:
            proc = e["process"]
            if not proc.startswith("consumer-"):
                continue
            if e["f"] == "poll" and e["type"] == "ok":
                for r in e["value"]["records"]:
                    if self.final_log and self.final_log.get(r["offset"]) != r["value"]:
                        self.truncated_reads[proc] = min(self.truncated_reads.get(proc, r["offset"]), r["offset"])
            elif e["f"] == "poll" and e["type"] == "fail" and "truncat" in str(e.get("error")).lower():
                self.truncation_errors[proc] = self.truncation_errors.get(proc, 0) + 1
            elif e["f"] == "seek" and proc in self.truncated_reads:
                self.moves.setdefault(proc, []).append(e["value"])

    @property
    def where(self) -> str:
        return str(self.result.dir if self.result is not None else self.history)

    def kip320_detected(self, proc: str) -> bool:
        """KIP-320 proper: a LogTruncationError, or the client's own seek to the divergence
        point (reason ``truncation``), not an auto.offset.reset."""
        return bool(self.truncation_errors.get(proc)) or any(
            "truncat" in str(m.get("reason")) for m in self.moves.get(proc, [])
        )


def assert_truncation_detected(out: Outcome) -> None:
    """The scenario's assertions (see the module doc)."""
    notes, verdicts, summary = out.notes, out.verdicts, out.summary

    # The scenario really elected F1 uncleanly and truncated committed data consumers had read.
    assert notes.get("after_election", {}).get("leader") == notes["f1"], notes
    lost, unc = verdicts["lost-write"], verdicts["uncommitted-read"]
    assert lost.counts["lost"] > 0 and lost.valid is True and lost.allowed, (
        f"acks=all writes above F1's log must be lost, and allowed: {summary}"
    )
    assert unc.counts["uncommitted_reads"] > 0 and unc.valid is True and unc.allowed, (
        f"consumers must have read records the election truncated, and that is allowed: {summary}"
    )
    assert out.truncated_reads, f"no consumer read a truncated record: {summary}"

    # Every consumer that read truncated records moved back to the divergence point or below
    # before reading on (the check's definition of detection), and KIP-320 itself worked for
    # at least one of them (LogTruncationError, or the client's seek to the divergence point).
    for proc, first_bad in out.truncated_reads.items():
        moves = out.moves.get(proc, [])
        assert any(m.get("offset") is None or m["offset"] <= first_bad for m in moves) or out.truncation_errors.get(
            proc
        ), f"{proc} read truncated records from offset {first_bad} and never moved back: {moves}"
    assert any(out.kip320_detected(p) for p in out.truncated_reads), (
        f"no consumer detected the truncation through KIP-320: {out.moves} {out.truncation_errors}"
    )
    # ... and found exactly the divergence point: F1's log end when it was cut off, where the
    # new leader epoch starts (OffsetsForLeaderEpoch's end offset for the consumer's epoch)
    for m in (m for ms in out.moves.values() for m in ms if "truncat" in str(m.get("reason"))):
        assert m["offset"] == notes["f1_leo_at_cut"], (m, notes["f1_leo_at_cut"])

    for check in MUST_HOLD:
        assert verdicts[check].valid is True, (
            f"{check} must hold after an unclean election: {verdicts[check].to_json()} (results {out.where})"
        )


def assert_every_consumer_detects_through_kip320(out: Outcome) -> None:
    """The finding's assertion (HW-6): no consumer that read truncated records fell into a reset."""
    assert out.truncated_reads, f"no consumer read a truncated record: {out.summary}"
    resets = {p: out.moves.get(p) for p in out.truncated_reads if not out.kip320_detected(p)}
    assert not resets, f"consumers that read truncated records but did not detect it via KIP-320: {resets}"


#: one run per Kafka version, client and seed; both tests of the module judge the same run
_OUTCOMES: dict[tuple[str, str, int | None], Outcome] = {}


def _scenario(
    cluster_factory,
    kafka_version: str,
    profile: Profile,
    campaign: str,  # type: ignore[no-untyped-def]
    results_root: Path,
    repro: str,
) -> Outcome:
    """Run the scenario once per Kafka version, client and seed (the session's ``--client`` and
    ``--seed``, as every suite's runs); both tests judge the same run."""
    options = RUN_OPTIONS.get()
    key = (kafka_version, options.client, options.seed)
    if key in _OUTCOMES:
        return _OUTCOMES[key]
    cluster = cluster_factory(
        brokers=3,
        racks=3,
        controllers=1,  # a dedicated controller: the quorum survives two broker kills
        broker_config={"replica.lag.time.max.ms": str(LAG_MS), "broker.session.timeout.ms": str(SESSION_MS)},
    )
    notes: dict[str, Any] = {}
    spec = RunSpec(
        suite="kip-320",
        scenario="unclean-truncation",
        campaign=campaign,
        results_root=results_root,
        topic=TOPIC,
        partitions=1,
        replication_factor=3,
        min_insync_replicas=1,
        acks="all",
        unclean_leader_election=True,
        client=options.client,
        seed=options.seed,
        producers=2,
        rate=max(profile.rate, 50),
        duration=PLANS["kip-320/unclean-truncation"].duration(profile.run_seconds),
        settle_timeout=60,
        repro=repro,
        extra={"scenario": "cut F1, commit past it, kill L and F2, unclean-elect F1, restart L, F2"},
    )
    result = execute_run(cluster, spec, nemesis=unclean_truncation(notes))
    (result.dir / "scenario.json").write_text(json.dumps(notes, indent=2, default=str))
    outcome = _OUTCOMES[key] = Outcome(RunDir(result.dir).history, result.verdicts, notes, result)
    return outcome


#: the three newest clients under test take their turns at the scenario (--client-rotation):
#: ckjs in make test (librdkafka's detection behind kafkajs's API: the seed's question), franz-go
#: (it detects truncations itself and reports them as data loss) and Sarama (no KIP-320: HW-28, a
#: strict xfail) in the nightly slices, for make test's budget (each run is a cluster and ~75 s);
#: kafkajs's run (no KIP-320 either: HW-12) is the installed wheel's
#: (tests/integration/test_installed.py); every other client runs it with --client. Both tests
#: judge one run per client (``_scenario``)
TURN_NIGHTLY = nightly("make test runs the scenario on ckjs, the newest client under test, and kafkajs", 80)
TURNS = pytest.mark.client_turns(
    "ckjs", pytest.param("franz-go", marks=TURN_NIGHTLY), pytest.param("sarama", marks=TURN_NIGHTLY)
)
SHARED = pytest.mark.shared_run("scenario")


@pytest.fixture
def outcome(
    cluster_factory, kafka_version: str, profile: Profile, campaign: str, results_root: Path, repro: str
) -> Outcome:  # type: ignore[no-untyped-def]
    """The scenario's run for this test's client (one per client and seed: ``_scenario``)."""
    return _scenario(cluster_factory, kafka_version, profile, campaign, results_root, repro)


@TURNS
@SHARED
@pytest.mark.parametrize("scenario", ["unclean-truncation"])
def test_unclean_election_truncation_is_detected_by_consumers(
    scenario: str, request: pytest.FixtureRequest, outcome: Outcome
) -> None:
    expect_hw12(request)
    expect_hw28(request)
    assert_truncation_detected(outcome)


#: HW-6 is kafka-python's (librdkafka finds the divergence point for every consumer:
#: docs/findings.md), so the test is a strict xfail for kafka-python only
FINDING_HW6 = finding_mark("HW-6", "kip-320/unclean-truncation")


@TURNS
@SHARED
@pytest.mark.parametrize("scenario", ["unclean-truncation"])
def test_finding_every_consumer_detects_truncation_through_kip320(
    scenario: str, request: pytest.FixtureRequest, outcome: Outcome
) -> None:
    """KIP-320's promise is stronger than "the consumer moved back": a consumer that read
    records an unclean election truncated must find the divergence point with
    OffsetsForLeaderEpoch (and seek there, or raise LogTruncationError without a reset policy),
    never fall into auto.offset.reset. With ``earliest`` a reset re-delivers the whole log; with
    ``latest`` it silently skips the new records at the truncated offsets, the very problem
    KIP-320 was written for."""
    if RUN_OPTIONS.get().client.startswith("kafka-python"):
        request.applymarker(FINDING_HW6)
    expect_hw12(request)
    expect_hw28(request)
    assert_every_consumer_detects_through_kip320(outcome)
