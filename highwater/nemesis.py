"""Nemeses for ``highwater.runner.execute_run``: callables ``(injector, cluster, spec)`` that
inject faults during the workload window. Waiting inside them is a fault's *duration* or a gap
of the schedule — time is the point here, not a condition to poll for."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Sequence

from faults.inject import Injector
from faults.schedule import Schedule
from faults.spec import parse_fault
from harness.cluster import Cluster
from highwater.runner import Nemesis, RunSpec

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
    # {follower} the leader of partition 0 and its lowest-id follower when the fault starts
    duration: float  # seconds the fault stays before it is healed


def scripted(steps: Sequence[Step]) -> Nemesis:
    """Apply each step's fault after its calm, hold it, heal it; in order."""
    def run(injector: Injector, cluster: Cluster, spec: RunSpec) -> None:
        for step in steps:
            hold(step.after)
            state = cluster.partition_state(spec.topic, 0, offsets=False)
            follower = min((r for r in state.replicas if r != state.leader), default=-1)
            text = step.fault.format(topic=spec.topic, leader=state.leader, follower=follower)
            fault = injector.apply(parse_fault(text))
            hold(step.duration)
            injector.heal(fault)
    return run


def scheduled(schedule: Schedule) -> Nemesis:
    """Play a seeded schedule: every fault at its start, healed at its end."""
    def run(injector: Injector, cluster: Cluster, spec: RunSpec) -> None:
        t0 = time.monotonic()
        active = {}
        for at, what, sf in schedule.events():
            hold(at - (time.monotonic() - t0))
            if what == "fault":
                try:
                    active[sf.id] = injector.apply(sf.spec)
                except Exception as exc:  # noqa: BLE001 - a fault that cannot apply now is skipped
                    log.warning("fault %s skipped: %s", sf.spec, exc)
            elif sf.id in active:
                injector.heal(active.pop(sf.id))
    return run
