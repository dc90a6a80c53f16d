"""Checks that need time bounds: follower-fetch, isr-stability, progress.

Every bound comes from ``core.checks.bounds``: derived from the settings the header's
``config`` records (``replica.lag.time.max.ms``, session timeout, the consumer's
``metadata.max.age.ms`` and ``fetch.max.wait.ms``, ...) plus a stated slack, unless the header
states the bound itself (``<name>`` in ms). The formulas are in that module's docstring and in
the header's ``config.bounds``.

Racks come from the header: ``"racks": {"brokers": {"1": "rack-a", ...},
"clients": {"consumer-0": "rack-a", ...}}``.

A stall longer than its bound during a fault is a violation (a stall as long as a fault window
that is longer than the bound always is); a window not longer than the bound cannot show one
and is unjudged (the verdict is unknown, never valid).

Fault windows are ``core.checks.windows``'s, stalls ``core.checks.stalls``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from highwater.core.checks.data import OK, HistoryData, MetaObs, distinct
from highwater.core.checks.derived import ROW_SHIFT, example
from highwater.core.checks.quorum import disturbed, lost_until, voters
from highwater.core.checks.stalls import (
    Stall,
    fault_stall_outcome,
    held_at_heal,
    held_until,
    longest_stall,
    member_moves,
    meta_by_tp,
    owed_times,
    stall_fields,
    stall_summary,
    window_stall_bound,
    window_stalls,
)
from highwater.core.checks.verdict import MAX_EXAMPLES, UNKNOWN, Verdict, decide
from highwater.core.checks.windows import (
    MS,
    Window,
    bound_ns,
    bounds,
    busy,
    fault_windows,
)

# -- follower-fetch ---------------------------------------------------------------------------


def follower_fetch(h: HistoryData) -> Verdict:
    """KIP-392 with ``client.rack`` set (header racks). Bounds (``core.checks.bounds``):
    G = ``follower_fetch_grace_ms`` = consumer metadata.max.age + fetch.max.wait + slack;
    F = ``follower_fetch_bound_ms`` (the same sum); S = ``consumer_stall_bound_ms`` =
    max(1.5·replica.lag.time.max, session timeout + heartbeat) + F (plus the consumer's
    request.timeout for pause/timeout faults: ``consumer_stall_hang_bound_ms``).

    (a) *Routing*: while an in-sync replica is in the consumer's rack (latest meta observation),
    every polled record is served (``replica``) by a broker of that rack, once the rack's ISR
    membership and the consumer are older than G and no fault has been on for G, nor a heal of
    everything (the run's end) done within G (a killed
    replica stays in the ISR until fenced): one count per record served from another rack.
    (b) *Moving*: when the observer sees a rack lose its last in-sync replica at t, a consumer of
    that rack that was reading the partition polls a record served by an in-sync replica (or
    by another rack) within F, judged when records became readable to it in (t, t + F] (the
    ack; a transaction's commit; for read_committed, once the last stable offset passed them:
    ``core.checks.stalls``); the loss
    happened between the observer's previous look at the partition and t, and if that span
    meets a fault window that heals before t + F the move is unjudged (records after a heal do
    not show that the consumer moved; a frozen broker holds the observer's requests, so a loss
    of the window may first be seen after its heal); a group member is judged only on a
    partition it still owns at t, and until the group gives it to another member (unjudged if
    that comes first): one count per consumer that did not move.
    (c) *Stalls*: during a fault window that cuts off a broker, or in which the observer sees a
    broker leave the ISR, each consumer of that broker's rack that was reading a partition must
    not stall (see the module doc) longer than S; a window not longer than S is unjudged.
    Reports ``longest_stall_ms`` and the ``longest-stall`` examples (module doc)."""
    racks = h.header.get("racks") or {}
    brokers = {int(k): v for k, v in (racks.get("brokers") or {}).items()}
    clients = dict(racks.get("clients") or {})
    if not brokers or not clients:
        return Verdict(
            "follower-fetch", UNKNOWN, {"misrouted": 0}, notes=["header has no racks.brokers / racks.clients"]
        )
    names = sorted(set(brokers.values()) | set(clients.values()))
    rid = {r: i for i, r in enumerate(names)}
    broker_rack = np.full(max(brokers) + 2, -1, np.int64)
    for b, r in brokers.items():
        broker_rack[b] = rid[r]
    proc_rack = np.array([rid.get(clients.get(p), -1) for p in h.processes] or [-1], np.int64)
    grace = bound_ns(h, "follower_fetch_grace_ms")
    bound = bound_ns(h, "follower_fetch_bound_ms")
    wins = fault_windows(h)

    # meta rows: rack bitmask of the ISR, and since when each rack has been continuously in it
    meta = sorted((m for m in h.meta if m.tp >= 0 and m.isr is not None), key=lambda m: (m.tp, m.row))
    nr = len(names)
    mkeys = np.array([(m.tp << ROW_SHIFT) | m.row for m in meta], np.int64)
    mmask = np.zeros(len(meta), np.int64)
    since = np.zeros((len(meta), max(nr, 1)), np.int64)
    losses: list[tuple[int, int, int, int, int]] = []  # (tp, rack, time, row, time of the look before)
    left: list[tuple[int, int]] = []  # (time, broker) a broker observed leaving an ISR
    for i, m in enumerate(meta):
        mask = 0
        for b in m.isr or ():
            r = int(broker_rack[b]) if 0 <= b < len(broker_rack) else -1
            if r >= 0:
                mask |= 1 << r
        mmask[i] = mask
        same = i > 0 and meta[i - 1].tp == m.tp
        if same:
            left += [(m.time, b) for b in (meta[i - 1].isr or frozenset()) - (m.isr or frozenset())]
        for r in range(nr):
            had = same and (mmask[i - 1] >> r) & 1
            since[i, r] = since[i - 1, r] if had and (mask >> r) & 1 else m.time
            if had and not (mask >> r) & 1:
                losses.append((m.tp, r, m.time, m.row, meta[i - 1].time))

    p = h.polls
    crack = proc_rack[p.proc] if len(p.proc) else np.zeros(0, np.int64)
    usable = (p.replica >= 0) & (crack >= 0)
    j = np.searchsorted(mkeys, (p.tp.astype(np.int64) << ROW_SHIFT) | p.row) - 1
    jc = np.maximum(j, 0)
    has_meta = (j >= 0) & ((mkeys[jc] >> ROW_SHIFT) == p.tp if len(mkeys) else False)
    cr = np.maximum(crack, 0)
    local = has_meta & ((mmask[jc] >> cr) & 1 == 1) if len(mkeys) else np.zeros(len(p.tp), bool)
    start = np.maximum(since[jc, cr] if len(mkeys) else 0, h.proc_first_time[p.proc] if len(p.proc) else 0)
    settled = (p.time - start) > grace
    rep = np.minimum(np.maximum(p.replica, 0), len(broker_rack) - 1)
    served = np.where(p.replica < len(broker_rack), broker_rack[rep], -1)
    # While a fault is on (and for ``grace`` after it heals) routing is in flux: a dead or cut
    # replica stays in the ISR until the controller notices, so only calm records are judged.
    calm = np.ones(len(p.tp), bool)
    for w in wins:
        end = np.iinfo(np.int64).max if w.end is None else w.end + grace
        calm &= ~((p.time >= w.start) & (p.time <= end))
    # a heal of everything (the run's end, ``Injector.heal_all``) resets and verifies every link,
    # which can close a consumer's connection to its replica: routing is in flux for ``grace``
    # after it too (a Java consumer read one record from the leader 0.1 s after one, CI 2026-11-26)
    for ev in h.faults:
        if ev.type == "heal" and ev.kind == "all":
            calm &= ~((p.time >= ev.time) & (p.time <= ev.time + grace))
    judged = usable & local & settled & calm
    bad = judged & (served != crack)
    examples = [
        example(
            h,
            "served-by-other-rack",
            [p.row[i], meta[jc[i]].row],
            tp=int(p.tp[i]),
            consumer=h.proc_name(int(p.proc[i])),
            consumer_rack=names[crack[i]],
            replica=int(p.replica[i]),
            isr=sorted(meta[jc[i]].isr or ()),
        )
        for i in np.nonzero(bad)[0][:MAX_EXAMPLES]
    ]

    def add(kind: str, rows: list[int], tp: int, **kw: Any) -> None:
        if len(examples) < MAX_EXAMPLES:
            examples.append(example(h, kind, rows, tp=tp, **kw))

    # (b) moving on after the rack's replica left the ISR: a record from an in-sync replica
    # (or another rack; a record whose replica is unknown counts too)
    moved_rec = (served != crack) | local | (p.replica < 0)
    stalls = moves = moves_unjudged = 0
    ck = (p.proc.astype(np.int64) << 24) | p.tp
    o = np.lexsort((p.time, ck))
    ck_s, t_s, mv_s = ck[o], p.time[o], moved_rec[o]
    moved_away, moves_at = member_moves(h)  # a group member is judged only on what it owns
    for tp, r, t, row, before in losses:
        inside = [w for w in wins if w.start <= t and (w.end is None or before <= w.end)]
        for c in np.nonzero(proc_rack == r)[0]:
            key = (int(c) << 24) | tp
            lo, hi = np.searchsorted(ck_s, key, "left"), np.searchsorted(ck_s, key, "right")
            times, mv = t_s[lo:hi], mv_s[lo:hi]
            if len(times) == 0 or times[0] > t or h.end_time < t + bound or moved_away(int(c), tp, t):
                continue
            owed = owed_times(h, int(c), tp)  # readable to it: committed, below the LSO
            if not np.any((owed > t) & (owed < t + bound)):
                continue
            if any(w.end is not None and w.end < t + bound for w in inside):
                moves_unjudged += 1  # the heal comes first: what follows it proves nothing
                continue
            moved_in = (times > t) & (times <= t + bound) & mv
            away = moves_at(int(c), tp, t)
            if away is not None and away < t + bound and not np.any(moved_in & (times <= away)):
                moves_unjudged += 1  # the group gave the partition to another member first
                continue
            moves += 1
            if not np.any(moved_in):
                stalls += 1
                add("no-move-after-isr-loss", [row], tp, consumer=h.processes[c], rack=names[r], bound_ms=bound // MS)

    # (c) stalls of the consumers of a rack whose replica a fault cut off / took out of the ISR
    win_stalls = win_judged = win_unjudged = 0
    affected_racks: dict[int, set[int]] = {}
    for wi, w in enumerate(wins):
        end = w.end if w.end is not None else h.end_time
        gone = set(w.cut) | {b for t, b in left if w.start <= t <= end}
        affected_racks[wi] = {int(broker_rack[b]) for b in gone if 0 <= b < len(broker_rack) and broker_rack[b] >= 0}
    all_stalls = window_stalls(h)
    mine = [
        x
        for x in all_stalls
        if x.window in affected_racks and 0 <= x.proc < len(proc_rack) and proc_rack[x.proc] in affected_racks[x.window]
    ]
    for x in mine:
        if x.phase != "fault" or not x.acked:
            continue
        w = wins[x.window]
        outcome, S = fault_stall_outcome(h, w, x)
        if outcome is None:
            continue
        if outcome == "short":
            win_unjudged += 1
            continue
        win_judged += 1
        if outcome == "stalled":
            win_stalls += 1
            add("rack-consumer-stalled-during-fault", [w.row, w.heal_row or w.row], x.tp, **stall_fields(h, w, x, S))
    longest, stall_examples = stall_summary(
        h, mine, lambda w, s: window_stall_bound(h, w) if s.phase == "fault" else bound_ns(h, "progress_bound_ms")
    )
    examples += stall_examples
    n_bad = int(bad.sum()) + stalls + win_stalls
    counts = {
        "misrouted": int(bad.sum()),
        "stalls": stalls,
        "window_stalls": win_stalls,
        "records_judged": int(judged.sum()),
        "moves_judged": moves,
        "moves_unjudged": moves_unjudged,
        "windows_judged": win_judged,
        "windows_unjudged": win_unjudged,
        "records_without_replica": int((p.replica < 0).sum()),
        "longest_stall_ms": longest,
    }
    notes = []
    if moves_unjudged or win_unjudged:
        notes.append(
            f"{moves_unjudged} move(s) and {win_unjudged} consumer window(s) unjudged: the fault "
            f"healed before follower_fetch_bound_ms ({bound // MS} ms) after the ISR loss, or the "
            f"window was not longer than the consumer stall bound"
        )
    return Verdict(
        "follower-fetch",
        decide(n_bad, counts["records_judged"] + moves + win_judged, moves_unjudged + win_unjudged),
        counts,
        examples,
        notes,
    )


# -- isr-stability ----------------------------------------------------------------------------


def stale_isr_claim(m: MetaObs, nxt: MetaObs | None, rb: int, leader: int | None) -> bool:
    """Observation ``m`` names replica ``rb`` in the ISR, yet the leader's HW is past ``rb``'s log
    end offset, which the next observation ``nxt`` finds unchanged: a leader's HW never passes the
    LEO of a replica in its (maximal) ISR (Kafka's ``Partition.maybeIncrementLeaderHW``), so the
    controller had removed ``rb`` by then and ``m``'s ISR came from a stale metadata image (a
    broker cut off from the controller answers with the image it had, as HW-8's does). The same
    leader throughout; an LEO still moving, or no next observation, proves nothing."""
    if leader is None or m.leader != leader or m.hw is None or nxt is None:
        return False
    end, end_next = dict(m.leo).get(rb), dict(nxt.leo).get(rb)
    return end is not None and end_next == end and m.hw > end


def isr_stability(h: HistoryData) -> Verdict:
    """Bounds: leave = ``isr_leave_bound_ms`` = max(1.5·replica.lag.time.max, session timeout
    + heartbeat) + observe interval + slack; ``isr_slack_ms`` = leave − replica.lag.time.max;
    rejoin = ``isr_rejoin_bound_ms`` = replica.socket.timeout + replica.lag.time.max + observe
    interval + slack (``core.checks.bounds``).

    (a) With no fault active (nor healed less than ``isr_slack_ms`` ago), no replica leaves
    the ISR of a partition between two meta observations (KAFKA-4485: a follower that keeps up
    stays in). (b) A follower cut off by a fault (not the leader, leader not cut off) leaves the
    ISR within leave: a violation is the first observation after the bound (still inside the
    window) showing it in the ISR, with no earlier one showing it out; with no observation
    after the bound, or the first one showing it out, it is unjudged unless an observation
    within the bound already showed it out; an observation naming it in the ISR while the
    leader's HW is past its frozen log end (``stale_isr_claim``: a stale metadata image) shows it out
    by the time it was written. A window not longer than leave is unjudged for it. (c) It, and
    any replica the observer saw leave the ISR during the fault (a slowed follower, a killed
    leader), is back in the ISR within rejoin after the heal is done (the heal's ``ok``: a
    killed broker has restarted), unless another fault on that replica's broker begins before
    then (unjudged); when another fault on its broker is still on at that heal (a finalize done
    while the replica's broker is still killed), the rejoin is owed from the end of that one
    instead (``stalls.held_until``). One count per replica and event; windows without
    observations are unjudged.

    The controller quorum (``core.checks.quorum``) commits every ISR change: a bound of (b) or
    (c) in which the quorum was lost runs from the end of that loss instead (no quorum, no
    promise, as after a power loss of most voters; ``without_quorum`` counts those left
    unjudged by it), and (b)'s and (c)'s bounds grow by ``controller_failover_ms`` when a
    voters' controller link was broken from the fault's start to the end of the leave or the
    rejoin span (the controller may fail over first, and a new controller fences a cut-off
    broker only a session timeout after it takes over)."""
    wins = fault_windows(h)
    slack = bound_ns(h, "isr_slack_ms")
    leave = bound_ns(h, "isr_leave_bound_ms")
    rejoin = bound_ns(h, "isr_rejoin_bound_ms")
    failover = bound_ns(h, "controller_failover_ms")
    quorum = voters(h)
    no_quorum = 0
    by_tp = meta_by_tp(h)
    if not by_tp:
        return Verdict("isr-stability", UNKNOWN, {"violations": 0}, notes=["no meta observation with an ISR"])
    shrunk = stayed = no_rejoin = judged = unjudged = short = 0
    examples: list[dict[str, Any]] = []

    def add(kind: str, rows: list[int], tp: int, **kw: Any) -> None:
        if len(examples) < MAX_EXAMPLES:
            examples.append(example(h, kind, rows, tp=tp, **kw))

    def rejoin_deadline(back: int, start: int) -> tuple[int, int | None]:
        """The rejoin deadline of a return owed from ``back`` after a window that began at
        ``start``, and the end of the quorum loss it waited for (None: none)."""
        bound = rejoin
        if disturbed(h, wins, quorum, start, back + rejoin):
            bound += failover  # a controller failover may come before the expansion
        lost = lost_until(h, wins, quorum, back, back + bound)
        return (back if lost is None else max(back, lost)) + bound, lost

    nexts = {id(a): b for obs in by_tp.values() for a, b in zip(obs, obs[1:])}

    def stale(m: MetaObs, rb: int, leader: int | None) -> bool:
        return stale_isr_claim(m, nexts.get(id(m)), rb, leader)

    for tp, obs in by_tp.items():
        for a, b in zip(obs, obs[1:]):
            if busy(wins, a.time, b.time, slack):
                continue
            judged += 1
            gone = sorted((a.isr or frozenset()) - (b.isr or frozenset()))
            if gone:
                shrunk += len(gone)
                add("shrunk-while-quiet", [a.row, b.row], tp, replicas=gone)
    for w in wins:
        # (b) for the cut-off followers; (c) also for a replica that left without being cut. A
        # bound runs from when the quorum could commit: after a loss of it, from its end. The
        # deadlines are the window's, the same for every partition and replica
        # a fault that breaks a voter's controller links may make the controller fail over
        # first: a new controller fences a cut-off broker only a session timeout after it
        # takes over (the hunt's seed 2340: the cut-off follower was the active controller)
        leave_w = leave + (failover if disturbed(h, wins, quorum, w.start, w.start + leave) else 0)
        lost_leave = lost_until(h, wins, quorum, w.start, w.start + leave_w)
        leave_by = (w.start if lost_leave is None else max(w.start, lost_leave)) + leave_w
        deadlines: dict[int, tuple[int, int | None]] = {}  # by the instant a return is owed from
        for tp, obs in by_tp.items():
            before = [m for m in obs if m.time <= w.start]
            if not before:
                continue
            m0 = before[-1]
            end = w.end if w.end is not None else h.end_time
            during = [m0, *(m for m in obs if w.start < m.time <= end)]
            left = set().union(*((a.isr or frozenset()) - (b.isr or frozenset()) for a, b in zip(during, during[1:])))
            cut = set() if m0.leader is None or m0.leader in w.cut else (m0.isr or frozenset()) & w.cut - {m0.leader}
            for rb in sorted(cut | left):
                if rb in cut and w.end is not None and w.end - w.start < leave_w:
                    unjudged += 1  # too short to show that the follower leaves
                    short += 1
                elif rb in cut:
                    # Only an observation past the bound can show that it stayed: one taken
                    # earlier (the observer may hang on a frozen broker for most of the window)
                    # says nothing about where the follower was when the bound passed.
                    early = [m for m in obs if w.start <= m.time <= leave_by]
                    late = [m for m in obs if leave_by < m.time <= end]
                    if any(rb not in (m.isr or ()) or (m.done <= leave_by and stale(m, rb, m0.leader)) for m in early):
                        judged += 1  # it left in time (seen out, or the leader's HW past its frozen LEO)
                    elif late and rb in (late[0].isr or ()) and not stale(late[0], rb, m0.leader):
                        judged += 1
                        stayed += 1
                        add(
                            "cut-off-stays-in-isr",
                            [w.row, late[0].row],
                            tp,
                            replica=rb,
                            bound_ms=(leave_by - w.start) // MS,
                        )
                    else:
                        unjudged += 1  # not seen out in time, nor seen still in after the bound
                        no_quorum += lost_leave is not None
                if w.end is not None:
                    # another fault still on the replica's broker at this heal: it owes its
                    # return from that one's end (a broker still killed cannot rejoin)
                    back = held_until(h, wins, w, rb)
                    if back is None:
                        unjudged += 1  # the other fault is never healed: the run ends with it
                        continue
                    if back not in deadlines:
                        deadlines[back] = rejoin_deadline(back, w.start)
                    rejoin_by, lost_back = deadlines[back]
                    after = [m for m in obs if w.end <= m.time <= rejoin_by]
                    # another fault on the replica itself before its deadline: it owes no return
                    refaulted = any(o is not w and back <= o.start <= rejoin_by and rb in o.brokers for o in wins)
                    if any(rb in (m.isr or ()) for m in after):
                        judged += 1
                    elif refaulted or h.end_time < rejoin_by or not after:
                        unjudged += 1
                        no_quorum += lost_back is not None
                    else:
                        judged += 1
                        no_rejoin += 1
                        add(
                            "no-rejoin-after-heal",
                            [w.heal_row or w.row, after[-1].row],
                            tp,
                            replica=rb,
                            bound_ms=(rejoin_by - back) // MS,
                        )
    n = shrunk + stayed + no_rejoin
    counts = {
        "violations": n,
        "shrunk_while_quiet": shrunk,
        "cut_off_stayed": stayed,
        "not_rejoined": no_rejoin,
        "judged": judged,
        "unjudged": unjudged,
        "windows_shorter_than_bound": short,
        "without_quorum": no_quorum,
    }
    notes = (
        [f"{short} fault window(s) not longer than isr_leave_bound_ms ({leave // MS} ms): unjudged"] if short else []
    ) + (
        [
            f"{no_quorum} ISR change(s) unjudged: the controller quorum was lost, and the bound from its"
            " end passed the window or the run"
        ]
        if no_quorum
        else []
    )
    return Verdict("isr-stability", decide(n, judged, unjudged), counts, examples, notes)


# -- progress ---------------------------------------------------------------------------------


def progress(h: HistoryData) -> Verdict:
    """Liveness. Bounds: B = ``progress_bound_ms`` = producer request.timeout + consumer
    metadata.max.age + fetch.max.wait + slack; S = ``consumer_stall_bound_ms`` (see
    follower-fetch; ``consumer_stall_hang_bound_ms`` for pause/timeout faults).

    For acknowledged sends and for polled records separately (each only if the history has
    any): (a) after every heal, one within B; (b) during a fault whose params say
    ``expect_progress: true``, no gap longer than B (a window not longer than B: unjudged);
    (c) outside faults (from a fault's start to B after its heal), no gap longer than B
    between two of them. Per consumer and partition it was reading (see the module doc for
    stalls): (d) during every fault that cuts off a broker (kill, stop, pause, a whole cut...),
    no stall longer than S while records are acknowledged (a window not longer than S, with
    records acknowledged: unjudged); stalls during other faults are reported, not judged; (e) after
    every heal, when a record it had not read is acknowledged within B, the consumer polls the
    partition within B of that acknowledgement (acks of records it had read, e.g. a commit its
    producer heard late, owe nothing). One
    count per stall; a heal less than B before the end of the history is unjudged. Reports
    ``longest_stall_ms`` and the ``longest-stall`` examples (module doc)."""
    B = bound_ns(h, "progress_bound_ms")
    wins = fault_windows(h)
    s, p = h.sends, h.polls
    series = {"send": np.sort(s.time[s.type == OK]), "poll": distinct(p.time)}
    series = {k: v for k, v in series.items() if len(v)}
    if not series:
        return Verdict("progress", UNKNOWN, {"stalls": 0}, notes=["no acknowledged send and no polled record"])
    stalls = judged = unjudged = 0
    examples: list[dict[str, Any]] = []

    def add(kind: str, rows: list[int], tp: int | None = None, **kw: Any) -> None:
        if len(examples) < MAX_EXAMPLES:
            examples.append(example(h, kind, rows, tp=tp, **kw))

    for name, ts in series.items():
        for w in wins:
            # another fault still on at this heal: the progress after it is owed at that one's heal
            if w.end is not None and not held_at_heal(h, wins, w):
                if np.any((ts > w.end) & (ts <= w.end + B)):
                    judged += 1
                elif h.end_time < w.end + B:
                    unjudged += 1
                else:
                    judged += 1
                    stalls += 1
                    add(f"no-{name}-after-heal", [w.heal_row or w.row], bound_ms=B // MS)
            if w.params.get("expect_progress") is True:
                end = w.end if w.end is not None else h.end_time
                if end - w.start <= B:
                    unjudged += 1
                    continue
                pts = np.concatenate([[w.start], ts[(ts > w.start) & (ts < end)], [end]])
                judged += 1
                if np.max(np.diff(pts)) > B:
                    stalls += 1
                    add(f"{name}-stalled-during-fault", [w.row], bound_ms=B // MS)
        gaps = np.nonzero(np.diff(ts) > B)[0]
        judged += max(len(ts) - 1, 0)
        for i in gaps:
            t0, t1 = int(ts[i]), int(ts[i + 1])
            if busy(wins, t0, t1, B):
                continue
            stalls += 1
            add(f"{name}-stalled", [], gap_ms=(t1 - t0) // MS, from_time_ns=t0, to_time_ns=t1)

    # (d), (e): per consumer and partition
    short = 0
    cstalls = window_stalls(h)
    for x in cstalls:
        if not x.acked:
            continue
        w = wins[x.window]
        if x.phase == "fault":
            if not w.cut:
                continue  # judged only for faults that cut off a broker (reported all the same)
            outcome, S = fault_stall_outcome(h, w, x)
            if outcome is None:
                continue
            if outcome == "short":
                unjudged += 1
                short += 1
                continue
            judged += 1
            if outcome == "stalled":
                stalls += 1
                add("consumer-stalled-during-fault", [w.row, w.heal_row or w.row], x.tp, **stall_fields(h, w, x, S))
        else:
            if x.owed is None or x.polled:
                judged += 1  # nothing it had not read, or it read on within B of the first such ack
            elif not x.complete:
                unjudged += 1
            else:
                judged += 1
                stalls += 1
                add(
                    "consumer-stalled-after-heal",
                    [w.heal_row or w.row],
                    x.tp,
                    consumer=h.proc_name(x.proc),
                    stall_ms=B // MS,  # at least: no poll of it from `owed_from_ns` for B
                    bound_ms=B // MS,
                    owed_from_ns=x.owed,
                )
    longest, stall_examples = stall_summary(
        h, cstalls, lambda w, s: window_stall_bound(h, w) if s.phase == "fault" else B
    )
    examples += stall_examples
    counts = {
        "stalls": stalls,
        "judged": judged,
        "unjudged": unjudged,
        "windows_shorter_than_bound": short,
        "longest_stall_ms": longest,
    }
    notes = (
        [f"{short} consumer window(s) with acknowledged records not longer than the consumer stall bound: unjudged"]
        if short
        else []
    )
    return Verdict("progress", decide(stalls, judged, unjudged), counts, examples, notes)


__all__ = [
    "follower_fetch",
    "isr_stability",
    "progress",
    "fault_windows",
    "window_stalls",
    "longest_stall",
    "bounds",
    "bound_ns",
    "fault_stall_outcome",
    "window_stall_bound",
    "Window",
    "Stall",
]
