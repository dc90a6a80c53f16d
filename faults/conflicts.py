"""Rejecting contradictory faults that would be active at the same time.

Two simultaneous faults contradict each other when healing or applying one would undo or
confuse the other:

* two **process** faults (kill, stop, pause, restart, rolling_restart) that may act on the same
  node: e.g. pause and kill of one node - the heal of the pause would SIGCONT a dead process,
  the heal of the kill would start a second JVM. Any two, even of the same kind;
* two **cuts** that may share a link: healing one re-enables a proxy the other still wants down;
* two **toxics of the same type** that may share a link and a stream direction (e.g. two
  latency toxics on ``replication:kafka-1->kafka-2`` downstream): which latency holds is
  ambiguous and removing one by name leaves the other.

A ``finalize`` contradicts nothing: it is a call to whichever controller is active. Two **clock** faults (clock_jump, clock_drift) that may act on the same node contradict (healing
one puts the clock back under the other), but a clock fault and another process fault never do:
the clock lives in a file that outlives the JVM. Link and process faults never contradict each
other, nor do toxics of different types (latency and bandwidth on one link compose), nor a cut
and a toxic on one link: a link fault's heal ends that fault only (``Injector._undo`` keeps the
links other active faults cut and the toxics they hold). "May": a
dynamic selector counts as every node it could resolve to (``leader:t/0`` = any broker), except
that ``leader:t/p`` and ``follower-in:r@t/p`` of the same partition are never the same node.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from highwater.faults.common import Direction, FaultError
from highwater.faults.scope import possible_links, possible_nodes, same_partition_leader_and_follower
from highwater.faults.spec import FaultKind, FaultSpec
from highwater.harness.topology import Link, Topology


def _toxic_streams(topology: Topology, spec: FaultSpec) -> frozenset[tuple[Link, Direction]]:
    return frozenset((l, s) for l in possible_links(topology, spec) for s in spec.streams)


def _show(items: Iterable[object]) -> str:
    names = sorted(str(getattr(i, "proxy_name", i)) for i in items)
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def conflict(topology: Topology, a: FaultSpec, b: FaultSpec) -> str | None:
    """Why ``a`` and ``b`` cannot be active at the same time, or None if they can."""
    if FaultKind.FINALIZE in (a.kind, b.kind):
        return None  # an Admin API call to whichever controller is active: it acts on no process
    if a.kind.is_process and b.kind.is_process:
        if a.kind.is_clock != b.kind.is_clock:
            return None  # a node's clock file outlives its JVM: a kill or pause leaves the clock as it is
        if same_partition_leader_and_follower(a.target, b.target):
            return None
        shared = possible_nodes(topology, a) & possible_nodes(topology, b)
        if shared:
            return f"both may act on the process of {_show(shared)}"
        return None
    if a.kind.is_link and b.kind.is_link:
        if a.kind is FaultKind.CUT and b.kind is FaultKind.CUT:
            shared_links = possible_links(topology, a) & possible_links(topology, b)
            if shared_links:
                return f"both may cut {_show(shared_links)} (healing one would restore the other)"
            return None
        if a.kind is b.kind:
            shared_streams = _toxic_streams(topology, a) & _toxic_streams(topology, b)
            if shared_streams:
                where = _show(f"{l.proxy_name} {d.value}" for l, d in shared_streams)
                return f"two {a.kind.value} toxics on the same link direction: {where}"
    return None


def check_no_conflicts(topology: Topology, specs: Sequence[FaultSpec]) -> None:
    """Validate every fault against ``topology`` and raise one FaultError for the first pair
    that contradicts (see the module docstring); return None if all can be active together."""
    for spec in specs:
        spec.validate(topology)
    for i, a in enumerate(specs):
        for b in specs[i + 1 :]:
            why = conflict(topology, a, b)
            if why:
                raise FaultError(f"contradictory faults at the same time: '{a}' and '{b}': {why}")
