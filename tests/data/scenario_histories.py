"""A small generator of clean histories for the conformance scenarios (``suites.scenario.PLANS``),
as a healthy Kafka and client would produce them, for the broken-twin tests
(``tests/unit/test_broken_twins.py``): the twins are these histories mutated the way each
scenario's promise would break.

The model, on a 100 ms tick: brokers 1-3 in racks a-c, consumer-i in rack i (reads every
partition, ``client.rack`` set), the leader of partition p is broker p % 3 + 1, one acks=all send
per partition and tick while the partition has a leader, observer ``meta`` every
``observe_interval``. A fault on broker b (the plan's steps, with {follower} = 2 and
{leader:.../p} = p's leader) takes b out of the ISR after LEAVE_S (or elects a new leader after
ELECT_S when b leads); a consumer whose replica is faulted gets nothing until its replica has
left the ISR (or the new leader is elected) plus MOVE_S, then reads from the leader; after the
heal b rejoins after REJOIN_S and its rack's consumer returns to it RETURN_S later. These
delays are well inside the plan's bounds (seconds), as on a healthy cluster.

Events carry the header config a real run of the plan records (the same settings and
bounds), so the checks judge them with the scenario's own bounds.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from highwater.core.checks.bounds import header_entries
from highwater.core.checks.upgrade import RELEASE_STEPS
from highwater.suites.scenario import Plan
from tests.synth.histories import HistoryBuilder

TICK_MS = 100
LEAVE_S = 5.0  # a cut-off / killed / slowed follower leaves the ISR
ELECT_S = 4.5  # a faulted leader is replaced
MOVE_S = 2.0  # a consumer moves to the leader once its replica is out
REJOIN_S = 2.0  # a healed broker is back in the ISR
RETURN_S = 3.0  # its rack's consumer fetches from it again
BATCH = 50  # records per poll at most
RACKS = {
    "brokers": {"1": "rack-a", "2": "rack-b", "3": "rack-c"},
    "clients": {"consumer-0": "rack-a", "consumer-1": "rack-b", "consumer-2": "rack-c"},
}
TOPIC = "t"


@dataclass
class Generated:
    """A generated history and what the twins need to know about it."""

    builder: HistoryBuilder
    plan: Plan
    partitions: int
    faults: list[dict[str, Any]] = field(default_factory=list)  # {"broker", "start", "end" (ns), "kind"}

    @property
    def header(self) -> dict[str, Any]:
        return self.builder.header

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.builder.events


def _fault_target(text: str, leaders: dict[int, int]) -> tuple[str, int, dict[str, Any]]:
    """(kind, broker, params as the injector records them) of a step's fault text."""
    words = text.split()
    kind = words[0]
    target = words[words.index("--target") + 1]
    if target.startswith("leader:"):
        broker = leaders[int(target.rsplit("/", 1)[1])]
    elif target == "broker:{follower}":
        broker = 2
    elif target == "controller":  # the active controller: kafka-1 on a generated run
        broker = 1
    else:
        broker = int(target.split(":")[1])
    params: dict[str, Any] = {}
    if kind in ("cut", "timeout", "latency"):
        peer = "--peer" in words
        flow = "--flow" in words
        params = {
            "peer": "broker:1" if peer else None,
            "cuts_off": [broker] if kind in ("cut", "timeout") and not peer and not flow else [],
        }
        if kind == "latency":
            params["latency"] = 8000
    return kind, broker, params


def generate(plan: Plan, *, partitions: int = 1, profile_seconds: float = 20.0) -> Generated:
    settings = plan.settings()
    config = {
        "acks": "all",
        "idempotence": plan.idempotence,
        "unclean_leader_election": False,
        "min_insync_replicas": 2,
        "replication_factor": 3,
        **header_entries(settings),
    }
    b = HistoryBuilder(config, step_ms=0, racks=RACKS, suite=plan.suite, scenario=plan.scenario)
    b.header["config"] = config  # exactly what a run records (no builder defaults)
    gen = Generated(b, plan, partitions)
    S = 1_000_000_000
    leaders = {p: p % 3 + 1 for p in range(partitions)}
    epochs = {p: 0 for p in range(partitions)}
    isr = {p: {1, 2, 3} for p in range(partitions)}
    hw = {p: 0 for p in range(partitions)}
    pos = {(c, p): 0 for c in range(3) for p in range(partitions)}
    moved_at: dict[tuple[int, int], float] = {}  # consumer may read from the leader from then on
    return_at: dict[tuple[int, int], float] = {}  # consumer may read from its rack replica again from then
    faulted: dict[int, str] = {}  # broker -> kind
    timers: list[tuple[float, str, int]] = []  # (time s, what, broker)
    # the schedule: (time s, "fault"/"heal", step)
    sched: list[tuple[float, str, Any]] = []
    t = applied = 0.0  # the last heal, the last fault (highwater.nemesis.scripted)
    for step in plan.steps:
        start = (applied if step.during else t) + step.after
        sched.append((start, "fault", step))
        sched.append((start + step.duration, "heal", step))
        applied, t = start, max(t, start + step.duration)
    end = plan.duration(profile_seconds)
    observe = settings.observe_interval_ms / 1000
    for p in range(partitions):
        b.meta(TOPIC, p, leader=leaders[p], isr=sorted(isr[p]), hw=0, epoch=0)
    for c in range(3):
        for p in range(partitions):
            b.assign(f"consumer-{c}", TOPIC, p, 0)
    active: dict[int, tuple[str, int, dict[str, Any]]] = {}
    stopped: set[int] = set()  # consumers a client fault holds down
    next_obs = observe
    ticks = int(end * 1000 / TICK_MS)
    for k in range(1, ticks + 1):
        now = k * TICK_MS / 1000
        b.now = int(now * S)
        for at, what, step in [x for x in sched if x[0] <= now]:
            sched.remove((at, what, step))
            if step.kind.value in RELEASE_STEPS:  # no broker is out for the window: it only records
                _release_step(b, what, step)
                continue
            if "--target store" in step.fault:  # the tiered remote store: no broker is out, it only records
                value = {"kind": step.kind.value, "targets": ["remote-store"], "params": {}, "id": step.kind.value}
                b.event("nemesis", "invoke", what, value)
                b.event("nemesis", "ok", what, value)
                continue
            if step.kind.is_client:  # consumers down for the window: they read nothing meanwhile
                who = _client_targets(step.fault)
                if what == "fault":
                    stopped.update(who)
                else:
                    stopped.difference_update(who)
                _client_nemesis(b, what, step.kind.value, who)
                continue
            if what == "fault":
                kind, broker, params = _fault_target(step.fault, leaders)
                active[id(step)] = (kind, broker, params)
                faulted[broker] = kind
                _nemesis(b, "fault", kind, broker, params)
                gen.faults.append({"broker": broker, "kind": kind, "start": b.now, "end": None})
                for p in range(partitions):
                    if leaders[p] == broker:
                        timers.append((now + ELECT_S, "elect", broker))
                    elif broker in isr[p]:
                        timers.append((now + LEAVE_S, "leave", broker))
            else:
                kind, broker, params = active.pop(id(step))
                faulted.pop(broker, None)
                _nemesis(b, "heal", kind, broker, params)
                gen.faults[-1]["end"] = b.now
                timers.append((now + REJOIN_S, "rejoin", broker))
        for at, what, broker in sorted(x for x in timers if x[0] <= now):
            timers.remove((at, what, broker))
            for p in range(partitions):
                if what == "leave" and broker in isr[p] and leaders[p] != broker:
                    isr[p].discard(broker)
                    moved_at[(broker - 1, p)] = now + MOVE_S
                elif what == "elect" and leaders[p] == broker:
                    isr[p].discard(broker)
                    leaders[p] = min(isr[p])
                    epochs[p] += 1
                    for c in range(3):
                        moved_at[(c, p)] = now + MOVE_S
                elif what == "rejoin" and broker not in isr[p]:
                    isr[p].add(broker)
                    return_at[(broker - 1, p)] = now + RETURN_S
        for p in range(partitions):
            if leaders[p] not in faulted:
                o = hw[p]
                b.send("producer-0", TOPIC, p, f"p{p}-{o}", offset=o)
                hw[p] = o + 1
        for c in range(3):
            if c in stopped:
                continue
            rb = c + 1
            for p in range(partitions):
                replica = _route(c, rb, p, now, leaders, isr, faulted, moved_at, return_at)
                if replica is None or pos[(c, p)] >= hw[p]:
                    continue
                lo, hi = pos[(c, p)], min(hw[p], pos[(c, p)] + BATCH)
                b.poll(
                    f"consumer-{c}",
                    [(TOPIC, p, o, f"p{p}-{o}") for o in range(lo, hi)],
                    replica=replica,
                    epoch=epochs[p],
                )
                pos[(c, p)] = hi
        if now + 1e-9 >= next_obs:
            next_obs += observe
            for p in range(partitions):
                b.meta(TOPIC, p, leader=leaders[p], isr=sorted(isr[p]), hw=hw[p], epoch=epochs[p])
    b.advance(TICK_MS)
    for p in range(partitions):
        for r in (1, 2, 3):
            b.final(TOPIC, p, r, hw[p], [(o, f"p{p}-{o}") for o in range(hw[p])])
    return gen


#: what a release step observes before and after it on a generated run (``faults.release``): one
#: topic, the cluster id and metadata.version, all kept
KEPT = {"cluster_id": "c", "topics": {TOPIC: {"id": "t-id", "partitions": 3}}, "features": {"metadata.version": 21}}


def _release_step(b: HistoryBuilder, f: str, step: Any) -> None:
    """A roll or finalize as the injector records it: its ``ok`` says what it observed (and a
    roll, which nodes it moved: the one it names, or all three)."""
    kind = step.kind.value
    one = re.search(r"--target broker:(\d)", step.fault)
    targets = [f"kafka-{one.group(1)}"] if one else ["kafka-1", "kafka-2", "kafka-3"]
    value: dict[str, Any] = {"kind": kind, "targets": targets, "params": {}, "id": kind}
    b.event("nemesis", "invoke", f, value)
    if f == "fault":
        value = {**value, "observed": {"before": copy.deepcopy(KEPT), "after": copy.deepcopy(KEPT)}}
        if kind == "roll":
            value["releases"] = {n: {"from": "a", "to": "b", "back_s": 2.5} for n in targets}
        if kind == "finalize":
            value["finalized"] = {"feature": "metadata.version", "asked": 21, "from": 21, "to": 21}
    b.event("nemesis", "ok", f, value)


def _client_targets(text: str) -> set[int]:
    """The consumers (by index) a client fault names: ``consumers`` or ``client:consumer-N``."""
    target = text.split("--target ", 1)[1].split()[0]
    return {0, 1, 2} if target == "consumers" else {int(target.rsplit("-", 1)[1])}


def _client_nemesis(b: HistoryBuilder, f: str, kind: str, consumers: set[int]) -> None:
    """A client fault or heal as the injector records it (its targets are client ids)."""
    value = {"kind": kind, "targets": [f"consumer-{c}" for c in sorted(consumers)], "params": {}, "id": kind}
    b.event("nemesis", "invoke", f, value)
    b.event("nemesis", "ok", f, value)


def _nemesis(b: HistoryBuilder, f: str, kind: str, broker: int, params: dict[str, Any]) -> None:
    """A fault or heal as the injector records it: invoke, then ok, with the same value."""
    value = {"kind": kind, "targets": [f"kafka-{broker}"], "params": dict(params), "id": f"{kind}-{broker}"}
    b.event("nemesis", "invoke", f, value)
    b.event("nemesis", "ok", f, value)


def _route(
    c: int,
    rb: int,
    p: int,
    now: float,
    leaders: dict[int, int],
    isr: dict[int, set[int]],
    faulted: dict[int, str],
    moved_at: dict[tuple[int, int], float],
    return_at: dict[tuple[int, int], float],
) -> int | None:
    """The replica consumer c reads partition p from now, or None (it is stalled)."""
    back = now >= return_at.get((c, p), 0.0)
    if rb in isr[p] and back and (rb == leaders[p] or now >= return_at.get((c, p), 0.0)):
        return None if rb in faulted else rb
    if now < moved_at.get((c, p), 0.0):
        return None
    leader = leaders[p]
    return None if leader in faulted else leader
