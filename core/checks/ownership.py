"""``exclusive-read``: a consumer group's partition read by two of its members at once.

Both group protocols promise that a partition has one owner at a time. Classic: at a rebalance the
old owner gives the partition up (eager: everything, at the JoinGroup; cooperative: what moves,
before it is assigned again) and the new owner gets it in the SyncGroup answer. KIP-848's
consumer protocol: the group coordinator assigns a partition to its new owner only once the old
owner has acknowledged its revocation in a heartbeat, or has been fenced. The one way a partition
is read twice at once is that last case seen from the fenced member: a member the coordinator
fenced (its session expired while it was frozen, cut off, or its coordinator moved) does not know
it until its next heartbeat is answered, and meanwhile may still return records it fetched. So
the rule, the same for both protocols, is:

- a member's *assignment* of a partition is its latest position change on it (``assign`` for a
  rebalance, ``seek``/reset: every one follows an assignment);
- a poll by member X that returns records of partition p is *stale* when another member Y of the
  group was assigned p after X's assignment of p and has returned records of p since (Y took p
  over, and X never got it back);
- a stale poll is *allowed* when a fault window was open at Y's assignment that could have fenced
  X unawares (any broker or network fault; a client fault only if it targets X) and the poll came
  no later than ``member_fence_grace_ms`` after that window closed (``core.checks.bounds``).

Counted: ``polls_judged`` (member polls with records of a group's partition), ``takeovers``
(polls by a member that took a partition over from another), ``stale_polls``, ``allowed_stale``
(stale polls within the allowance), ``violations``. Not applicable without a group.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from highwater.core.checks.data import HistoryData, member
from highwater.core.checks.groups import group_of
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict
from highwater.core.checks.windows import MS, Window, bound_ns, fault_windows

CHECK = "exclusive-read"


@dataclass(frozen=True)
class _Poll:
    row: int
    time: int
    proc: int
    first: int  # the lowest offset of the partition this poll returned
    last: int


def _polls_by_tp(h: HistoryData, procs: list[int]) -> tuple[dict[int, list[_Poll]], dict[int, int]]:
    """Per partition, the polls of ``procs`` that returned records of it, in file order, one
    per poll (its lowest and highest offset of the partition); of the partitions only one
    process read, only the number of polls (none of them can be stale: no one took over)."""
    p = h.polls
    sel = np.nonzero(member(p.proc, procs) & (p.tp >= 0))[0]
    order = sel[np.lexsort((sel, p.row[sel], p.tp[sel]))]  # by partition, then row, then place
    tp, row = p.tp[order], p.row[order]
    new = np.ones(len(order), bool)
    new[1:] = (tp[1:] != tp[:-1]) | (row[1:] != row[:-1])
    starts = np.nonzero(new)[0]
    if not len(starts):
        return {}, {}
    first = np.minimum.reduceat(p.offset[order], starts)
    last = np.maximum.reduceat(p.offset[order], starts)
    at = order[starts]  # each poll's first record
    cuts = np.nonzero(np.diff(tp[starts]))[0] + 1
    out: dict[int, list[_Poll]] = {}
    single: dict[int, int] = {}
    for part in np.split(np.arange(len(starts)), cuts):
        k = int(tp[starts[part[0]]])
        procs_here = p.proc[at[part]]
        if (procs_here == procs_here[0]).all():
            single[k] = len(part)
            continue
        out[k] = [
            _Poll(*x)
            for x in zip(
                p.row[at[part]].tolist(),
                p.time[at[part]].tolist(),
                procs_here.tolist(),
                first[part].tolist(),
                last[part].tolist(),
            )
        ]
    return out, single


def _assignments(h: HistoryData, proc: int, tp: int) -> tuple[list[int], list[int]]:
    """(times, rows) of ``proc``'s position changes on ``tp`` (or on all its partitions), by time."""
    pos = h.positions
    sel = np.nonzero((pos.proc == proc) & ((pos.tp == tp) | (pos.tp == -1)))[0]
    pairs = sorted((int(pos.time[i]), int(pos.row[i])) for i in sel.tolist())
    return [t for t, _ in pairs], [r for _, r in pairs]


def _could_fence(w: Window, member: str, at: int, end_time: int) -> bool:
    """Whether window ``w`` was open at ``at`` and could have fenced ``member`` unawares."""
    if not w.start <= at <= w.until(end_time):
        return False
    return not w.on_clients or member in {str(t) for t in w.targets}


def exclusive_read(h: HistoryData) -> Verdict:
    """exclusive-read: see the module doc."""
    procs_by_group: dict[str, list[int]] = {}
    for i, name in enumerate(h.processes):
        g = group_of(h.config, name)
        if g is not None:
            procs_by_group.setdefault(g, []).append(i)
    if not procs_by_group:
        return Verdict(CHECK, NOT_APPLICABLE, notes=["no consumer group in config.consumers"])
    grace = bound_ns(h, "member_fence_grace_ms")
    windows = fault_windows(h)
    counts = {"polls_judged": 0, "takeovers": 0, "stale_polls": 0, "allowed_stale": 0, "violations": 0}
    examples: list[dict[str, object]] = []
    for group, procs in sorted(procs_by_group.items()):
        by_tp, single = _polls_by_tp(h, procs)
        counts["polls_judged"] += sum(single.values())  # one reader: every poll judged, none stale
        for tp in range(len(h.tps)):
            polls = by_tp.get(tp, [])
            if not polls:
                continue
            assigned = {x: _assignments(h, x, tp) for x in {q.proc for q in polls}}
            # per member: (its assignment time, the row of that assignment) at its latest poll
            reading: dict[int, tuple[int, int]] = {}
            for q in polls:
                counts["polls_judged"] += 1
                times, rows = assigned[q.proc]
                k = bisect_right(times, q.time)
                mine = (times[k - 1], rows[k - 1]) if k else (-1, -1)
                newer = [(y, a) for y, a in reading.items() if y != q.proc and a[0] > mine[0]]
                if q.proc not in reading or reading[q.proc][0] != mine[0]:
                    counts["takeovers"] += 1 if any(y != q.proc for y in reading) else 0
                reading[q.proc] = mine
                if not newer:
                    continue
                counts["stale_polls"] += 1
                other, (taken, taken_row) = max(newer, key=lambda ya: ya[1][0])
                member = h.proc_name(q.proc)
                fencing = [w for w in windows if _could_fence(w, member, taken, h.end_time)]
                if any(q.time <= w.until(h.end_time) + grace for w in fencing):
                    counts["allowed_stale"] += 1
                    continue
                counts["violations"] += 1
                if len(examples) < MAX_EXAMPLES:
                    topic, partition = h.tps[tp]
                    examples.append(
                        {
                            "kind": "read-by-two-members",
                            "group": group,
                            "topic": topic,
                            "partition": partition,
                            "consumer": member,
                            "offsets": [q.first, q.last],
                            "assigned_ms": mine[0] // MS if mine[0] >= 0 else None,
                            "taken_over_by": h.proc_name(other),
                            "taken_over_ms": taken // MS,
                            "fault_windows_open": len(fencing),
                            "events": h.events([r for r in (mine[1], taken_row, q.row) if r >= 0]),
                        }
                    )
    valid = counts["violations"] == 0
    notes = [] if counts["polls_judged"] else ["no member of a group returned a record"]
    return Verdict(CHECK, valid if counts["polls_judged"] else NOT_APPLICABLE, counts, examples, notes)
