"""``rebalance-barrier``: a consumer-protocol group member whose assignment did not change stopped
consuming while records of its partitions waited.

KIP-848's consumer protocol has no group-wide barrier: the group coordinator moves only the
partitions that change owner (the old owner acknowledges each revocation in a heartbeat, then
the new owner gets it), and every other member keeps fetching through another member's death,
freeze, join or leave. The classic protocol promises no such thing: an eager rebalance revokes
every member's partitions at the JoinGroup and gives them back at the SyncGroup, so all members
wait for the slowest to rejoin. The check therefore judges consumer-protocol groups only; the
same stalls are measured for both protocols (``unchanged_stalls``, ``group-measures.json``).

A *stall* of member M is the time between two of M's polls that returned records, counted
from when a record was waiting: from the later of the first poll and the first acknowledgement,
after it, of a record on a partition M held (``waiting_ms``). It is judged when

- M's assignment did not change across it: M held the same partitions at both polls (an
  eager re-assignment of the same set counts as unchanged), and none was ``lost`` in between
  (a fenced member rejoins: its assignment changed even if it gets the same partitions back);
- no fault on M was open during it, nor within ``member_fence_grace_ms`` before it (a frozen or
  killed member rejoins; that is not another member's rebalance);
- no fault on a broker or a link was open during it, nor within ``progress_bound_ms`` before
  it: those stalls are ``progress``'s and ``follower-fetch``'s to judge.

- M ran the consumer protocol over the whole of it (``group_cols.member_protocols``: a group
  migrated online from the classic protocol, member by member, judges each member from its
  restart on ``consumer``; KIP-848 makes no exception for a group that still holds classic
  members, whose rebalances move only the partitions they give up or take).

Anomaly: a judged stall longer than ``member_stall_bound_ms`` (``core.checks.bounds``).
Not applicable without a group, or when no member ever ran the consumer protocol. Counted:
``gaps_judged`` (gaps between two polls of a member whose assignment held, with a record
waiting), ``stalls_over_fetch_wait``, ``longest_waiting_ms``, ``violations``, and of those
``violations_while_mixed`` (another member ran the classic protocol when the stall began).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from highwater.core.checks.data import OK, HistoryData, distinct
from highwater.core.checks.group_cols import group_members, member_protocols, protocol_over
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict
from highwater.core.checks.windows import MS, bound_ns, fault_windows

CHECK = "rebalance-barrier"


@dataclass(frozen=True)
class Stall:
    """A judged stall of a member whose assignment held (module doc)."""

    member: str
    first_poll: int  # ns
    next_poll: int  # ns
    rows: tuple[int, int]  # the two polls' events
    waiting_ms: int
    partitions: tuple[tuple[str, int], ...]
    #: the protocol the member ran over the whole stall (None: it moved to another within it)
    protocol: str | None = None
    #: another member of the group ran another protocol when it began (a mixed group)
    mixed: bool = False


def _held(h: HistoryData, proc: int) -> list[tuple[int, int, int]]:
    """The member's assignment changes in time order: (time, +1 assign / -1 revoke / -2 lost, tp)."""
    pos = h.positions
    sel = np.nonzero((pos.proc == proc) & (pos.assign == 1) & (pos.tp >= 0))[0]
    out = [(int(pos.time[i]), 1, int(pos.tp[i])) for i in sel.tolist()]
    out += [(r.time, -2 if r.lost else -1, r.tp) for r in h.revocations if r.proc == proc and r.tp >= 0]
    return sorted(out)


def _held_at(changes: list[tuple[int, int, int]], t: int) -> frozenset[int]:
    held: set[int] = set()
    for when, what, tp in changes:
        if when > t:
            break
        if what > 0:
            held.add(tp)
        else:
            held.discard(tp)
    return frozenset(held)


def unchanged_stalls(h: HistoryData, over_ms: int = 0) -> list[Stall]:
    """Every stall (waiting longer than ``over_ms``; 0: every gap in which a record waited) of a
    group member whose assignment held, outside the faults that excuse it (module doc), for
    either protocol."""
    members = group_members(h)
    if not members:
        return []
    protocols = member_protocols(h)
    windows = fault_windows(h)
    grace, after_fault = bound_ns(h, "member_fence_grace_ms"), bound_ns(h, "progress_bound_ms")
    world = [(w.start, w.until(h.end_time) + after_fault) for w in windows if not w.on_clients]
    s = h.sends
    ok = s.type == OK
    acks = {tp: np.sort(s.time[ok & (s.tp == tp)]) for tp in distinct(s.tp[ok]).tolist() if tp >= 0}
    p = h.polls
    out: list[Stall] = []
    for proc in members:
        name = h.proc_name(proc)
        own = [(w.start, w.until(h.end_time) + grace) for w in windows if w.on_clients and name in map(str, w.targets)]
        excused = own + world
        changes = _held(h, proc)
        lost = [when for when, what, _ in changes if what == -2]
        mine = p.proc == proc
        times, first = np.unique(p.time[mine], return_index=True)
        rows = p.row[mine][first].tolist()
        for i, (a, b) in enumerate(zip(times[:-1].tolist(), times[1:].tolist())):
            if b - a <= over_ms * MS or any(s0 <= b and e0 >= a for s0, e0 in excused):
                continue
            held = _held_at(changes, a)
            if not held or held != _held_at(changes, b) or any(a < t <= b for t in lost):
                continue
            firsts = [
                int(acks[tp][j]) for tp in held if tp in acks for j in [bisect_right(acks[tp], a)] if j < len(acks[tp])
            ]
            if not firsts:
                continue
            waited = (b - max(a, min(firsts))) // MS
            if waited >= 0 and (not over_ms or waited > over_ms):
                parts = tuple(sorted(tp for tp in (h.tp_name(x) for x in held) if tp is not None))
                ran = protocol_over(protocols[name], a, b)
                others = {protocol_over(c, a, a) for m, c in protocols.items() if m != name}
                mixed = any(o != ran for o in others)
                out.append(Stall(name, a, b, (int(rows[i]), int(rows[i + 1])), int(waited), parts, ran, mixed))
    return out


def rebalance_barrier(h: HistoryData) -> Verdict:
    """rebalance-barrier (module doc)."""
    protocol = str(h.config.get("group_protocol") or "classic")
    if not group_members(h):
        return Verdict(CHECK, NOT_APPLICABLE, notes=["not applicable: no consumer group in this history"])
    if not any(p == "consumer" for changes in member_protocols(h).values() for _, p in changes):
        return Verdict(
            CHECK,
            NOT_APPLICABLE,
            notes=[
                f"not applicable: the group runs the {protocol} protocol, whose rebalances may stop every member"
                " (measured as unchanged-member stalls in group-measures.json)"
            ],
        )
    bound = bound_ns(h, "member_stall_bound_ms") // MS
    fetch_wait = int(h.config.get("consumer_fetch_max_wait_ms") or 500)
    gaps = [g for g in unchanged_stalls(h) if g.protocol == "consumer"]
    stalls = [g for g in gaps if g.waiting_ms > fetch_wait]
    bad = [st for st in stalls if st.waiting_ms > bound]
    examples = [
        {
            "member": st.member,
            "from_s": round(st.first_poll / 1e9, 3),
            "to_s": round(st.next_poll / 1e9, 3),
            "waiting_ms": st.waiting_ms,
            "bound_ms": bound,
            "partitions": [f"{t}/{p}" for t, p in st.partitions],
            "events": h.events(list(st.rows)),
        }
        for st in sorted(bad, key=lambda x: -x.waiting_ms)[:MAX_EXAMPLES]
    ]
    return Verdict(
        CHECK,
        not bad,
        counts={
            "gaps_judged": len(gaps),
            "stalls_over_fetch_wait": len(stalls),
            "longest_waiting_ms": max((g.waiting_ms for g in gaps), default=0),
            "violations": len(bad),
            "violations_while_mixed": sum(st.mixed for st in bad),
        },
        examples=examples,
        notes=[f"member_stall_bound_ms = {bound} ms"],
    )
