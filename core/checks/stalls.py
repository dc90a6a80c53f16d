"""Consumer stalls during and after fault windows: what ``follower-fetch`` and ``progress``
measure and judge (``core.checks.liveness``).

**Stalls.** For a consumer and a partition it was reading, a *stall* is a time without a
polled record of that partition while records of it were acknowledged that it had not read:
between two polls (or a phase's edges) a and b, the stall is b minus the first acknowledgement
in [a, b) of an offset above the highest the consumer had read by a (a consumer often returns a
record before its producer hears the ack; that ack leaves nothing to read). To a
read_committed consumer a transaction's write is acknowledged, for this, at its transaction's
``ok`` commit (never, if it did not commit), and any write no sooner than every transaction with
a record below it on the partition has ended (the last stable offset passed it:
``core.checks.raw.lso_readable``; a transaction left open by a fenced coordinator holds the
records above it); a read_uncommitted consumer reads up to the high watermark, so to it every
write is owed from its ack. follower-fetch
and progress measure the longest stall of each consumer and partition during each fault
(``phase: "fault"``, from the fault to its heal) and after each heal (``phase: "after-heal"``,
``progress_bound_ms`` long) and report it in the same shape:

* ``counts["longest_stall_ms"]``: the longest of them all (0 when nothing was acknowledged);
* after the violation examples, up to ``MAX_EXAMPLES`` examples of kind ``"longest-stall"``,
  one per consumer and partition (longest first): ``consumer``, ``topic``, ``partition``,
  ``window`` (``{"index", "kind", "phase", "start_ns", "end_ns"}``), ``stall_ms``,
  ``from_time_ns``, ``to_time_ns``, ``bound_ms`` (the bound that judges it) and the fault event.

**Group members.** A consumer in a group (``config.consumers.<name>.group``, subscribe mode)
reads a partition only while it owns it: once another member of its group is positioned on
the partition (an ``assign``/``seek`` there after its own), a phase that starts later is not
its stall (e.g. a member cut off from its coordinator is evicted and its partition moves; until
it rejoins it owns nothing, whatever it believes), and a phase during which the partition moves
to another member ends, for the previous owner, at the move, as an incomplete phase (after a
heal, a member that loses the partition before it polled it again cannot be said to have
stalled; the new owner's reads are judged by rebalance-skip). Consumers without a group are
judged on every partition they read.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from highwater.core.checks.bounds import stall_bound_name
from highwater.core.checks.data import OK, HistoryData, MetaObs, cached, distinct
from highwater.core.checks.derived import example
from highwater.core.checks.raw import lso_readable
from highwater.core.checks.txn import read_committed
from highwater.core.checks.verdict import MAX_EXAMPLES
from highwater.core.checks.windows import MS, Window, bound_ns, fault_windows


def meta_by_tp(h: HistoryData) -> dict[int, list[MetaObs]]:
    out: dict[int, list[MetaObs]] = defaultdict(list)
    for m in h.meta:
        if m.tp >= 0 and m.isr is not None:
            out[m.tp].append(m)
    return out


# -- stalls ----------------------------------------------------------------------------------


def longest_stall(polls: np.ndarray, acks: np.ndarray, t0: int, t1: int) -> tuple[int, int, int]:
    """(stall, from, to) in ns: the longest time in [t0, t1] without a poll (``polls``, sorted
    times) while a record was acknowledged (``acks``, sorted times): between consecutive polls
    (or the edges) a and b, b minus the first acknowledgement in [a, b). (0, t0, t0) if none."""
    if t1 <= t0 or not len(acks):
        return 0, t0, t0
    inner = polls[(polls > t0) & (polls < t1)]
    edges = np.concatenate([[t0], inner, [t1]]).astype(np.int64)
    a, b = edges[:-1], edges[1:]
    i = np.searchsorted(acks, a, "left")
    has = i < len(acks)
    first = np.where(has, acks[np.minimum(i, len(acks) - 1)], b)
    stall = np.where(has & (first < b), b - first, 0)
    k = int(np.argmax(stall))
    return int(stall[k]), int(first[k]) if stall[k] else t0, int(b[k]) if stall[k] else t0


@dataclass
class Stall:
    """The longest stall of one consumer and partition in one phase of one fault window."""

    window: int  # index into fault_windows(h)
    phase: str  # "fault" or "after-heal"
    proc: int
    tp: int
    start: int  # the phase
    end: int
    stall: int  # ns
    t_from: int
    t_to: int
    acked: bool  # records of the partition were acknowledged during the phase
    polled: bool  # fault: it polled the partition in the phase; after-heal: within the bound of `owed`
    complete: bool  # the history covers the whole phase (after-heal: up to `owed` plus the bound)
    owed: int | None = None  # the first ack in the phase of a record it had not read (ns)


Series = dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]


def _series(h: HistoryData) -> tuple[Series, Series]:
    """Per (consumer, partition): the times of its polls that returned records of the partition
    and the highest offset it had read by each; per (whether the reader is read_committed,
    partition): when each write became readable to such a reader, and its offset, by time: to a
    read_uncommitted reader its ack; to a read_committed one, a transaction's write from its
    transaction's ``ok`` commit (never if it did not commit), and any write no sooner than the
    last stable offset passed it (``core.checks.raw.lso_readable``)."""
    if "stall_series" not in h.cache:
        p, s = h.polls, h.sends
        polls: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        if len(p.tp):
            key = (p.proc.astype(np.int64) << 32) | p.tp.astype(np.int64)
            o = np.lexsort((p.time, key))
            ks, ts, offs = key[o], p.time[o].astype(np.int64), p.offset[o].astype(np.int64)
            cuts = np.nonzero(np.diff(ks))[0] + 1
            for part_k, part_t, part_o in zip(np.split(ks, cuts), np.split(ts, cuts), np.split(offs, cuts)):
                k = int(part_k[0])
                times, last = distinct(part_t), np.maximum.accumulate(part_o)
                # the highest offset read by each distinct poll time (the last record of that time)
                upto = last[np.searchsorted(part_t, times, "right") - 1]
                polls[(k >> 32, k & 0xFFFFFFFF)] = (times, upto)
        okm = (s.type == OK) & (s.tp >= 0)
        # a read_uncommitted consumer reads up to the high watermark, which an acknowledged
        # (acks=all) write is below, whatever its transaction does; a read_committed one up to
        # the last stable offset
        acked = s.time.astype(np.int64)
        committed = lso_readable(h)
        acks: Series = {}
        for rc, avail in ((False, acked), (True, acked if committed is None else committed)):
            ok = okm & (avail >= 0)
            for tp in distinct(s.tp[ok]):
                m = ok & (s.tp == tp)
                o = np.argsort(avail[m], kind="stable")
                acks[(int(rc), int(tp))] = (avail[m][o], s.offset[m][o].astype(np.int64))
        h.cache["stall_series"] = (polls, acks)
    return h.cache["stall_series"]


def readable_acks(h: HistoryData, acks: Series, proc: int, tp: int) -> tuple[np.ndarray, np.ndarray]:
    """When each write of ``tp`` became readable to consumer ``proc`` (by its isolation level),
    and its offset, by time."""
    rc = cached(h, "read_committed", read_committed)[proc]
    return acks.get((int(rc), tp), (np.zeros(0, np.int64), np.zeros(0, np.int64)))


def owed_times(h: HistoryData, proc: int, tp: int) -> np.ndarray:
    """The times, sorted, at which records of ``tp`` became readable to consumer ``proc``."""
    return readable_acks(h, _series(h)[1], proc, tp)[0]


def unread_acks(
    poll_times: np.ndarray, read_upto: np.ndarray, ack_times: np.ndarray, ack_offsets: np.ndarray
) -> np.ndarray:
    """The times of the acknowledgements whose record the consumer had not read yet when the ack
    came: a consumer may return a record before its producer hears the ack (the HW moved first),
    and such an ack is nothing left to read. An ack of unknown offset (-1) counts as unread."""
    i = np.searchsorted(poll_times, ack_times, "right") - 1
    read = np.where(i >= 0, read_upto[np.maximum(i, 0)], -1)
    return ack_times[(ack_offsets < 0) | (ack_offsets > read)]


def fault_stall_outcome(h: HistoryData, w: Window, x: Stall) -> tuple[str | None, int]:
    """How follower-fetch and progress judge one stall during fault window ``w`` against the
    window's stall bound S, and S: ``None`` when the history ended inside a window no longer than
    S (not a scripted window: not counted), ``"short"`` when the window is not longer than S
    (unjudged: a stall cannot show in it), else ``"stalled"`` (longer than S) or ``"ok"``."""
    S = window_stall_bound(h, w)
    if x.end - x.start <= S:
        return ("short" if x.complete else None), S
    return ("stalled" if x.stall > S else "ok"), S


def stall_fields(h: HistoryData, w: Window, x: Stall, S: int) -> dict[str, Any]:
    """The example fields of a stall longer than its window's bound S."""
    return {
        "consumer": h.proc_name(x.proc),
        "fault": w.kind,
        "stall_ms": x.stall // MS,
        "bound_ms": S // MS,
        "window_ms": (x.end - x.start) // MS,
    }


def member_moves(h: HistoryData) -> Any:
    """``moved(proc, tp, t)``: True when ``proc`` is in a group and, before ``t``, another member
    of its group was positioned on ``tp`` after ``proc`` itself last was (module doc); and
    ``moves_at(proc, tp, t)``: the first time from ``t`` on that another member of ``proc``'s
    group is positioned on ``tp`` (None: never, or ``proc`` is in no group)."""
    consumers = h.config.get("consumers") or {}
    group = {
        i: g for i, name in enumerate(h.processes) if isinstance(g := (consumers.get(name) or {}).get("group"), str)
    }
    pos = h.positions
    moves: dict[int, list[tuple[int, int]]] = defaultdict(list)  # tp -> (time, proc), by time
    for t, proc, tp in sorted(zip(pos.time.tolist(), pos.proc.tolist(), pos.tp.tolist())):
        if tp >= 0 and int(proc) in group:
            moves[int(tp)].append((int(t), int(proc)))

    def moved(proc: int, tp: int, t: int) -> bool:
        g = group.get(proc)
        if g is None:
            return False
        last = None
        for when, who in moves.get(tp, ()):
            if when >= t:
                break
            if group.get(who) == g:
                last = who
        return last is not None and last != proc

    def moves_at(proc: int, tp: int, t: int) -> int | None:
        g = group.get(proc)
        if g is None:
            return None
        return next(
            (when for when, who in moves.get(tp, ()) if when >= t and who != proc and group.get(who) == g), None
        )

    return moved, moves_at


def window_stalls(h: HistoryData) -> list[Stall]:
    """The longest stall of every consumer and partition it was reading (it polled a record of
    it before the window), during every fault window and after every heal (``progress_bound_ms``);
    after a heal also ``owed``, its first unread ack there, and whether it polled the partition
    within ``progress_bound_ms`` of that ack.
    Copiers of an exactly-once copy (``config.consumers.<name>.copier``) have none: between two
    polls a copier waits on its transaction's calls, whose timeouts are the workload's
    (``harness.workload.copy``), not a fetch's, so the consumer bounds do not apply to them."""
    if "stalls" in h.cache:
        return h.cache["stalls"]
    polls, acks = _series(h)
    consumers = h.config.get("consumers") or {}
    polls = {k: v for k, v in polls.items() if not (consumers.get(h.proc_name(k[0])) or {}).get("copier")}
    after = bound_ns(h, "progress_bound_ms")
    moved, moves_at = member_moves(h)  # a group member is not judged on a partition that moved away
    out: list[Stall] = []
    # per consumer and partition, not per window: its ack times and the acks it had not read yet
    unread: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    wins = fault_windows(h)
    for wi, w in enumerate(wins):
        phases = [("fault", w.start, w.end if w.end is not None else h.end_time, w.end is not None)]
        if w.end is not None and not held_at_heal(h, wins, w):
            # (another fault still on at this heal may hold the reads up: the after-heal promise
            # is that one's, judged at its own heal)
            phases.append(("after-heal", w.end, min(w.end + after, h.end_time), h.end_time >= w.end + after))
        for (proc, tp), (pt, upto) in polls.items():
            if not len(pt) or pt[0] >= w.start:
                continue
            if (proc, tp) not in unread:
                a_t, a_off = readable_acks(h, acks, proc, tp)
                unread[(proc, tp)] = (a_t, unread_acks(pt, upto, a_t, a_off))
            a_t, at = unread[(proc, tp)]
            for phase, t0, t1, complete in phases:
                if moved(proc, tp, t0):
                    continue  # the partition is another member's now
                away = moves_at(proc, tp, t0)
                if away is not None and away < t1:
                    t1, complete = away, False  # judged while it owned the partition, no longer
                in_acks = at[(at >= t0) & (at < t1)]
                st, fr, to = longest_stall(pt, in_acks, t0, t1)
                polled = bool(np.any((pt > t0) & (pt <= t1)))
                acked = bool(np.any((a_t >= t0) & (a_t < t1)))  # anything acknowledged, read or not
                owed = int(in_acks[0]) if len(in_acks) else None
                if phase == "after-heal" and owed is not None:
                    # owed a read from its first unread ack on, for as long as after a heal: an
                    # ack late in the phase is not owed by the phase's end, and acks of records
                    # it had read already (a commit heard late) owe nothing
                    horizon = owed + after
                    polled = bool(np.any((pt > owed) & (pt <= horizon)))
                    # a fault that begins before the horizon may hold the read up (held_at_heal's
                    # twin): a read not made by then is owed after that one's heal, judged there
                    complete = (
                        h.end_time >= horizon
                        and (away is None or away >= horizon)
                        and not fault_begins_between(wins, w, owed, horizon)
                    )
                out.append(Stall(wi, phase, proc, tp, t0, t1, st, fr, to, acked, polled, complete, owed))
    h.cache["stalls"] = out
    return out


def held_at_heal(h: HistoryData, wins: list[Window], w: Window) -> bool:
    """Another fault window is still on when ``w`` is healed: what is owed after ``w``'s heal is
    owed after that one's instead (a consumer back from its own restart while the tiered store
    still fails cannot read what is only in the store)."""
    assert w.end is not None
    return any(o is not w and o.start <= w.end < o.until(h.end_time) for o in wins)


def fault_begins_between(wins: list[Window], w: Window, t0: int, t1: int) -> bool:
    """A fault window other than ``w`` begins in (``t0``, ``t1``): a read owed after ``w``'s heal
    and not made before it is owed after that window's heal instead."""
    return any(o is not w and t0 < o.start < t1 for o in wins)


def held_until(h: HistoryData, wins: list[Window], w: Window, broker: int) -> int | None:
    """When ``broker`` is free of every other fault on it from ``w``'s heal on: ``w``'s heal
    done, or the end of a chain of other windows on that broker each still on when the one
    before it closed (a broker still killed when a finalize that overlapped its kill is over);
    None when one of them is never healed."""
    assert w.end is not None
    t = w.back or w.end
    while True:
        holding = [o for o in wins if o is not w and broker in o.brokers and o.start <= t < o.until(h.end_time)]
        if not holding:
            return t
        if any(o.back is None for o in holding):
            return None
        t = max(o.back for o in holding if o.back is not None)


def stall_summary(h: HistoryData, stalls: list[Stall], bound_of: Any) -> tuple[int, list[dict[str, Any]]]:
    """counts["longest_stall_ms"] and the "longest-stall" examples (see the module doc)."""
    wins = fault_windows(h)
    best: dict[tuple[int, int], Stall] = {}
    for s in stalls:
        k = (s.proc, s.tp)
        if s.stall and (k not in best or s.stall > best[k].stall):
            best[k] = s
    longest = max((s.stall for s in stalls), default=0) // MS
    ranked = sorted((s for s in best.values() if s.stall), key=lambda s: -s.stall)[:MAX_EXAMPLES]
    exs = []
    for s in ranked:
        w = wins[s.window]
        exs.append(
            example(
                h,
                "longest-stall",
                [w.row if s.phase == "fault" else (w.heal_row or w.row)],
                tp=s.tp,
                consumer=h.proc_name(s.proc),
                window={"index": s.window, "kind": w.kind, "phase": s.phase, "start_ns": s.start, "end_ns": s.end},
                stall_ms=s.stall // MS,
                from_time_ns=s.t_from,
                to_time_ns=s.t_to,
                bound_ms=bound_of(w, s) // MS,
            )
        )
    return int(longest), exs


def window_stall_bound(h: HistoryData, w: Window) -> int:
    """The consumer stall bound of fault window ``w`` (ns): the hanging one for pause/timeout."""
    return bound_ns(h, stall_bound_name(w.kind))
