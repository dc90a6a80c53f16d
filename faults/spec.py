"""Typed fault descriptions as data: what to do (kind, params), to whom (target, peer), how.

A :class:`FaultSpec` is inert: nothing here touches a cluster. It parses from, and renders to,
the CLI syntax of ``highwater fault apply``::

    KIND --target SELECTOR [--peer SELECTOR] [--flow in|out|both]
         [--direction upstream|downstream|both] [--toxicity F] [--listener L[,L]]
         [--<param> VALUE ...]

e.g. ``latency --target follower-in:rack-b --peer leader:hw/0 --flow out --latency 40000``,
``cut --target broker:2``, ``pause --target controller``, ``kill --target leader:hw/0``.
Selectors are described in :mod:`faults.target`.

Kinds and their params (Toxiproxy attribute names and units; defaults in :data:`PARAMS`):

* Link faults act on the proxies of the links between the target and its peer:

  - ``cut``: the proxies are disabled (open connections closed, new ones refused).
  - ``timeout`` (timeout ms, 0 = forever): bytes stop and the connection is held open
    (half-open); closed after ``timeout`` ms if non-zero.
  - ``latency`` (latency ms, jitter ms), ``bandwidth`` (rate KB/s), ``slow_close`` (delay ms),
    ``reset_peer`` (timeout ms), ``slicer`` (average_size bytes, size_variation bytes,
    delay microseconds): the Toxiproxy toxics of those names.

  Which links: with ``T`` the target's parties and ``P`` the peer's (default: every node not in
  ``T``; ``--peer all`` adds the client parties), ``flow=both`` takes every link between ``T``
  and ``P`` in either initiation direction, ``out`` only links initiated by ``T`` toward ``P``
  and ``in`` only links initiated by ``P`` toward ``T`` (so ``cut --target X --flow in`` is the
  one-way cut "X can reach its peers, they cannot reach X"). ``--listener`` restricts to some
  listeners. ``--target bridge[:seed]`` takes Jepsen's bridge shape instead (no peer, no flow).
  Toxics apply to ``direction``'s streams (Toxiproxy's default: ``downstream``) with
  ``toxicity`` (default 1.0). A cut takes neither: a disabled proxy stops both streams.

  A link fault needs a backend with link control (``harness.backend.LinkControl``).

* Client faults act on the worker processes of the clients under test (``faults.clients``):
  ``client_kill`` (SIGKILL; on heal the workload starts the client again), ``client_freeze``
  (SIGSTOP, SIGCONT on heal: a long GC pause as the group coordinator sees it),
  ``client_restart`` (SIGKILL and started again at once; with ``version`` and/or
  ``group_protocol`` the new worker runs another version of the same client, or a group member
  rejoins on the other group protocol: a member rolled to a newer client, a classic group
  migrated online to KIP-848, one member at a time). Their targets are client selectors:
  ``client:<client id>``, ``consumers[:<rack>]``, ``producers``, ``group:<group id>``,
  ``group-leader:<group id>``, ``members:<group id>[:<n>]``. They
  need no backend capability.

* Process faults act on the target's node processes: ``kill`` (SIGKILL, restarted on heal),
  ``stop`` (SIGTERM, clean, restarted on heal), ``pause`` (SIGSTOP, SIGCONT on heal),
  ``restart`` (clean: SIGTERM else SIGKILL, then start at once), ``rolling_restart`` (each
  node in turn, ``interval`` s apart, clean or not). They take no peer, flow, direction,
  toxicity or listener. They need a backend with process control (``ProcessControl``).

* Corruption faults act on a node's data files (``faults.corrupt``): the node is killed
  (SIGKILL: its restart recovers the segments above its recovery point, checking each batch's
  CRC; with ``clean`` it is stopped with SIGTERM, so Kafka flushes and checkpoints first and its
  restart re-reads nothing: what a rotting disk hands back then is served as it is), then ``truncate_file`` cuts ``bytes`` off the end of the newest file matching
  ``file`` (a glob in the node's data directory, e.g. ``{topic}-0/*.log``,
  ``__cluster_metadata-0/*.log``, ``recovery-point-offset-checkpoint``), or ``flip_bits`` flips
  ``count`` bits at positions ``seed`` chooses past its first ``skip_bytes``; heal starts the
  node, whose log recovery meets what was done. They take process targets and need a backend
  whose nodes' data directories are files of this machine (``FileControl``: the local one).

* Release steps (``faults.release``): ``roll`` (release, interval s) restarts the target's
  nodes one at a time on another Kafka release (a rolling upgrade, or a roll back), controllers
  first, each stopped cleanly and waited for until it is back; it needs a backend that can start
  a node on another release (``ReleaseControl``: the local one). ``finalize`` (feature, level)
  finalizes a KRaft feature (``metadata.version`` by default; level 0 = the newest every broker
  supports) through UpdateFeatures to the active controller (its target is ``controller``); it
  needs nothing beyond the Admin API. Both are done when applied: nothing is left to heal.

* Clock faults act on the wall clock of the target's node JVMs (``faults.clock``,
  ``harness.clock``): ``clock_jump`` (offset s, + ahead or - behind: the clock jumps at once) and
  ``clock_drift`` (rate ms per second, either sign: the clock gains or loses that much per second
  of real time, stepped once a second). Heal puts the clock back to the machine's (offset +0, no
  drift). They take process targets, and need a backend with clock control (``ClockControl``:
  a local cluster started with ``ClusterSpec(clock="faked")``). Monotonic time is never moved.
  A client selector (``client:<id>``, ``producers``, ...) moves the clock of those clients'
  workers instead, in a run that fakes them (``RunSpec(client_clocks=True)``,
  ``harness.clients.clocks``); the runner refuses a clock fault where the cluster has no clock
  control all the same, so clients' clocks are jumped on a cluster started with faked clocks.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from highwater.core.versions import exact_release
from highwater.faults.common import Direction, FaultError
from highwater.faults.target import LINK_ONLY, Target, TargetKind, parse_target
from highwater.harness.backend import Capability
from highwater.harness.clients.groups import GROUP_PROTOCOLS
from highwater.harness.topology import Listener, Topology

Value = int | float | bool | str


class FaultKind(str, Enum):
    CUT = "cut"
    TIMEOUT = "timeout"
    LATENCY = "latency"
    BANDWIDTH = "bandwidth"
    SLOW_CLOSE = "slow_close"
    RESET_PEER = "reset_peer"
    SLICER = "slicer"
    KILL = "kill"
    STOP = "stop"
    PAUSE = "pause"
    RESTART = "restart"
    ROLLING_RESTART = "rolling_restart"
    CLIENT_KILL = "client_kill"
    CLIENT_FREEZE = "client_freeze"
    CLIENT_RESTART = "client_restart"
    POWER_LOSS = "power_loss"
    DISK_FULL = "disk_full"
    DISK_SLOW = "disk_slow"
    DISK_FAIL = "disk_fail"
    CLOCK_JUMP = "clock_jump"
    CLOCK_DRIFT = "clock_drift"
    TRUNCATE_FILE = "truncate_file"
    FLIP_BITS = "flip_bits"
    ROLL = "roll"
    FINALIZE = "finalize"

    @classmethod
    def parse(cls, text: str) -> FaultKind:
        """A kind from its name; ``-`` and ``_`` are interchangeable (``rolling-restart``)."""
        try:
            return cls(text.strip().replace("-", "_"))
        except ValueError:
            raise FaultError(f"unknown fault kind {text!r} (known: {', '.join(k.cli for k in cls)})") from None

    @property
    def cli(self) -> str:
        return self.value.replace("_", "-")

    @property
    def is_link(self) -> bool:
        return self in LINK_KINDS

    @property
    def is_toxic(self) -> bool:
        return self in LINK_KINDS and self is not FaultKind.CUT

    @property
    def is_process(self) -> bool:
        return not self.is_link

    @property
    def is_client(self) -> bool:
        """A fault on the worker processes of the clients under test (``faults.clients``)."""
        return self in CLIENT_FAULT_KINDS

    @property
    def is_disk(self) -> bool:
        """A fault on a node's disk (``harness.diskfs``: its log directories on lossyfs)."""
        return self in DISK_KINDS

    @property
    def is_clock(self) -> bool:
        """A fault on a node's wall clock (``harness.clock``: its JVM on libfaketime)."""
        return self in CLOCK_KINDS

    @property
    def is_corruption(self) -> bool:
        """A fault on a stopped node's data files (``faults.corrupt``)."""
        return self in CORRUPTION_KINDS

    @property
    def heals_itself(self) -> bool:
        """Done when applied, nothing left to heal: restarts, rolls and finalizations."""
        return self in SELF_HEALING_KINDS

    @property
    def capability(self) -> Capability | None:
        """What the backend must be able to do for this fault (see ``faults.capability``); None:
        nothing beyond a ``ClusterBackend`` (a client fault, a finalization through the Admin API)."""
        if self.is_client or self is FaultKind.FINALIZE:
            return None
        if self is FaultKind.ROLL:
            return Capability.RELEASE_CONTROL
        if self.is_corruption:
            return Capability.FILE_CONTROL
        if self.is_disk:
            return Capability.DISK_CONTROL
        if self.is_clock:
            return Capability.CLOCK_CONTROL
        return Capability.LINK_CONTROL if self.is_link else Capability.PROCESS_CONTROL


LINK_KINDS = frozenset(
    {
        FaultKind.CUT,
        FaultKind.TIMEOUT,
        FaultKind.LATENCY,
        FaultKind.BANDWIDTH,
        FaultKind.SLOW_CLOSE,
        FaultKind.RESET_PEER,
        FaultKind.SLICER,
    }
)


#: faults on client processes: they need no backend capability (workers are processes of ours
#: on every backend)
CLIENT_FAULT_KINDS = frozenset({FaultKind.CLIENT_KILL, FaultKind.CLIENT_FREEZE, FaultKind.CLIENT_RESTART})

#: faults on a node's disk: they act on its process too (a power loss kills it), so they take
#: process targets, and need a backend whose nodes' log directories are on lossyfs
DISK_KINDS = frozenset({FaultKind.POWER_LOSS, FaultKind.DISK_FULL, FaultKind.DISK_SLOW, FaultKind.DISK_FAIL})
#: the disk faults a tiered cluster's remote store takes (``--target store``): its files slowed,
#: refused as on a full disk, failing every I/O, or losing what was not fsynced (a power loss of
#: the store's machine, back at once: no broker dies)
STORE_KINDS = frozenset({FaultKind.DISK_FULL, FaultKind.DISK_SLOW, FaultKind.DISK_FAIL, FaultKind.POWER_LOSS})

#: faults on a node's data files: they kill the node first (a file is changed while nothing holds it
#: open), and heal starts it again; they need a backend whose nodes' data directories are files here
CORRUPTION_KINDS = frozenset({FaultKind.TRUNCATE_FILE, FaultKind.FLIP_BITS})

#: faults on a node's wall clock: process targets, and a backend whose node JVMs read their clocks
#: through libfaketime
CLOCK_KINDS = frozenset({FaultKind.CLOCK_JUMP, FaultKind.CLOCK_DRIFT})

#: steps that are done when applied (the injector keeps nothing of them active; a heal has nothing
#: to undo): restarts, a roll onto another release, a feature finalization
SELF_HEALING_KINDS = frozenset(
    {FaultKind.RESTART, FaultKind.ROLLING_RESTART, FaultKind.CLIENT_RESTART, FaultKind.ROLL, FaultKind.FINALIZE}
)

#: ``finalize --level 0``: the newest level every broker supports
NEWEST_LEVEL = 0


class Flow(str, Enum):
    """Which links between target and peer, by the side that initiates connections."""

    BOTH = "both"
    OUT = "out"  # initiated by the target toward the peer
    IN = "in"  # initiated by the peer toward the target


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Value
    unit: str
    minimum: float = 0

    def coerce(self, kind: FaultKind, raw: Any) -> Value:
        """``raw`` (a string from the CLI or a JSON value) as this param's type, checked."""
        if self.type is str:
            text = raw if isinstance(raw, str) else None
            if not text or not text.strip():
                raise FaultError(f"{kind.cli} --{_opt(self.name)} expects text ({self.unit}), got {raw!r}")
            return text.strip()
        try:
            if self.type is bool:
                if isinstance(raw, bool):
                    value: Value = raw
                elif str(raw).lower() in ("true", "1", "yes"):
                    value = True
                elif str(raw).lower() in ("false", "0", "no"):
                    value = False
                else:
                    raise ValueError(raw)
            elif self.type is int:
                if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                    raise ValueError(raw)
                value = int(raw)
            else:
                if isinstance(raw, bool):
                    raise ValueError(raw)
                value = float(raw)
        except (TypeError, ValueError):
            raise FaultError(
                f"{kind.cli} --{_opt(self.name)} expects {self.type.__name__} ({self.unit}), got {raw!r}"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise FaultError(f"{kind.cli} --{_opt(self.name)} must be a finite number, got {value}")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < self.minimum:
            raise FaultError(f"{kind.cli} --{_opt(self.name)} must be >= {self.minimum}, got {value}")
        return value


def _opt(name: str) -> str:
    return name.replace("_", "-")


PARAMS: dict[FaultKind, tuple[Param, ...]] = {
    FaultKind.CUT: (),
    FaultKind.TIMEOUT: (Param("timeout", int, 0, "ms; 0 = never close"),),
    FaultKind.LATENCY: (Param("latency", int, 1000, "ms"), Param("jitter", int, 0, "ms")),
    FaultKind.BANDWIDTH: (Param("rate", int, 100, "KB/s"),),
    FaultKind.SLOW_CLOSE: (Param("delay", int, 1000, "ms"),),
    FaultKind.RESET_PEER: (Param("timeout", int, 0, "ms"),),
    FaultKind.SLICER: (
        Param("average_size", int, 64, "bytes", 1),
        Param("size_variation", int, 32, "bytes"),
        Param("delay", int, 10, "microseconds"),
    ),
    FaultKind.KILL: (),
    FaultKind.STOP: (),
    FaultKind.PAUSE: (),
    FaultKind.RESTART: (Param("clean", bool, False, "SIGTERM instead of SIGKILL"),),
    FaultKind.ROLLING_RESTART: (
        Param("interval", float, 10.0, "seconds between nodes"),
        Param("clean", bool, True, "SIGTERM instead of SIGKILL"),
    ),
    FaultKind.CLIENT_KILL: (),
    FaultKind.CLIENT_FREEZE: (),
    FaultKind.CLIENT_RESTART: (
        Param("version", str, "", "the workers restart on this version of their client (e.g. 4.1.0); '' = unchanged"),
        Param(
            "group_protocol",
            str,
            "",
            "a group member restarts on this group protocol (classic, consumer); '' = unchanged",
        ),
    ),
    FaultKind.POWER_LOSS: (),
    FaultKind.DISK_FULL: (),
    FaultKind.DISK_SLOW: (
        Param("write_ms", int, 50, "ms before each write"),
        Param("fsync_ms", int, 500, "ms before each fsync"),
    ),
    FaultKind.DISK_FAIL: (),
    FaultKind.TRUNCATE_FILE: (
        Param("file", str, "*-0/*.log", "glob in the data directory; the newest match"),
        Param("bytes", int, 4096, "bytes cut off its end", 1),
        Param("clean", bool, False, "stop with SIGTERM (flushed, checkpointed) instead of SIGKILL"),
    ),
    FaultKind.FLIP_BITS: (
        Param("file", str, "*-0/*.log", "glob in the data directory; the newest match"),
        Param("count", int, 8, "bits flipped", 1),
        Param("skip_bytes", int, 0, "bytes at the start left alone"),
        Param("seed", int, 1, "chooses the positions"),
        Param("clean", bool, False, "stop with SIGTERM (flushed, checkpointed) instead of SIGKILL"),
    ),
    FaultKind.ROLL: (
        Param("release", str, "", "the Kafka release the nodes restart on, e.g. 4.4.0"),
        Param("interval", float, 5.0, "seconds between nodes, after each is back"),
        Param("crash_after", float, 0.0, "seconds after each node starts on the release to SIGKILL it once; 0 = never"),
    ),
    FaultKind.FINALIZE: (
        Param("feature", str, "metadata.version", "the KRaft feature (KIP-584)"),
        Param("level", int, NEWEST_LEVEL, "feature level; 0 = the newest every broker supports"),
    ),
    FaultKind.CLOCK_JUMP: (Param("offset", float, 60.0, "seconds the clock jumps, - for back", -math.inf),),
    FaultKind.CLOCK_DRIFT: (Param("rate", float, 100.0, "ms gained per second, - for lost", -math.inf),),
}


def _normalise_params(kind: FaultKind, given: Mapping[str, Any]) -> tuple[tuple[str, Value], ...]:
    defs = {p.name: p for p in PARAMS[kind]}
    out = {name: p.default for name, p in defs.items()}
    for name, raw in given.items():
        key = name.replace("-", "_")
        if key not in defs:
            known = ", ".join(f"--{_opt(n)}" for n in defs) or "none"
            raise FaultError(f"{kind.cli} has no parameter {name!r} (parameters: {known})")
        default = defs[key].default
        # a default given back as it is (params stored complete, normalised again) stays, even
        # one no value could be coerced to ('' = unchanged)
        out[key] = default if type(raw) is type(default) and raw == default else defs[key].coerce(kind, raw)
    if kind is FaultKind.SLICER and int(out["size_variation"]) >= int(out["average_size"]):
        raise FaultError("slicer --size-variation must be smaller than --average-size")
    if kind is FaultKind.ROLL and exact_release(str(out["release"])) is None:
        raise FaultError(f"roll needs --release MAJOR.MINOR.PATCH (e.g. 4.4.0), got {out['release']!r}")
    if kind is FaultKind.CLIENT_RESTART:
        version, protocol = str(out["version"]), str(out["group_protocol"])
        if version and _CLIENT_VERSION.match(version) is None:
            raise FaultError(f"client-restart --version takes a client version (e.g. 4.1.0), got {version!r}")
        if protocol and protocol not in GROUP_PROTOCOLS:
            raise FaultError(
                f"client-restart --group-protocol takes one of {', '.join(GROUP_PROTOCOLS)}, got {protocol!r}"
            )
    return tuple(sorted(out.items()))


#: a client version as ``--client NAME==VERSION`` takes it (``harness.clients.parse_client_spec``)
_CLIENT_VERSION = re.compile(r"^[0-9][A-Za-z0-9_.+-]*$")


@dataclass(frozen=True)
class FaultSpec:
    """One fault, as data. Build with :meth:`make` or :func:`parse_fault`; params are stored
    complete (defaults filled in) and sorted, so equal faults compare equal."""

    kind: FaultKind
    target: Target
    peer: Target | None = None
    flow: Flow = Flow.BOTH
    direction: Direction | None = None  # toxics only; None = downstream
    toxicity: float | None = None  # toxics only; None = 1.0
    listeners: tuple[Listener, ...] = ()  # link faults only; () = every listener
    params: tuple[tuple[str, Value], ...] = field(default=())

    def __post_init__(self) -> None:
        k = self.kind
        object.__setattr__(self, "params", _normalise_params(k, dict(self.params)))
        object.__setattr__(self, "listeners", tuple(sorted(set(self.listeners), key=lambda l: l.value)))
        if k.is_process:
            extras = [
                name
                for name, bad in (
                    ("--peer", self.peer is not None),
                    ("--flow", self.flow is not Flow.BOTH),
                    ("--direction", self.direction is not None),
                    ("--toxicity", self.toxicity is not None),
                    ("--listener", bool(self.listeners)),
                )
                if bad
            ]
            if extras:
                raise FaultError(f"{k.cli} is a process fault and takes no {', '.join(extras)}")
            if self.target.kind in LINK_ONLY:
                raise FaultError(f"{k.cli} acts on processes; target {self.target} is not a process")
            if k is FaultKind.FINALIZE and self.target.kind is not TargetKind.CONTROLLER:
                raise FaultError(f"finalize goes to the active controller: its target is controller, not {self.target}")
            if k.is_clock and self.target.kind is TargetKind.CLIENT:
                return  # a client's wall clock (its worker's, ``harness.clients.clocks``)
            if self.target.kind is TargetKind.STORE and k not in STORE_KINDS:
                takes = ", ".join(sorted(x.cli for x in STORE_KINDS))
                raise FaultError(f"target store is the tiered remote store: it takes {takes}, not {k.cli}")
            if k is FaultKind.DISK_FAIL and self.target.kind is not TargetKind.STORE:
                raise FaultError(
                    "disk-fail acts on the tiered remote store only: its target is store (a broker whose own"
                    " log directory fails goes offline until restarted: use disk-full)"
                )
            if k.is_client != (self.target.kind is TargetKind.CLIENT):
                raise FaultError(
                    f"{k.cli} acts on client workers: its target is client:<id>, consumers[:<rack>], producers, group:<id>, "
                    "group-leader:<id> or members:<id>[:<n>]"
                    if k.is_client
                    else f"{k.cli} acts on Kafka nodes; {self.target} names client workers (use client-kill, client-freeze, client-restart)"
                )
            return
        if k is FaultKind.CUT and (self.direction is not None or self.toxicity is not None):
            raise FaultError(
                "cut takes no --direction or --toxicity (a disabled proxy stops both"
                " streams); use timeout for a one-direction or partial black hole"
            )
        if self.toxicity is not None and not 0.0 <= self.toxicity <= 1.0:
            raise FaultError(f"--toxicity must be within [0, 1], got {self.toxicity}")
        if self.target.kind is TargetKind.ALL:
            raise FaultError("target all is only valid as --peer")
        if self.target.kind is TargetKind.BRIDGE and (self.peer is not None or self.flow is not Flow.BOTH):
            raise FaultError("a bridge target takes no --peer and no --flow")
        if self.peer is not None:
            if self.peer.kind is TargetKind.BRIDGE:
                raise FaultError("bridge is a shape, not a --peer")
            if self.peer == self.target:
                raise FaultError(f"--peer {self.peer} is the target itself")

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def make(
        cls,
        kind: FaultKind | str,
        target: Target | str,
        *,
        peer: Target | str | None = None,
        flow: Flow | str = Flow.BOTH,
        direction: Direction | str | None = None,
        toxicity: float | None = None,
        listeners: Sequence[Listener | str] = (),
        **params: Any,
    ) -> FaultSpec:
        """Build from Python values or strings, e.g. ``FaultSpec.make("latency", "broker:2",
        latency=500)``."""
        return cls(
            kind=kind if isinstance(kind, FaultKind) else FaultKind.parse(kind),
            target=parse_target(target) if isinstance(target, str) else target,
            peer=parse_target(peer) if isinstance(peer, str) else peer,
            flow=_enum(Flow, flow, "--flow"),
            direction=None if direction is None else _enum(Direction, direction, "--direction"),
            toxicity=None if toxicity is None else _float(toxicity, "--toxicity"),
            listeners=tuple(_enum(Listener, l, "--listener") for l in listeners),
            params=tuple(params.items()),
        )

    # -- accessors ----------------------------------------------------------------------------
    def param(self, name: str) -> Value:
        return dict(self.params)[name]

    @property
    def capability(self) -> Capability | None:
        """What the backend must be able to do to apply this fault."""
        return self.kind.capability

    @property
    def streams(self) -> tuple[Direction, ...]:
        """The Toxiproxy streams a toxic goes on (empty for cuts and process faults)."""
        if not self.kind.is_toxic:
            return ()
        return (self.direction or Direction.DOWNSTREAM).streams()

    @property
    def effective_toxicity(self) -> float:
        return 1.0 if self.toxicity is None else self.toxicity

    def validate(self, topology: Topology) -> None:
        """Every name exists in ``topology`` and a static peer is not inside a static target."""
        self.target.validate(topology)
        if self.peer is None:
            return
        self.peer.validate(topology)
        t, p = self.target.static_parties(topology), self.peer.static_parties(topology)
        if t is not None and p is not None and not (p - t):
            raise FaultError(f"--peer {self.peer} has no party outside --target {self.target}")

    # -- text and JSON ------------------------------------------------------------------------
    def to_args(self) -> list[str]:
        """The CLI words, canonical: ``parse_fault(spec.to_args()) == spec``. Params at their
        default values are left out."""
        args = [self.kind.cli, "--target", str(self.target)]
        if self.peer is not None:
            args += ["--peer", str(self.peer)]
        if self.flow is not Flow.BOTH:
            args += ["--flow", self.flow.value]
        if self.direction is not None:
            args += ["--direction", self.direction.value]
        if self.toxicity is not None:
            args += ["--toxicity", repr(self.toxicity)]
        if self.listeners:
            args += ["--listener", ",".join(l.value for l in self.listeners)]
        defaults = {p.name: p.default for p in PARAMS[self.kind]}
        for name, value in self.params:
            if value != defaults[name] or type(value) is not type(defaults[name]):
                args += [f"--{_opt(name)}", str(value).lower() if isinstance(value, bool) else str(value)]
        return args

    def __str__(self) -> str:
        return shlex.join(self.to_args())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for run.json and the history's fault events)."""
        out: dict[str, Any] = {"kind": self.kind.value, "target": str(self.target)}
        if self.peer is not None:
            out["peer"] = str(self.peer)
        if self.kind.is_link:
            out["flow"] = self.flow.value
            out["listeners"] = [l.value for l in self.listeners]
        if self.kind.is_toxic:
            out["direction"] = None if self.direction is None else self.direction.value
            out["toxicity"] = self.toxicity
        out["params"] = dict(self.params)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FaultSpec:
        if not isinstance(data, Mapping) or "kind" not in data or "target" not in data:
            raise FaultError(f"a fault needs 'kind' and 'target', got {data!r}")
        unknown = set(data) - {"kind", "target", "peer", "flow", "direction", "toxicity", "listeners", "params"}
        if unknown:
            raise FaultError(f"unknown fault field(s): {', '.join(sorted(unknown))}")
        return cls.make(
            data["kind"],
            data["target"],
            peer=data.get("peer"),
            flow=data.get("flow") or Flow.BOTH,
            direction=data.get("direction"),
            toxicity=data.get("toxicity"),
            listeners=data.get("listeners") or (),
            **dict(data.get("params") or {}),
        )


def _enum(cls: type[Enum], value: Any, option: str) -> Any:
    if isinstance(value, cls):
        return value
    try:
        return cls(value)
    except ValueError:
        raise FaultError(f"{option} {value!r} is not one of: {', '.join(str(m.value) for m in cls)}") from None


def _float(value: Any, option: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise FaultError(f"{option} expects a number, got {value!r}") from None


# -- CLI parsing --------------------------------------------------------------------------------

_COMMON = ("target", "peer", "flow", "direction", "toxicity", "listener")


@dataclass(frozen=True)
class FaultCommand:
    """``highwater fault apply``: a fault and how long it lasts (None: until ``fault heal``)."""

    spec: FaultSpec
    duration: float | None = None


def _split_options(words: Sequence[str], allowed: Sequence[str], kind: FaultKind) -> dict[str, str]:
    opts: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--") or len(word) == 2:
            raise FaultError(f"unexpected argument {word!r} after the fault kind (options start with --)")
        name, eq, value = word[2:].partition("=")
        if not eq:
            if i + 1 >= len(words):
                raise FaultError(f"option --{name} needs a value")
            value = words[i + 1]
            i += 1
        i += 1
        name = name.replace("_", "-")
        if name not in allowed and name in _COMMON and kind.is_process:
            raise FaultError(f"{kind.cli} is a process fault and takes no --{name}")
        if name not in allowed:
            raise FaultError(f"{kind.cli} has no option --{name} (options: {', '.join('--' + a for a in allowed)})")
        if name in opts:
            raise FaultError(f"option --{name} given twice")
        opts[name] = value
    return opts


#: what the options every link fault takes mean (``kind_help``)
_COMMON_HELP = {
    "target": "SELECTOR  whom to fault (broker:<id>, leader:<topic>/<p>, rack:<rack>, clients:<rack>, ...)",
    "peer": "SELECTOR  the other end of the links (default: every node not targeted; all: clients too)",
    "flow": "both|out|in  which links by who initiates them (default: both)",
    "direction": "upstream|downstream|both  which way the toxic acts on the bytes (default: downstream)",
    "toxicity": "F  the share of connections the toxic applies to, 0-1 (default: 1)",
    "listener": "L[,L]  only links of these listeners",
}


def kind_help(kind: FaultKind | None = None) -> str:
    """What ``highwater fault apply KIND --help`` prints: the kind's options, each with its unit
    and default (``PARAMS``), or with no kind the list of kinds."""
    if kind is None:
        kinds = ", ".join(k.cli for k in FaultKind)
        return f"usage: highwater fault apply KIND --target SELECTOR [options] [--duration S]\nkinds: {kinds}\n"
    common = _COMMON if kind.is_link else ("target",)
    lines = [f"usage: highwater fault apply {kind.cli} --target SELECTOR [options] [--duration S]", "options:"]
    lines += [f"  --{name} {_COMMON_HELP[name]}" for name in common]
    lines += [f"  --{_opt(p.name)} {p.type.__name__.upper()}  {p.unit} (default: {p.default})" for p in PARAMS[kind]]
    lines.append("  --duration S  heal after S seconds (default: in place until 'highwater fault heal')")
    if kind.is_clock:
        lines.append("needs a cluster whose clocks are faked (ClusterSpec(clock='faked')); heal: offset +0, no drift")
    return "\n".join(lines) + "\n"


def parse_command(argv: str | Sequence[str]) -> FaultCommand:
    """Parse ``KIND --target ... [--duration S]`` (a string or a list of words)."""
    words = shlex.split(argv) if isinstance(argv, str) else list(argv)
    if not words:
        raise FaultError("no fault kind given")
    kind = FaultKind.parse(words[0])
    param_opts = [_opt(p.name) for p in PARAMS[kind]]
    common = _COMMON if kind.is_link else ("target",)
    opts = _split_options(words[1:], [*common, *param_opts, "duration"], kind)
    if "target" not in opts:
        raise FaultError(f"{kind.cli} needs --target (one of: broker:<id>, leader:<topic>/<partition>, ...)")
    duration = None
    if "duration" in opts:
        duration = _float(opts.pop("duration"), "--duration")
        if duration <= 0:
            raise FaultError(f"--duration must be positive, got {duration}")
    listeners = [w for w in opts.pop("listener", "").split(",") if w]
    spec = FaultSpec.make(
        kind,
        opts.pop("target"),
        peer=opts.pop("peer", None),
        flow=opts.pop("flow", Flow.BOTH),
        direction=opts.pop("direction", None),
        toxicity=_float(opts.pop("toxicity"), "--toxicity") if "toxicity" in opts else None,
        listeners=listeners,
        **opts,
    )
    return FaultCommand(spec, duration)


def parse_fault(argv: str | Sequence[str]) -> FaultSpec:
    """Parse ``KIND --target ... [options]`` into a :class:`FaultSpec` (no ``--duration``)."""
    command = parse_command(argv)
    if command.duration is not None:
        raise FaultError("--duration belongs to the command, not to the fault; use parse_command")
    return command.spec
