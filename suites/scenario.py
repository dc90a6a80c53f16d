"""Running a scenario from a suite and judging it: one place for the RunSpec defaults a suite
shares, and for turning verdicts into a readable test failure (with the repro command)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from highwater.core.checks import TIMED_CHECKS
from highwater.core.checks.bounds import Bound, Settings, derive, stall_bound_name
from highwater.core.checks.verdict import Verdict
from highwater.core.run_dir import RunDir
from highwater.faults.schedule import DEFAULT_MIX, ROLLING_RESTART_MIN_LENGTH, Schedule, ScheduleConfig
from highwater.faults.spec import FaultKind
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients import DEFAULT_CLIENT
from highwater.harness.tiered import METADATA_TOPIC
from highwater.harness.topology import Topology
from highwater.nemesis import Step, scripted, shortest_window, tail_seconds, workload_seconds
from highwater.profiles import Profile
from highwater.run_spec import RunSpec, run_settings
from highwater.runner import Nemesis, RunResult, execute_run


@dataclass(frozen=True)
class RunOptions:
    """What the command line chose for every run of a session (``--client``, ``--seed``)."""

    client: str = DEFAULT_CLIENT
    seed: int | None = None


#: set for each test by ``suites/conftest.py`` from the plugin's fixtures, so every scenario
#: picks the session's client and seed without each test passing them along
RUN_OPTIONS: ContextVar[RunOptions] = ContextVar("RUN_OPTIONS", default=RunOptions())  # noqa: B039 - frozen


def client_topic(topic: str, client: str) -> str:
    """The topic a scenario uses with ``client``: the default client's is ``topic`` itself, any
    other client's has the client appended (idempotent), so a session running several clients
    on one cluster never reads one client's records, nor fences its transactional ids, in
    another's run."""
    if client == DEFAULT_CLIENT:
        return topic
    suffix = "-" + re.sub(r"[^A-Za-z0-9]+", "-", client)
    return topic if topic.endswith(suffix) else topic + suffix


def run_scenario(
    cluster: ClusterBackend,
    *,
    suite: str,
    scenario: str,
    profile: Profile,
    campaign: str,
    results_root: Path,
    repro: str,
    nemesis: Nemesis | None = None,
    **overrides: Any,
) -> RunResult:
    options = RUN_OPTIONS.get()
    overrides.setdefault("client", options.client)
    if "topic" in overrides:
        overrides["topic"] = client_topic(overrides["topic"], overrides["client"])
    if options.seed is not None:
        overrides.setdefault("seed", options.seed)
    spec = RunSpec(
        suite=suite,
        scenario=scenario,
        campaign=campaign,
        results_root=results_root,
        duration=overrides.pop("duration", profile.run_seconds),
        rate=overrides.pop("rate", profile.rate),
        repro=repro,
        **overrides,
    )
    return execute_run(cluster, spec, nemesis, progress=lambda m: print(f"[{suite}] {m}", flush=True))


_RUNS: dict[tuple[str, str, str], RunResult] = {}


def run_once(kafka_version: str, scenario: str, run: Callable[[], RunResult]) -> RunResult:
    """``run()`` once per Kafka version, client (the test's, ``RUN_OPTIONS``) and scenario key:
    a suite whose tests judge one run in several ways (safety here, liveness there) shares it."""
    key = (kafka_version, RUN_OPTIONS.get().client, scenario)
    if key not in _RUNS:
        _RUNS[key] = run()
    return _RUNS[key]


def describe(verdicts: Iterable[Verdict]) -> str:
    return "\n".join(
        f"  {v.check}: {v.valid} counts={v.counts} example={json.dumps(v.examples[:1], default=str)[:600]}"
        for v in verdicts
    )


def assert_verdicts(result: RunResult, *, must_hold: Iterable[str], judged: bool = True) -> None:
    """Every check in ``must_hold`` is True (not unknown: a check that could not judge proves
    nothing); no check at all is False. The message names the run dir and the repro command."""
    run = json.loads(RunDir(result.dir).run_json.read_text())
    check_verdicts(
        result.verdicts,
        must_hold if judged else (),
        f" in run {result.run_id} (results: {result.dir}; repro: {run.get('repro')})",
    )


# -- scenarios as data: what each scripted fault is, and what judges it -------------------------
#
# Every conformance scenario's schedule is a ``Plan`` in ``PLANS`` (importable without a cluster),
# so that ``tests/unit/test_scenario_windows.py`` can walk every fault window and compare it with
# the bound of each timed check that judges it (``core.checks.bounds``), and
# ``tests/unit/test_broken_twins.py`` can feed each scenario's own assertions a broken twin.


@dataclass(frozen=True)
class Plan:
    """One conformance scenario: its scripted faults (``Step``: calm, fault, seconds held),
    the checks its assertions require to hold, and the run settings the bounds depend on.
    ``scripted=False``: the nemesis is a function whose steps wait for conditions; ``steps``
    then lists the shortest each fault is held, for the record."""

    suite: str
    scenario: str
    steps: tuple[Step, ...] = ()
    must_hold: tuple[str, ...] = ()
    observe_interval: float = 1.0
    broker_config: tuple[tuple[str, str], ...] = ()
    brokers: int = 3
    run_seconds: float | None = None  # None: the profile's run_seconds
    scripted: bool = True
    what: str = ""
    #: the producers are idempotent (``RunSpec.idempotence``): where the plan promises no
    #: duplicate and no acknowledged offset out of order (``duplicate``, ``nonmonotonic-send``)
    idempotence: bool = False

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.scenario}"

    def shortest_window_seconds(self) -> float:
        """The shortest fault window every timed check can judge whatever the fault's kind: the
        longest stall bound (a hanging fault's) plus its margin. Seeded schedules draw their
        durations from here up, so a chaos verdict can say no, not just unknown."""
        return shortest_window(self.bounds())

    def settings(self) -> Settings:
        """The settings of a run of this plan: what ``RunSpec.header_config`` records."""
        return run_settings(self.brokers, dict(self.broker_config), self.observe_interval)

    def bounds(self) -> dict[str, Bound]:
        return derive(self.settings())

    def tail_seconds(self) -> float:
        """Workload after the last heal (``highwater.nemesis.tail_seconds``)."""
        return tail_seconds(self.bounds())

    def duration(self, profile_seconds: float) -> float:
        """The workload's length: at least the profile's (or the plan's own); with scripted
        faults, at least the schedule plus the tail (``highwater.nemesis.workload_seconds``)."""
        base = self.run_seconds if self.run_seconds is not None else profile_seconds
        return workload_seconds(base, self.steps if self.scripted else (), self.bounds())

    def judging(self, step: Step) -> dict[str, Bound]:
        """The bounds a window of ``step`` must outlast, per timed check that judges it (every
        timed check runs on every history, asserted by the scenario or not: a window it cannot
        judge leaves it unknown)."""
        b = self.bounds()
        stall = b[stall_bound_name(step.kind.value)]
        out: dict[str, Bound] = {}
        cuts, leaves = step_cuts_off(step), step_takes_a_replica_out(step)
        if cuts or leaves:
            move = b["isr_leave_bound_ms"].ms + b["follower_fetch_bound_ms"].ms
            if move > stall.ms:
                stall = Bound(
                    "isr_leave_bound_ms + follower_fetch_bound_ms",
                    move,
                    f"{b['isr_leave_bound_ms'].formula} + {b['follower_fetch_bound_ms'].formula}",
                    f"{b['isr_leave_bound_ms'].ms} + {b['follower_fetch_bound_ms'].ms}",
                )
            out["follower-fetch"] = stall
        if cuts:
            out["progress"] = b[stall_bound_name(step.kind.value)]
        if leaves:
            out["isr-stability"] = b["isr_leave_bound_ms"]
        return out


def step_cuts_off(step: Step) -> bool:
    """Whether the fault cuts a broker off (what the checks' ``cuts_off`` means): a process
    fault, or a cut/timeout with no narrower peer or flow (``faults.inject.ActiveFault``)."""
    words = step.fault.split()
    if step.kind.is_client or step.kind.is_clock:  # a client's worker, or a clock: nothing is cut off
        return False
    if step.kind in (FaultKind.ROLL, FaultKind.FINALIZE):
        return False  # done when applied: each rolled node is back before the step ends (faults.release)
    if step.kind.is_process:
        return True
    return step.kind.value in ("cut", "timeout") and "--peer" not in words and "--flow" not in words


def step_takes_a_replica_out(step: Step) -> bool:
    """Whether the fault is meant to take a follower out of the ISR: it cuts off or slows a
    broker's replication."""
    return step_cuts_off(step) or (
        step.kind.value in ("latency", "timeout", "bandwidth") and "replication" in step.fault
    )


_KIP392 = ("follower-fetch", "progress", "lost-write")
#: KIP-392 faults on the rack replica of one consumer; each held long enough for the follower to
#: leave the ISR and for its consumer to move (isr_leave_bound_ms + follower_fetch_bound_ms, plus
#: the margin): see tests/unit/test_scenario_windows.py
KIP392_FAULTS = {
    "killed": "kill --target broker:{follower}",
    "cut-off": "cut --target broker:{follower} --listener replication",
    "slowed": "latency --target broker:{follower} --peer broker:{leader} --flow out --listener replication --latency 8000",
}
KIP392_FAULT_SECONDS = 22
#: a killed or cut-off leader: its rack's consumer moves (isr_leave + follower_fetch bounds) and
#: every consumer's stalls are judged (consumer_stall_bound_ms), plus the margin
LEADER_FAULT_SECONDS = 20
#: KIP-320's faults (held until conditions, and at least this long)
KIP320_WINDOW_SECONDS = 20
#: a paused broker leaves requests hanging: consumer_stall_hang_bound_ms plus the margin
PAUSE_SECONDS = 29
#: the groups suite's members have a 6 s session timeout (GROUP_SESSION_MS): a member frozen this
#: long is evicted, one frozen for GROUP_PAUSE_SECONDS (a GC pause) is not
GROUP_SESSION_MS = 6000
GROUP_FREEZE_SECONDS = 9
GROUP_PAUSE_SECONDS = 3
#: what every member-fault scenario of the groups suite must keep (member-faults, leader-member-faults,
#: majority-member-faults, member-churn)
_GROUP_FAULTS = (
    "lost-write",  # _DURABILITY's four (defined below)
    "uncommitted-read",
    "poll-skip",
    "inconsistent-offsets",
    "group-delivery",
    "rebalance-skip",
    "commit-ahead",
    "commit-regression",
    "exclusive-read",
    "rebalance-rewind",
)
#: member churn (groups/member-churn): the seed and rounds of its schedule (``member_churn_steps``)
MEMBER_CHURN_SEED = 27
MEMBER_CHURN_ROUNDS = 6


def road_steps(what: str, members: int = 3) -> tuple[Step, ...]:
    """Each member in turn restarted on something new (``client-restart ... <what>``: a group
    protocol, a client version), 4 s of calm first, then a session timeout and 2 s more between
    two members, so that a classic group, which waits for a killed member's session to expire,
    has settled and every member reads again before the next one goes; each window 4 s."""
    gap = GROUP_SESSION_MS // 1000 + 2
    return tuple(
        Step(4 if m == 0 else gap, f"client-restart --target client:consumer-{m} {what}".rstrip(), 4)
        for m in range(members)
    )


def member_churn_steps(
    seed: int = MEMBER_CHURN_SEED, rounds: int = MEMBER_CHURN_ROUNDS, members: int = 3
) -> tuple[Step, ...]:
    """Members leaving and joining while the load runs, as a seeded schedule: each round one
    member, never the previous round's, is killed (``client-kill``: it leaves without a word;
    the heal starts it again and it rejoins as a new member) and held 2..8 s (shorter than the
    session timeout: its old self is still in the group when it rejoins; longer: evicted
    first), or one time in three restarted at once (``client-restart``: gone and back within
    a second, a 3 s window reserved); after 4 s of calm, then gaps of 8..10 s: at least the
    session timeout and 2 s more, so that under the classic protocol, whose rebalance waits for
    a member that died without leaving until its session expires, every member reads again
    between one member's return and the next one's fault (``progress`` judges each member
    after every heal; with gaps of 1..3 s the classic group never settles). A pure function of
    its arguments (``random.Random(seed)``, integer seconds), so the plan is data and every run
    replays the same churn."""
    rng = random.Random(seed)
    steps: list[Step] = []
    last: int | None = None
    for i in range(rounds):
        member = rng.choice([m for m in range(members) if m != last])
        last = member
        restart = rng.random() < 1 / 3
        held = 3 if restart else rng.randint(2, 8)
        gap = 4 if i == 0 else rng.randint(GROUP_SESSION_MS // 1000 + 2, GROUP_SESSION_MS // 1000 + 4)
        steps.append(
            Step(gap, f"{'client-restart' if restart else 'client-kill'} --target client:consumer-{member}", held)
        )
    return tuple(steps)


#: seeded member faults (groups/seeded-member-faults): the seed, and how long its schedule runs
MEMBER_SCHEDULE_SEED = 3  # its classic schedule draws all three member selectors
MEMBER_SCHEDULE_SECONDS = 50.0
#: what a seeded member-fault schedule draws: kills and freezes of members, fewer restarts
MEMBER_FAULT_MIX = (("client_kill", 1.0), ("client_freeze", 1.0), ("client_restart", 0.5))


def member_fault_schedule(topology: Topology, group: str, protocol: str, seed: int = MEMBER_SCHEDULE_SEED) -> Schedule:
    """A seeded schedule of client faults on ``group``'s members: kills, freezes and restarts of
    a rack's consumer (``consumers:<rack>``), one member (``members:<group>:1``), a majority
    (``members:<group>``), every member (``group:<group>``) and, on the classic protocol, the
    leader member (``group-leader:<group>``; KIP-848's consumer protocol has none). Windows of
    2..9 s (shorter and longer than the session timeout: kept, or evicted first) and gaps of
    the session timeout plus 2..4 s, for the reason ``member_churn_steps`` gives. A pure
    function of its arguments."""
    session = GROUP_SESSION_MS / 1000
    config = ScheduleConfig(
        length=MEMBER_SCHEDULE_SECONDS,
        duration=(2.0, 9.0),
        gap=(session + 2, session + 4),
        mix=MEMBER_FAULT_MIX,
        groups=(group,),
        member_targets=("members", "group-leader") if protocol == "classic" else ("members",),
    )
    return Schedule.generate(topology, seed, config)


#: the share-groups suite: the group's acquisition lock (RunSpec.share_lock_ms), a broker killed this
#: long (its partitions' leaders and the group's coordinator move; as long as a leader fault, for
#: the timed checks that judge the cluster's ISR and the producers' progress), a member frozen for
#: less than the lock (it keeps its records)
SHARE_LOCK_MS = 5000
SHARE_BROKER_KILL_SECONDS = LEADER_FAULT_SECONDS  # the timed checks still judge the cluster's ISR and progress
SHARE_PAUSE_SECONDS = 2
_SHARE = (
    "lost-write",
    "share-delivery",
    "share-exclusive",
    "share-settled-redelivered",
    "share-delivery-limit",
    "share-release-redelivered",
)
SLOW_FOLLOWER = (
    "latency --target broker:{follower} --peer broker:{leader} --flow out --listener replication --latency 8000"
)
_DURABILITY = ("lost-write", "uncommitted-read", "poll-skip", "inconsistent-offsets")
#: the power-loss suite: what must hold whatever the case (the policy never allows these; where
#: a case allows loss, consumers must still detect the truncation, KIP-320)
_POWER_ALWAYS = ("poll-skip", "truncation-undetected", "nonmonotonic-poll")
#: a power loss lasts as long as a leader kill: the node is down that long, then restarted
POWER_LOSS_SECONDS = LEADER_FAULT_SECONDS


def _power_plan(case: str, target: str, what: str, promised: bool) -> Plan:
    """A power-loss case: ``target`` loses power 4 s in, stays down ``POWER_LOSS_SECONDS``, and
    restarts with what its disk had fsynced. Where Kafka promises no loss (fewer replicas than
    min.insync.replicas lost at once) the durability checks must hold too; elsewhere the policy
    allows the loss and the checks that must hold are the ones it never allows."""
    return Plan(
        "power-loss",
        case,
        (Step(4, f"power-loss --target {target}", POWER_LOSS_SECONDS),),
        (*_DURABILITY, "truncation-undetected", "nonmonotonic-poll") if promised else _POWER_ALWAYS,
        what=what,
    )


#: the clock suite (suites/conformance/test_clock.py): a node's wall clock jumped through
#: libfaketime (``clock-jump``); ten minutes is past every time bound of the checks and of Kafka's
#: own timers (sessions, lag, fetch waits) and far below retention, so nothing is deleted
CLOCK_JUMP_SECONDS = 600
#: how long a jumped clock stays off; its heal is the jump back
CLOCK_HOLD_SECONDS = 10


def _clock_plan(case: str, steps: tuple[Step, ...], what: str) -> Plan:
    """A clock case: the durability checks must hold whatever a clock does (Kafka orders and
    replicates by offsets and epochs, not by time); the timed checks say what it cost."""
    return Plan("clock", case, steps, _DURABILITY, what=what)


CLOCK_PLANS = (
    _clock_plan(
        "leader-ahead",
        (Step(3, f"clock-jump --target leader:{{topic}}/0 --offset {CLOCK_JUMP_SECONDS}", LEADER_FAULT_SECONDS),),
        "the leader's clock jumps ten minutes ahead and back: no loss, no skip; does the ISR shrink?",
    ),
    _clock_plan(
        "leader-back-then-follower-cut",
        (
            Step(3, f"clock-jump --target leader:{{topic}}/0 --offset {CLOCK_JUMP_SECONDS}", CLOCK_HOLD_SECONDS),
            Step(1, "cut --target broker:{follower} --listener replication", KIP392_FAULT_SECONDS),
        ),
        "the leader's clock goes ten minutes ahead, then back (the heal); then a follower's replication "
        "is cut: its last caught-up time was taken ahead, does it still leave the ISR in time?",
    ),
    _clock_plan(
        "clients-ahead",
        (
            Step(3, f"clock-jump --target client:consumer-0 --offset {CLOCK_JUMP_SECONDS}", LEADER_FAULT_SECONDS),
            Step(2, f"clock-jump --target producers --offset {CLOCK_JUMP_SECONDS}", LEADER_FAULT_SECONDS),
        ),
        "a consumer's clock, then the producers', ten minutes ahead and back (their records' timestamps "
        "and their own timers move; the brokers' do not)",
    ),
    _clock_plan(
        "controller-ahead",
        (Step(3, f"clock-jump --target controller --offset {CLOCK_JUMP_SECONDS}", LEADER_FAULT_SECONDS),),
        "the active controller's clock jumps ten minutes ahead and back: are the brokers' sessions kept?",
    ),
    _clock_plan(
        "controller-back-then-kill",
        (
            Step(3, f"clock-jump --target controller --offset {CLOCK_JUMP_SECONDS}", CLOCK_HOLD_SECONDS),
            Step(1, "kill --target broker:{follower}", LEADER_FAULT_SECONDS),
        ),
        "the active controller's clock goes ten minutes ahead, then back; then a follower is killed: "
        "is it fenced within its session timeout?",
    ),
)

#: the upgrades suite (suites/conformance/test_upgrades.py): every case starts on an older release
#: and rolls to the Kafka version under test, filled in for ``{release}`` by the test; the data
#: checks hold across the road, and the upgrade check says what the steps kept
#: an upgrade keeps the data promises, and idempotent producers are not re-sequenced into
#: duplicates or out-of-order offsets by a broker restarted on another release
_UPGRADE = (*_DURABILITY, "upgrade", "nonmonotonic-poll", "truncation-undetected", "duplicate", "nonmonotonic-send")
#: what a roll takes beyond its step's hold (it blocks until each node is back: ~2.5 s a node, 2 s
#: apart, more with --crash-after)
UPGRADE_ROLL_RESERVE_SECONDS = 18


#: the tiered suite (KIP-405): what a read across the local/remote boundary must keep
_TIERED = (*_DURABILITY, "nonmonotonic-poll", "truncation-undetected", "duplicate")
#: how long the consumers are down before their catch-up read: long enough for what they have not
#: read to move to the remote store (a segment a second, copied and deleted locally within ~2 s)
TIERED_CONSUMERS_DOWN_SECONDS = 12
#: how long the remote store fails in store-failing: from 4 s before the consumers come back to
#: 16 s after, so their catch-up read meets it
TIERED_STORE_FAIL_SECONDS = 20
#: store-slow: each write to the remote store waits 200 ms, each fsync 2 s (a copy of a segment
#: takes seconds instead of milliseconds)
TIERED_STORE_SLOW = "--write-ms 200 --fsync-ms 2000"
#: retention-race: the topic's retention (``RunSpec.retention_ms``), and how long the consumers are
#: down: a little longer, so that they come back where retention is deleting. A record is promised
#: for the retention less the producers' delivery timeout (20 s) and the slack (2 s): 8 s here
TIERED_RETENTION_MS = 30_000
TIERED_RETENTION_DOWN_SECONDS = 32
#: what retention-race holds: the tiered promises, less uncommitted-read (a record read and then
#: deleted by retention cannot be compared with the final log: unjudged), plus log-start (no
#: record deleted younger than the retention); lost-write owes nothing retention deleted
_TIERED_RETENTION = (*(c for c in _TIERED if c != "uncommitted-read"), "log-start")


#: store-lost-unsynced: what consumers read of the segments the store lost cannot be compared with
#: the log (the final read cannot read them back), and they read nothing else (they wait at the
#: lost segments): uncommitted-read and truncation-undetected are unknown there, not promises
_TIERED_STORE_LOST = tuple(c for c in _TIERED if c not in ("uncommitted-read", "truncation-undetected"))


def _store_plan(scenario: str, fault: str, what: str, must_hold: tuple[str, ...] = _TIERED) -> Plan:
    """A fault of the remote store (``fault``, on ``--target store``) for
    ``TIERED_STORE_FAIL_SECONDS`` from 8 s after the consumers were stopped, so that their
    catch-up read meets it."""
    return Plan(
        "tiered",
        scenario,
        (
            Step(3, "client-kill --target consumers", TIERED_CONSUMERS_DOWN_SECONDS),
            Step(8, fault, TIERED_STORE_FAIL_SECONDS, during=True),
        ),
        must_hold,
        what=what,
        idempotence=True,
    )


def _catch_up_plan(scenario: str, fault: str, what: str) -> Plan:
    """The consumers stopped while the producers write (what they have not read moves to the
    remote store), then started again, and ``fault`` held ``LEADER_FAULT_SECONDS`` from 2 s
    into their catch-up read."""
    return Plan(
        "tiered",
        scenario,
        (
            Step(3, "client-kill --target consumers", TIERED_CONSUMERS_DOWN_SECONDS),
            Step(2, fault, LEADER_FAULT_SECONDS),
        ),
        _TIERED,
        what=what,
        idempotence=True,
    )


TIERED_PLANS = (
    _catch_up_plan(
        "catch-up-leader-kill",
        "kill --target leader:{topic}/0",
        "the consumers stopped while the producers write, so that what they have not read moves to "
        "the remote store, then started again: their catch-up read crosses from remote to local segments "
        "while partition 0's leader is killed; nothing lost, skipped, rewound or read uncommitted",
    ),
    _catch_up_plan(
        "catch-up-leader-partition",
        "cut --target leader:{topic}/0",
        "the consumers stopped while the producers write, then started again, and partition 0's leader "
        "cut off from every other node (not from the clients) during their catch-up read: its successor serves "
        "the remote segments, the cut leader goes on claiming the partition (HW-8), and nothing is lost, "
        "skipped, rewound or read uncommitted",
    ),
    _catch_up_plan(
        "metadata-leader-kill",
        f"kill --target leader:{METADATA_TOPIC}/0",
        "the consumers stopped while the producers write, then started again, and the leader of the "
        "remote log metadata (the one partition of __remote_log_metadata) killed during their catch-up read: "
        "copies and deletions wait for its successor, reads go on from every broker's metadata cache; nothing "
        "lost, skipped, rewound or read uncommitted",
    ),
    _store_plan(
        "store-failing",
        "disk-fail --target store",
        "the remote store fails every read and write (EIO) while the producers write and the stopped "
        "consumers start their catch-up read from it: no segment is deleted locally before it is copied, "
        "nothing is lost, and the consumers read on once the store heals",
    ),
    _store_plan(
        "store-slow",
        f"disk-slow --target store {TIERED_STORE_SLOW}",
        "every write to the remote store waits and every fsync of it waits longer while the producers "
        "write and the stopped consumers start their catch-up read: copies fall behind, local segments wait "
        "for them, and nothing is lost, skipped or rewound",
    ),
    _store_plan(
        "store-full",
        "disk-full --target store",
        "the remote store refuses every write as a full disk does (ENOSPC) while the producers write and "
        "the stopped consumers read back what it holds: no segment is deleted locally before it is copied, "
        "nothing is lost, and copies resume once it has room",
    ),
    _store_plan(
        "store-lost-unsynced",
        "power-loss --target store",
        "the remote store loses every file it had not fsynced (its machine lost power and came back) while "
        "the producers write and the stopped consumers are about to read back from it: the records only the "
        "lost segments held are gone (allowed: Kafka trusts a copy once the store returns), and no consumer "
        "skips them, reads them out of order or misses a truncation",
        _TIERED_STORE_LOST,
    ),
    Plan(
        "tiered",
        "retention-race",
        (Step(3, "client-kill --target consumers", TIERED_RETENTION_DOWN_SECONDS),),
        _TIERED_RETENTION,
        what=f"the topic keeps {TIERED_RETENTION_MS // 1000} s of records and the consumers are down longer, so "
        "that when they come back retention is deleting the remote segments they resume in: they read on from "
        "the log start, and retention deletes no record younger than itself",
        idempotence=True,
    ),
)


def _upgrade_plan(case: str, steps: tuple[Step, ...], what: str) -> Plan:
    """An upgrade case: its steps (``{release}`` the release under test, ``{from}`` the one the
    cluster started on, both filled in by the test), long enough for the steps' calms and holds,
    the rolls themselves and the progress tail after the last step."""
    rolls = sum(1 for st in steps if st.kind is FaultKind.ROLL)
    held = sum(st.after + st.duration for st in steps if not st.during)
    return Plan(
        "upgrades",
        case,
        steps,
        _UPGRADE,
        run_seconds=held + rolls * UPGRADE_ROLL_RESERVE_SECONDS + 15,
        what=what,
        idempotence=True,
    )


_ROLL_ALL = "roll --target brokers --release {release} --interval 2"
_FINALIZE = "finalize --target controller"
UPGRADE_PLANS = (
    _upgrade_plan(
        "roll-kill-finalize",
        (
            Step(3, "roll --target broker:1 --release {release}", 1),
            Step(1, "kill --target broker:2", LEADER_FAULT_SECONDS),
            Step(2, _ROLL_ALL, 1),
            Step(2, _FINALIZE, 1),
        ),
        "one node rolled to the new release, then a node still on the old one killed in the "
        "mixed-version window and restarted on it, then the roll finished (controllers first) and "
        "metadata.version finalized at the newest level: no loss, no skip, nothing the upgrade must keep changed",
    ),
    _upgrade_plan(
        "crash-mid-roll",
        (Step(3, "roll --target brokers --release {release} --interval 2 --crash-after 3", 1), Step(2, _FINALIZE, 1)),
        "every node rolled, each SIGKILLed 3 s into its first start on the new release (log recovery, "
        "registration) and started again, then finalized",
    ),
    _upgrade_plan(
        "finalize-controller-down",
        (
            Step(3, _ROLL_ALL, 1),
            Step(2, "kill --target controller", LEADER_FAULT_SECONDS),
            Step(3, _FINALIZE, 1, during=True),
        ),
        "every node rolled, then the active controller killed and metadata.version finalized through "
        "the controller elected in its place, while it is down; it comes back on the finalized level",
    ),
    _upgrade_plan(
        "mixed-cut",
        (
            Step(3, "roll --target broker:1 --release {release}", 1),
            Step(1, "cut --target broker:1", KIP392_FAULT_SECONDS),
            Step(2, _ROLL_ALL, 1),
            Step(2, _FINALIZE, 1),
        ),
        "the one node on the new release cut off from the nodes still on the old one (and from the "
        "clients) in the mixed-version window, then the roll finished and finalized",
    ),
    _upgrade_plan(
        "roll-under-latency",
        (
            Step(3, "latency --target broker:2 --latency 150", 40),
            Step(2, _ROLL_ALL, 1, during=True),
            Step(2, _FINALIZE, 1),
        ),
        "every link of one node delayed 150 ms while every node is rolled, then finalized",
    ),
    _upgrade_plan(
        "roll-back",
        (
            Step(3, "roll --target broker:1 --release {release}", 5),
            Step(2, "roll --target brokers --release {from} --interval 2", 1),
        ),
        "one node rolled to the new release and back, with every other node, to the old one before "
        "anything was finalized (Kafka's supported roll back)",
    ),
)

#: the power-loss cases (acks=all, min.insync.replicas=2, RF 3; suites/conformance/test_power_loss.py
#: sets each case's election settings): the case name, the target, how many replicas of partition
#: 0 it takes at once, and what it is
POWER_CASES = {
    "leader": ("leader:{topic}/0", 1, "the leader of partition 0 loses power: nothing acknowledged may be lost"),
    "majority": (
        "replicas:{topic}/0:2",
        2,
        "the leader and one follower of partition 0 lose power at once; the third copy must lead",
    ),
    "majority-elr-off": (
        "replicas:{topic}/0:2",
        2,
        "the leader and one follower lose power, eligible leader replicas off (Kafka before 4.1's default)",
    ),
    "all": ("brokers", 3, "every broker loses power at once (with ELR on where the release has it)"),
    "all-elr-off": ("brokers", 3, "every broker loses power at once, eligible leader replicas off"),
    "all-unclean": ("brokers", 3, "every broker loses power at once, unclean leader election on"),
}

#: the sweep scenario set (``suites/sweep``): short scenarios, one replication rule each
SWEEP_PLANS = (
    Plan(
        "sweep",
        "follower-stop",
        (Step(3, "stop --target broker:{follower}", KIP392_FAULT_SECONDS),),
        ("lost-write", "poll-skip", "progress"),
        what="a follower shut down cleanly and restarted: no acknowledged write lost, consumers keep up",
    ),
    Plan(
        "sweep",
        "leader-stop",
        (Step(3, "stop --target leader:{topic}/0", LEADER_FAULT_SECONDS),),
        (*_DURABILITY, "progress"),
        what="the leader shut down cleanly (controlled shutdown moves leadership first): no loss, consumers keep up",
    ),
    Plan(
        "sweep",
        "follower-cut-hw",
        (Step(3, "cut --target broker:{follower} --listener replication", KIP392_FAULT_SECONDS),),
        ("hw-regression", "lost-write", "uncommitted-read"),
        observe_interval=0.2,
        what="a follower's replication cut and healed: it catches up and the HW never goes backwards",
    ),
    Plan(
        "sweep",
        "follower-pause",
        (Step(3, "pause --target broker:{follower}", PAUSE_SECONDS),),
        ("lost-write", "poll-skip", "progress"),
        what="the follower of partition 0 frozen (SIGSTOP; it leads another partition) and resumed: no loss, "
        "consumers keep up",
    ),
)

# the transactions suite ---------------------------------------------------------------------

_TXN = ("aborted-read", "open-txn-read", "torn-transaction", "lost-write", "uncommitted-read", "poll-skip")
_GROUP = ("commit-ahead", "commit-regression")

#: the tiered suite's read_committed catch-up: transactional producers commit and abort while the
#: consumers are down, so the segments that move to the remote store hold both, and the
#: read_committed consumers' catch-up read must skip the aborted records the remote segments
#: hold (their transaction indexes travel with them). Judged by the transactions checks, like
#: TRANSACTION_PLANS, so it stays out of ``PLANS`` (whose twins generate no transactions)
TIERED_READ_COMMITTED = Plan(
    "tiered",
    "read-committed-catch-up",
    (Step(3, "client-kill --target consumers", TIERED_CONSUMERS_DOWN_SECONDS),),
    (*_TXN, "nonmonotonic-poll", "duplicate"),
    what="transactional producers commit and abort while the read_committed consumers are down; back, "
    "they read the remote segments: no aborted or open transaction's record, no torn transaction, "
    "nothing lost or skipped",
    idempotence=True,
)

#: a coordinator moves in seconds (its log's leader moves); held long enough for a client to
#: time out a request against the dead one and find the new one
COORDINATOR_FAULT_SECONDS = 12
#: a coordinator cut off or frozen while its clients still reach it: held 10 s, long enough for
#: its logs' leadership to move (fenced after broker.session.timeout.ms, 4 s), and shorter than
#: the earliest a rack consumer's move off it could be judged (the observer sees it leave an ISR
#: after replica.lag.time.max.ms at the soonest, 4 s, then follower_fetch_bound_ms, 7.5 s) and
#: than every stall bound: the timed checks stay unjudged here for every client alike (with
#: 12 s, librdkafka's HW-9 struck in the runs where the ISR shrink was seen within 4.5 s, and
#: only in those), and this scenario judges transactions and groups
COORDINATOR_LIVE_FAULT_SECONDS = 10

#: the transactions suite's scenarios (suites/conformance/test_transactions.py)
TRANSACTION_PLANS = (
    Plan(
        "transactions",
        "coordinators-kill",
        (
            Step(3, "kill --target coordinator:txn/{txn}", COORDINATOR_FAULT_SECONDS),
            Step(2, "kill --target coordinator:group/{group}", COORDINATOR_FAULT_SECONDS),
        ),
        (*_TXN, *_GROUP),
        run_seconds=3 + COORDINATOR_FAULT_SECONDS + 2 + COORDINATOR_FAULT_SECONDS + 6,
        what="a group of read_committed consumers (one read_uncommitted) through kills of the transaction "
        "coordinator and the group coordinator: no aborted read, no torn transaction, no commit ahead or back",
    ),
    Plan(
        "transactions",
        "coordinators-cut-pause",
        (
            Step(3, "cut --target coordinator:txn/{txn}", COORDINATOR_LIVE_FAULT_SECONDS),
            Step(2, "pause --target coordinator:group/{group}", COORDINATOR_LIVE_FAULT_SECONDS),
        ),
        (*_TXN, *_GROUP),
        run_seconds=3 + COORDINATOR_LIVE_FAULT_SECONDS + 2 + COORDINATOR_LIVE_FAULT_SECONDS + 6,
        what="the same group and producers while the transaction coordinator is cut off from every other "
        "node (its clients still reach it: it keeps answering as coordinator, HW-8) and the group "
        "coordinator is frozen (SIGSTOP: requests hang): no aborted read, no torn transaction, no commit "
        "ahead or back",
    ),
    Plan(
        "transactions",
        "exactly-once-copy",
        (
            Step(3, "kill --target leader:{topic}/0", LEADER_FAULT_SECONDS),
            Step(2, "kill --target coordinator:txn/{copier_txn}", COORDINATOR_FAULT_SECONDS),
        ),
        (*_TXN, *_GROUP, "rebalance-skip", "copy-exactly-once"),
        run_seconds=3 + LEADER_FAULT_SECONDS + 2 + COORDINATOR_FAULT_SECONDS + 6,
        what="two copiers copy the topic exactly once (consume, transform, produce with the offsets inside the "
        "transaction) through a kill of the source's leader and of copier-0's transaction coordinator: each "
        "committed record copied once, no aborted record copied, the copy group's offsets never ahead or back",
    ),
)

#: transactions v1 and v2 (KIP-890, ``transaction.version``) side by side: the producers' own links
#: to their transaction coordinator slowed, then cut, then their links to partition 0's leader
#: cut (the "no-rack" clients' proxies: producers, not the rack consumers); each held 8 s, past
#: the producer's request timeout (5 s) and within its delivery timeout (20 s)
PRODUCER_LINK_SECONDS = 8
PRODUCER_LINKS = Plan(
    "transactions",
    "producer-links",
    (
        Step(3, "latency --target coordinator:txn/{txn} --peer clients:no-rack --flow in --latency 2000", 8),
        Step(2, "cut --target coordinator:txn/{txn} --peer clients:no-rack --flow in", PRODUCER_LINK_SECONDS),
        Step(2, "cut --target leader:{topic}/0 --peer clients:no-rack --flow in", PRODUCER_LINK_SECONDS),
    ),
    _TXN,
    run_seconds=3 + 8 + 2 + PRODUCER_LINK_SECONDS + 2 + PRODUCER_LINK_SECONDS + 6,
    what="transactional producers whose links to their transaction coordinator are slowed, then cut, then whose "
    "links to a partition leader are cut, on transaction.version 1 and 2: no aborted read, no torn transaction, "
    "no lost committed write",
)


PLANS: dict[str, Plan] = {
    p.key: p
    for p in [
        Plan(
            "kip-392",
            "rack-local-reads",
            must_hold=("follower-fetch", "progress"),
            what="no fault: each rack's consumer reads from its own rack's replica",
        ),
        Plan(
            "kip-392",
            "quiet-follower-latency",
            must_hold=("follower-fetch", "follower-latency", "progress"),
            run_seconds=45,
            what="no fault, a quiet rate (3 records/s a producer): records served by a follower reach their "
            "consumer within follower-latency's bound of the leader's",
        ),
        *(
            Plan(
                "kip-392",
                f"replica-{how}",
                (Step(3, fault, KIP392_FAULT_SECONDS),),
                _KIP392,
                what=f"the rack replica of one consumer is {how}; the consumer moves and returns",
            )
            for how, fault in KIP392_FAULTS.items()
        ),
        Plan(
            "kafka-4485",
            "high-rate-small",
            must_hold=("isr-stability", "lost-write"),
            observe_interval=0.25,
            what="3 producers, >=150 small sends/s each: no ISR churn",
        ),
        Plan(
            "kafka-4485",
            "slowed-follower",
            (Step(3, SLOW_FOLLOWER, LEADER_FAULT_SECONDS),),
            ("isr-stability", "lost-write"),
            observe_interval=0.25,
            run_seconds=25,
            what="a follower slowed past the lag limit leaves once, returns once",
        ),
        Plan(
            "kip-207",
            "leader-kills",
            (
                Step(3, "kill --target leader:{topic}/0", LEADER_FAULT_SECONDS),
                Step(2, "kill --target leader:{topic}/1", LEADER_FAULT_SECONDS),
                Step(2, "kill --target leader:{topic}/2", LEADER_FAULT_SECONDS),
            ),
            ("hw-regression", "lost-write", "uncommitted-read"),
            observe_interval=0.2,
            run_seconds=25,
            what="three leader kills: the HW never goes backwards",
        ),
        Plan(
            "durability",
            "leader-kill",
            (Step(4, "kill --target leader:{topic}/0", LEADER_FAULT_SECONDS),),
            _DURABILITY,
            what="leader killed: no loss, no uncommitted read, no skip",
        ),
        Plan(
            "durability",
            "leader-partition",
            (Step(4, "cut --target leader:{topic}/0", LEADER_FAULT_SECONDS),),
            _DURABILITY,
            what="leader cut off",
        ),
        Plan(
            "durability",
            "leader-pause",
            (Step(4, "pause --target leader:{topic}/0", PAUSE_SECONDS),),
            _DURABILITY,
            what="leader paused",
        ),
        Plan(
            "kip-320",
            "unclean-truncation",
            (
                Step(3, "cut --target broker:{f1} --listener replication", KIP320_WINDOW_SECONDS),
                Step(0, "kill --target broker:{f2}", KIP320_WINDOW_SECONDS),
                Step(0, "kill --target broker:{leader}", KIP320_WINDOW_SECONDS),
            ),
            ("truncation-undetected", "nonmonotonic-poll", "poll-skip", "inconsistent-offsets"),
            broker_config=(("replica.lag.time.max.ms", "4000"), ("broker.session.timeout.ms", "4000")),
            run_seconds=3 + 2 * KIP320_WINDOW_SECONDS + 20,
            scripted=False,
            what="cut F1 until it leaves the ISR and the HW passes its LEO by 100 (and 20 s); kill F2 and L; "
            "unclean-elect F1 (heal its cut); at least 4 s (and 20 s since the kills); restart L and F2 "
            "(the steps are held until conditions, at least this long)",
        ),
        Plan(
            "groups",
            "member-restart",
            (Step(4, "client-kill --target client:consumer-1", 4),),
            (*_DURABILITY, "group-delivery", "rebalance-skip", "commit-ahead", "commit-regression"),
            run_seconds=24,
            what="a group member killed (its session expires) and started again (it rejoins): "
            "the group returns every acknowledged record, no move skips a committed one",
        ),
        Plan(
            "groups",
            "member-faults",
            (
                Step(4, "client-kill --target client:consumer-1", 4),
                Step(4, "client-freeze --target client:consumer-2", GROUP_FREEZE_SECONDS),
                Step(2, "client-freeze --target client:consumer-0", GROUP_PAUSE_SECONDS),
            ),
            _GROUP_FAULTS,
            run_seconds=4 + 4 + 4 + GROUP_FREEZE_SECONDS + 2 + GROUP_PAUSE_SECONDS + 6,
            what="one member killed and started again, one frozen past the group's session timeout (evicted: "
            "it must find itself fenced when it thaws), one frozen for less (a GC pause: it stays): the group "
            "returns every acknowledged record, no move skips a committed one, no commit goes ahead or back",
        ),
        Plan(
            "groups",
            "leader-member-faults",
            (
                Step(4, "client-kill --target group-leader:{group}", 4),
                Step(6, "client-freeze --target group-leader:{group}", GROUP_FREEZE_SECONDS),
            ),
            _GROUP_FAULTS,
            run_seconds=4 + 4 + 6 + GROUP_FREEZE_SECONDS + 6,
            what="the member the coordinator chose as the group's leader (classic protocol: it computes the "
            "assignment) killed and started again, then the leader of the settled group frozen past the session "
            "timeout: the group elects another leader and loses nothing, as member-faults",
        ),
        Plan(
            "groups",
            "majority-member-faults",
            (
                Step(4, "client-kill --target members:{group}", GROUP_FREEZE_SECONDS),
                Step(6, "client-restart --target members:{group}", 4),
            ),
            _GROUP_FAULTS,
            run_seconds=4 + GROUP_FREEZE_SECONDS + 6 + 4 + 6,
            what="a majority of the members (two of three, lowest client ids) killed at once and held past the "
            "session timeout, then started again; then a majority restarted at once (gone and back while their "
            "old sessions live): the one member left reads everything alone, and the group loses nothing",
        ),
        Plan(
            "groups",
            "seeded-member-faults",
            (),
            _GROUP_FAULTS,
            run_seconds=MEMBER_SCHEDULE_SECONDS + 6,
            what=f"a seeded schedule (seed {MEMBER_SCHEDULE_SEED}, suites.scenario.member_fault_schedule) of "
            "kills, freezes and restarts drawn over the member selectors: one member, a majority, every member, "
            "a rack's consumer and, on the classic protocol, the group's leader member: the group loses nothing",
        ),
        Plan(
            "groups",
            "member-churn",
            member_churn_steps(),
            _GROUP_FAULTS,
            run_seconds=sum(s.after + s.duration for s in member_churn_steps()) + 6,
            what=f"member churn while the load runs: {MEMBER_CHURN_ROUNDS} members in turn killed and started "
            f"again, or restarted at once, 8-10 s apart (seeded, seed {MEMBER_CHURN_SEED}: "
            "suites.scenario.member_churn_steps): the group loses nothing",
        ),
        Plan(
            "groups",
            "protocol-migration",
            road_steps("--group-protocol consumer"),
            (*_GROUP_FAULTS, "rebalance-barrier"),
            run_seconds=sum(s.after + s.duration for s in road_steps("")) + 6,
            what="a classic group migrated online to KIP-848's consumer protocol, one member at a time "
            "(each restarted on group.protocol=consumer; Kafka 4.0+, group.consumer.migration.policy "
            "bidirectional by default): nothing lost, skipped or rewound, no partition owned twice "
            "through the mixed group, and a migrated member whose assignment holds keeps consuming",
        ),
        Plan(
            "groups",
            "member-version-roll",
            road_steps("--version {client_to}"),
            _GROUP_FAULTS,
            run_seconds=sum(s.after + s.duration for s in road_steps("")) + 6,
            what="a group rolled to a newer version of its client, one member at a time (two versions "
            "in one group in between): the group loses nothing, skips and rewinds nothing",
        ),
        Plan(
            "share-groups",
            "member-coordinator-kill",
            (
                Step(3, "client-kill --target client:consumer-1", 4),
                Step(2, "kill --target coordinator:group/{share_group}", SHARE_BROKER_KILL_SECONDS),
            ),
            _SHARE,
            run_seconds=3 + 4 + 2 + SHARE_BROKER_KILL_SECONDS + 5,
            what="a share group member killed and started again (the broker releases its records when its "
            "connections close), then the broker coordinating the group killed and restarted: every record "
            "accepted or archived, none handed out while another member's lock held, none delivered after "
            "it was accepted, none past the delivery limit but across a leader change",
        ),
        Plan(
            "share-groups",
            "member-freezes",
            (
                Step(3, "client-freeze --target client:consumer-2", SHARE_LOCK_MS // 1000 + 4),
                Step(2, "client-freeze --target client:consumer-0", SHARE_PAUSE_SECONDS),
            ),
            _SHARE,
            run_seconds=3 + SHARE_LOCK_MS // 1000 + 4 + 2 + SHARE_PAUSE_SECONDS + 5,
            what="one member frozen past its acquisition lock (its records come back to the others after the "
            "lock expires, not before; its late acknowledgements are refused), one frozen for less (it keeps "
            "them)",
        ),
        Plan(
            "share-groups",
            "coordinator-cut-pause",
            (
                Step(3, "cut --target coordinator:group/{share_group}", KIP392_FAULT_SECONDS),
                Step(2, "pause --target coordinator:group/{share_group}", PAUSE_SECONDS),
            ),
            _SHARE,
            run_seconds=3 + KIP392_FAULT_SECONDS + 2 + PAUSE_SECONDS + 5,
            what="the broker coordinating the group cut off from everyone, then frozen (SIGSTOP): members "
            "lose their coordinator and the leaders it holds, and the records those leaders handed out",
        ),
        Plan(
            "share-groups",
            "leader-kills",
            (
                Step(3, "kill --target leader:{topic}/0", SHARE_BROKER_KILL_SECONDS),
                Step(2, "kill --target leader:{topic}/1", SHARE_BROKER_KILL_SECONDS),
            ),
            _SHARE,
            run_seconds=3 + 2 * SHARE_BROKER_KILL_SECONDS + 2 + 5,
            what="two partition leaders killed in turn: a new leader rebuilds the share partition from the "
            "share coordinator's state; nothing accepted comes back, nothing is lost",
        ),
        *(
            _power_plan(case, target, what, promised=replicas < 2)
            for case, (target, replicas, what) in POWER_CASES.items()
        ),
        *CLOCK_PLANS,
        *UPGRADE_PLANS,
        *TIERED_PLANS,
        *SWEEP_PLANS,
    ]
}


def plan(suite: str, scenario: str) -> Plan:
    return PLANS[f"{suite}/{scenario}"]


#: the scenarios whose runs are named otherwise than by a plan of ``PLANS``: the KIP-320 suite's,
#: the sweep's minimum-ISR case, the chaos suite's seeded runs, and PRODUCER_LINKS per
#: transaction.version (the transactions suite's plans hold their faults shorter than the timed
#: checks' bounds on purpose, so they stay out of ``PLANS``, whose windows a unit test holds to them)
OTHER_SCENARIOS = (
    "kip-320/unclean-truncation",
    "sweep/leader-alone-acks1",
    "chaos/*",
    "transactions/producer-links-tv1",
    "transactions/producer-links-tv2",
)


def scenario_names() -> frozenset[str]:
    """Every ``suite/scenario`` a bundled suite's run may carry (the chaos suite's as a pattern):
    what a findings record's scenarios are held to (``highwater.core.findings.validate``)."""
    txn = {f"{p.suite}/{p.scenario}" for p in (*TRANSACTION_PLANS, TIERED_READ_COMMITTED)}
    return frozenset(PLANS) | txn | frozenset(OTHER_SCENARIOS)


def run_plan(
    cluster: ClusterBackend,
    p: Plan,
    *,
    profile: Profile,
    campaign: str,
    results_root: Path,
    repro: str,
    **overrides: Any,
) -> RunResult:
    """Run a scripted plan: its steps as the nemesis (or ``nemesis=``, e.g. a seeded schedule),
    its duration and observe interval."""
    return run_scenario(
        cluster,
        suite=p.suite,
        scenario=p.scenario,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        nemesis=overrides.pop("nemesis", scripted(list(p.steps)) if p.steps else None),
        duration=overrides.pop("duration", p.duration(profile.run_seconds)),
        observe_interval=overrides.pop("observe_interval", p.observe_interval),
        idempotence=overrides.pop("idempotence", p.idempotence),
        **overrides,
    )


# -- a scenario's assertions, as pure functions of its history and verdicts -------------------


def judge(history: Path) -> list[Verdict]:
    """Every check on a history, as the runner runs them."""
    from highwater.core.checks import run_all_checks

    return run_all_checks(history)


def check_verdicts(verdicts: Iterable[Verdict], must_hold: Iterable[str], where: str = "") -> None:
    """Every check in ``must_hold`` is True (not unknown: a check that could not judge proves
    nothing); no check at all is False."""
    vs = list(verdicts)
    by = {v.check: v for v in vs}
    bad = [v for v in vs if v.valid is False]
    weak = [by[c] for c in must_hold if by[c].valid is not True]
    if bad or weak:
        problems = bad + [w for w in weak if w not in bad]
        only_time = all(v.check in TIMED_CHECKS for v in problems)
        raise (TimedChecksOnly if only_time else AssertionError)(
            f"Kafka's promises broken or not judged{where}:\n" + describe(problems)
        )


class TimedChecksOnly(AssertionError):
    """Raised by ``check_verdicts`` when every check that failed or could not judge is a timed
    one (``TIMED_CHECKS``): the run kept every promise about data, and missed a bound of time. A
    finding about a client's slowness is an xfail for this error only (``xfail(raises=...)``),
    so a broken promise about data on that client still fails its test."""


# -- the seeded chaos run -------------------------------------------------------------------

#: the chaos run's settings, as a plan without scripted steps (its schedule is drawn per seed)
CHAOS = Plan("chaos", "seeded")


def chaos_schedule_config(profile: Profile, topic: str) -> ScheduleConfig:
    """What a chaos run's seeded schedule may draw: every window at least as long as every timed
    check's bound plus its margin (``Plan.shortest_window_seconds``), and the last seconds of the
    run calm, so the after-heal phase of progress fits (``Plan.tail_seconds``)."""
    length = profile.chaos_seconds - CHAOS.tail_seconds()
    shortest = CHAOS.shortest_window_seconds()
    mix = (
        DEFAULT_MIX
        if length >= ROLLING_RESTART_MIN_LENGTH
        else tuple((k, w) for k, w in DEFAULT_MIX if k != "rolling_restart")
    )
    return ScheduleConfig(
        length=length,
        duration=(shortest, shortest + 6.0),
        gap=(3.0, 8.0),
        mix=mix,
        partitions=(f"{topic}/0",),
        latency_ms=(50.0, 6000.0),
    )
