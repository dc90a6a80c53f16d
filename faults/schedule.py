"""Seeded fault schedules: which faults, on whom, when, for how long.

``Schedule.generate(topology, seed, config)`` is a pure function: the same topology, seed and
config give the same schedule, exactly (only ``random.Random(seed)`` is used, over
deterministically ordered candidates; times are rounded to milliseconds). A schedule round-trips
through JSON (``to_json`` / ``from_json``) and goes into ``run.json`` as is.

Each :class:`ScheduledFault` is applied at ``start`` seconds after the campaign starts and
healed at ``start + duration``. For ``restart`` and ``rolling_restart``, which heal themselves,
the duration is the window reserved for them (a rolling restart spreads its nodes over it with
``interval = duration / brokers``). Gaps separate a fault's start from the previous one's end
(``concurrency == 1``) or from the previous start (``concurrency > 1``, overlapping faults). Two
faults that contradict each other (:mod:`faults.conflicts`) are never scheduled to overlap.

Targets drawn: ``broker:<id>``, ``rack:<rack>``, ``minority:<seed>`` and ``bridge:<seed>``
(seeds drawn here, so the exact nodes are recorded), ``controller``, ``leader:<tp>`` and
``follower-in:<rack>@<tp>`` for each partition in ``config.partitions``, ``coordinator:group/<id>``
for each group in ``config.groups`` (ids, not placeholders: a schedule is drawn before the run
and replayed as is; no groups, no such target, and the draws of every other schedule unchanged),
``brokers`` for rolling restarts (and ``broker:<id>`` or ``brokers`` for rolls, drawn only with
``config.roll_to``, the release they roll to), ``consumers:<rack>`` or ``group:<id>`` for client faults (drawn
only where the mix weighs them; with ``config.member_targets``, also ``members:<id>`` (a
majority), ``members:<id>:1`` and, for classic-protocol groups, ``group-leader:<id>``), and ``clients:<rack> --peer broker:<id>`` (or, with groups,
``--peer coordinator:group/<id>``) for link faults. Cuts are one-way (``--flow in``/``out``) one
time in three.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from highwater.core.versions import exact_release
from highwater.faults.common import Direction, FaultError
from highwater.faults.conflicts import conflict
from highwater.faults.scope import possible_links
from highwater.faults.spec import FaultKind, FaultSpec, Flow
from highwater.faults.target import (
    BridgeTarget,
    BrokersTarget,
    BrokerTarget,
    ClientsTarget,
    ClientTarget,
    ControllerTarget,
    CoordinatorTarget,
    FollowerInTarget,
    LeaderTarget,
    MinorityTarget,
    RackTarget,
    Target,
    TargetKind,
    parse_target,
)
from highwater.harness.topology import Topology

FORMAT = "highwater.schedule/1"

#: a rolling restart needs minutes: a schedule shorter than this should not weigh it (seconds)
ROLLING_RESTART_MIN_LENGTH = 240.0

#: the member selectors ``ScheduleConfig.member_targets`` may name, in drawing order
MEMBER_TARGETS = ("members", "group-leader")

DEFAULT_MIX: tuple[tuple[str, float], ...] = (
    ("cut", 3.0),
    ("timeout", 1.0),
    ("latency", 3.0),
    ("bandwidth", 1.0),
    ("slow_close", 0.5),
    ("reset_peer", 0.5),
    ("slicer", 0.5),
    ("kill", 2.0),
    ("stop", 1.0),
    ("pause", 2.0),
    ("restart", 1.0),
    ("rolling_restart", 0.5),
    # client faults: drawn only where a mix weighs them (weight 0 keeps every seeded schedule
    # drawn before they existed what it was: a zero weight never moves rng.choices' pick)
    ("client_kill", 0.0),
    ("client_freeze", 0.0),
    ("client_restart", 0.0),
    # disk faults: drawn only where a mix weighs them, on a cluster with lossy disks
    ("power_loss", 0.0),
    ("disk_full", 0.0),
    ("disk_slow", 0.0),
    # clock faults: drawn only where a mix weighs them, on a cluster with faked clocks
    ("clock_jump", 0.0),
    ("clock_drift", 0.0),
    # corruption faults: drawn only where a mix weighs them (a corrupted segment may lose data
    # on purpose, which no check of a seeded run allows)
    ("truncate_file", 0.0),
    ("flip_bits", 0.0),
    # release steps: never drawn (a schedule has no release to roll to; faults.release)
    ("roll", 0.0),
    ("finalize", 0.0),
    # the tiered remote store failing: never drawn (its target, store, is no node's)
    ("disk_fail", 0.0),
)


def _bounds(name: str, value: Sequence[float], *, low_min: float, positive_high: bool = True) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise FaultError(f"{name} must be a pair [low, high], got {value!r}") from None
    if not low_min <= low <= high or (positive_high and high <= 0):
        raise FaultError(f"{name} must satisfy {low_min} <= low <= high, high > 0; got [{low}, {high}]")
    return (low, high)


@dataclass(frozen=True)
class ScheduleConfig:
    """What a schedule may contain. Times in seconds, latency in ms.

    ``mix`` weights the fault kinds (weight 0 or absent: never drawn); ``partitions`` lists the
    ``topic/partition`` names whose leader and followers may be targeted (none: no such target);
    ``groups`` the consumer group ids whose group coordinator may be targeted (none: no such target);
    ``member_targets`` the member selectors client faults may also draw for those groups:
    ``members`` (a majority of a group's members, and one of them) and ``group-leader`` (the
    member that computes a classic group's assignment; a KIP-848 consumer-protocol group has
    none, so a caller leaves it out there). ``consumer_racks`` names the racks whose consumers
    set ``client.rack``, the only ones a ``consumers:<rack>`` target can name (``faults.clients``
    matches a worker's ``client.rack``); empty, client faults draw ``consumers`` (every consumer)
    instead; None: every client rack of the topology, as schedules always drew.
    """

    length: float = 300.0
    duration: tuple[float, float] = (5.0, 30.0)
    gap: tuple[float, float] = (5.0, 20.0)
    concurrency: int = 1
    mix: tuple[tuple[str, float], ...] = DEFAULT_MIX
    partitions: tuple[str, ...] = ()
    latency_ms: tuple[float, float] = (50.0, 2000.0)
    toxicity: tuple[float, float] = (1.0, 1.0)
    groups: tuple[str, ...] = ()
    member_targets: tuple[str, ...] = ()
    #: the release ``roll`` steps roll to (``faults.release``): a mix may weigh ``roll`` only with
    #: it; a roll takes one broker (a mixed window) or every broker, each onto this release
    roll_to: str | None = None
    consumer_racks: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not float(self.length) > 0:
            raise FaultError(f"schedule length must be positive, got {self.length}")
        set_(self, "length", float(self.length))
        set_(self, "duration", _bounds("duration", self.duration, low_min=0.001))
        set_(self, "gap", _bounds("gap", self.gap, low_min=0.0, positive_high=False))
        set_(self, "latency_ms", _bounds("latency_ms", self.latency_ms, low_min=0.0))
        tox = _bounds("toxicity", self.toxicity, low_min=0.0)
        if tox[1] > 1.0:
            raise FaultError(f"toxicity bounds must lie within [0, 1], got {list(tox)}")
        set_(self, "toxicity", tox)
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise FaultError(f"concurrency must be an integer >= 1, got {self.concurrency!r}")
        mix = dict(self.mix.items() if isinstance(self.mix, Mapping) else self.mix)
        weights: dict[FaultKind, float] = {}
        for name, weight in mix.items():
            kind = FaultKind.parse(name)
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
                raise FaultError(f"weight of {kind.cli} must be a number >= 0, got {weight!r}")
            if weight and kind is FaultKind.FINALIZE:
                raise FaultError("finalize is not drawn: a finalization is for good; script it as a step")
            if weight and kind is FaultKind.ROLL and self.roll_to is None:
                raise FaultError("roll is drawn only with roll_to, the release it rolls to")
            weights[kind] = float(weight)
        if not any(weights.values()):
            raise FaultError("the fault mix has no kind with a positive weight")
        set_(self, "mix", tuple((k.value, w) for k, w in sorted(weights.items(), key=lambda kw: kw[0].value)))
        for tp in self.partitions:
            parse_target(f"leader:{tp}")
        set_(self, "partitions", tuple(self.partitions))
        for group in self.groups:
            parse_target(f"coordinator:group/{group}")
        set_(self, "groups", tuple(self.groups))
        unknown = [m for m in self.member_targets if m not in MEMBER_TARGETS]
        if unknown:
            raise FaultError(f"member_targets takes {', '.join(MEMBER_TARGETS)}; got {', '.join(unknown)}")
        if self.member_targets and not self.groups:
            raise FaultError("member_targets needs groups: the group ids whose members may be targeted")
        set_(self, "member_targets", tuple(m for m in MEMBER_TARGETS if m in self.member_targets))
        if self.roll_to is not None and exact_release(str(self.roll_to)) is None:
            raise FaultError(f"roll_to must be a release MAJOR.MINOR.PATCH, got {self.roll_to!r}")
        if self.consumer_racks is not None:
            set_(self, "consumer_racks", tuple(str(r) for r in self.consumer_racks))

    def to_dict(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "duration": list(self.duration),
            "gap": list(self.gap),
            "concurrency": self.concurrency,
            "mix": dict(self.mix),
            "partitions": list(self.partitions),
            "latency_ms": list(self.latency_ms),
            "toxicity": list(self.toxicity),
            # only when set: the JSON of a schedule without groups is what it always was
            **({"groups": list(self.groups)} if self.groups else {}),
            **({"member_targets": list(self.member_targets)} if self.member_targets else {}),
            **({"roll_to": self.roll_to} if self.roll_to else {}),
            **({"consumer_racks": list(self.consumer_racks)} if self.consumer_racks is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScheduleConfig:
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise FaultError(f"unknown schedule config field(s): {', '.join(sorted(unknown))}")
        kw = dict(data)
        if "mix" in kw:
            kw["mix"] = tuple(dict(kw["mix"]).items())
        if "partitions" in kw:
            kw["partitions"] = tuple(kw["partitions"])
        if "groups" in kw:
            kw["groups"] = tuple(kw["groups"])
        if "member_targets" in kw:
            kw["member_targets"] = tuple(kw["member_targets"])
        if "consumer_racks" in kw:
            kw["consumer_racks"] = tuple(kw["consumer_racks"])
        return cls(**kw)


@dataclass(frozen=True)
class ScheduledFault:
    id: int
    start: float
    duration: float
    spec: FaultSpec

    @property
    def end(self) -> float:
        return round(self.start + self.duration, 3)

    def overlaps(self, start: float, end: float) -> bool:
        return self.start < end and start < self.end

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "start": self.start,
            "duration": self.duration,
            "fault": self.spec.to_dict(),
            "cli": str(self.spec),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScheduledFault:
        try:
            return cls(
                int(data["id"]), float(data["start"]), float(data["duration"]), FaultSpec.from_dict(data["fault"])
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, FaultError):
                raise
            raise FaultError(f"malformed scheduled fault {data!r}: {exc!r}") from None


def topology_summary(topology: Topology) -> dict[str, list[str]]:
    """What a schedule needs to be replayed on the same cluster shape."""
    return {
        "nodes": [n.name for n in topology.nodes],
        "racks": list(topology.racks),
        "client_racks": list(topology.client_racks),
    }


@dataclass(frozen=True)
class Schedule:
    seed: int
    config: ScheduleConfig
    topology: Mapping[str, Sequence[str]]
    faults: tuple[ScheduledFault, ...] = field(default=())

    # -- generation -------------------------------------------------------------------------
    @classmethod
    def generate(cls, topology: Topology, seed: int, config: ScheduleConfig | None = None) -> Schedule:
        config = config or ScheduleConfig()
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise FaultError(f"the schedule seed must be an integer, got {seed!r}")
        return cls(seed, config, topology_summary(topology), tuple(_generate(topology, seed, config)))

    def check_topology(self, topology: Topology) -> None:
        """A FaultError unless ``topology`` has the shape this schedule was generated for."""
        if dict(self.topology) != topology_summary(topology):
            raise FaultError(
                f"this schedule was generated for nodes {list(self.topology['nodes'])}"
                f" and racks {list(self.topology['racks'])}, not for this cluster"
            )

    def events(self) -> list[tuple[float, str, ScheduledFault]]:
        """``(time, "fault"|"heal", fault)`` in time order; at equal times heals come first."""
        out = [(f.start, "fault", f) for f in self.faults] + [(f.end, "heal", f) for f in self.faults]
        return sorted(out, key=lambda e: (e[0], e[1] != "heal", e[2].id))

    def active_at(self, time: float) -> list[ScheduledFault]:
        return [f for f in self.faults if f.start <= time < f.end]

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "seed": self.seed,
            "config": self.config.to_dict(),
            "topology": {k: list(v) for k, v in self.topology.items()},
            "faults": [f.to_dict() for f in self.faults],
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise FaultError(f"not a fault schedule (expected format {FORMAT!r})")
        try:
            topo = {k: list(data["topology"][k]) for k in ("nodes", "racks", "client_racks")}
            return cls(
                int(data["seed"]),
                ScheduleConfig.from_dict(data["config"]),
                topo,
                tuple(ScheduledFault.from_dict(f) for f in data["faults"]),
            )
        except (KeyError, TypeError) as exc:
            raise FaultError(f"malformed fault schedule: missing or bad {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FaultError(f"fault schedule is not JSON: {exc}") from None
        return cls.from_dict(data)


# -- the generator ---------------------------------------------------------------------------------

_LINK_TARGETS: tuple[str, ...] = ("broker", "rack", "minority", "bridge", "leader", "follower", "controller", "clients")
_PROCESS_TARGETS: tuple[str, ...] = ("broker", "rack", "minority", "leader", "follower", "controller")


def _ms(rng: random.Random, bounds: tuple[float, float]) -> int:
    return int(round(rng.uniform(*bounds)))


def _draw_target(
    rng: random.Random, topology: Topology, config: ScheduleConfig, kind: FaultKind
) -> tuple[Target, Target | None] | None:
    """A (target, peer) for ``kind``, or None if the drawn target shape is impossible here."""
    if kind is FaultKind.ROLLING_RESTART:
        return BrokersTarget(), None
    if kind is FaultKind.ROLL:  # one broker (the mixed window begins) or all of them
        one = rng.choice([*topology.brokers, None])
        return (BrokersTarget() if one is None else parse_target(f"broker:{one.node_id}")), None
    if kind.is_client:
        # a rack's consumers, or with groups a group's members (the workers of the run's clients)
        racks = topology.client_racks if config.consumer_racks is None else config.consumer_racks
        shapes: list[Target] = [ClientTarget(TargetKind.CONSUMERS, r) for r in racks]
        if not shapes:  # no consumer names a rack: the consumers, all of them
            shapes.append(ClientTarget(TargetKind.CONSUMERS, None))
        shapes += [ClientTarget(TargetKind.GROUP, g) for g in config.groups]
        for g in config.groups:  # appended only when asked: other schedules draw as before
            if "members" in config.member_targets:
                shapes += [ClientTarget(TargetKind.MEMBERS, g), ClientTarget(TargetKind.MEMBERS, g, 1)]
            if "group-leader" in config.member_targets:
                shapes.append(ClientTarget(TargetKind.GROUP_LEADER, g))
        return rng.choice(shapes), None
    pool = _LINK_TARGETS if kind.is_link else _PROCESS_TARGETS
    if config.groups:  # appended only then: a schedule without groups draws as before
        pool = (*pool, "coordinator")
    if kind is not FaultKind.CUT and kind is not FaultKind.TIMEOUT:
        pool = tuple(p for p in pool if p != "bridge")
    shape = rng.choice(pool)
    brokers = sorted(topology.brokers, key=lambda n: n.node_id)
    if shape == "broker":
        return BrokerTarget(rng.choice(brokers).node_id), None
    if shape == "rack":
        if len(topology.racks) < 2:
            return None
        return RackTarget(rng.choice(topology.racks)), None
    if shape in ("minority", "bridge"):
        seeded = MinorityTarget if shape == "minority" else BridgeTarget
        target: Target = seeded(seed=rng.randrange(2**31))
        try:
            target.validate(topology)
        except FaultError:
            return None  # e.g. no minority in a two-broker cluster: draw another shape
        return target, None
    if shape == "controller":
        return ControllerTarget(), None
    if shape == "coordinator":
        return CoordinatorTarget("group", rng.choice(config.groups)), None
    if shape == "clients":
        rack = rng.choice(topology.client_racks)
        # with groups, the peer may also be a group's coordinator: members cut off from it (the
        # brokers they read from still reachable) are kept out of the group and their partitions move
        peers: list[Target] = [BrokerTarget(b.node_id) for b in brokers]
        peers += [CoordinatorTarget("group", g) for g in config.groups]
        return ClientsTarget(rack), rng.choice(peers)
    if not config.partitions:
        return None
    topic, _, part = rng.choice(config.partitions).rpartition("/")
    if shape == "leader":
        return LeaderTarget(topic, int(part)), None
    return FollowerInTarget(rng.choice(topology.racks), topic, int(part)), None


def _draw_params(
    rng: random.Random, kind: FaultKind, config: ScheduleConfig, duration: float, topology: Topology
) -> dict[str, Any]:
    if kind is FaultKind.LATENCY:
        latency = _ms(rng, config.latency_ms)
        return {"latency": latency, "jitter": _ms(rng, (0, latency / 4))}
    if kind is FaultKind.BANDWIDTH:
        return {"rate": _ms(rng, (1, 1000))}
    if kind is FaultKind.SLOW_CLOSE:
        return {"delay": _ms(rng, (100, 5000))}
    if kind is FaultKind.RESET_PEER:
        return {"timeout": _ms(rng, (0, 1000))}
    if kind is FaultKind.SLICER:
        size = _ms(rng, (16, 256))
        return {"average_size": size, "size_variation": _ms(rng, (0, size - 1)), "delay": _ms(rng, (0, 1000))}
    if kind is FaultKind.RESTART:
        return {"clean": rng.random() < 0.5}
    if kind is FaultKind.DISK_SLOW:
        return {"write_ms": _ms(rng, (5, 200)), "fsync_ms": _ms(rng, (50, 2000))}
    if kind is FaultKind.CLOCK_JUMP:  # seconds to ten minutes, ahead or behind
        return {"offset": round(rng.choice((-1, 1)) * rng.uniform(1, 600), 3)}
    if kind is FaultKind.CLOCK_DRIFT:  # up to a second gained or lost per second
        return {"rate": round(rng.uniform(-1000, 1000), 1)}
    if kind is FaultKind.ROLLING_RESTART:
        return {"interval": round(duration / len(topology.brokers), 3), "clean": rng.random() < 0.5}
    if kind is FaultKind.ROLL:
        return {"release": str(config.roll_to), "interval": round(rng.uniform(1, 5), 3)}
    return {}


def _draw_spec(
    rng: random.Random,
    topology: Topology,
    config: ScheduleConfig,
    kinds: list[FaultKind],
    weights: list[float],
    duration: float,
) -> FaultSpec | None:
    kind = rng.choices(kinds, weights)[0]
    drawn = _draw_target(rng, topology, config, kind)
    if drawn is None:
        return None
    target, peer = drawn
    params = _draw_params(rng, kind, config, duration, topology)
    flow, direction, toxicity = Flow.BOTH, None, None
    if kind is FaultKind.CUT and not isinstance(target, BridgeTarget) and rng.random() < 1 / 3:
        flow = rng.choice((Flow.IN, Flow.OUT))
    if kind.is_toxic:
        direction = rng.choice((Direction.UPSTREAM, Direction.DOWNSTREAM, Direction.BOTH))
        low, high = config.toxicity
        toxicity = None if low == high == 1.0 else round(rng.uniform(low, high), 3)
    spec = FaultSpec.make(kind, target, peer=peer, flow=flow, direction=direction, toxicity=toxicity, **params)
    if flow is not Flow.BOTH and not _any_link(topology, spec):
        # a one-way cut only the way links go: a broker never connects to a client, so a clients
        # party's links all flow out of it (``clients:<rack>`` takes ``--flow out``, a clients
        # peer ``--flow in``); the other way would cut nothing when its time came. Turned, not
        # drawn again, so a seed whose cut could happen draws what it drew before
        turned = Flow.OUT if flow is Flow.IN else Flow.IN
        spec = FaultSpec.make(kind, target, peer=peer, flow=turned, direction=direction, toxicity=toxicity, **params)
    return spec


def _any_link(topology: Topology, spec: FaultSpec) -> bool:
    """Whether the link fault could act on some link of ``topology`` (``possible_links``)."""
    try:
        return bool(possible_links(topology, spec))
    except FaultError:
        return False


def _generate(topology: Topology, seed: int, config: ScheduleConfig) -> list[ScheduledFault]:
    rng = random.Random(seed)
    mix = [(FaultKind(k), w) for k, w in config.mix if w > 0]
    kinds, weights = [k for k, _ in mix], [w for _, w in mix]
    faults: list[ScheduledFault] = []
    t = 0.0
    while True:
        start = round(t + rng.uniform(*config.gap), 3)
        if start + config.duration[0] > config.length:
            return faults
        active = [f for f in faults if f.end > start]
        if len(active) >= config.concurrency:
            t = min(f.end for f in active)
            continue
        placed = None
        for _ in range(50):
            duration = round(min(rng.uniform(*config.duration), config.length - start), 3)
            spec = _draw_spec(rng, topology, config, kinds, weights, duration)
            if spec is None:
                continue
            end = start + duration
            if all(conflict(topology, f.spec, spec) is None for f in active if f.overlaps(start, end)):
                placed = ScheduledFault(len(faults), start, duration, spec)
                break
        if placed is None:
            if not active:
                raise FaultError("could not draw a valid fault for this topology and mix")
            t = min(f.end for f in active)
            continue
        faults.append(placed)
        t = start if config.concurrency > 1 else placed.end
