"""Client faults: kill, freeze and restart the worker processes of the clients under test.

Every client under test runs in worker processes of ours (``harness.clients.worker``), so a
producer or a group member can be killed (SIGKILL: a crash), frozen (SIGSTOP: a long GC pause,
the fault behind most rebalances in production; SIGCONT on heal) or restarted. The injector
(``faults.inject``) applies them like every other fault, recorded in the history as nemesis
``fault`` / ``heal`` events whose ``targets`` are the client ids acted on.

- ``client_kill``: SIGKILL now; the heal asks the workload to start the client again (a new
  worker with the same client id: a group member rejoins, an assign-mode consumer resumes after
  the last record it returned) and waits for it.
- ``client_freeze``: SIGSTOP now, SIGCONT on heal. A command waiting on a frozen worker waits
  for the thaw (``WorkerProcess.request``).
- ``client_restart``: SIGKILL and started again at once (heals itself). With ``version`` the new
  worker runs that version of the same client (a member rolled to a newer client, so one group
  holds two versions); with ``group_protocol`` a group member rejoins on that protocol (KIP-848's
  online migration of a classic group, member by member, Kafka 4.0+). The owner keeps them for
  every later restart; :func:`relaunch_refusal` refuses what the client or release lacks.

A killed client's sends still in flight end ``info`` (they may have been written) and its
history ends with what it reported before it died, then a ``poll``/``send`` ``info`` whose
error names the fault: the checks judge it as they judge any client that stopped.

Selectors (``faults.target.ClientTarget``) are resolved against the live workers by
:func:`select`, a pure function of their ``WorkerInfo``, when the fault is applied. Two depend on
the group as it is then:

- ``members:<group>[:<n>]``: ``n`` of the group's running member workers (default: a majority,
  floor(N/2)+1 of N), lowest client ids first in natural order (``consumer-2`` before
  ``consumer-10``): deterministic, no seed; a worker already killed is not counted.
- ``group-leader:<group>``: the member the group coordinator chose as the group's leader (the
  classic protocol's JoinGroup leader, which computes the assignment). No member says it is the
  leader (neither Java's consumer nor librdkafka exposes it), and DescribeGroups does not name
  it; the coordinator stores it in the group's metadata record in ``__consumer_offsets``
  (``GroupMetadataValue.leader``, with each member's client id). The run registers a
  :class:`GroupView` that reads both (:func:`group_view`; ``faults.group_leader.LiveGroups``),
  and :func:`group_leader` judges the answer: a group between generations is asked again
  until it settles (``LEADER_WAIT_S``); a group on KIP-848's consumer protocol is refused with
  one line: that protocol has no leader member, the coordinator assigns.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from highwater.core.errors import WaitTimeout
from highwater.faults.common import FaultError
from highwater.faults.target import ClientTarget, TargetKind
from highwater.harness.clients.groups import group_protocol_refusal
from highwater.harness.clients.worker import Relaunch, WorkerInfo, WorkerProcess, live_workers, request_restart
from highwater.harness.waiting import wait_until

#: how long ``group-leader`` waits for a group between generations to settle
LEADER_WAIT_S = 30.0


#: the worker roles a ``consumers`` target names: a group's or assign-mode consumer, and a share
#: group's member (KIP-932; its workload starts it again after a kill, as a consumer's does)
CONSUMER_ROLES = frozenset({"consumer", "share_consumer"})


def natural_key(client_id: str) -> tuple[tuple[int, int | str], ...]:
    """``consumer-2`` before ``consumer-10``: digit runs compare as numbers."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", client_id) if p)


def majority(members: int) -> int:
    """floor(N/2)+1: the fewest members that are more than half of ``members``."""
    return members // 2 + 1


def select(target: ClientTarget, workers: Iterable[WorkerInfo]) -> list[str]:
    """The client ids ``target`` names among ``workers``, sorted (duplicates once). For
    ``members``, ``n`` of the group's (a majority by default), lowest ids first in natural order
    (a FaultError when the group has fewer); for ``group-leader``, every member of the group
    (its candidates: :func:`resolve` asks the coordinator which one leads)."""
    what, arg = target.what, target.arg
    chosen: set[str] = set()
    for w in workers:
        if what is TargetKind.CLIENT:
            hit = w.client_id == arg
        elif what is TargetKind.CONSUMERS:  # a share group's members are consumers too
            hit = w.role in CONSUMER_ROLES and (arg is None or w.rack == arg)
        elif what is TargetKind.PRODUCERS:
            hit = w.role == "producer"
        else:  # GROUP, GROUP_LEADER, MEMBERS
            hit = w.role == "consumer" and w.group_id == arg
        if hit:
            chosen.add(w.client_id)
    if what is TargetKind.MEMBERS and chosen:
        n = majority(len(chosen)) if target.count is None else target.count
        if n > len(chosen):
            raise FaultError(f"target {target} names {n} members; group {arg} has {len(chosen)} running")
        return sorted(sorted(chosen, key=natural_key)[:n])
    return sorted(chosen)


@dataclass(frozen=True)
class GroupSnapshot:
    """What the group's coordinator says of a group, for ``group-leader``: its type (ListGroups:
    ``classic``, ``consumer`` for KIP-848's protocol; ``""`` when the broker does not say), its
    state and members (DescribeGroups: member id -> client id), and the last generation it
    stored (``__consumer_offsets``' group metadata record: its leader's member id, its members'
    ids; None and empty when it stored none)."""

    group_id: str
    group_type: str
    state: str
    members: Mapping[str, str] = field(default_factory=dict)
    generation: int | None = None
    leader: str | None = None
    stored_members: frozenset[str] = frozenset()


class Unsettled(Exception):
    """The group is between generations: no leader to name yet (asked again). Not a
    ``FaultError``, so ``wait_until`` keeps asking."""


def group_leader(snapshot: GroupSnapshot) -> str:
    """The client id of the member leading ``snapshot``'s group: the leader of the generation
    the coordinator stored last, once the group is Stable in that generation (its described
    members are the stored ones). ``Unsettled`` while it is not; a FaultError (final) when the
    group has no leader member by its protocol."""
    g = snapshot.group_id
    if snapshot.group_type == "consumer":
        raise FaultError(
            f"target group-leader:{g}: group {g} uses KIP-848's consumer rebalance protocol "
            "(group.protocol=consumer), where the group coordinator computes the assignment and no "
            "member is the group's leader; use members:<group>[:<n>] or client:<id>"
        )
    if snapshot.group_type not in ("classic", ""):
        raise FaultError(
            f"target group-leader:{g}: group {g} is a {snapshot.group_type} group, without a leader member"
        )
    if snapshot.state != "Stable":
        raise Unsettled(f"group {g} is {snapshot.state or 'unknown to its coordinator'}, not Stable")
    if snapshot.leader is None:
        raise Unsettled(f"the coordinator of group {g} has stored no generation with a leader")
    if snapshot.stored_members != frozenset(snapshot.members) or snapshot.leader not in snapshot.members:
        raise Unsettled(
            f"group {g}'s stored generation {snapshot.generation} (members {sorted(snapshot.stored_members)}) "
            f"is not the one described (members {sorted(snapshot.members)})"
        )
    return snapshot.members[snapshot.leader]


class GroupView(Protocol):
    """Answers ``group-leader``: what the group's coordinator says of ``group`` now."""

    def group(self, group: str) -> GroupSnapshot: ...


_VIEW: list[GroupView] = []  # the registered view (one at a time: one run's cluster)
_VIEW_LOCK = threading.Lock()


@contextmanager
def group_view(view: GroupView) -> Iterator[GroupView]:
    """Register ``view`` for ``group-leader`` while the block runs (the runner does, for its
    cluster): client faults are resolved on the injector's thread without a cluster of their own."""
    with _VIEW_LOCK:
        _VIEW.append(view)
    try:
        yield view
    finally:
        with _VIEW_LOCK:
            _VIEW.remove(view)


@runtime_checkable
class GroupTypes(Protocol):
    """Says what type a group is now (ListGroups, KIP-848: ``classic``, ``consumer``)."""

    def group_type(self, group: str) -> str: ...


def group_type(group: str, want: str | None = None, timeout_s: float = 15.0) -> str | None:
    """``group``'s type as its coordinator lists it now, asked of the registered view
    (:func:`group_view`); with ``want``, asked again until it says so or ``timeout_s`` has passed
    (then what it said last: the history records it, the suite judges it). None when no view that
    answers it is registered (a run without a cluster of its own, a unit test)."""
    with _VIEW_LOCK:
        view = _VIEW[-1] if _VIEW else None
    if not isinstance(view, GroupTypes):
        return None
    seen: list[str] = []

    def answered() -> bool:
        seen[:] = [view.group_type(group)]
        return want is None or seen[0] == want

    try:
        wait_until(answered, timeout_s, f"group {group} is a {want} group", interval=0.5)
    except WaitTimeout:
        pass  # what it said last is the answer, recorded as it is
    return seen[0] if seen else None


def _running() -> list[WorkerInfo]:
    """The live workers not killed by a fault: a killed one not started again is no member to
    count or pick."""
    return [w.info for w in live_workers() if not w.killed_by]


def _leader(target: ClientTarget, view: GroupView | None, timeout_s: float) -> str:
    if view is None:
        with _VIEW_LOCK:
            view = _VIEW[-1] if _VIEW else None
    if view is None:
        raise FaultError(
            f"target {target} asks the group's coordinator: no cluster registered (faults.clients.group_view)"
        )
    group = str(target.arg)
    last: list[Unsettled] = []

    def settled() -> str | None:
        try:
            leader = group_leader(view.group(group))
            running = select(target, _running())
            if leader not in running:  # e.g. a killed leader the group has not noticed yet
                raise Unsettled(
                    f"the coordinator names {leader} the leader, not a running worker of the group "
                    f"(running: {', '.join(running) or 'none'})"
                )
            return leader
        except Unsettled as exc:
            last[:] = [exc]
            return None

    try:
        return wait_until(settled, timeout_s, f"group {group} has a settled leader", interval=0.5)
    except WaitTimeout as exc:
        why = str(last[0]) if last else str(exc)
        raise FaultError(f"target {target}: no leader after {timeout_s:g}s: {why}") from None


def resolve(target: ClientTarget, view: GroupView | None = None, timeout_s: float = LEADER_WAIT_S) -> tuple[str, ...]:
    """The client ids ``target`` names now; a FaultError when it names no live worker.
    ``group-leader`` asks ``view`` (default: the registered one, :func:`group_view`)."""
    dynamic = target.what in (TargetKind.MEMBERS, TargetKind.GROUP_LEADER)
    ids = select(target, _running() if dynamic else (w.info for w in live_workers()))
    if ids and target.what is TargetKind.GROUP_LEADER:
        ids = [_leader(target, view, timeout_s)]
    if not ids:
        running = ", ".join(sorted({w.info.client_id for w in live_workers()})) or "none"
        raise FaultError(f"target {target} names no running client worker (running: {running})")
    return tuple(ids)


def _workers(ids: Sequence[str]) -> list[WorkerProcess]:
    wanted = set(ids)
    return [w for w in live_workers() if w.info.client_id in wanted]


def kill(ids: Sequence[str], why: str) -> None:
    for w in _workers(ids):
        w.crash(f"killed by the fault {why}")


def freeze(ids: Sequence[str]) -> None:
    for w in _workers(ids):
        w.freeze()


def thaw(ids: Sequence[str]) -> None:
    for w in _workers(ids):
        if w.frozen:
            w.thaw()


def thaw_all() -> None:
    """SIGCONT every frozen worker (heal-all: whatever an interrupted run left frozen)."""
    for w in live_workers():
        if w.frozen:
            w.thaw()


def relaunch_refusal(workers: Iterable[WorkerInfo], relaunch: Relaunch, kafka_version: str) -> str | None:
    """Why ``workers`` cannot restart on what ``relaunch`` asks (one line), or None when they can:
    another group protocol is for group members only, and on it the client at the version it
    restarts on and Kafka ``kafka_version`` must have that protocol (``group_protocol_refusal``)."""
    for w in workers:
        name, _, version = w.client.partition(" ")
        after = relaunch.version or version
        protocol = relaunch.group_protocol
        if protocol is not None and (w.role != "consumer" or w.group_id is None):
            what = "a producer" if w.role == "producer" else f"a {w.role} outside a group (assign mode)"
            return f"client-restart --group-protocol: {w.client_id} is {what}; only a group member has a group protocol"
        protocol = protocol or w.group_protocol
        if protocol is not None:
            refused = group_protocol_refusal(name, after, kafka_version, protocol)
            if refused is not None:
                return f"client-restart of {w.client_id} onto {name} {after} ({protocol} protocol) refused: {refused}"
    return None


def infos(ids: Sequence[str]) -> dict[str, WorkerInfo]:
    """The running workers of ``ids``, by client id (what a restart is about to replace)."""
    return {w.info.client_id: w.info for w in _workers(ids) if not w.killed_by}


def restart(ids: Sequence[str], timeout_s: float = 60.0, relaunch: Relaunch | None = None) -> dict[str, WorkerInfo]:
    """Ask the owners of ``ids`` to start them again (on what ``relaunch`` asks, if given), wait
    until each runs a new worker, and return the new workers' infos by client id."""
    before = {w.pid for w in _workers(ids)}
    for client_id in ids:
        request_restart(client_id, relaunch)

    def back() -> bool:
        running = {w.info.client_id for w in live_workers() if w.pid not in before and not w.killed_by}
        return set(ids) <= running

    wait_until(back, timeout_s, f"client workers {', '.join(ids)} started again by their workloads")
    return {w.info.client_id: w.info for w in live_workers() if w.pid not in before and w.info.client_id in ids}
