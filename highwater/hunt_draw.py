"""What a hunt draws for one run, from its seed alone: the Kafka release, the client, the
workload and its settings, and the seeded fault schedule over every fault kind the cluster can
apply (``highwater hunt``, docs/hunting.md).

``draw(space, seed)`` is pure: one ``random.Random(seed)`` makes every choice, in a fixed order,
over sorted candidates, so the same space and seed give the same draw; the schedule is
``Schedule.generate`` with a seed drawn here, on the run's topology. What a run draws is recorded
in its manifest (the spec's fields, ``spec.extra.hunt`` and the schedule), so ``highwater
replay`` repeats it without the space.

What is drawn, and what is not (and why):

- **workload**: plain (assigned partitions), group (a subscribed consumer group, on the classic
  protocol or KIP-848's where the release and the client have it), transactional
  (read_committed consumers and one read_uncommitted), copy (an exactly-once copy) and share
  (KIP-932) where the release and client have them;
- **settings**: partitions (1 to 6), producers (1 to 3), rate (20 to 200 sends/s a producer),
  value size (0 to 1 KiB), idempotence, the consumers' isolation level, a transaction's size and
  abort share. ``acks`` is not drawn: every check judges ``acks=all`` with
  ``min.insync.replicas=2``: the policy allows the lost writes of ``acks=1``, but a lost write
  also leaves nothing to read after a heal, which the progress checks would read as a stall. The
  cluster's racks are not drawn (a hunt's runs share their cluster, which has three); whether the
  consumers name theirs (``client.rack``, KIP-392 fetching from the rack's replica) is, last
  (below).
- **client settings**: the ones users commonly change that no check's bound is derived from,
  mapped by every driver to its library's own name (``harness.clients.base``): the producers'
  ``linger.ms`` (0 to 100 ms) and, with idempotence, ``max.in.flight.requests.per.connection``
  (1, 2 or 5; without idempotence it stays 1, as a retry could otherwise overtake a later batch,
  which is the application's choice, not Kafka's fault), and the consumers' ``max.poll.records``
  (10 to 500); then whether the consumers set ``client.rack`` (off in a quarter of the runs:
  they fetch from the leaders). The timeouts, retries, ``fetch.max.wait.ms`` and ``metadata.max.age.ms`` stay
  fixed: the timed checks' bounds are derived from them (``highwater.run_spec.run_settings``),
  and drawing them needs bounds that follow them (docs/hunting.md lists them per library).
- **faults**: every kind in ``DEFAULT_MIX`` the cluster can apply (``kinds``: the caller asks the
  backend's capabilities), client faults, and disk and clock faults on a cluster with lossy disks
  or faked clocks; corruption faults never (they lose data on purpose, which no check allows).
  Windows are at least ``shortest`` seconds, the longest timed-check bound plus its margin, so
  a check that judges a window can say no; conflicting faults are never drawn together
  (``faults.conflicts``); up to two faults overlap.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from highwater.core.errors import HighwaterError
from highwater.faults.schedule import DEFAULT_MIX, ROLLING_RESTART_MIN_LENGTH, Schedule, ScheduleConfig, ScheduledFault
from highwater.faults.spec import FaultKind
from highwater.faults.target import MinorityTarget
from highwater.harness.topology import Topology

WORKLOADS = ("plain", "group", "transactional", "copy", "share")
#: fault kinds a hunt never draws: a corrupted segment loses data on purpose
NEVER_DRAWN = frozenset({"truncate_file", "flip_bits", "roll", "finalize"})
#: weights of the kinds ``DEFAULT_MIX`` leaves at 0 for the chaos suite's sake
EXTRA_WEIGHTS = {
    "client_kill": 1.0,
    "client_freeze": 1.0,
    "client_restart": 1.0,
    "power_loss": 1.0,
    "disk_full": 0.5,
    "disk_slow": 0.5,
    "clock_jump": 1.0,
    "clock_drift": 0.5,
}
#: the client settings a hunt draws (module docstring): producers' linger.ms, requests in flight
#: with idempotence, consumers' max.poll.records
LINGER_MS = (0, 2, 5, 20, 100)
MAX_IN_FLIGHT = (1, 2, 5)
MAX_POLL_RECORDS = (10, 100, 500)


class HuntError(HighwaterError):
    """A hunt asked for something it cannot do (the message says what, in one line)."""


@dataclass(frozen=True)
class HuntSpace:
    """What a hunt explores: releases, clients (``name`` or ``name==version``), workloads, and
    how long a run is (its schedule fills all but the calm tail)."""

    releases: tuple[str, ...]
    clients: tuple[str, ...]
    workloads: tuple[str, ...] = WORKLOADS
    seconds: float = 90.0

    def __post_init__(self) -> None:
        if not self.releases or not self.clients or not self.workloads:
            raise HuntError("a hunt needs at least one release, one client and one workload")
        bad = [w for w in self.workloads if w not in WORKLOADS]
        if bad:
            raise HuntError(f"unknown workload(s) {', '.join(bad)} (known: {', '.join(WORKLOADS)})")


@dataclass(frozen=True)
class Draw:
    """One run's draw: where, with what, and the spec fields its workload sets."""

    seed: int
    release: str
    client: str
    workload: str
    settings: Mapping[str, Any] = field(default_factory=dict)  # RunSpec fields
    schedule_seed: int = 0
    concurrency: int = 1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["settings"] = dict(self.settings)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Draw:
        try:
            return cls(
                seed=int(data["seed"]),
                release=str(data["release"]),
                client=str(data["client"]),
                workload=str(data["workload"]),
                settings=dict(data.get("settings") or {}),
                schedule_seed=int(data.get("schedule_seed", 0)),
                concurrency=int(data.get("concurrency", 1)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HuntError(f"a hunt draw must have seed, release, client and workload: {exc}") from None

    @property
    def scenario(self) -> str:
        """The run's scenario name (``hunt/<scenario>``): the workload and the seed."""
        return f"{self.workload}-{self.seed}"


#: which workloads a (release, client) pair can run; the hunt asks the refusals the runner uses
Supports = Callable[[str, str], Sequence[str]]


def draw(space: HuntSpace, seed: int, supports: Supports | None = None) -> Draw:
    """The draw of run ``seed`` (pure: see the module docstring). ``supports(release, client)``
    narrows the workloads to those the pair can run (every one when absent)."""
    rng = random.Random(seed)
    release = rng.choice(sorted(space.releases))
    client = rng.choice(sorted(space.clients))
    able = tuple(supports(release, client)) if supports is not None else (*WORKLOADS, "group-consumer")
    allowed = [w for w in space.workloads if w in able]
    if not allowed:
        allowed = ["plain"]
    workload = rng.choice(allowed)
    settings: dict[str, Any] = {
        "partitions": rng.randint(1, 6),
        "producers": rng.randint(1, 3),
        "rate": float(rng.choice((20, 50, 100, 200))),
        "value_size": rng.choice((0, 0, 100, 1024)),
        "idempotence": rng.random() < 0.5,
        "isolation_level": rng.choice(("read_uncommitted", "read_committed")),
    }
    group_protocol = rng.choice(("classic", "consumer"))
    txn_records = rng.randint(1, 8)
    txn_abort_share = rng.choice((0.0, 0.25, 0.5))
    if workload == "group":
        settings.update(consumer_mode="subscribe", group_protocol=group_protocol)
        if "group-consumer" not in able:
            settings["group_protocol"] = "classic"
    elif workload in ("transactional", "copy"):
        settings.update(
            transactional=True,
            idempotence=True,
            isolation_level="read_committed",
            read_uncommitted_consumers=1,
            txn_records=txn_records,
            txn_abort_share=txn_abort_share,
        )
        if workload == "copy":
            settings.update(copiers=2, producers=1)
    elif workload == "share":
        settings.update(consumer_mode="share", isolation_level="read_uncommitted")
    concurrency = rng.choice((1, 1, 2))
    schedule_seed = rng.randrange(2**31)
    # drawn last, so the draws above stay those of seeds recorded before client settings were drawn
    linger_ms = rng.choice(LINGER_MS)
    max_in_flight = rng.choice(MAX_IN_FLIGHT)
    settings.update(linger_ms=linger_ms, max_poll_records=rng.choice(MAX_POLL_RECORDS))
    if settings["idempotence"]:
        settings["max_in_flight"] = max_in_flight
    # drawn after the client settings, for the same reason: a quarter of the runs' consumers
    # name no rack, so they fetch from the leaders (KIP-392 off)
    if rng.random() < 0.25:
        settings["client_rack"] = False
    return Draw(seed, release, client, workload, settings, schedule_seed, concurrency)


def hunt_mix(kinds: Sequence[str], length: float) -> tuple[tuple[str, float], ...]:
    """The fault mix of a hunt on a cluster that can apply ``kinds``, in a schedule ``length``
    seconds long: ``DEFAULT_MIX``'s weights, the extra kinds' ``EXTRA_WEIGHTS``, never
    ``NEVER_DRAWN``, a rolling restart only from ``ROLLING_RESTART_MIN_LENGTH`` on; the others
    weigh 0."""
    able = set(kinds) - NEVER_DRAWN
    if length < ROLLING_RESTART_MIN_LENGTH:
        able.discard("rolling_restart")
    return tuple((k, (w or EXTRA_WEIGHTS.get(k, 0.0)) if k in able else 0.0) for k, w in DEFAULT_MIX)


def schedule_for(
    d: Draw,
    topology: Topology,
    kinds: Sequence[str],
    *,
    topic: str,
    length: float,
    shortest: float,
    group: str | None = None,
) -> Schedule:
    """The draw's fault schedule on ``topology`` over the first ``length`` seconds of the run
    (the rest is its calm tail): windows from ``shortest`` seconds up (the timed checks' longest
    bound with its margin), faults of ``kinds`` only, member faults on ``group`` if any."""
    config = ScheduleConfig(
        length=length,
        duration=(shortest, shortest + 10.0),
        gap=(2.0, 8.0),
        concurrency=d.concurrency,
        mix=hunt_mix(kinds, length),
        partitions=(f"{topic}/0",),
        latency_ms=(50.0, 6000.0),
        groups=(group,) if group else (),
        member_targets=("members",) if group else (),
        consumer_racks=consumer_racks(d, topology),
    )
    return Schedule.generate(topology, d.schedule_seed, config)


def consumer_racks(d: Draw, topology: Topology) -> tuple[str, ...]:
    """The racks the draw's consumers name in ``client.rack``, the only racks a ``consumers:<rack>``
    fault finds workers in: one consumer per broker rack names its own unless the draw turns
    ``client.rack`` off; share consumers, the copy's copiers and its reader name none. (The
    topology's other client rack, ``no-rack``, is the producers' proxies: no consumer has it.)"""
    if d.settings.get("client_rack") is False or d.workload == "share":
        return ()
    return tuple(topology.racks)


def power_losses_at_once(faults: Sequence[ScheduledFault], topology: Topology) -> int:
    """How many brokers a schedule's power losses (among ``faults``) may take at the same time: the most, over
    any moment, of the brokers the power-loss faults active then may name (one for a selector
    of one node, a minority's size for an unseeded minority, every candidate otherwise). The
    run records it (``RunSpec.power_loss_replicas``), so the policy allows exactly the losses
    a correlated power loss may cause (``core.policy``): one broker's loss leaves acknowledged
    writes on the other in-sync copies, and a write lost then is still a violation."""
    losses = [f for f in faults if f.spec.kind is FaultKind.POWER_LOSS]
    most = 0
    for f in losses:  # the most overlapping set starts at some fault's start
        active = [g for g in losses if g.overlaps(f.start, f.start + 1e-3)]
        named: set[str] = set()
        counted = 0
        for g in active:
            exact = g.spec.target.static_parties(topology)
            if exact is not None:
                named |= exact
            elif g.spec.target.single:
                counted += 1
            elif isinstance(g.spec.target, MinorityTarget):
                counted += (len(topology.nodes) - 1) // 2
            else:
                named |= g.spec.target.candidates(topology)
        most = max(most, len(named) + counted)
    return min(most, len(topology.brokers))


def schedule_length(space: HuntSpace, shortest: float, tail: float) -> float:
    """How much of a hunt run its schedule may fill: all but the calm tail, at least one window.
    Raises ``HuntError`` (one line) when the run is too short for that."""
    if space.seconds < shortest + tail:
        raise HuntError(
            f"a hunt run of {space.seconds:g} s cannot hold one fault window ({shortest:g} s, the timed "
            f"checks' longest bound with its margin) and the calm tail ({tail:g} s): give --seconds "
            f"{shortest + tail:g} or more"
        )
    return space.seconds - tail
