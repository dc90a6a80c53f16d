"""Which links / nodes a :class:`FaultSpec` acts on: exactly (once its selectors are resolved)
or conservatively (every link / node it could possibly touch, before resolution).

The link rule is the one documented in :mod:`faults.spec`: with target parties ``T`` and peer
parties ``P`` (default: every node not in ``T``), ``flow=both`` takes every link between ``T``
and ``P - T`` in either initiation direction, ``out`` the links initiated by ``T``, ``in`` those
initiated by ``P``; ``listeners`` filters; a ``bridge`` target takes the bridge shape.
"""

from __future__ import annotations

from highwater.faults import partitions
from highwater.faults.common import FaultError, node_names
from highwater.faults.spec import FaultSpec, Flow
from highwater.faults.target import BridgeTarget, ClusterView, FollowerInTarget, LeaderTarget, Target
from highwater.harness.topology import Link, Topology


def _filter(spec: FaultSpec, links: frozenset[Link]) -> frozenset[Link]:
    return partitions.only(links, *spec.listeners) if spec.listeners else links


def default_peers(topology: Topology, spec: FaultSpec, targets: frozenset[str]) -> frozenset[str]:
    """Every node not in ``targets`` (clients only through an explicit peer)."""
    return node_names(topology) - targets


def links_between(
    topology: Topology, spec: FaultSpec, targets: frozenset[str], peers: frozenset[str] | None = None
) -> frozenset[Link]:
    """The exact links of a link fault whose target resolved to ``targets`` and peer to
    ``peers`` (None: the default peers). A FaultError if nothing is left to act on."""
    if not spec.kind.is_link:
        raise FaultError(f"{spec.kind.cli} is not a link fault")
    others = (default_peers(topology, spec, targets) if peers is None else peers) - targets
    if not others:
        raise FaultError(f"fault {spec}: the peer has no party outside the target")
    if spec.flow is Flow.OUT:
        links = partitions.cut_one_way(topology, targets, others)
    elif spec.flow is Flow.IN:
        links = partitions.cut_one_way(topology, others, targets)
    else:
        links = partitions.cut_between(topology, targets, others)
    return _filter(spec, links)


def resolve_links(
    topology: Topology,
    spec: FaultSpec,
    view: ClusterView | None = None,
    *,
    seed: int | None = None,
    default_partition: tuple[str, int] | None = None,
) -> frozenset[Link]:
    """The links a link fault acts on right now (see ``Target.resolve`` for the arguments)."""
    return resolve_link_fault(topology, spec, view, seed=seed, default_partition=default_partition)[0]


def resolve_link_fault(
    topology: Topology,
    spec: FaultSpec,
    view: ClusterView | None = None,
    *,
    seed: int | None = None,
    default_partition: tuple[str, int] | None = None,
) -> tuple[frozenset[Link], frozenset[str]]:
    """(links, parties): the links a link fault acts on right now and the targets they were
    derived from (empty for a bridge, which names no party). Dynamic targets such as
    ``leader:t/0`` ask the cluster once, so the parties recorded in the history are exactly
    the ones whose links were cut, even if leadership moves meanwhile."""
    spec.validate(topology)
    if isinstance(spec.target, BridgeTarget):
        bseed = spec.target.seed if spec.target.seed is not None else seed
        if bseed is None:
            raise FaultError(f"target {spec.target} needs a seed to resolve")
        return _filter(spec, partitions.bridge_links(topology, partitions.pick_bridge(topology, bseed))), frozenset()
    targets = spec.target.resolve(topology, view, seed=seed, default_partition=default_partition)
    peers = (
        None if spec.peer is None else spec.peer.resolve(topology, view, seed=seed, default_partition=default_partition)
    )
    return links_between(topology, spec, targets, peers), frozenset(targets)


def possible_links(topology: Topology, spec: FaultSpec) -> frozenset[Link]:
    """Every link the fault could act on, whatever its dynamic selectors resolve to; exact
    when target and peer are static."""
    spec.validate(topology)
    if isinstance(spec.target, BridgeTarget):
        if spec.target.seed is not None:
            return resolve_links(topology, spec)
        return _filter(spec, _node_links(topology))  # any node-to-node link could be cut
    static_t = spec.target.static_parties(topology)
    static_p = None if spec.peer is None else spec.peer.static_parties(topology)
    if static_t is not None and (spec.peer is None or static_p is not None):
        return links_between(topology, spec, static_t, static_p)
    tc = spec.target.candidates(topology)
    pc = node_names(topology) if spec.peer is None else spec.peer.candidates(topology)
    out: set[Link] = set()
    for link in topology.links():
        fwd = link.src in tc and link.dst in pc
        back = link.src in pc and link.dst in tc
        if (
            (spec.flow is Flow.OUT and fwd)
            or (spec.flow is Flow.IN and back)
            or (spec.flow is Flow.BOTH and (fwd or back))
        ):
            out.add(link)
    return _filter(spec, frozenset(out))


def _node_links(topology: Topology) -> frozenset[Link]:
    nodes = node_names(topology)
    return frozenset(l for l in topology.links() if l.src in nodes and l.dst in nodes)


def possible_nodes(topology: Topology, spec: FaultSpec) -> frozenset[str]:
    """Every node a process fault could act on (exact for a static target)."""
    if not spec.kind.is_process:
        raise FaultError(f"{spec.kind.cli} is not a process fault")
    spec.validate(topology)
    return spec.target.candidates(topology) & node_names(topology)


def same_partition_leader_and_follower(a: Target, b: Target) -> bool:
    """True for ``leader:t/p`` and ``follower-in:r@t/p`` (never the same node)."""
    for leader, follower in ((a, b), (b, a)):
        if isinstance(leader, LeaderTarget) and isinstance(follower, FollowerInTarget):
            return (leader.topic, leader.partition) == (follower.topic, follower.partition)
    return False
