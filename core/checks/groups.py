"""Consumer-group checks: ``commit-ahead``, ``commit-regression``, ``rebalance-skip``,
``rebalance-rewind`` and ``group-delivery`` (registered in ``core.checks``), and
``settled_commits``, which gives offsets committed inside a transaction (an exactly-once copy)
the outcome of their transaction.

Each takes ``(header, events)``; the registry runs them on the columns (the ``*_of`` forms):
commit-ahead and group-delivery are judged over them (``core.checks.group_cols``), the
others, which follow commits and assigns one at a time, over ``group_events``: only the events
they read, rebuilt from the columns (the rebalance checks over ``move_events``, only the commits
of partitions that moved; commit-regression only when some commit went down).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from highwater.core.checks.data import OK, HistoryData, from_events
from highwater.core.checks.group_cols import (
    commit_ahead_of,
    commit_keys,
    final_offsets,
    group_delivery_of,
    group_events,
    group_of,
    groups_of,
    move_events,
    settled,
)
from highwater.core.checks.txn import txn_ends
from highwater.core.checks.txn_data import NO_OFFSET
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict
from highwater.core.history.format import value_text


def settled_commits(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``events`` with every ``commit`` sent inside a transaction (``txn`` in its value) settled
    by that transaction: Kafka commits such offsets with the transaction, so an ``ok`` commit
    counts as committed only if its transaction's commit is ``ok``, and then at that commit's
    ``time_ns``. It becomes ``fail`` when the transaction aborted (an ``ok`` abort, or a commit
    that failed) and ``info`` when its end is unknown: unknown is never counted as committed.
    Other events are passed through unchanged."""
    ended = txn_ends(events)
    out: list[Mapping[str, Any]] = []
    for ev in events:
        txn = (ev.get("value") or {}).get("txn") if ev.get("f") == "commit" else None
        if not isinstance(txn, str) or ev.get("type") != "ok":
            out.append(ev)
            continue
        end = ended.get(txn)
        if end is None:
            out.append({**ev, "type": "info"})
        elif end[0]:
            out.append({**ev, "time_ns": end[1]})
        else:
            out.append({**ev, "type": "fail"})
    return out


def commit_invokes(events: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """The invoke time of each completed ``commit`` (``ok``/``info``/``fail``), by the completion's
    ``index``: the latest commit invoke of the same process, group and partition before it (a
    member commits one at a time, and a commit of several partitions is recorded as an invoke
    and a completion per partition: pairing by process alone gave the second partition's
    completion no invoke, and a frozen member's concurrent commit counted as a regression)."""
    last: dict[tuple[str, Any, Any, Any], int] = {}
    out: dict[int, int] = {}
    for ev in sorted(events, key=lambda e: int(e.get("index", 0))):
        if ev.get("f") != "commit":
            continue
        v = ev.get("value") or {}
        key = (str(ev.get("process")), v.get("group"), v.get("topic"), v.get("partition"))
        if ev.get("type") == "invoke":
            last[key] = int(ev.get("time_ns", 0))
        elif key in last:
            out[int(ev.get("index", -1))] = last.pop(key)
    return out


def commit_regression(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """commit-regression: a group's committed offset for a partition went backwards (successful
    commits in real-time order) with no seek or reset asking for it.

    Successful commits are ``ok`` ``commit`` events, ordered by completion (``time_ns``). A commit
    to ``o`` after one that reached ``hi > o`` is a regression only if it was invoked after that
    one's ``ok``: a commit invoked earlier was in flight at the same time, and the coordinator may
    have applied it first (a member frozen between sending a commit and reading its answer
    reports its ``ok`` long after later commits of the partition's next owner; counted as
    ``concurrent``, and the baseline stays ``hi``). A regression is asked for when, after the
    ``ok`` of the commit that reached ``hi`` and before this one's ``ok``, a member of the group
    (by ``config.consumers.<name>.group``, or a commit by that process for the group) recorded a
    ``seek``/``assign`` on the partition to an offset ``<= o``. ``info``/``fail`` commits are
    never counted as committed. Counted: ``commits`` (ok commits), ``regressions``,
    ``concurrent``. Examples: group, topic, partition, offset, previous (the highest earlier
    committed offset), process. Not applicable when there is no ok commit.
    """
    events = settled_commits(events)
    config = header.get("config") or {}
    members: dict[str, set[str]] = {}
    for ev in events:
        if ev.get("f") == "commit" and (ev.get("value") or {}).get("group"):
            members.setdefault(ev["value"]["group"], set()).add(str(ev.get("process")))
    invoked = commit_invokes(events)
    high: dict[tuple[str, str, int], tuple[int, int]] = {}  # key -> (offset, ok time)
    seeks: dict[tuple[str, int], list[tuple[int, str, int]]] = {}  # (topic, part) -> (time, proc, off)
    commits = count = concurrent = 0
    bad: list[dict[str, Any]] = []
    for ev in sorted(events, key=lambda e: (int(e.get("time_ns", 0)), int(e.get("index", 0)))):
        f, v = ev.get("f"), ev.get("value") or {}
        if f in ("seek", "assign") and type(v.get("offset")) is int:
            seeks.setdefault((str(v.get("topic")), int(v.get("partition") or 0)), []).append(
                (int(ev["time_ns"]), str(ev.get("process")), v["offset"])
            )
        if f != "commit" or ev.get("type") != "ok" or type(v.get("offset")) is not int:
            continue
        commits += 1
        group, topic, part, off = str(v.get("group")), str(v.get("topic")), int(v.get("partition") or 0), v["offset"]
        key, t = (group, topic, part), int(ev["time_ns"])
        prev = high.get(key)
        if prev is not None and off < prev[0] and invoked.get(int(ev.get("index", -1)), t) < prev[1]:
            concurrent += 1  # in flight when the higher one completed: it may have been applied first
            continue
        if prev is not None and off < prev[0]:
            who = members.get(group, set())
            asked = any(
                prev[1] <= st <= t and so <= off and (p in who or group_of(config, p) == group)
                for st, p, so in seeks.get((topic, part), [])
            )
            if not asked:
                count += 1
                if len(bad) < MAX_EXAMPLES:
                    bad.append(
                        {
                            "group": group,
                            "topic": topic,
                            "partition": part,
                            "offset": off,
                            "previous": prev[0],
                            "process": str(ev.get("process")),
                        }
                    )
            high[key] = (off, t)  # the new baseline: later commits are judged against it
        elif prev is None or off >= prev[0]:
            high[key] = (off, t)
    if commits == 0:
        return Verdict("commit-regression", NOT_APPLICABLE)
    return Verdict(
        "commit-regression", count == 0, {"commits": commits, "regressions": count, "concurrent": concurrent}, bad
    )


def final_logs(events: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], dict[int, str | None]]:
    """Per partition, the committed records of the most complete final read (the replica with
    the most records below its high watermark): offset -> value text."""
    best: dict[tuple[str, int], dict[int, str | None]] = {}
    for ev in events:
        v = ev.get("value") or {}
        if ev.get("f") != "final-read" or ev.get("type") != "ok":
            continue
        tp = (str(v.get("topic")), int(v.get("partition") or 0))
        hw = int(v.get("hw") or 0)
        log = {int(r[0]): value_text(r[1])[0] for r in v.get("records") or [] if int(r[0]) < hw}
        if len(log) >= len(best.get(tp, {})):
            best[tp] = log
    return best


def _final_offsets(events: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], list[int]]:
    """Per partition, the committed offsets of the most complete final read (sorted)."""
    return {tp: sorted(log) for tp, log in final_logs(events).items()}


#: a move of a partition to another group member: (group, topic, partition), the new owner, its
#: first position, the group's last ok commit before the move, whether the position was given by
#: the assign (else: the first record returned), the highest offset possibly committed by then
Move = tuple[tuple[str, str, int], str, int, int, bool, int]


Finals = dict[tuple[str, int], list[int]]


def _moves(
    header: Mapping[str, Any], events: Sequence[Mapping[str, Any]], finals: Finals | None = None
) -> tuple[list[Move], Finals] | None:
    """Every move of a partition between group members with its first position and the
    commits before it (see rebalance-skip), and the final read's committed offsets per
    partition (``finals``, when given, else from the events' final reads); None when no
    consumer names a group."""
    events = settled_commits(events)
    config = header.get("config") or {}
    if not any(group_of(config, p) for p in (config.get("consumers") or {})):
        return None
    finals = _final_offsets(events) if finals is None else finals

    def commit_key(ev: Mapping[str, Any]) -> tuple[str, str, str, int, int] | None:
        v = ev.get("value") or {}
        if ev.get("f") != "commit" or type(v.get("offset")) is not int:
            return None
        return (
            str(ev.get("process")),
            str(v.get("group")),
            str(v.get("topic")),
            int(v.get("partition") or 0),
            v["offset"],
        )

    unknown = {k for ev in events if ev.get("type") == "info" and (k := commit_key(ev)) is not None}
    owner: dict[tuple[str, str, int], str] = {}
    committed: dict[tuple[str, str, int], int] = {}
    possibly: dict[tuple[str, str, int], int] = {}  # the highest offset of an info commit invoked so far
    inflight: dict[tuple[str, str, int], dict[str, int]] = {}  # commits sent, not answered yet: process -> offset
    # moves waiting for their first position: (process, topic, partition) -> (group key, committed, possibly)
    waiting: dict[tuple[str, str, int], tuple[tuple[str, str, int], int, int]] = {}
    # key, process, position, committed, known, possibly committed (at the move)
    moves: list[Move] = []
    for ev in sorted(events, key=lambda e: (int(e.get("time_ns", 0)), int(e.get("index", 0)))):
        f, v, proc = ev.get("f"), ev.get("value") or {}, str(ev.get("process"))
        if f == "commit" and ev.get("type") != "invoke":  # its answer: no longer in flight
            ck = commit_key(ev)
            if ck is not None:
                inflight.get(ck[1:4], {}).pop(ck[0], None)
        if f == "commit" and ev.get("type") == "ok" and type(v.get("offset")) is int:
            committed[(str(v.get("group")), str(v.get("topic")), int(v.get("partition") or 0))] = v["offset"]
            continue
        if f == "commit" and ev.get("type") == "invoke":
            ck = commit_key(ev)
            if ck is not None:  # the coordinator may apply it from now on, before its answer is seen
                inflight.setdefault(ck[1:4], {})[ck[0]] = ck[4]
            if ck is not None and ck in unknown:  # outcome unknown: may be applied from now on
                possibly[ck[1:4]] = max(possibly.get(ck[1:4], ck[4]), ck[4])
            continue
        if f == "poll" and ev.get("type") == "ok":
            for r in v.get("records", []):
                pk = (proc, str(r["topic"]), int(r["partition"]))
                if pk in waiting:
                    key, c, hi = waiting.pop(pk)
                    moves.append((key, proc, int(r["offset"]), c, False, hi))
            continue
        group = group_of(config, proc)
        if f != "assign" or group is None:
            continue
        key = (group, str(v.get("topic")), int(v.get("partition") or 0))
        pk = (proc, key[1], key[2])
        waiting.pop(pk, None)
        prev, owner[key] = owner.get(key), proc
        if prev is None or prev == proc or key not in committed:
            continue
        hi = max(committed[key], possibly.get(key, committed[key]), *inflight.get(key, {}).values())
        if type(v.get("offset")) is int:
            moves.append((key, proc, v["offset"], committed[key], True, hi))
        else:
            waiting[pk] = (key, committed[key], hi)
    return moves, finals


def rebalance_skip(
    header: Mapping[str, Any], events: Sequence[Mapping[str, Any]], finals: Finals | None = None
) -> Verdict:
    """rebalance-skip: after a partition moved to another member, its new owner's first position
    lies beyond the group's last committed offset (records nobody in the group consumed).

    A move is an ``assign`` of a partition to a group member (``config.consumers.<name>.group``)
    other than the member that last had it assigned, judged against the group's last ``ok``
    commit for the partition before it (by ``time_ns``). The first position is the assign's
    offset; when the client could not say it (offset null, as in a rebalance callback), it is
    the offset of the first record the new owner returned from the partition before its next
    assign. A first position ``p`` beyond the committed offset ``c`` is a skip when the final
    read's committed log holds a record in ``[c, p)`` (offsets there may be transaction markers
    or aborted data, which no one can read); without a final read of the partition, only a known
    assign offset is judged, by ``p > c``. Moves without a first position or without an earlier
    ok commit are not judged. A commit whose outcome is unknown (``info``: e.g. its response was
    lost in a fault) may have been applied: from its invoke on, its offset counts as possibly
    committed; so does a commit still in flight at the move (sent, its answer not seen yet: a
    member frozen between the two); a first position is judged against the highest of the last
    ok commit and those (``possibly_committed`` in the example). Counted: ``moves`` (judged moves),
    ``skips``. Examples: group, topic, partition, process, position, committed, skipped
    (committed records in between, or null), possibly_committed. Not applicable when no
    consumer names a group.
    """
    found = _moves(header, events, finals)
    if found is None:
        return Verdict("rebalance-skip", NOT_APPLICABLE)
    count = judged = 0
    bad: list[dict[str, Any]] = []
    for key, proc, pos, c, hi, offs in _judged(*found):
        judged += 1
        skipped = None if offs is None else bisect_left(offs, pos) - bisect_left(offs, hi)
        if (skipped > 0) if skipped is not None else pos > hi:
            count += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append(_move_example(key, proc, pos, c, skipped=skipped, possibly_committed=hi))
    return Verdict("rebalance-skip", count == 0, {"moves": judged, "skips": count}, bad)


def _judged(
    moves: list[Move], finals: Finals
) -> Iterator[tuple[tuple[str, str, int], str, int, int, int, list[int] | None]]:
    """The moves a first-position check can judge (rebalance-skip, rebalance-rewind): those of a
    partition the final read holds, or with a known assign offset; each as its key, process,
    first position, last ok commit, highest possibly committed offset and the final read's
    offsets of the partition (None: no final read)."""
    for key, proc, pos, c, known, hi in moves:
        offs = finals.get((key[1], key[2]))
        if offs is not None or known:
            yield key, proc, pos, c, hi, offs


def _move_example(key: tuple[str, str, int], proc: str, position: int, committed: int, **extra: Any) -> dict[str, Any]:
    """The example of a judged move (rebalance-skip, rebalance-rewind)."""
    group, topic, partition = key
    return {
        "group": group,
        "topic": topic,
        "partition": partition,
        "process": proc,
        "position": position,
        "committed": committed,
        **extra,
    }


def rebalance_rewind(
    header: Mapping[str, Any], events: Sequence[Mapping[str, Any]], finals: Finals | None = None
) -> Verdict:
    """rebalance-rewind: after a partition moved to another member, its new owner's first
    position lies below the group's last ``ok`` commit before the move: it re-delivers records
    the group had consumed *and committed*, beyond the duplicates a move may bring (those
    consumed but not committed). The mirror of rebalance-skip, over the same moves and first
    positions. A first position ``p`` below the committed offset ``c`` is a rewind when the final
    read's committed log holds a record in ``[p, c)``; without a final read of the partition,
    only a known assign offset is judged, by ``p < c``. A commit whose outcome is unknown never
    raises ``c`` (it may not have been applied). Counted: ``moves`` (judged moves), ``rewinds``,
    ``rewound`` (committed records re-delivered). Examples: group, topic, partition, process,
    position, committed, rewound (records, or null). Not applicable when no consumer names a group.
    """
    found = _moves(header, events, finals)
    if found is None:
        return Verdict("rebalance-rewind", NOT_APPLICABLE)
    judged = count = total = 0
    bad: list[dict[str, Any]] = []
    for key, proc, pos, c, _, offs in _judged(*found):
        judged += 1
        rewound = None if offs is None else bisect_left(offs, c) - bisect_left(offs, pos)
        if (rewound > 0) if rewound is not None else pos < c:
            count += 1
            total += rewound or 0
            if len(bad) < MAX_EXAMPLES:
                bad.append(_move_example(key, proc, pos, c, rewound=rewound))
    return Verdict("rebalance-rewind", count == 0, {"moves": judged, "rewinds": count, "rewound": total}, bad)


def commit_ahead(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """commit-ahead: a group committed offset o for a partition although no member of the group
    had returned offset o-1 there nor moved its position to o.

    Members are the processes naming the group in ``config.consumers.<name>.group`` plus those
    that committed for it; "had" means an ``ok`` poll record at offset o-1, or a ``seek``/
    ``assign`` to o, recorded before the commit's ``ok`` (by ``time_ns``). Only ``ok`` commits
    are judged. Counted: ``commits``, ``ahead``. Examples: group, topic, partition, offset,
    process. Not applicable when there is no ok commit, or no member of a committing group
    recorded any poll or position change (nothing to compare the commits with).
    """
    return commit_ahead_of(from_events(header, list(events)))  # type: ignore[arg-type]


def group_delivery(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """group-delivery: a consumer group never returned an acknowledged record that the final log
    holds, on a topic the group reads (at-least-once delivery, judged at the end of the run).

    For each group (members: the processes naming it in ``config.consumers.<name>.group``), the
    topics it reads are those its members recorded a poll record, ``assign`` or ``seek`` on. A
    record is owed to the group when a ``send`` on such a topic ended ``ok`` at offset o and the
    most complete final read of its partition holds the same value at o (committed data: records
    of aborted or open transactions are not listed there, so never owed, nor anything at or above
    the first record of a transaction still open, which read_committed consumers wait on); it is
    unread when no
    member's ``ok`` poll returned (topic, partition, o). Records the final log lacks are
    lost-write's; one found at another offset is inconsistent-offsets'. A partition without a
    final read is not judged (``unjudged``). The run settles before its final read (consumers
    catch up to the high watermarks, ``highwater.runner``), so an unread record is one the group
    stopped delivering: a partition a member kept across a rebalance and never fetched again
    (kafka-python #3131), a move past uncommitted records, a member that hangs. Counted:
    ``owed``, ``unread``, ``unjudged`` (partitions). Examples: group, topic, partition, offset,
    value, and ``unread_here`` (that partition's unread records). An exactly-once copy's group
    (``config.copy.group``) is copy-exactly-once's to judge: what its copiers owe stops at the
    group's committed offset. Not applicable when no consumer names another group or no group
    member read anything.
    """
    return group_delivery_of(from_events(header, list(events)))  # type: ignore[arg-type]


def commit_regression_of(h: HistoryData) -> Verdict:
    """commit-regression over the columns: when no key's ok commits ever go down in time
    order, nothing can be a regression nor concurrent, and the verdict is read off the columns;
    otherwise ``commit_regression`` follows the commits one by one (``group_events``)."""
    c = h.txn.commits
    typ, time = settled(h)
    judged = np.nonzero((typ == OK) & (c.offset != NO_OFFSET))[0]
    if len(judged) == 0:
        return Verdict("commit-regression", NOT_APPLICABLE)
    key, _ = commit_keys(h)
    order = judged[np.lexsort((c.row[judged], time[judged], key[judged]))]  # per key, by (time, row)
    k, off = key[order], c.offset[order]
    if not ((k[1:] == k[:-1]) & (off[1:] < off[:-1])).any():
        counts = {"commits": len(judged), "regressions": 0, "concurrent": 0}
        return Verdict("commit-regression", True, counts, [])
    return commit_regression(h.header, group_events(h))


def rebalance_skip_of(h: HistoryData) -> Verdict:
    """rebalance-skip over the columns (``move_events``, ``final_offsets``)."""
    return rebalance_skip(h.header, move_events(h), final_offsets(h))


def rebalance_rewind_of(h: HistoryData) -> Verdict:
    """rebalance-rewind over the columns (``move_events``, ``final_offsets``)."""
    return rebalance_rewind(h.header, move_events(h), final_offsets(h))


__all__ = [
    "commit_ahead",
    "commit_ahead_of",
    "commit_regression",
    "commit_regression_of",
    "final_logs",
    "group_delivery",
    "group_delivery_of",
    "group_of",
    "groups_of",
    "rebalance_rewind",
    "rebalance_rewind_of",
    "rebalance_skip",
    "rebalance_skip_of",
    "settled_commits",
]
