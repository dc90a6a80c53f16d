"""Share-group checks (KIP-932) over raw ``highwater.history/1`` events: ``share-delivery``,
``share-exclusive``, ``share-settled-redelivered``, ``share-delivery-limit`` and
``share-release-redelivered`` (registered in ``core.checks``; docs/checks.md, "Share groups").

What a share consumer records (``harness.workload.share``, docs/history-format.md):

- ``acquire`` ok ``{"since_ns", "acquired": [[topic, partition, offset, value, delivery count
  or null], ...]}``: the records one poll returned. The broker acquired them between
  ``since_ns`` and the event's ``time_ns``, but maybe long before the poll: a share consumer
  fetches ahead and returns what it fetched at later polls (``since_ns`` is the start of the
  member's last poll that returned nothing, or of its worker);
- ``ack`` invoke ``{"topic", "partition", "offsets", "kinds"}`` (``accept``, ``release``,
  ``reject`` per offset) when the consumer acknowledges, and the outcome the library reported
  per partition, ``ack`` ok / fail / info ``{"topic", "partition", "offsets"}``: ``fail`` when
  the broker refused it (the record was no longer this consumer's: its lock expired or the
  broker released it), ``info`` when it may or may not have been applied.

The header's ``config.share`` gives the group, its ``topic`` and the bounds: ``lock_ms`` (the
acquisition lock's duration), ``delivery_limit`` and ``session_ms`` (the share session timeout).

**Ordering deliveries.** Since a delivery may be returned long after the broker made it, the time
a poll returned does not order two deliveries of a record; the delivery count does. The
partition's leader counts a delivery when it hands the record out and writes the count down
with every release, expiry and acknowledgement (its share coordinator's state), and a new
leader starts from the count written last: so a delivery with a higher count than another was
made after it (``_later``), whichever broker led. Equal counts are one delivery returned twice,
or two made on either side of a leader change (the new leader counted from a lower figure).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from highwater.core.checks.data import HistoryData, cached
from highwater.core.checks.raw import events_at
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, UNKNOWN, Verdict, decide
from highwater.core.checks.windows import fault_windows

#: the faults that end a client's hold on what it acquired at once (its connections close)
CLIENT_ENDING = frozenset({"client-kill", "client-restart"})

Key = tuple[str, int, int]  # topic, partition, offset


@dataclass
class Acquisition:
    """One delivery of a record to a consumer, and how that consumer let it go."""

    process: str
    key: Key
    value: Any
    delivery_count: int | None
    since_ns: int  # acquired after this (the member's last empty poll began, or its worker)
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
    acquisitions: dict[Key, list[Acquisition]] = field(default_factory=dict)  # in delivery order
    log: dict[Key, Any] = field(default_factory=dict)  # the final read: every record of the log
    #: client faults per process: (start, end or None, kind)
    client_faults: dict[str, list[tuple[int, int | None, str]]] = field(default_factory=dict)
    #: other faults (brokers, links): (start, end or None)
    other_faults: list[tuple[int, int | None]] = field(default_factory=list)
    #: (topic, partition) -> [(time, leader epoch)] observed, in time order
    epochs: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    ends: dict[str, list[int]] = field(default_factory=dict)  # a process's failed polls (its worker died)
    #: the group's state per partition after the run settled (``share-state``): its start offset
    #: (every record below it is acknowledged or archived, Kafka says; it may trail the last
    #: acknowledgements) and its lag (how many records Kafka still owes; None: not told)
    start_offsets: dict[int, int] = field(default_factory=dict)
    lags: dict[int, int | None] = field(default_factory=dict)


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
    sh = ShareHistory(str(cfg["topic"]), int(cfg["lock_ms"]), int(cfg["delivery_limit"]))
    pending: dict[tuple[str, Key], Acquisition] = {}  # the last acquisition of a record by a process
    # only the events read here (the share group's, the final reads, the metadata), by row
    rows = [*h.share_rows, *(fl.row for fl in h.finals), *(m.row for m in h.meta)]
    for ev in events_at(h, rows):
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
        elif f == "share-state" and typ == "ok" and v.get("topic") == sh.topic:
            part = int(v.get("partition") or 0)
            sh.start_offsets[part] = int(v["start_offset"])
            sh.lags[part] = v["lag"] if type(v.get("lag")) is int else None
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


def _latest(acqs: Sequence[Acquisition]) -> Acquisition:
    """The record's latest delivery: the highest delivery count, then the latest returned."""
    return max(acqs, key=lambda a: (a.delivery_count if a.delivery_count is not None else -1, a.at_ns))


def _later(a: Acquisition, b: Acquisition) -> bool | None:
    """Was ``b`` surely delivered after ``a``? By delivery counts when both are known (see the
    module's docstring), else by time (``b`` acquired after its ``since_ns``, ``a`` before its
    ``at_ns``); None when neither tells."""
    if a.delivery_count is not None and b.delivery_count is not None:
        return b.delivery_count > a.delivery_count or None
    return True if b.since_ns >= a.at_ns else None


def _archived(sh: ShareHistory, acqs: Sequence[Acquisition]) -> bool:
    """Its latest delivery was the ``delivery_limit``-th (by the count the client reported, else
    by the deliveries seen): whatever its holder did, the record is now accepted or archived."""
    last = _latest(acqs).delivery_count
    return (last if last is not None else len(acqs)) >= sh.delivery_limit


def share_delivery(h: HistoryData) -> Verdict:
    """share-delivery: a record of the group's topic (its final read) that no member ever acquired
    (``never_delivered``), or that is not settled by the end of the run (``unsettled``), or a
    partition whose state still owes records after the run settled (``owed``: its lag).

    A record is *settled* when an ``accept`` or ``reject`` of it was acknowledged ``ok``, or it was
    delivered ``delivery_limit`` times (the count the client reported, else the deliveries
    seen): Kafka then archives it. Otherwise its fate is weighed against the group's state read
    after the run settled (``share-state``): Kafka settled it when it lies below the partition's
    start offset or the partition's lag is 0. Then an ``accept``/``reject`` of unknown outcome
    (``info``) may have landed (``settled_by_state``), and without one Kafka settled a record no
    member settled (``unexplained``: archived after deliveries nobody saw, e.g. to a member
    killed mid-poll, or skipped; unknown). When Kafka does not say it settled it, a record with
    an ``accept``/``reject`` of unknown outcome is ``uncertain`` (unknown) and any other is
    ``unsettled``. Counted: ``records`` (of the log), ``settled``, ``settled_by_state``,
    ``never_delivered``, ``unsettled``, ``owed``, ``uncertain``, ``unexplained``. Unknown when no
    member recorded any delivery at all."""
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
    names = ("settled", "settled_by_state", "never_delivered", "unsettled", "uncertain", "unexplained")
    c = dict.fromkeys(names, 0)
    bad: list[dict[str, Any]] = []
    for key in sorted(sh.log):
        acqs = sh.acquisitions.get(key, [])
        topic, part, off = key
        start, lag = sh.start_offsets.get(part), sh.lags.get(part)
        if not acqs:
            c["never_delivered"] += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append(
                    {
                        "topic": topic,
                        "partition": part,
                        "offset": off,
                        "anomaly": "never-delivered",
                        "start_offset": start,
                    }
                )
            continue
        if any(a.kind in ("accept", "reject") and a.outcome == "ok" for a in acqs) or _archived(sh, acqs):
            c["settled"] += 1
            continue
        maybe = any(a.kind in ("accept", "reject") and a.outcome in ("info", None) and a.acked_ns for a in acqs)
        if (start is not None and off < start) or lag == 0:
            c["settled_by_state" if maybe else "unexplained"] += 1
            continue
        if maybe:
            c["uncertain"] += 1
            continue
        c["unsettled"] += 1
        if len(bad) < MAX_EXAMPLES:
            last = _latest(acqs)
            bad.append(
                _example(
                    last,
                    anomaly="unsettled",
                    deliveries=len(acqs),
                    last_kind=last.kind,
                    outcome=last.outcome,
                    start_offset=start,
                    lag=lag,
                )
            )
    owed = sum(lag for lag in sh.lags.values() if lag)
    for part, lag in sorted(sh.lags.items()):
        if lag and len(bad) < MAX_EXAMPLES:
            bad.append(
                {
                    "topic": sh.topic,
                    "partition": part,
                    "anomaly": "owed",
                    "lag": lag,
                    "start_offset": sh.start_offsets[part],
                }
            )
    counts = {"records": len(sh.log), **c, "owed": owed}
    notes = (
        [
            f"{c['unexplained']} records settled by Kafka that no member settled (archived after unseen deliveries, or skipped)"
        ]
        if c["unexplained"]
        else []
    )
    valid = decide(c["never_delivered"] + c["unsettled"] + owed, c["settled"], c["uncertain"] + c["unexplained"])
    return Verdict("share-delivery", valid, counts, bad, notes)


def _hold_end(sh: ShareHistory, a: Acquisition) -> int:
    """The latest time by which ``a``'s consumer surely still held the record, had nobody else
    touched it: its lock's expiry (counted from the poll's start, before the broker acquired
    it), its own acknowledgement, a kill or restart of its worker or the death of it (the broker
    releases a member's records when its connection closes). A freeze ends nothing: Kafka
    releases a silent member's records when their locks expire, not when the group coordinator
    drops the member at its session timeout (``SharePartitionManager`` releases on a closed
    session or connection only)."""
    end = a.since_ns + sh.lock_ms * 1_000_000
    if a.acked_ns is not None:
        end = min(end, a.acked_ns)
    for start, _, kind in sh.client_faults.get(a.process, []):
        if start >= a.since_ns and kind in CLIENT_ENDING:
            end = min(end, start)
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
    """share-exclusive: one record held by two members at once, as Kafka's deliveries show it.

    Two kinds, for any two deliveries A and B of one record (by different members, or by one):
    ``delivered_twice``, A and B carry the same delivery count and the partition's leader did not
    change from the earlier ``since_ns`` to the later return (a leader hands each delivery out
    once; the count goes up with each); ``held_twice``, B's count is higher than A's (B came
    after A) and B was returned before A's hold surely ended (``_hold_end``: A's lock expiry
    counted from A's ``since_ns``, A's acknowledgement, a kill of A's worker; not a freeze), with
    no leader change from A's ``since_ns`` to B's return. A leader change in between hands the
    records to a new leader that may hand them out again (allowed: ``leader_moved``), and so may
    a broker or network fault, which can close A's connections (``faulted``); without leader
    epochs observed around the pair it is ``unjudged`` and the verdict unknown. A member that
    returns a record after its lock expired (it fetched ahead, then stalled) holds nothing any
    more: that is no violation, and its acknowledgement fails. Counted: ``records`` (delivered
    at least once), ``redeliveries``, ``delivered_twice``, ``held_twice``, ``leader_moved``,
    ``faulted``, ``unjudged``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-exclusive")
    redelivered = twice = held = moved = faulted = unjudged = 0
    bad: list[dict[str, Any]] = []
    for key, acqs in sorted(sh.acquisitions.items()):
        redelivered += len(acqs) - 1
        for i, x in enumerate(acqs):
            for y in acqs[i + 1 :]:
                same = x.delivery_count is not None and x.delivery_count == y.delivery_count
                if same:
                    a, b = (x, y) if x.at_ns <= y.at_ns else (y, x)
                    start = min(a.since_ns, b.since_ns)
                elif _later(x, y):
                    a, b, start = x, y, x.since_ns
                elif _later(y, x):
                    a, b, start = y, x, y.since_ns
                else:
                    continue
                if not same and b.at_ns >= _hold_end(sh, a):
                    continue  # A's hold may have ended before B: nothing to judge
                if any(s <= b.at_ns and (e is None or e >= start) for s, e in sh.other_faults):
                    faulted += 1
                    continue
                leader = _leader_moved(sh, key, start, b.at_ns)
                if leader is None:
                    unjudged += 1
                elif leader:
                    moved += 1
                else:
                    if same:
                        twice += 1
                    else:
                        held += 1
                    if len(bad) < MAX_EXAMPLES:
                        bad.append(
                            _example(
                                b,
                                anomaly="delivered-twice" if same else "held-twice",
                                holder=a.process,
                                delivery_counts=[a.delivery_count, b.delivery_count],
                                held_since_ns=a.since_ns,
                                lock_expiry_ns=a.since_ns + sh.lock_ms * 1_000_000,
                                delivered_ns=b.at_ns,
                            )
                        )
    counts = {
        "records": len(sh.acquisitions),
        "redeliveries": redelivered,
        "delivered_twice": twice,
        "held_twice": held,
        "leader_moved": moved,
        "faulted": faulted,
        "unjudged": unjudged,
    }
    return Verdict("share-exclusive", decide(twice + held, len(sh.acquisitions), unjudged), counts, bad)


def _ignored(acqs: Sequence[Acquisition], a: Acquisition) -> bool:
    """Was ``a``'s ``ok`` acknowledgement one Kafka ignored? A later delivery of the record (a higher
    count: ``a``'s lock had ended) was settled ``ok`` before ``a``'s acknowledgement was even sent.
    Kafka answers an acknowledgement of a record below the group's start offset with success and
    applies nothing (``SharePartition.acknowledge`` skips such batches)."""
    return any(
        c is not a
        and c.kind in ("accept", "reject")
        and c.outcome == "ok"
        and c.done_ns is not None
        and a.acked_ns is not None
        and c.done_ns < a.acked_ns
        and _later(a, c)
        for c in acqs
    )


def share_settled_redelivered(h: HistoryData) -> Verdict:
    """share-settled-redelivered: a record delivered again after an ``accept`` (or a ``reject``) of
    it was acknowledged ``ok``. Kafka makes an acknowledgement durable (its share coordinator's
    state) before answering it, so the record is settled for good: a delivery made after the
    settled one (``_later``: a higher delivery count; by time when the client gives no count,
    a delivery whose ``since_ns`` is after the ``ok``) is a violation. A member returning a
    delivery made before the settled one (it fetched ahead; the count is not higher) is
    counted ``stale``. An ``ok`` for a delivery whose record a later delivery had already settled
    before it was sent (``_ignored``: Kafka answers it with success and applies nothing) settles
    nothing and is counted ``ignored``. ``fail``/``info`` acknowledgements settle nothing.
    Counted: ``settled`` (ok accepts and rejects), ``redelivered``, ``stale``, ``ignored``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-settled-redelivered")
    settled = n = stale = ignored = 0
    bad: list[dict[str, Any]] = []
    for acqs in sh.acquisitions.values():
        for a in acqs:
            if a.kind not in ("accept", "reject") or a.outcome != "ok" or a.done_ns is None:
                continue
            if _ignored(acqs, a):
                ignored += 1
                continue
            settled += 1
            for b in acqs:
                if b is a:
                    continue
                counted = a.delivery_count is not None and b.delivery_count is not None
                after = (b.delivery_count or 0) > (a.delivery_count or 0) if counted else b.since_ns >= a.done_ns
                if not after:
                    stale += 1 if b.at_ns > a.done_ns else 0
                    continue
                n += 1
                if len(bad) < MAX_EXAMPLES:
                    bad.append(
                        _example(
                            b,
                            settled_by=a.process,
                            kind=a.kind,
                            delivery_counts=[a.delivery_count, b.delivery_count],
                            settled_ns=a.done_ns,
                            delivered_ns=b.at_ns,
                        )
                    )
    counts = {"settled": settled, "redelivered": n, "stale": stale, "ignored": ignored}
    return Verdict("share-settled-redelivered", decide(n, settled), counts, bad)


def share_delivery_limit(h: HistoryData) -> Verdict:
    """share-delivery-limit: a record delivered more than ``delivery_limit`` times, by the deliveries
    observed (a consumer that died before its poll returned leaves deliveries unobserved, so
    the count is a lower bound) or by a delivery count the client reported above the limit.

    Kafka counts a delivery when it hands the record out but writes the count down only with an
    acknowledgement or a release (KIP-932: the count "cannot be relied upon to be precise"): a
    new partition leader starts from the last count written, so a record may go over the limit
    across a leader change. Such a record is allowed (``leader_moved``) when the partition's
    observed leader epoch changed between its first and last delivery, and ``unjudged``
    (unknown) without epochs observed around them. Counted: ``records`` (delivered at least
    once), ``over_limit``, ``leader_moved``, ``unjudged``, ``max_deliveries``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-delivery-limit")
    over = most = moved = unjudged = 0
    bad: list[dict[str, Any]] = []
    for key, acqs in sh.acquisitions.items():
        reported = max((a.delivery_count or 0 for a in acqs), default=0)
        n = max(len(acqs), reported)
        most = max(most, n)
        if n <= sh.delivery_limit:
            continue
        leader = _leader_moved(sh, key, acqs[0].since_ns, acqs[-1].at_ns)
        if leader is None:
            unjudged += 1
        elif leader:
            moved += 1
        else:
            over += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append(_example(acqs[-1], deliveries=len(acqs), delivery_count=reported, limit=sh.delivery_limit))
    counts = {
        "records": len(sh.acquisitions),
        "over_limit": over,
        "leader_moved": moved,
        "unjudged": unjudged,
        "max_deliveries": most,
    }
    return Verdict("share-delivery-limit", decide(over, len(sh.acquisitions), unjudged), counts, bad)


def share_release_redelivered(h: HistoryData) -> Verdict:
    """share-release-redelivered: a record released (a ``release`` acknowledged ``ok``) before its
    ``delivery_limit``-th delivery that was never delivered again by the end of the run: no
    later delivery (``_later``: a higher delivery count, or by time without counts). The run
    settles until every record is settled, so a released record has had its chance.
    Counted: ``released``, ``not_redelivered``."""
    sh = read_share_history(h)
    if sh is None:
        return _not_applicable("share-release-redelivered")
    released = n = 0
    bad: list[dict[str, Any]] = []
    for acqs in sh.acquisitions.values():
        for a in acqs:
            if a.kind != "release" or a.outcome != "ok" or a.done_ns is None:
                continue
            count = a.delivery_count if a.delivery_count is not None else acqs.index(a) + 1
            if count >= sh.delivery_limit:
                continue  # its last delivery: archived, not delivered again
            released += 1
            if not any(_later(a, b) for b in acqs if b is not a):
                n += 1
                if len(bad) < MAX_EXAMPLES:
                    bad.append(_example(a, released_ns=a.done_ns, delivery_count=count))
    counts = {"released": released, "not_redelivered": n}
    return Verdict("share-release-redelivered", decide(n, released), counts, bad)
