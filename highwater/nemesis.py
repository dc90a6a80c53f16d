"""Nemeses for ``highwater.runner.execute_run``: callables ``(injector, cluster, spec)`` that
inject faults during the workload window. Waiting inside them is a fault's *duration* or a gap
of the schedule — time is the point here, not a condition to poll for.

The nemeses built here declare the fault kinds they may apply (``fault_kinds``, see
``faults.capability.DeclaresFaults``), so a fault the backend cannot apply (a cut on a backend
without link control) is refused before the run starts, not halfway through it."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from highwater.core.checks.bounds import Bound, required_window_ms
from highwater.faults.capability import check_capabilities
from highwater.faults.inject import ActiveFault, Injector
from highwater.faults.schedule import Schedule
from highwater.faults.spec import FaultKind, parse_fault
from highwater.harness.backend import ClusterBackend
from highwater.run_spec import RunSpec

log = logging.getLogger(__name__)


def hold(seconds: float) -> None:
    """Keep a fault in place (or a gap between faults) for ``seconds``."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.25))


@dataclass(frozen=True)
class Step:
    after: float  # seconds of calm before the fault
    fault: str  # e.g. "kill --target leader:{topic}/0"; {topic} is the run's topic, {leader} and
    # {follower} the leader of partition 0 and its lowest-id follower when the fault starts,
    # {txn} producer-0's transactional id and {group} the consumers' group, {copier_txn}
    # copier-0's transactional id and {copy_group} the copiers' group, {client_to} the client
    # version steps restart workers on (RunSpec)
    duration: float  # seconds the fault stays before it is healed
    #: False: the fault comes ``after`` seconds after the previous step's heal (each step alone);
    #: True: ``after`` seconds after the previous step's fault was applied, while it is still on
    #: (e.g. a finalization while the active controller is down); each is healed at its own time
    during: bool = False

    @property
    def kind(self) -> FaultKind:
        """The fault's kind, known before its placeholders are filled in."""
        return FaultKind.parse(self.fault.split(maxsplit=1)[0])


def tail_seconds(bounds: Mapping[str, Bound]) -> float:
    """Workload after the last heal: the progress bound with its margin (the after-heal phase
    of progress must fit in the run)."""
    return math.ceil(required_window_ms(bounds["progress_bound_ms"].ms) / 1000)


def shortest_window(bounds: Mapping[str, Bound]) -> float:
    """The shortest fault window every timed check can judge whatever the fault's kind: the
    longest stall bound (a hanging fault's) plus its margin, in whole seconds. Seeded schedules
    and a shrink's shortened windows stay at or above it, so a verdict can say no, not unknown."""
    longest = max(
        bounds[name].ms for name in ("consumer_stall_hang_bound_ms", "follower_fetch_bound_ms", "isr_leave_bound_ms")
    )
    return math.ceil(required_window_ms(longest) / 1000)


def workload_seconds(base: float, steps: Sequence[Step], bounds: Mapping[str, Bound]) -> float:
    """A scripted run's workload: at least ``base``; with steps, at least their calms and holds
    plus ``tail_seconds`` after the last heal, so the timed checks can judge the time after it."""
    if not steps:
        return base
    return max(base, sum(s.after + s.duration for s in steps) + tail_seconds(bounds))


@dataclass(frozen=True)
class PlannedNemesis:
    """A nemesis that declares the fault kinds it may apply (checked before the run starts)."""

    fault_kinds: tuple[FaultKind, ...]
    play: Callable[[Injector, ClusterBackend, RunSpec], None]
    #: the nemesis as data for the run manifest (``core.manifest.NemesisRecord`` JSON), so a
    #: run can be replayed: ``{"kind": "scripted", "steps": [...]}`` or ``{"kind": "scheduled",
    #: "schedule": {...}}``; None: code only (recorded as ``custom``, not replayable)
    record: Mapping[str, Any] | None = None

    def check(self, backend: ClusterBackend) -> None:
        """One-line ``CapabilityError`` if ``backend`` cannot apply one of the kinds."""
        check_capabilities(backend, self.fault_kinds)

    def __call__(self, injector: Injector, cluster: ClusterBackend, spec: RunSpec) -> None:
        self.check(cluster)  # the runner checked already; a direct call is checked here
        self.play(injector, cluster, spec)


def scripted(steps: Sequence[Step]) -> PlannedNemesis:
    """Apply each step's fault after its calm, hold it, heal it; in order. A step ``during`` the
    one before starts while that one is on; the faults still on are healed, each at its time, before
    a step that is not ``during`` begins its calm (``Step``)."""

    def run(injector: Injector, cluster: ClusterBackend, spec: RunSpec) -> None:
        on: list[tuple[float, ActiveFault]] = []  # (when it is due to be healed, the fault)
        applied_at = time.monotonic()

        def heal_due(until: float | None) -> None:
            """Heal, each at its time, the faults due before ``until`` (None: all of them)."""
            for due, fault in sorted(on, key=lambda x: x[0]):
                if until is not None and due > until:
                    break
                hold(due - time.monotonic())
                injector.heal(fault)
                on.remove((due, fault))

        for step in steps:
            if step.during:
                start = applied_at + step.after
                heal_due(start)
            else:
                heal_due(None)
                start = time.monotonic() + step.after
            hold(start - time.monotonic())
            state = cluster.partition_state(spec.topic, 0, offsets=False)
            follower = min((r for r in state.replicas if r != state.leader), default=-1)
            fault = injector.apply(parse_fault(fill(step.fault, spec, state.leader, follower)))
            applied_at = time.monotonic()
            on.append((applied_at + step.duration, fault))
        heal_due(None)

    return PlannedNemesis(
        tuple(dict.fromkeys(s.kind for s in steps)),
        run,
        {"kind": "scripted", "steps": [step_record(s) for s in steps]},
    )


def fill(fault: str, spec: RunSpec, leader: int = -1, follower: int = -1) -> str:
    """A step's fault with its placeholders filled (``Step``): the run's names, and partition
    0's leader and a follower as they are when the step begins (-1 before the run)."""
    return fault.format(
        topic=spec.topic,
        leader=leader,
        follower=follower,
        txn=spec.transactional_id(0),
        group=spec.group_id() or "",
        share_group=spec.share_group_id() or "",
        copier_txn=spec.copier_transactional_id(0),
        copy_group=spec.copy_group(),
        client_to=spec.client_to or "",
    )


def step_record(step: Step) -> dict[str, Any]:
    """A step as ``run.json`` records it (``core.manifest.ScriptedStep``)."""
    out: dict[str, Any] = {"after": step.after, "fault": step.fault, "duration": step.duration}
    if step.during:
        out["during"] = True
    return out


def scheduled(schedule: Schedule) -> PlannedNemesis:
    """Play a seeded schedule: every fault at its start, healed at its end. A fault that cannot
    be applied when its time comes (no leader right now, ...) is skipped; the injector records
    it in the history as a ``fault`` event of type ``fail`` with the reason."""

    def run(injector: Injector, cluster: ClusterBackend, spec: RunSpec) -> None:
        t0 = time.monotonic()
        active: dict[int, ActiveFault] = {}
        for at, what, sf in schedule.events():
            hold(at - (time.monotonic() - t0))
            if what == "fault":
                try:
                    active[sf.id] = injector.apply(sf.spec)
                except Exception as exc:  # noqa: BLE001 - recorded by the injector; the schedule goes on
                    log.warning("fault %s skipped: %s", sf.spec, exc)
            elif sf.id in active:
                injector.heal(active.pop(sf.id))

    return PlannedNemesis(
        tuple(dict.fromkeys(sf.spec.kind for sf in schedule.faults)),
        run,
        {"kind": "scheduled", "schedule": schedule.to_dict()},
    )
