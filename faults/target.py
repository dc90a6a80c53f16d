"""Target selectors: *who* a fault acts on, as data, resolved against a live cluster later.

String syntax (what ``--target`` / ``--peer`` accept; ``str(target)`` renders it back):

==================================  ===============================================================
``broker:<id>``                     the broker with that node id (``broker:2``)
``node:<name-or-id>``               any node, including dedicated controllers (``node:controller-1``)
``leader:<topic>/<partition>``      the current leader of that partition
``follower-in:<rack>[@<t>/<p>]``    a follower of partition t/p (default: the run's partition)
                                    whose broker is in ``rack``; the lowest id if several
``replicas:<t>/<p>[:<n>]``          the leader of t/p and its followers, lowest ids first, ``n``
                                    of them (default: every replica): a correlated failure of
                                    ``n`` copies of the partition at once
``coordinator:<txn|group>/<id>``    the broker coordinating that transactional id or group
``controller``                      the active KRaft controller
``controllers``                     every controller-role node
``brokers``                         every broker
``minority[:<seed>]``               a minority of the nodes (:func:`faults.partitions.pick_minority`)
``bridge[:<seed>]``                 link faults only: Jepsen's bridge shape (``pick_bridge``)
``rack:<rack>``                     every broker in ``rack``
``clients:<rack>``                  link faults only: the clients of ``rack`` (``clients@<rack>``)
``all``                             link faults only, as ``--peer``: every node and client party
``store``                           disk faults only (disk-slow, disk-full, disk-fail, power-loss):
                                    the tiered storage's remote store, on a tiered cluster with
                                    lossy disks
``client:<client id>``              client faults only: the worker of that producer or consumer
``consumers[:<rack>]``              client faults only: every consumer worker (of ``rack``)
``producers``                       client faults only: every producer worker
``group:<group id>``                client faults only: every member worker of that group
``group-leader:<group id>``         client faults only: the member the group coordinator chose as
                                    the group's leader (classic protocol: the JoinGroup leader of
                                    the last generation it stored; KIP-848's consumer protocol has
                                    none: refused)
``members:<group id>[:<n>]``        client faults only: ``n`` member workers of that group
                                    (default: a majority, floor(N/2)+1 of its N running members),
                                    lowest client ids first (natural order: ``consumer-2`` before
                                    ``consumer-10``)
==================================  ===============================================================

Topic names use Kafka's legal characters ``[A-Za-z0-9._-]``, so ``:``, ``@`` and ``/`` are safe
separators. Selectors that depend on the live cluster (leader, follower-in, controller, and
minority/bridge without a seed) are *dynamic*; the others are *static*: a pure function of the
topology (``static_parties``). Client selectors are resolved against the live workers when the
fault is applied (``faults.clients.resolve``), ``group-leader`` and ``members`` too: the history's
fault event names the client ids they resolved to.

``Target`` is a tagged union: one frozen dataclass per kind (``BrokerTarget(2)``,
``LeaderTarget("hw", 0)``, ...) holding only the fields that kind needs, tagged by the class
attribute ``kind``; :func:`parse_target` builds one from text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import ClassVar, Literal, Protocol, TypeAlias

from highwater.faults import partitions
from highwater.faults.common import (
    FaultError,
    all_parties,
    check_client_rack,
    check_rack,
    find_broker,
    find_node,
    node_names,
)
from highwater.harness.tiered import STORE_PARTY
from highwater.harness.topology import Node, Topology, client_party

_TOPIC = r"[A-Za-z0-9._-]+"
_TP = re.compile(rf"^({_TOPIC})/(\d+)$")
_RACK = re.compile(r"^[A-Za-z0-9._-]+$")


class TargetKind(str, Enum):
    BROKER = "broker"
    NODE = "node"
    LEADER = "leader"
    FOLLOWER_IN = "follower-in"
    REPLICAS = "replicas"
    COORDINATOR = "coordinator"
    CONTROLLER = "controller"
    CONTROLLERS = "controllers"
    BROKERS = "brokers"
    MINORITY = "minority"
    BRIDGE = "bridge"
    RACK = "rack"
    CLIENTS = "clients"
    ALL = "all"
    # client processes (the workers of the clients under test), for client faults
    CLIENT = "client"
    CONSUMERS = "consumers"
    PRODUCERS = "producers"
    GROUP = "group"
    GROUP_LEADER = "group-leader"
    MEMBERS = "members"
    # the tiered storage's remote store, for disk faults
    STORE = "store"


#: the selectors of client processes (``client:<client id>``, ``consumers[:<rack>]``,
#: ``producers``, ``group:<group id>``, ``group-leader:<group id>``, ``members:<group id>[:<n>]``):
#: only client faults take them, and only they
CLIENT_KINDS = frozenset(
    {
        TargetKind.CLIENT,
        TargetKind.CONSUMERS,
        TargetKind.PRODUCERS,
        TargetKind.GROUP,
        TargetKind.GROUP_LEADER,
        TargetKind.MEMBERS,
    }
)


# Kinds that name parties that are not processes (or a shape, for bridge).
LINK_ONLY = frozenset({TargetKind.CLIENTS, TargetKind.ALL, TargetKind.BRIDGE})
SYNTAX = (
    "broker:<id>, node:<name>, leader:<topic>/<partition>, follower-in:<rack>[@<topic>/<partition>],"
    " replicas:<topic>/<partition>[:<count>], coordinator:<txn|group>/<id>, controller, controllers, brokers, minority[:<seed>], bridge[:<seed>], rack:<rack>,"
    " clients:<rack>, all, store; for client faults: client:<client id>, consumers[:<rack>], producers, group:<group id>,"
    " group-leader:<group id>, members:<group id>[:<count>]"
)


class ClusterView(Protocol):
    """What resolving a dynamic selector needs to know about the live cluster (node ids)."""

    def leader(self, topic: str, partition: int) -> int | None: ...

    def replicas(self, topic: str, partition: int) -> Sequence[int]: ...

    def active_controller(self) -> int | None: ...

    def coordinator(self, key_type: str, key: str) -> int | None:
        """The broker coordinating transactional id (``key_type`` "txn") or group ("group") ``key``."""
        ...


class _Selector:
    """Behaviour shared by every selector; each kind is its own frozen dataclass (below), so a
    selector carries exactly the fields its kind needs and ``Target`` is their tagged union
    (tag: the class attribute ``kind``)."""

    kind: ClassVar[TargetKind]

    def __str__(self) -> str:
        return self.kind.value

    #: a kind whose parties depend on the live cluster (``is_dynamic``)
    _dynamic: ClassVar[bool] = False
    #: a kind that always resolves to exactly one node (``single``)
    _single: ClassVar[bool] = False

    @property
    def is_dynamic(self) -> bool:
        """True if the parties depend on the live cluster or on an unrecorded random choice."""
        return self._dynamic

    @property
    def single(self) -> bool:
        """True if this always resolves to exactly one node."""
        return self._single

    def validate(self, topology: Topology) -> None:
        """Every name in the selector exists in ``topology`` (a FaultError otherwise)."""

    def static_parties(self, topology: Topology) -> frozenset[str] | None:
        """The parties of a static selector, or None for a dynamic one. Bridge: its middle."""
        self.validate(topology)
        return None if self.is_dynamic else self._parties(topology)

    def _parties(self, topology: Topology) -> frozenset[str]:
        raise NotImplementedError  # every static selector overrides it

    def candidates(self, topology: Topology) -> frozenset[str]:
        """Every party this selector could possibly resolve to (exact for static selectors)."""
        exact = self.static_parties(topology)
        return exact if exact is not None else self._candidates(topology)

    def _candidates(self, topology: Topology) -> frozenset[str]:
        return node_names(topology)

    def resolve(
        self,
        topology: Topology,
        view: ClusterView | None = None,
        *,
        seed: int | None = None,
        default_partition: tuple[str, int] | None = None,
    ) -> frozenset[str]:
        """The parties this selector names now. ``view`` answers the dynamic questions;
        ``seed`` picks an unseeded minority/bridge; ``default_partition`` is the partition of a
        ``follower-in`` without ``@topic/partition``. FaultError if it resolves to nobody."""
        exact = self.static_parties(topology)
        if exact is not None:
            return exact
        return self._resolve_live(topology, view, seed, default_partition)

    def _resolve_live(
        self, topology: Topology, view: ClusterView | None, seed: int | None, default_partition: tuple[str, int] | None
    ) -> frozenset[str]:
        raise NotImplementedError  # every dynamic selector overrides it

    def _fields(self) -> dict[str, object]:
        """The selector's fields by name, in order (every selector is a dataclass)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    def _view(self, view: ClusterView | None) -> ClusterView:
        if view is None:
            raise FaultError(f"target {self} depends on the live cluster: no cluster view given")
        return view


class _Named(_Selector):
    """A selector written ``<kind>:<arg>``, its argument its fields in order, joined by ``/``
    (``broker:2``, ``leader:t/0``, ``coordinator:group/g``)."""

    def __str__(self) -> str:
        return f"{self.kind.value}:{'/'.join(str(v) for v in self._fields().values())}"


class _OneNamedNode(_Named):
    """A static selector of the one node its one field names; ``_lookup`` finds it (a
    FaultError if the topology has no such node)."""

    _lookup: ClassVar[Callable[[Topology, object], Node]]
    _single = True

    def _find(self, topology: Topology) -> Node:
        (name,) = self._fields().values()
        return type(self)._lookup(topology, name)

    def validate(self, topology: Topology) -> None:
        self._find(topology)

    def _parties(self, topology: Topology) -> frozenset[str]:
        return frozenset({self._find(topology).name})


@dataclass(frozen=True)
class BrokerTarget(_OneNamedNode):
    broker: int
    kind: ClassVar[Literal[TargetKind.BROKER]] = TargetKind.BROKER
    _lookup = staticmethod(find_broker)  # type: ignore[assignment]


@dataclass(frozen=True)
class NodeTarget(_OneNamedNode):
    node: str
    kind: ClassVar[Literal[TargetKind.NODE]] = TargetKind.NODE
    _lookup = staticmethod(find_node)  # type: ignore[assignment]


class _OneLiveNode(_Selector):
    """A selector naming one node that only the live cluster can tell (a leader, a coordinator,
    the active controller): ``_ask`` asks the view for its id, ``_none`` says why there is none
    (formatted with the selector's fields); its candidates are the brokers unless
    ``_candidates`` says otherwise."""

    #: the node may be a dedicated controller, not only a broker
    _any_role: ClassVar[bool] = False
    _none: ClassVar[str]
    _dynamic = True
    _single = True

    def _candidates(self, topology: Topology) -> frozenset[str]:
        return frozenset(b.name for b in topology.brokers)

    def _ask(self, view: ClusterView) -> int | None:
        raise NotImplementedError

    def _resolve_live(
        self, topology: Topology, view: ClusterView | None, seed: int | None, default_partition: tuple[str, int] | None
    ) -> frozenset[str]:
        node = self._ask(self._view(view))
        if node is None:
            raise FaultError(self._none.format(**self._fields()))
        return frozenset({(find_node if self._any_role else find_broker)(topology, node).name})


@dataclass(frozen=True)
class LeaderTarget(_OneLiveNode, _Named):
    topic: str
    partition: int
    kind: ClassVar[Literal[TargetKind.LEADER]] = TargetKind.LEADER
    _none = "{topic}/{partition} has no leader right now"

    def _ask(self, view: ClusterView) -> int | None:
        return view.leader(self.topic, self.partition)


@dataclass(frozen=True)
class CoordinatorTarget(_OneLiveNode, _Named):
    """The transaction coordinator of a transactional id, or the group coordinator of a group:
    the leader of the ``__transaction_state`` / ``__consumer_offsets`` partition its id hashes to."""

    key_type: Literal["txn", "group"]
    key: str
    kind: ClassVar[Literal[TargetKind.COORDINATOR]] = TargetKind.COORDINATOR
    _none = "no {key_type} coordinator of {key} right now"

    def _ask(self, view: ClusterView) -> int | None:
        return view.coordinator(self.key_type, self.key)


@dataclass(frozen=True)
class FollowerInTarget(_Selector):
    """A follower in ``rack`` of ``topic``/``partition`` (both None: the run's partition)."""

    rack: str
    topic: str | None = None
    partition: int | None = None
    kind: ClassVar[Literal[TargetKind.FOLLOWER_IN]] = TargetKind.FOLLOWER_IN
    _dynamic = True
    _single = True

    def __post_init__(self) -> None:
        if (self.topic is None) != (self.partition is None):
            raise FaultError(f"follower-in:{self.rack} needs both a topic and a partition, or neither")

    def __str__(self) -> str:
        tail = f"@{self.topic}/{self.partition}" if self.topic is not None else ""
        return f"follower-in:{self.rack}{tail}"

    def validate(self, topology: Topology) -> None:
        check_rack(topology, self.rack)

    def _candidates(self, topology: Topology) -> frozenset[str]:
        return frozenset(b.name for b in topology.brokers_in_rack(self.rack))

    def _resolve_live(
        self, topology: Topology, view: ClusterView | None, seed: int | None, default_partition: tuple[str, int] | None
    ) -> frozenset[str]:
        live = self._view(view)
        if self.topic is not None and self.partition is not None:
            topic, part = self.topic, self.partition
        elif default_partition is not None:
            topic, part = default_partition
        else:
            raise FaultError(f"target {self} names no partition and there is no default one")
        leader = live.leader(topic, part)
        replicas = [find_broker(topology, r) for r in live.replicas(topic, part) if r != leader]
        followers = sorted((n for n in replicas if n.rack == self.rack), key=lambda n: n.node_id)
        if not followers:
            raise FaultError(f"{topic}/{part} has no follower in {self.rack} right now")
        return frozenset({followers[0].name})


@dataclass(frozen=True)
class ReplicasTarget(_Selector):
    """``count`` replicas of ``topic``/``partition`` (None: all): its leader first, then its
    followers by id. What a power loss of "a majority" means for one partition: the leader and
    one more copy (``replicas:t/0:2``), so the survivors are a known minority of its copies."""

    topic: str
    partition: int
    count: int | None = None
    kind: ClassVar[Literal[TargetKind.REPLICAS]] = TargetKind.REPLICAS
    _dynamic = True

    def __str__(self) -> str:
        tail = "" if self.count is None else f":{self.count}"
        return f"replicas:{self.topic}/{self.partition}{tail}"

    def _candidates(self, topology: Topology) -> frozenset[str]:
        return frozenset(b.name for b in topology.brokers)

    def _resolve_live(
        self, topology: Topology, view: ClusterView | None, seed: int | None, default_partition: tuple[str, int] | None
    ) -> frozenset[str]:
        live = self._view(view)
        leader = live.leader(self.topic, self.partition)
        replicas = sorted(live.replicas(self.topic, self.partition), key=lambda r: (r != leader, r))
        if not replicas:
            raise FaultError(f"{self.topic}/{self.partition} has no replicas right now")
        count = len(replicas) if self.count is None else self.count
        if count > len(replicas):
            raise FaultError(f"{self} names {count} replicas; {self.topic}/{self.partition} has {len(replicas)}")
        return frozenset(find_broker(topology, r).name for r in replicas[:count])


@dataclass(frozen=True)
class ControllerTarget(_OneLiveNode):
    """The active KRaft controller."""

    kind: ClassVar[Literal[TargetKind.CONTROLLER]] = TargetKind.CONTROLLER
    _any_role: ClassVar[bool] = True

    def _candidates(self, topology: Topology) -> frozenset[str]:
        return frozenset(c.name for c in topology.controllers)

    _none = "there is no active controller right now"

    def _ask(self, view: ClusterView) -> int | None:
        return view.active_controller()


@dataclass(frozen=True)
class ControllersTarget(_Selector):
    kind: ClassVar[Literal[TargetKind.CONTROLLERS]] = TargetKind.CONTROLLERS

    def _parties(self, topology: Topology) -> frozenset[str]:
        return frozenset(n.name for n in topology.controllers)


@dataclass(frozen=True)
class BrokersTarget(_Selector):
    kind: ClassVar[Literal[TargetKind.BROKERS]] = TargetKind.BROKERS

    def _parties(self, topology: Topology) -> frozenset[str]:
        return frozenset(n.name for n in topology.brokers)


@dataclass(frozen=True)
class _Seeded(_Selector):
    """minority / bridge: static with a seed, a random (dynamic) choice without."""

    seed: int | None = None

    def __str__(self) -> str:
        return self.kind.value if self.seed is None else f"{self.kind.value}:{self.seed}"

    @property
    def is_dynamic(self) -> bool:
        return self.seed is None

    def validate(self, topology: Topology) -> None:
        if self.seed is not None:
            self._pick(topology, self.seed)

    def _parties(self, topology: Topology) -> frozenset[str]:
        assert self.seed is not None  # static only with a seed (is_dynamic)
        return self._pick(topology, self.seed)

    def _pick(self, topology: Topology, seed: int) -> frozenset[str]:
        raise NotImplementedError

    def _resolve_live(
        self, topology: Topology, view: ClusterView | None, seed: int | None, default_partition: tuple[str, int] | None
    ) -> frozenset[str]:
        if seed is None:
            raise FaultError(f"target {self} needs a seed to resolve")
        return self._pick(topology, seed)


@dataclass(frozen=True)
class MinorityTarget(_Seeded):
    """A minority of the nodes (:func:`faults.partitions.pick_minority`)."""

    kind: ClassVar[Literal[TargetKind.MINORITY]] = TargetKind.MINORITY

    def _pick(self, topology: Topology, seed: int) -> frozenset[str]:
        return partitions.pick_minority(topology, seed)


@dataclass(frozen=True)
class BridgeTarget(_Seeded):
    """Link faults only: Jepsen's bridge shape; its parties are the bridge's middle."""

    kind: ClassVar[Literal[TargetKind.BRIDGE]] = TargetKind.BRIDGE

    def _pick(self, topology: Topology, seed: int) -> frozenset[str]:
        return partitions.pick_bridge(topology, seed).middle


@dataclass(frozen=True)
class RackTarget(_Named):
    rack: str
    kind: ClassVar[Literal[TargetKind.RACK]] = TargetKind.RACK

    def validate(self, topology: Topology) -> None:
        check_rack(topology, self.rack)

    def _parties(self, topology: Topology) -> frozenset[str]:
        return frozenset(b.name for b in topology.brokers_in_rack(self.rack))


@dataclass(frozen=True)
class ClientsTarget(_Named):
    """Link faults only: the clients of ``rack`` (party ``clients@<rack>``)."""

    rack: str
    kind: ClassVar[Literal[TargetKind.CLIENTS]] = TargetKind.CLIENTS

    def validate(self, topology: Topology) -> None:
        check_client_rack(topology, self.rack)

    def _parties(self, topology: Topology) -> frozenset[str]:
        return frozenset({client_party(self.rack)})


@dataclass(frozen=True)
class AllTarget(_Selector):
    """Link faults only, as ``--peer``: every node and client party."""

    kind: ClassVar[Literal[TargetKind.ALL]] = TargetKind.ALL

    def _parties(self, topology: Topology) -> frozenset[str]:
        return all_parties(topology)


@dataclass(frozen=True)
class ClientTarget(_Selector):
    """Client faults only: worker processes of the clients under test, chosen by ``what``
    (``client``, ``consumers``, ``producers``, ``group``, ``group-leader``, ``members``) and
    ``arg`` (a client id, a rack, a group id); ``count`` is ``members``' n (None: a majority).
    Resolved against the live workers when the fault is applied (``faults.clients.select``;
    ``group-leader`` asks the group's coordinator too, ``faults.clients.resolve``), never
    against the topology."""

    what: TargetKind
    arg: str | None = None
    count: int | None = None
    kind: ClassVar[Literal[TargetKind.CLIENT]] = TargetKind.CLIENT

    def __post_init__(self) -> None:
        if self.count is not None and (self.what is not TargetKind.MEMBERS or self.count < 1):
            raise FaultError(
                f"{self.what.value} takes no count"
                if self.what is not TargetKind.MEMBERS
                else f"members:{self.arg}:{self.count}: the count must be at least 1"
            )

    def __str__(self) -> str:
        if self.arg is None:
            return self.what.value
        return f"{self.what.value}:{self.arg}" + ("" if self.count is None else f":{self.count}")

    def validate(self, topology: Topology) -> None:
        if self.what is TargetKind.CONSUMERS and self.arg is not None:
            check_client_rack(topology, self.arg)

    def _parties(self, topology: Topology) -> frozenset[str]:
        return frozenset({f"client-process@{self}"})  # never a node: conflicts only with itself


@dataclass(frozen=True)
class StoreTarget(_Selector):
    """Disk faults only: the tiered storage's remote store (``harness.tiered.STORE_PARTY``), a
    party of its own: it conflicts with nothing but itself."""

    kind: ClassVar[Literal[TargetKind.STORE]] = TargetKind.STORE
    _single = True

    def _parties(self, topology: Topology) -> frozenset[str]:
        return frozenset({STORE_PARTY})


#: A target selector: one of the classes above, told apart by ``kind`` (or ``isinstance``).
Target: TypeAlias = (
    BrokerTarget
    | NodeTarget
    | LeaderTarget
    | FollowerInTarget
    | ReplicasTarget
    | CoordinatorTarget
    | ControllerTarget
    | ControllersTarget
    | BrokersTarget
    | MinorityTarget
    | BridgeTarget
    | RackTarget
    | ClientsTarget
    | AllTarget
    | ClientTarget
    | StoreTarget
)


def parse_target(text: str) -> Target:
    """Parse a selector (see the module docstring); a one-line FaultError if malformed."""
    raw = text.strip()
    head, sep, arg = raw.partition(":")
    try:
        kind = TargetKind(head)
    except ValueError:
        raise FaultError(f"unknown target {text!r} (expected one of: {SYNTAX})") from None

    def bad(why: str) -> FaultError:
        return FaultError(f"malformed target {text!r}: {why}")

    bare: dict[TargetKind, Target] = {
        TargetKind.CONTROLLER: ControllerTarget(),
        TargetKind.CONTROLLERS: ControllersTarget(),
        TargetKind.BROKERS: BrokersTarget(),
        TargetKind.ALL: AllTarget(),
        TargetKind.STORE: StoreTarget(),
    }
    if kind in CLIENT_KINDS:
        if kind in (TargetKind.CONSUMERS, TargetKind.PRODUCERS) and not sep:
            return ClientTarget(kind)
        if kind is TargetKind.MEMBERS:
            m = re.fullmatch(r"([A-Za-z0-9._-]+)(?::(\d+))?", arg)
            if not m or (m.group(2) is not None and int(m.group(2)) < 1):
                raise bad("expected members:<group id>[:<count>] with a count of at least 1")
            return ClientTarget(kind, m.group(1), None if m.group(2) is None else int(m.group(2)))
        if kind is TargetKind.PRODUCERS or not _RACK.fullmatch(arg):
            raise bad(f"expected {_EXAMPLES.get(kind, kind.value)}")
        return ClientTarget(kind, arg)
    if kind in bare:
        if sep:
            raise bad(f"{kind.value} takes no argument")
        return bare[kind]
    if kind in (TargetKind.MINORITY, TargetKind.BRIDGE):
        seeded = MinorityTarget if kind is TargetKind.MINORITY else BridgeTarget
        if not sep:
            return seeded()
        if not re.fullmatch(r"\d+", arg):
            raise bad(f"expected {kind.value}:<seed> with an integer seed")
        return seeded(seed=int(arg))
    if not arg:
        raise bad(f"{kind.value} needs an argument, e.g. {_EXAMPLES[kind]}")
    if kind is TargetKind.BROKER:
        if not re.fullmatch(r"\d+", arg):
            raise bad("expected broker:<id> with an integer id")
        return BrokerTarget(int(arg))
    if kind is TargetKind.NODE:
        if not _RACK.fullmatch(arg):
            raise bad("expected node:<name-or-id>")
        return NodeTarget(arg)
    if kind is TargetKind.LEADER:
        m = _TP.fullmatch(arg)
        if not m:
            raise bad("expected leader:<topic>/<partition>")
        return LeaderTarget(m.group(1), int(m.group(2)))
    if kind is TargetKind.REPLICAS:
        m = re.fullmatch(rf"({_TOPIC})/(\d+)(?::(\d+))?", arg)
        if not m or (m.group(3) is not None and int(m.group(3)) < 1):
            raise bad("expected replicas:<topic>/<partition>[:<count>] with a count of at least 1")
        return ReplicasTarget(m.group(1), int(m.group(2)), None if m.group(3) is None else int(m.group(3)))
    if kind is TargetKind.COORDINATOR:
        key_type, slash, key = arg.partition("/")
        if key_type not in ("txn", "group") or not slash or not _RACK.fullmatch(key):
            raise bad("expected coordinator:txn/<transactional id> or coordinator:group/<group id>")
        return CoordinatorTarget("txn" if key_type == "txn" else "group", key)
    if kind is TargetKind.FOLLOWER_IN:
        rack, at, tp = arg.partition("@")
        if not _RACK.fullmatch(rack):
            raise bad("expected follower-in:<rack>[@<topic>/<partition>]")
        if not at:
            return FollowerInTarget(rack)
        m = _TP.fullmatch(tp)
        if not m:
            raise bad("expected follower-in:<rack>@<topic>/<partition>")
        return FollowerInTarget(rack, m.group(1), int(m.group(2)))
    if not _RACK.fullmatch(arg):
        raise bad(f"expected {kind.value}:<rack>")
    return RackTarget(arg) if kind is TargetKind.RACK else ClientsTarget(arg)


_EXAMPLES = {
    TargetKind.BROKER: "broker:2",
    TargetKind.NODE: "node:controller-1",
    TargetKind.LEADER: "leader:topic/0",
    TargetKind.FOLLOWER_IN: "follower-in:rack-b",
    TargetKind.REPLICAS: "replicas:topic/0:2",
    TargetKind.COORDINATOR: "coordinator:txn/hw-producer-0",
    TargetKind.RACK: "rack:rack-b",
    TargetKind.CLIENTS: "clients:rack-b",
    TargetKind.CLIENT: "client:consumer-0",
    TargetKind.CONSUMERS: "consumers or consumers:rack-b",
    TargetKind.PRODUCERS: "producers",
    TargetKind.GROUP: "group:my-group",
    TargetKind.GROUP_LEADER: "group-leader:my-group",
    TargetKind.MEMBERS: "members:my-group or members:my-group:2",
}
