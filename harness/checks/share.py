"""Share-group checks (KIP-932) over raw ``highwater.history/1`` events: ``share-delivery``,
``share-exclusive``, ``share-settled-redelivered``, ``share-delivery-limit`` and
``share-release-redelivered`` (registered in ``harness.checks``; docs/checks.md, "Share groups").

What a share consumer records (``harness.workload.share``, docs/history-format.md):

- ``acquire`` ok ``{"since_ns", "acquired": [[topic, partition, offset, value, delivery count
  or null], ...]}``: the records one poll acquired, ``since_ns`` the history time the poll began
  (the broker acquired them between then and the event's ``time_ns``);
- ``ack`` invoke ``{"topic", "partition", "offsets", "kinds"}`` (``accept``, ``release``,
  ``reject`` per offset) when the consumer acknowledges, and the outcome the library reported
  per partition, ``ack`` ok / fail / info ``{"topic", "partition", "offsets"}``: ``fail`` when
  the broker refused it (the record was no longer this consumer's: its lock expired or the
  broker released it), ``info`` when it may or may not have been applied.

The header's ``config.share`` gives the group, its ``topic`` and the bounds: ``lock_ms`` (the acquisition
lock's duration), ``delivery_limit`` and ``session_ms`` (the share session timeout).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.checks.data import HistoryData, cached
from harness.checks.liveness import fault_windows
from harness.checks.raw import raw_events
from harness.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, UNKNOWN, Valid, Verdict, decide

#: the faults that end a client's hold on what it acquired at once (its connections close)
CLIENT_ENDING = frozenset({"client-kill", "client-restart"})
CLIENT_FREEZE = "client-freeze"

Key = tuple[str, int, int]  # topic, partition, offset


@dataclass
class Acquisition:
    """One delivery of a record to a consumer, and how that consumer let it go."""

    process: str
    key: Key
    value: Any
    delivery_count: int | None
    since_ns: int  # the poll began: the broker acquired the record after this
    at_ns: int  # the poll returned it: acquired before this
    kind: str | None = None  # the acknowledgement asked for, if any
    acked_ns: int | None = None  # when it was asked for
    outcome: str | None = None  # ok / fail / info, as the library reported it
    done_ns: int | None = None


@dataclass
class ShareHistory:
    """A share-group history's facts, read once from the events."""

    topic: str  # the topic the group reads
    lock_ms: int
    delivery_limit: int
    session_ms: int
    acquisitions: dict[Key, list[Acquisition]] = field(default_factory=dict)  # in delivery order
    log: dict[Key, Any] = field(default_factory=dict)  # the final read: every record of the log
    #: client faults per process: (start, end or None, kind)
    client_faults: dict[str, list[tuple[int, int | None, str]]] = field(default_factory=dict)
    #: other faults (brokers, links): (start, end or None)
    other_faults: list[tuple[int, int | None]] = field(default_factory=list)
    #: (topic, partition) -> [(time, leader epoch)] observed, in time order
    epochs: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    ends: dict[str, list[int]] = field(default_factory=dict)  # a process's failed polls (its worker died)


def share_config(header: Mapping[str, Any]) -> Mapping[str, Any] | None:
    cfg = (header.get("config") or {}).get("share")
    return cfg if isinstance(cfg, Mapping) else None


def read_share_history(h: HistoryData) -> ShareHistory | None:
    """The facts the share checks judge (cached), or None when the history has no share group."""
    return cached(h, "share", _read_share_history)


def _read_share_history(h: HistoryData) -> ShareHistory | None:
    cfg = share_config(h.header)
    if cfg is None:
        return None
    sh = ShareHistory(
        str(cfg["topic"]), int(cfg["lock_ms"]), int(cfg["delivery_limit"]), int(cfg.get("session_ms") or 0)
    )
    pending: dict[tuple[str, Key], Acquisition] = {}  # the last acquisition of a record by a process
    for ev in raw_events(h):
        f, typ, v, t = ev.get("f"), ev.get("type"), ev.get("value") or {}, int(ev.get("time_ns", 0))
        proc = str(ev.get("process"))
        if f == "acquire" and typ == "ok":
            for topic, part, off, value, dc in v.get("acquired") or []:
                a = Acquisition(proc, (topic, part, off), value, dc, int(v.get("since_ns", t)), t)
                sh.acquisitions.setdefault(a.key, []).append(a)
                pending[(proc, a.key)] = a
        elif f == "acquire" and typ == "info":
            sh.ends.setdefault(proc, []).append(t)
        elif f == "ack":
            tp = (str(v.get("topic")), int(v.get("partition") or 0))
            kinds = v.get("kinds") or []
            for i, off in enumerate(v.get("offsets") or []):
                held = pending.get((proc, (*tp, off)))
                if held is None:
                    continue
                if typ == "invoke":
                    held.kind, held.acked_ns = (str(kinds[i]) if i < len(kinds) else None), t
                elif held.acked_ns is not None and held.outcome is None:
                    held.outcome, held.done_ns = str(typ), t
        elif f == "final-read" and typ == "ok" and v.get("topic") == sh.topic:
            for off, value in v.get("records") or []:
                sh.log.setdefault((str(v.get("topic")), int(v.get("partition") or 0), int(off)), value)
        elif f == "meta" and typ == "ok" and type(v.get("leader_epoch")) is int:
            at = int(v.get("observed_ns", t))
            sh.epochs.setdefault((str(v.get("topic")), int(v.get("partition") or 0)), []).append(
                (at, v["leader_epoch"])
            )
    for w in fault_windows(h):
        if w.on_clients:
            for p in w.targets:
                sh.client_faults.setdefault(str(p), []).append((w.start, w.end, (w.kind or "").replace("_", "-")))
        else:
            sh.other_faults.append((w.start, w.back))
    for obs in sh.epochs.values():
        obs.sort()
    return sh


def _not_applicable(check: str) -> Verdict:
    return Verdict(check, NOT_APPLICABLE, notes=["not applicable: the history has no share group (config.share)"])


def _example(a: Acquisition, **more: Any) -> dict[str, Any]:
    topic, part, off = a.key
    return {"topic": topic, "partition": part, "offset": off, "process": a.process, **more}


def _archived(sh: ShareHistory, acqs: Sequence[Acquisition]) -> bool:
    """Delivered ``delivery_limit`` times: whatever the last holder did, the record is now accepted
    or archived (Kafka archives it instead of delivering it again)."""
    seen = max((a.delivery_count or 0 for a in acqs), default=0)
    return max(seen, len(acqs)) >= sh.delivery_limit


def share_delivery(h: HistoryData) -> Verdict:
    """share-delivery: a record of the group's topic (its final read) that no consumer of the share group
    ever acquired, or whose last delivery was let go without being accepted or archived and was
    never delivered again by the end of the run.

    A record ends *settled* when an ``accept`` or ``reject`` of it was acknowledged ``ok``, or when
    it was delivered ``delivery_limit`` times (observed acquisitions, or the delivery count the
    client reported): Kafka then archives it. A last delivery whose ``accept``/``reject`` outcome
    is ``info`` may have settled it: counted ``uncertain`` and the verdict is unknown, never ok.
    Counted: ``records`` (of the log), ``settled``, ``never_delivered``, ``unsettled``,
    ``uncertain``. Unknown when no consumer recorded any delivery at all."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-delivery")
    if not sh.acquisitions:  # no member recorded anything: nothing to tell a loss from silence
        return Verdict(
            "share-delivery",
            UNKNOWN,
            {"records": len(sh.log)},
            notes=["no consumer of the share group recorded a delivery"],
        )
    never = unsettled = uncertain = settled = 0
    bad: list[dict[str, Any]] = []
    for key in sorted(sh.log):
        acqs = sh.acquisitions.get(key, [])
        topic, part, off = key
        if not acqs:
            never += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append({"topic": topic, "partition": part, "offset": off, "anomaly": "never-delivered"})
            continue
        if any(a.kind in ("accept", "reject") and a.outcome == "ok" for a in acqs) or _archived(sh, acqs):
            settled += 1
        elif acqs[-1].kind in ("accept", "reject") and acqs[-1].outcome in ("info", None):
            uncertain += 1
        else:
            unsettled += 1
            if len(bad) < MAX_EXAMPLES:
                last = acqs[-1]
                bad.append(
                    _example(last, anomaly="unsettled", deliveries=len(acqs), last_kind=last.kind, outcome=last.outcome)
                )
    counts = {
        "records": len(sh.log),
        "settled": settled,
        "never_delivered": never,
        "unsettled": unsettled,
        "uncertain": uncertain,
    }
    return Verdict("share-delivery", decide(never + unsettled, settled, uncertain), counts, bad)


def _hold_end(sh: ShareHistory, a: Acquisition) -> int:
    """The latest time by which ``a``'s consumer surely still held the record, had nobody else
    touched it: its lock's expiry (counted from the poll's start, before the broker acquired
    it), its own acknowledgement, a kill or restart of its worker, a freeze's start plus the
    session timeout (the group may drop a silent member and release what it held), the death
    of its worker."""
    end = a.since_ns + sh.lock_ms * 1_000_000
    if a.acked_ns is not None:
        end = min(end, a.acked_ns)
    for start, _, kind in sh.client_faults.get(a.process, []):
        if start < a.since_ns:
            continue
        if kind in CLIENT_ENDING:
            end = min(end, start)
        elif kind == CLIENT_FREEZE:
            end = min(end, start + sh.session_ms * 1_000_000)
    for t in sh.ends.get(a.process, []):
        if t >= a.since_ns:
            end = min(end, t)
            break
    return end


def _epoch_at(obs: Sequence[tuple[int, int]], t: int, after: bool) -> int | None:
    """The leader epoch observed last at or before ``t`` (or first at or after it)."""
    if after:
        i = bisect_left(obs, (t, -1))
        return obs[i][1] if i < len(obs) else None
    i = bisect_right(obs, (t, 1 << 62))
    return obs[i - 1][1] if i else None


def _leader_moved(sh: ShareHistory, key: Key, start: int, end: int) -> bool | None:
    """Did the partition's leader change between ``start`` and ``end``? None: not observed."""
    obs = sh.epochs.get((key[0], key[1]), [])
    before, after = _epoch_at(obs, start, False), _epoch_at(obs, end, True)
    if before is None or after is None:
        return None
    return before != after


def share_exclusive(h: HistoryData) -> Verdict:
    """share-exclusive: a record delivered to a consumer while another consumer's acquisition lock
    on it was surely still valid.

    For two deliveries A then B of one record (B's poll began after A's returned), B is a
    violation when it returned before A's hold surely ended (``_hold_end``: A's lock expiry
    counted from A's poll start, A's acknowledgement, a kill of A's worker, a freeze of it plus
    the session timeout). A leader change of the partition in between hands the records to a
    new leader, which may hand them out again (allowed: counted ``leader_moved``); so may a
    broker or network fault, which can close A's connections (counted ``faulted``); without
    leader epochs observed before and after, the pair is ``unjudged`` and the verdict unknown.
    Counted: ``records`` (delivered at least once), ``redeliveries``, ``held_twice``, ``leader_moved``, ``faulted``,
    ``unjudged``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-exclusive")
    redelivered = bad_n = moved = faulted = unjudged = 0
    bad: list[dict[str, Any]] = []
    for key, acqs in sorted(sh.acquisitions.items()):
        for i, b in enumerate(acqs):
            for a in acqs[:i]:
                if b.since_ns < a.at_ns or b.at_ns >= _hold_end(sh, a):
                    continue  # not surely after A, or A's hold may have ended: nothing to judge
                if any(s <= b.at_ns and (e is None or e >= a.since_ns) for s, e in sh.other_faults):
                    faulted += 1
                    continue
                leader = _leader_moved(sh, key, a.since_ns, b.at_ns)
                if leader is None:
                    unjudged += 1
                elif leader:
                    moved += 1
                else:
                    bad_n += 1
                    if len(bad) < MAX_EXAMPLES:
                        bad.append(
                            _example(
                                b,
                                holder=a.process,
                                held_since_ns=a.at_ns,
                                lock_expiry_ns=a.since_ns + sh.lock_ms * 1_000_000,
                                delivered_ns=b.at_ns,
                            )
                        )
        redelivered += len(acqs) - 1
    counts = {
        "records": len(sh.acquisitions),
        "redeliveries": redelivered,
        "held_twice": bad_n,
        "leader_moved": moved,
        "faulted": faulted,
        "unjudged": unjudged,
    }
    valid: Valid = decide(bad_n, len(sh.acquisitions), unjudged)
    return Verdict("share-exclusive", valid, counts, bad)


def share_settled_redelivered(h: HistoryData) -> Verdict:
    """share-settled-redelivered: a record delivered again after an ``accept`` (or a ``reject``) of
    it was acknowledged ``ok``: Kafka made the acknowledgement durable before answering it, so
    the record is settled for good. A delivery whose poll began after the ``ok`` is a violation;
    one whose poll was already running is counted ``concurrent`` (it may have been acquired
    first). ``fail``/``info`` acknowledgements settle nothing here. Counted: ``settled`` (ok
    accepts and rejects), ``redelivered``, ``concurrent``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-settled-redelivered")
    settled = n = concurrent = 0
    bad: list[dict[str, Any]] = []
    for acqs in sh.acquisitions.values():
        for a in acqs:
            if a.kind not in ("accept", "reject") or a.outcome != "ok" or a.done_ns is None:
                continue
            settled += 1
            for b in acqs:
                if b is a or b.at_ns <= a.done_ns:
                    continue
                if b.since_ns < a.done_ns:
                    concurrent += 1
                    continue
                n += 1
                if len(bad) < MAX_EXAMPLES:
                    bad.append(
                        _example(b, settled_by=a.process, kind=a.kind, settled_ns=a.done_ns, delivered_ns=b.at_ns)
                    )
    counts = {"settled": settled, "redelivered": n, "concurrent": concurrent}
    return Verdict("share-settled-redelivered", decide(n, settled), counts, bad)


def share_delivery_limit(h: HistoryData) -> Verdict:
    """share-delivery-limit: a record delivered more than ``delivery_limit`` times, by the deliveries
    observed (a consumer that died before its poll returned leaves deliveries unobserved, so
    the count is a lower bound) or by a delivery count the client reported above the limit.
    Counted: ``records`` (delivered at least once), ``over_limit``, ``max_deliveries``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-delivery-limit")
    over = most = 0
    bad: list[dict[str, Any]] = []
    for acqs in sh.acquisitions.values():
        reported = max((a.delivery_count or 0 for a in acqs), default=0)
        n = max(len(acqs), reported)
        most = max(most, n)
        if n > sh.delivery_limit:
            over += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append(_example(acqs[-1], deliveries=len(acqs), delivery_count=reported, limit=sh.delivery_limit))
    counts = {"records": len(sh.acquisitions), "over_limit": over, "max_deliveries": most}
    return Verdict("share-delivery-limit", decide(over, len(sh.acquisitions)), counts, bad)


def share_release_redelivered(h: HistoryData) -> Verdict:
    """share-release-redelivered: a record released (a ``release`` acknowledged ``ok``) before its
    ``delivery_limit``-th delivery that was never delivered again by the end of the run (the
    run settles until every record is settled, so a released record has had its chance).
    Counted: ``released``, ``not_redelivered``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-release-redelivered")
    released = n = 0
    bad: list[dict[str, Any]] = []
    for acqs in sh.acquisitions.values():
        for i, a in enumerate(acqs):
            if a.kind != "release" or a.outcome != "ok" or a.done_ns is None:
                continue
            if max(i + 1, a.delivery_count or 0) >= sh.delivery_limit:
                continue  # its last delivery: archived, not delivered again
            released += 1
            if not any(b.at_ns > a.acked_ns for b in acqs[i + 1 :] if a.acked_ns is not None):
                n += 1
                if len(bad) < MAX_EXAMPLES:
                    bad.append(_example(a, released_ns=a.done_ns, deliveries=i + 1))
    counts = {"released": released, "not_redelivered": n}
    return Verdict("share-release-redelivered", decide(n, released), counts, bad)
