"""The exactly-once copy's own check, over raw ``highwater.history/1`` events.

Kafka's transaction system tests judge a copy by set equality of the copied messages; here that
equality is made precise per record and per offset, and the other transaction and group checks
(aborted-read on the copiers' reads, torn-transaction and lost-write on the copies,
commit-ahead / commit-regression / rebalance-skip on the copy group's offsets inside the
transactions) judge the rest of the copy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from highwater.core.checks.groups import final_logs, settled_commits
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, UNKNOWN, Verdict
from highwater.core.history.format import source_of


def copy_exactly_once(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """copy-exactly-once: in an exactly-once copy (``config.copy``: ``source``, ``sink`` and
    ``group`` topics/group), a source record the group committed past is not in the committed
    sink exactly once, or the committed sink holds a copy of no committed source record.

    Logs are each partition's most complete final read (committed records below its high
    watermark; aborted and open transactional data excluded). A sink value ``<v>@<txn>`` is a
    copy of the source value ``<v>``. The group's committed offset for a source partition is its
    last commit there by ``time_ns``, commits made inside a transaction counting only when that
    transaction committed (``settled_commits``). Every committed source record below that offset
    was copied by a committed transaction, so it must be in the sink: once (``missing`` when it
    is not there, ``duplicated`` when it is there more than once). Records at or above it are not
    judged as missing (not yet copied), but two copies of any source value are ``duplicated``.
    A copy whose source value is not in the committed source log (an aborted or never written
    record was copied) is ``phantom``. Counted: ``judged`` (source records below the committed
    offsets), ``copies`` (committed sink records), ``missing``, ``duplicated``, ``phantom``.
    Examples: kind, value, and the source topic, partition and offset, or the copies' offsets.
    Not applicable without ``config.copy``; unknown without a final read of every source and
    sink partition found, or when the group committed no offset.
    """
    copy = (header.get("config") or {}).get("copy") or {}
    source, sink, group = copy.get("source"), copy.get("sink"), copy.get("group")
    if not (source and sink and group):
        return Verdict("copy-exactly-once", NOT_APPLICABLE)
    logs = final_logs(events)
    source_logs = {p: log for (t, p), log in logs.items() if t == source}
    sink_logs = {p: log for (t, p), log in logs.items() if t == sink}
    committed: dict[int, int] = {}
    for ev in sorted(settled_commits(events), key=lambda e: (int(e.get("time_ns", 0)), int(e.get("index", 0)))):
        v = ev.get("value") or {}
        if ev.get("f") == "commit" and ev.get("type") == "ok" and v.get("group") == group and v.get("topic") == source:
            committed[int(v.get("partition") or 0)] = int(v["offset"])
    if not source_logs or not sink_logs or set(source_logs) != set(sink_logs) or not committed:
        why = "no ok commit of the copy group" if not committed else "no final read of every source and sink partition"
        return Verdict("copy-exactly-once", UNKNOWN, notes=[why])
    where = {val: (p, off) for p, log in source_logs.items() for off, val in log.items() if val is not None}
    copies: Counter[str | None] = Counter()
    copy_offsets: dict[str | None, list[tuple[int, int]]] = {}
    for p, log in sink_logs.items():
        for off, val in log.items():
            src = source_of(val)
            copies[src] += 1
            copy_offsets.setdefault(src, []).append((p, off))
    bad: list[dict[str, Any]] = []
    counts = {"judged": 0, "copies": sum(copies.values()), "missing": 0, "duplicated": 0, "phantom": 0}

    def note(kind: str, **example: Any) -> None:
        counts[kind] += 1
        if len(bad) < MAX_EXAMPLES:
            bad.append({"kind": kind, **example})

    for p, log in sorted(source_logs.items()):
        for off, val in sorted(log.items()):
            if off < committed.get(p, 0):
                counts["judged"] += 1
                if copies[val] == 0:
                    note("missing", value=val, topic=source, partition=p, offset=off)
    for src, n in copies.items():
        if src not in where:
            note("phantom", value=src, topic=sink, copies=copy_offsets[src][:5])
        elif n > 1:
            p, off = where[src]
            note("duplicated", value=src, topic=source, partition=p, offset=off, copies=copy_offsets[src][:5])
    failed = counts["missing"] + counts["duplicated"] + counts["phantom"]
    return Verdict("copy-exactly-once", failed == 0, counts, bad)
