"""Target selectors: *who* a fault acts on, as data, resolved against a live cluster later.

String syntax (what ``--target`` / ``--peer`` accept; ``str(target)`` renders it back):

==================================  ===============================================================
``broker:<id>``                     the broker with that node id (``broker:2``)
``node:<name-or-id>``               any node, including dedicated controllers (``node:controller-1``)
``leader:<topic>/<partition>``      the current leader of that partition
``follower-in:<rack>[@<t>/<p>]``    a follower of partition t/p (default: the run's partition)
                                    whose broker is in ``rack``; the lowest id if several
``controller``                      the active KRaft controller
``controllers``                     every controller-role node
``brokers``                         every broker
``minority[:<seed>]``               a minority of the nodes (:func:`faults.partitions.pick_minority`)
``bridge[:<seed>]``                 link faults only: Jepsen's bridge shape (``pick_bridge``)
``rack:<rack>``                     every broker in ``rack``
``clients:<rack>``                  link faults only: the clients of ``rack`` (``clients@<rack>``)
``all``                             link faults only, as ``--peer``: every node and client party
==================================  ===============================================================

Topic names use Kafka's legal characters ``[A-Za-z0-9._-]``, so ``:``, ``@`` and ``/`` are safe
separators. Selectors that depend on the live cluster (leader, follower-in, controller, and
minority/bridge without a seed) are *dynamic*; the others are *static*: a pure function of the
topology (:meth:`Target.static_parties`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from harness.topology import Topology, client_party

from faults import partitions
from faults.common import (
    FaultError,
    all_parties,
    check_client_rack,
    check_rack,
    find_broker,
    find_node,
    node_names,
)

_TOPIC = r"[A-Za-z0-9._-]+"
_TP = re.compile(rf"^({_TOPIC})/(\d+)$")
_RACK = re.compile(r"^[A-Za-z0-9._-]+$")


class TargetKind(str, Enum):
    BROKER = "broker"
    NODE = "node"
    LEADER = "leader"
    FOLLOWER_IN = "follower-in"
    CONTROLLER = "controller"
    CONTROLLERS = "controllers"
    BROKERS = "brokers"
    MINORITY = "minority"
    BRIDGE = "bridge"
    RACK = "rack"
    CLIENTS = "clients"
    ALL = "all"


# Kinds that name parties that are not processes (or a shape, for bridge).
LINK_ONLY = frozenset({TargetKind.CLIENTS, TargetKind.ALL, TargetKind.BRIDGE})
DYNAMIC = frozenset({TargetKind.LEADER, TargetKind.FOLLOWER_IN, TargetKind.CONTROLLER})
SYNTAX = (
    "broker:<id>, node:<name>, leader:<topic>/<partition>, follower-in:<rack>[@<topic>/<partition>],"
    " controller, controllers, brokers, minority[:<seed>], bridge[:<seed>], rack:<rack>,"
    " clients:<rack>, all"
)


class ClusterView(Protocol):
    """What resolving a dynamic selector needs to know about the live cluster (node ids)."""

    def leader(self, topic: str, partition: int) -> int | None: ...

    def replicas(self, topic: str, partition: int) -> Sequence[int]: ...

    def active_controller(self) -> int | None: ...


@dataclass(frozen=True)
class Target:
    kind: TargetKind
    broker: int | None = None
    node: str | None = None
    topic: str | None = None
    partition: int | None = None
    rack: str | None = None
    seed: int | None = None

    # -- text ------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> "Target":
        """Parse a selector (see the module docstring); a one-line FaultError if malformed."""
        raw = text.strip()
        head, sep, arg = raw.partition(":")
        try:
            kind = TargetKind(head)
        except ValueError:
            raise FaultError(f"unknown target {text!r} (expected one of: {SYNTAX})") from None

        def bad(why: str) -> FaultError:
            return FaultError(f"malformed target {text!r}: {why}")

        bare = {TargetKind.CONTROLLER, TargetKind.CONTROLLERS, TargetKind.BROKERS, TargetKind.ALL}
        if kind in bare:
            if sep:
                raise bad(f"{kind.value} takes no argument")
            return cls(kind)
        if kind in (TargetKind.MINORITY, TargetKind.BRIDGE):
            if not sep:
                return cls(kind)
            if not re.fullmatch(r"\d+", arg):
                raise bad(f"expected {kind.value}:<seed> with an integer seed")
            return cls(kind, seed=int(arg))
        if not arg:
            raise bad(f"{kind.value} needs an argument, e.g. {_EXAMPLES[kind]}")
        if kind is TargetKind.BROKER:
            if not re.fullmatch(r"\d+", arg):
                raise bad("expected broker:<id> with an integer id")
            return cls(kind, broker=int(arg))
        if kind is TargetKind.NODE:
            if not _RACK.fullmatch(arg):
                raise bad("expected node:<name-or-id>")
            return cls(kind, node=arg)
        if kind is TargetKind.LEADER:
            m = _TP.fullmatch(arg)
            if not m:
                raise bad("expected leader:<topic>/<partition>")
            return cls(kind, topic=m.group(1), partition=int(m.group(2)))
        if kind is TargetKind.FOLLOWER_IN:
            rack, at, tp = arg.partition("@")
            if not _RACK.fullmatch(rack):
                raise bad("expected follower-in:<rack>[@<topic>/<partition>]")
            if not at:
                return cls(kind, rack=rack)
            m = _TP.fullmatch(tp)
            if not m:
                raise bad("expected follower-in:<rack>@<topic>/<partition>")
            return cls(kind, rack=rack, topic=m.group(1), partition=int(m.group(2)))
        # rack / clients
        if not _RACK.fullmatch(arg):
            raise bad(f"expected {kind.value}:<rack>")
        return cls(kind, rack=arg)

    def __str__(self) -> str:
        k = self.kind
        if k is TargetKind.BROKER:
            return f"broker:{self.broker}"
        if k is TargetKind.NODE:
            return f"node:{self.node}"
        if k is TargetKind.LEADER:
            return f"leader:{self.topic}/{self.partition}"
        if k is TargetKind.FOLLOWER_IN:
            tail = f"@{self.topic}/{self.partition}" if self.topic is not None else ""
            return f"follower-in:{self.rack}{tail}"
        if k in (TargetKind.MINORITY, TargetKind.BRIDGE):
            return k.value if self.seed is None else f"{k.value}:{self.seed}"
        if k in (TargetKind.RACK, TargetKind.CLIENTS):
            return f"{k.value}:{self.rack}"
        return k.value

    # -- classification ----------------------------------------------------------------------
    @property
    def is_dynamic(self) -> bool:
        """True if the parties depend on the live cluster or on an unrecorded random choice."""
        if self.kind in DYNAMIC:
            return True
        return self.kind in (TargetKind.MINORITY, TargetKind.BRIDGE) and self.seed is None

    @property
    def single(self) -> bool:
        """True if this always resolves to exactly one node."""
        return self.kind in (TargetKind.BROKER, TargetKind.NODE) or self.kind in DYNAMIC

    # -- against a topology ----------------------------------------------------------------------
    def validate(self, topology: Topology) -> None:
        """Every name in the selector exists in ``topology`` (a FaultError otherwise)."""
        k = self.kind
        if k is TargetKind.BROKER:
            find_broker(topology, self.broker)  # type: ignore[arg-type]
        elif k is TargetKind.NODE:
            find_node(topology, self.node)  # type: ignore[arg-type]
        elif k in (TargetKind.RACK, TargetKind.FOLLOWER_IN):
            check_rack(topology, self.rack)  # type: ignore[arg-type]
        elif k is TargetKind.CLIENTS:
            check_client_rack(topology, self.rack)  # type: ignore[arg-type]
        elif k is TargetKind.MINORITY and self.seed is not None:
            partitions.pick_minority(topology, self.seed)
        elif k is TargetKind.BRIDGE and self.seed is not None:
            partitions.pick_bridge(topology, self.seed)

    def static_parties(self, topology: Topology) -> frozenset[str] | None:
        """The parties of a static selector, or None for a dynamic one. Bridge: its middle."""
        self.validate(topology)
        k = self.kind
        if self.is_dynamic:
            return None
        if k is TargetKind.BROKER:
            return frozenset({find_broker(topology, self.broker).name})  # type: ignore[arg-type]
        if k is TargetKind.NODE:
            return frozenset({find_node(topology, self.node).name})  # type: ignore[arg-type]
        if k is TargetKind.CONTROLLERS:
            return frozenset(n.name for n in topology.controllers)
        if k is TargetKind.BROKERS:
            return frozenset(n.name for n in topology.brokers)
        if k is TargetKind.MINORITY:
            return partitions.pick_minority(topology, self.seed)  # type: ignore[arg-type]
        if k is TargetKind.BRIDGE:
            return partitions.pick_bridge(topology, self.seed).middle  # type: ignore[arg-type]
        if k is TargetKind.RACK:
            return frozenset(b.name for b in topology.brokers_in_rack(self.rack))  # type: ignore[arg-type]
        if k is TargetKind.CLIENTS:
            return frozenset({client_party(self.rack)})  # type: ignore[arg-type]
        return all_parties(topology)  # ALL

    def candidates(self, topology: Topology) -> frozenset[str]:
        """Every party this selector could possibly resolve to (exact for static selectors)."""
        exact = self.static_parties(topology)
        if exact is not None:
            return exact
        k = self.kind
        if k is TargetKind.LEADER:
            return frozenset(b.name for b in topology.brokers)
        if k is TargetKind.FOLLOWER_IN:
            return frozenset(b.name for b in topology.brokers_in_rack(self.rack))  # type: ignore[arg-type]
        if k is TargetKind.CONTROLLER:
            return frozenset(c.name for c in topology.controllers)
        return node_names(topology)  # unseeded minority / bridge

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
        k = self.kind
        if k in (TargetKind.MINORITY, TargetKind.BRIDGE):
            if seed is None:
                raise FaultError(f"target {self} needs a seed to resolve")
            return Target(k, seed=seed).static_parties(topology)  # type: ignore[return-value]
        if view is None:
            raise FaultError(f"target {self} depends on the live cluster: no cluster view given")
        if k is TargetKind.CONTROLLER:
            cid = view.active_controller()
            if cid is None:
                raise FaultError("there is no active controller right now")
            return frozenset({find_node(topology, cid).name})
        topic, part = self.topic, self.partition
        if topic is None:
            if default_partition is None:
                raise FaultError(f"target {self} names no partition and there is no default one")
            topic, part = default_partition
        leader = view.leader(topic, part)  # type: ignore[arg-type]
        if k is TargetKind.LEADER:
            if leader is None:
                raise FaultError(f"{topic}/{part} has no leader right now")
            return frozenset({find_broker(topology, leader).name})
        in_rack = [
            find_broker(topology, r) for r in view.replicas(topic, part)  # type: ignore[arg-type]
            if r != leader
        ]
        followers = sorted((n for n in in_rack if n.rack == self.rack), key=lambda n: n.node_id)
        if not followers:
            raise FaultError(f"{topic}/{part} has no follower in {self.rack} right now")
        return frozenset({followers[0].name})


_EXAMPLES = {
    TargetKind.BROKER: "broker:2",
    TargetKind.NODE: "node:controller-1",
    TargetKind.LEADER: "leader:topic/0",
    TargetKind.FOLLOWER_IN: "follower-in:rack-b",
    TargetKind.RACK: "rack:rack-b",
    TargetKind.CLIENTS: "clients:rack-b",
}


def parse_target(text: str) -> Target:
    return Target.parse(text)
