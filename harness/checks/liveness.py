"""Checks that need time bounds: follower-fetch, isr-stability, progress.

Bounds come from the header ``config`` (milliseconds), with Kafka-like defaults:
``progress_bound_ms`` (30000), ``follower_fetch_grace_ms`` (30000: time a consumer may take to
start fetching from its rack's replica), ``follower_fetch_bound_ms`` (330000: metadata.max.age
+ 30 s to move away from a replica that left the ISR), ``replica_lag_time_max_ms`` (30000),
``isr_slack_ms`` (15000), ``isr_rejoin_bound_ms`` (60000).

Racks come from the header: ``"racks": {"brokers": {"1": "rack-a", ...},
"clients": {"consumer-0": "rack-a", ...}}``.

Faults are windows from a ``fault`` event to the ``heal`` that ends it (a heal ends the active
faults of its kind, and of its targets when it names any; a heal of kind null or "all" ends
all). A fault *cuts off* the brokers in ``params.cuts_off`` if given; otherwise the targets of
process faults (kill, stop, pause), of isolate/partition faults, and of cut/timeout faults
that name no narrower ``peer``. Targets are broker ids or names ending in the id (kafka-2).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.checks.data import OK, HistoryData, MetaObs
from harness.checks.derived import ROW_SHIFT, example
from harness.checks.verdict import MAX_EXAMPLES, UNKNOWN, Verdict, decide

MS = 1_000_000
CUT_KINDS = {"kill", "stop", "pause", "isolate", "partition", "crash"}
LINK_CUT_KINDS = {"cut", "timeout"}


def bound_ns(h: HistoryData, key: str, default_ms: int) -> int:
    v = h.config.get(key, default_ms)
    return int(float(v) * MS) if isinstance(v, (int, float)) else default_ms * MS


def _broker_id(t: Any) -> int | None:
    if type(t) is int:
        return t
    if isinstance(t, str):
        m = re.search(r"(\d+)$", t)
        return int(m.group(1)) if m else None
    return None


@dataclass
class Window:
    start: int
    end: int | None
    kind: str | None
    cut: frozenset[int]
    params: dict[str, Any]
    row: int
    heal_row: int | None = None


def fault_windows(h: HistoryData) -> list[Window]:
    active: list[Window] = []
    done: list[Window] = []
    for ev in sorted(h.faults, key=lambda e: e.row):
        if ev.type == "fault":
            active.append(Window(ev.time, None, ev.kind, _cut_set(ev.kind, ev.targets, ev.params),
                                 dict(ev.params), ev.row))
            continue
        ending = [w for w in active if ev.kind in (None, "all") or (
            w.kind == ev.kind and (not ev.targets or _targets_equal(w, ev.targets, h)))]
        for w in ending:
            w.end, w.heal_row = ev.time, ev.row
            active.remove(w)
            done.append(w)
    return sorted(done + active, key=lambda w: w.row)


def _targets_equal(w: Window, targets: Iterable[Any], h: HistoryData) -> bool:
    ev = next(e for e in h.faults if e.row == w.row)
    return list(ev.targets) == list(targets)


def _cut_set(kind: str | None, targets: Iterable[Any], params: dict[str, Any]) -> frozenset[int]:
    if isinstance(params.get("cuts_off"), list):
        return frozenset(b for b in map(_broker_id, params["cuts_off"]) if b is not None)
    k = (kind or "").replace("-", "_")
    if k in CUT_KINDS or (k in LINK_CUT_KINDS and params.get("peer") in (None, "all")):
        return frozenset(b for b in map(_broker_id, targets) if b is not None)
    return frozenset()


def _busy(windows: list[Window], t0: int, t1: int, slack: int) -> bool:
    return any(w.start <= t1 and (w.end is None or w.end + slack >= t0) for w in windows)


def _meta_by_tp(h: HistoryData) -> dict[int, list[MetaObs]]:
    out: dict[int, list[MetaObs]] = defaultdict(list)
    for m in h.meta:
        if m.tp >= 0 and m.isr is not None:
            out[m.tp].append(m)
    return out


def follower_fetch(h: HistoryData) -> Verdict:
    """With ``client.rack`` set (header racks) and an in-sync replica in the consumer's rack
    (by the latest meta observation of the partition), every polled record must be served
    (``replica``) by a broker of that rack, once both the rack's ISR membership and the
    consumer are older than ``follower_fetch_grace_ms`` and no fault has been active for that
    long (a killed replica stays in the ISR until the controller fences it): one count per
    record served from another rack. And when the rack loses its last in-sync replica at time t, a consumer of
    that rack that was reading the partition must poll records of it again within
    ``follower_fetch_bound_ms`` (judged when some send to it was acknowledged in that window
    and the history lasts that long): one count per such stall."""
    racks = h.header.get("racks") or {}
    brokers = {int(k): v for k, v in (racks.get("brokers") or {}).items()}
    clients = dict(racks.get("clients") or {})
    if not brokers or not clients:
        return Verdict("follower-fetch", UNKNOWN, {"misrouted": 0},
                       notes=["header has no racks.brokers / racks.clients"])
    names = sorted(set(brokers.values()) | set(clients.values()))
    rid = {r: i for i, r in enumerate(names)}
    broker_rack = np.full(max(brokers) + 2, -1, np.int64)
    for b, r in brokers.items():
        broker_rack[b] = rid[r]
    proc_rack = np.array([rid.get(clients.get(p), -1) for p in h.processes] or [-1], np.int64)
    grace = bound_ns(h, "follower_fetch_grace_ms", 30_000)
    bound = bound_ns(h, "follower_fetch_bound_ms", 330_000)

    # meta rows: rack bitmask of the ISR, and since when each rack has been continuously in it
    meta = sorted((m for m in h.meta if m.tp >= 0 and m.isr is not None), key=lambda m: (m.tp, m.row))
    nr = len(names)
    mkeys = np.array([(m.tp << ROW_SHIFT) | m.row for m in meta], np.int64)
    mmask = np.zeros(len(meta), np.int64)
    since = np.zeros((len(meta), max(nr, 1)), np.int64)
    losses: list[tuple[int, int, int, int]] = []  # (tp, rack, time, row)
    for i, m in enumerate(meta):
        mask = 0
        for b in m.isr or ():
            r = int(broker_rack[b]) if 0 <= b < len(broker_rack) else -1
            if r >= 0:
                mask |= 1 << r
        mmask[i] = mask
        same = i > 0 and meta[i - 1].tp == m.tp
        for r in range(nr):
            had = same and (mmask[i - 1] >> r) & 1
            since[i, r] = since[i - 1, r] if had and (mask >> r) & 1 else m.time
            if had and not (mask >> r) & 1:
                losses.append((m.tp, r, m.time, m.row))

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
    for w in fault_windows(h):
        end = np.iinfo(np.int64).max if w.end is None else w.end + grace
        calm &= ~((p.time >= w.start) & (p.time <= end))
    judged = usable & local & settled & calm
    bad = judged & (served != crack)
    examples = [example(h, "served-by-other-rack", [p.row[i], meta[jc[i]].row], tp=int(p.tp[i]),
                        consumer=h.proc_name(int(p.proc[i])), consumer_rack=names[crack[i]],
                        replica=int(p.replica[i]), isr=sorted(meta[jc[i]].isr or ()))
                for i in np.nonzero(bad)[0][:MAX_EXAMPLES]]

    # moving on after the rack's replica left the ISR
    stalls = moves = 0
    ck = (p.proc.astype(np.int64) << 24) | p.tp
    o = np.lexsort((p.time, ck))
    ck_s, t_s = ck[o], p.time[o]
    s = h.sends
    okm = s.type == OK
    so = np.lexsort((s.time[okm], s.tp[okm]))
    stp, st = s.tp[okm][so], s.time[okm][so]
    for tp, r, t, row in losses:
        for c in np.nonzero(proc_rack == r)[0]:
            key = (int(c) << 24) | tp
            lo, hi = np.searchsorted(ck_s, key, "left"), np.searchsorted(ck_s, key, "right")
            times = t_s[lo:hi]
            if len(times) == 0 or times[0] > t or h.end_time < t + bound:
                continue
            a, b = np.searchsorted(stp, tp, "left"), np.searchsorted(stp, tp, "right")
            acked = st[a:b]
            if not np.any((acked > t) & (acked < t + bound)):
                continue
            moves += 1
            if not np.any((times > t) & (times <= t + bound)):
                stalls += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(example(h, "no-progress-after-isr-loss", [row], tp=tp,
                                            consumer=h.processes[c], rack=names[r]))
    n_bad = int(bad.sum()) + stalls
    counts = {"misrouted": int(bad.sum()), "stalls": stalls, "records_judged": int(judged.sum()),
              "moves_judged": moves, "records_without_replica": int((p.replica < 0).sum())}
    return Verdict("follower-fetch", decide(n_bad, counts["records_judged"] + moves), counts, examples)


def isr_stability(h: HistoryData) -> Verdict:
    """(a) With no fault active (nor healed less than ``isr_slack_ms`` ago), no replica leaves
    the ISR of a partition between two meta observations (KAFKA-4485: a follower that keeps up
    stays in). (b) A follower cut off by a fault (not the leader, leader not cut off) leaves the
    ISR within ``replica_lag_time_max_ms`` + ``isr_slack_ms`` if the fault lasts that long, and
    (c) is back in the ISR within ``isr_rejoin_bound_ms`` after the heal. One count per
    replica and event; windows without observations are unjudged."""
    wins = fault_windows(h)
    slack = bound_ns(h, "isr_slack_ms", 15_000)
    leave = bound_ns(h, "replica_lag_time_max_ms", 30_000) + slack
    rejoin = bound_ns(h, "isr_rejoin_bound_ms", 60_000)
    by_tp = _meta_by_tp(h)
    if not by_tp:
        return Verdict("isr-stability", UNKNOWN, {"violations": 0},
                       notes=["no meta observation with an ISR"])
    shrunk = stayed = no_rejoin = judged = unjudged = 0
    examples: list[dict[str, Any]] = []

    def add(kind: str, rows: list[int], tp: int, **kw: Any) -> None:
        if len(examples) < MAX_EXAMPLES:
            examples.append(example(h, kind, rows, tp=tp, **kw))

    for tp, obs in by_tp.items():
        for a, b in zip(obs, obs[1:]):
            if _busy(wins, a.time, b.time, slack):
                continue
            judged += 1
            gone = sorted((a.isr or frozenset()) - (b.isr or frozenset()))
            if gone:
                shrunk += len(gone)
                add("shrunk-while-quiet", [a.row, b.row], tp, replicas=gone)
    for w in wins:
        for tp, obs in by_tp.items():
            before = [m for m in obs if m.time <= w.start]
            if not before:
                continue
            m0 = before[-1]
            if m0.leader is None or m0.leader in w.cut:
                continue
            for rb in sorted((m0.isr or frozenset()) & w.cut - {m0.leader}):
                if w.end is None or w.end - w.start >= leave:
                    win = [m for m in obs if w.start <= m.time <= w.start + leave]
                    if not win:
                        unjudged += 1
                    else:
                        judged += 1
                        if all(rb in (m.isr or ()) for m in win):
                            stayed += 1
                            add("cut-off-stays-in-isr", [w.row, win[-1].row], tp, replica=rb)
                if w.end is not None:
                    after = [m for m in obs if w.end <= m.time <= w.end + rejoin]
                    if any(rb in (m.isr or ()) for m in after):
                        judged += 1
                    elif h.end_time < w.end + rejoin or not after:
                        unjudged += 1
                    else:
                        judged += 1
                        no_rejoin += 1
                        add("no-rejoin-after-heal", [w.heal_row or w.row, after[-1].row], tp, replica=rb)
    n = shrunk + stayed + no_rejoin
    counts = {"violations": n, "shrunk_while_quiet": shrunk, "cut_off_stayed": stayed,
              "not_rejoined": no_rejoin, "judged": judged, "unjudged": unjudged}
    return Verdict("isr-stability", decide(n, judged, unjudged), counts, examples)


def progress(h: HistoryData) -> Verdict:
    """Liveness within ``progress_bound_ms`` (B), for acknowledged sends and for polled records
    separately (each only if the history has any): (a) after every heal, one within B; (b)
    during a fault whose params say ``expect_progress: true``, no gap longer than B; (c) outside
    faults (from a fault's start to B after its heal), no gap longer than B between two of
    them. One count per stall; a heal less than B before the end of the history is unjudged."""
    B = bound_ns(h, "progress_bound_ms", 30_000)
    wins = fault_windows(h)
    s, p = h.sends, h.polls
    series = {"send": np.sort(s.time[s.type == OK]), "poll": np.unique(p.time)}
    series = {k: v for k, v in series.items() if len(v)}
    if not series:
        return Verdict("progress", UNKNOWN, {"stalls": 0},
                       notes=["no acknowledged send and no polled record"])
    stalls = judged = unjudged = 0
    examples: list[dict[str, Any]] = []
    for name, ts in series.items():
        for w in wins:
            if w.end is not None:
                if np.any((ts > w.end) & (ts <= w.end + B)):
                    judged += 1
                elif h.end_time < w.end + B:
                    unjudged += 1
                else:
                    judged += 1
                    stalls += 1
                    if len(examples) < MAX_EXAMPLES:
                        examples.append(example(h, f"no-{name}-after-heal", [w.heal_row or w.row],
                                                bound_ms=B // MS))
            if w.params.get("expect_progress") is True:
                end = w.end if w.end is not None else h.end_time
                pts = np.concatenate([[w.start], ts[(ts > w.start) & (ts < end)], [end]])
                judged += 1
                if np.max(np.diff(pts)) > B:
                    stalls += 1
                    if len(examples) < MAX_EXAMPLES:
                        examples.append(example(h, f"{name}-stalled-during-fault", [w.row],
                                                bound_ms=B // MS))
        gaps = np.nonzero(np.diff(ts) > B)[0]
        judged += max(len(ts) - 1, 0)
        for i in gaps:
            t0, t1 = int(ts[i]), int(ts[i + 1])
            if _busy(wins, t0, t1, B):
                continue
            stalls += 1
            if len(examples) < MAX_EXAMPLES:
                examples.append(example(h, f"{name}-stalled", [], gap_ms=(t1 - t0) // MS,
                                        from_time_ns=t0, to_time_ns=t1))
    counts = {"stalls": stalls, "judged": judged, "unjudged": unjudged}
    return Verdict("progress", decide(stalls, judged, unjudged), counts, examples)
