"""torn-transaction over raw ``highwater.history/1`` events (issue 17; not yet registered in
``harness.checks``, like the other transaction checks in ``harness.checks.txn``).

A committed transaction is atomic: all of its writes are in the log, or none. Two places can
show a torn one: the final committed log (what every replica agrees is committed after the run)
and what a read_committed consumer returned while it read through the transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.checks.txn import isolation_of
from harness.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict
from harness.history.format import value_text

TP = tuple[str, int]


@dataclass
class _Txn:
    """One transaction's writes: value text -> (topic, partition, acked offset or None)."""

    writes: dict[str, tuple[str, int, int | None]] = field(default_factory=dict)


def _committed_txns(events: Sequence[Mapping[str, Any]]) -> dict[str, _Txn]:
    """Transactions with an ``ok`` commit, and their writes: every send invoked with the id whose
    completion is not ``fail`` (a committed transaction cannot hold a write that provably did
    not happen; a ``fail`` inside one is another check's business)."""
    committed = {
        (ev.get("value") or {}).get("txn")
        for ev in events
        if ev.get("f") == "txn" and ev.get("type") == "ok" and (ev.get("value") or {}).get("op") == "commit"
    }
    txns: dict[str, _Txn] = {}
    failed: set[str] = set()
    for ev in events:
        v = ev.get("value") or {}
        if ev.get("f") != "send" or v.get("txn") not in committed:
            continue
        text = value_text(v.get("value"))[0]
        if text is None:
            continue
        t = txns.setdefault(str(v["txn"]), _Txn())
        tp = (str(v.get("topic")), int(v.get("partition") or 0))
        if ev.get("type") == "invoke":
            t.writes.setdefault(text, (*tp, None))
        elif ev.get("type") == "ok" and type(v.get("offset")) is int:
            t.writes[text] = (*tp, v["offset"])
        elif ev.get("type") == "fail":
            failed.add(text)
    for t in txns.values():
        for text in failed & set(t.writes):
            del t.writes[text]
    return {k: t for k, t in txns.items() if t.writes}


@dataclass(frozen=True)
class _Final:
    log_start: int
    values: frozenset[str]  # committed values: offsets in [log_start, hw)


def _final_logs(events: Sequence[Mapping[str, Any]]) -> dict[TP, _Final]:
    """Per partition, the committed part of the most complete replica's final read (highest HW,
    then most records), as the other durability checks choose their reference."""
    best: dict[TP, tuple[tuple[int, int], Mapping[str, Any]]] = {}
    for ev in events:
        v = ev.get("value") or {}
        if ev.get("f") != "final-read" or ev.get("type") != "ok":
            continue
        tp = (str(v.get("topic")), int(v.get("partition") or 0))
        rank = (int(v.get("hw", -1)), len(v.get("records") or []))
        if tp not in best or rank > best[tp][0]:
            best[tp] = (rank, v)
    out: dict[TP, _Final] = {}
    for tp, (_, v) in best.items():
        ls, hw = int(v.get("log_start", 0)), int(v.get("hw", -1))
        texts = (value_text(val)[0] for off, val in v.get("records") or [] if ls <= off < hw)
        out[tp] = _Final(ls, frozenset(t for t in texts if t is not None))
    return out


def _segments(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> dict[tuple[str, TP], list[list[int]]]:
    """Per read_committed consumer and partition, the offsets it returned, split wherever its
    position changed other than by polling (assign/seek): within one segment it read forward."""
    config = header.get("config") or {}
    segs: dict[tuple[str, TP], list[list[int]]] = defaultdict(lambda: [[]])
    for ev in events:
        proc, v = str(ev.get("process")), ev.get("value") or {}
        if ev.get("f") in ("assign", "seek") and ev.get("type") == "ok":
            key = (proc, (str(v.get("topic")), int(v.get("partition") or 0)))
            if segs[key][-1]:
                segs[key].append([])
        elif ev.get("f") == "poll" and ev.get("type") == "ok" and isolation_of(config, proc) == "read_committed":
            for r in v.get("records") or []:
                segs[(proc, (str(r["topic"]), int(r["partition"])))][-1].append(int(r["offset"]))
    return segs


def torn_transaction(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """torn-transaction: a committed transaction's writes are partly in the final committed log,
    or a read_committed consumer that read past all of a committed transaction's offsets on a
    partition returned some of them but not all.

    Committed: an ``ok`` commit for the id; unknown outcomes are never judged. Final log: per
    partition, the offsets in [log_start, hw) of the most complete replica's final read. A
    transaction is judged there only when every write's partition has a final read and no
    acked offset lies below its log start (retention would explain an absence); it is torn when
    some of its writes are present and some absent (all absent is lost-write's finding, not a
    tear). Consumers: per read_committed consumer, partition and forward-reading segment (split
    at every assign/seek), a transaction whose acked offsets there are all known is judged when
    the segment starts at or before the first and goes past the last of them; it is torn when
    the segment returned some but not all of them.
    Counted: ``committed`` (transactions with an ok commit and writes), ``judged-final``,
    ``torn-final``, ``judged-reads``, ``torn-reads``. Examples: where (final/consumer), txn,
    topic, partition, present/returned and absent/missed values or offsets.
    Not applicable when no transaction committed.
    """
    txns = _committed_txns(events)
    if not txns:
        return Verdict("torn-transaction", NOT_APPLICABLE)
    finals = _final_logs(events)
    counts = {"committed": len(txns), "judged-final": 0, "torn-final": 0, "judged-reads": 0, "torn-reads": 0}
    bad: list[dict[str, Any]] = []

    def example(ex: dict[str, Any]) -> None:
        if len(bad) < MAX_EXAMPLES:
            bad.append(ex)

    for tid, t in sorted(txns.items()):
        where = {(topic, part) for topic, part, _ in t.writes.values()}
        below = any(
            off is not None and off < finals[(tp, p)].log_start for tp, p, off in t.writes.values() if (tp, p) in finals
        )
        if where <= set(finals) and not below:
            counts["judged-final"] += 1
            present = sorted(v for v, (tp, p, _) in t.writes.items() if v in finals[(tp, p)].values)
            absent = sorted(set(t.writes) - set(present))
            if present and absent:
                counts["torn-final"] += 1
                example({"where": "final", "txn": tid, "present": present, "absent": absent})

    # each partition's transactions whose acked offsets there are all known, in id order, and
    # each segment's bounds and offsets computed once: a consumer's segments meet only the
    # transactions of their own partition (looping over every transaction for every segment,
    # and re-reading each segment per transaction, was quadratic in a long transactional run)
    wanted: dict[TP, list[tuple[str, set[int]]]] = defaultdict(list)
    for tid, t in sorted(txns.items()):
        by_tp: dict[TP, list[int | None]] = defaultdict(list)
        for topic, part, off in t.writes.values():
            by_tp[(topic, part)].append(off)
        for tp, offsets in by_tp.items():
            if all(off is not None for off in offsets):
                wanted[tp].append((tid, {int(o) for o in offsets if o is not None}))
    segments = _segments(header, events)
    for (proc, tp), segs in sorted(segments.items()):
        spans = [(min(seg), max(seg), set(seg)) for seg in segs if seg]
        for tid, want in wanted.get(tp, []):
            for first, last, seen in spans:
                if first > min(want) or last <= max(want):
                    continue
                counts["judged-reads"] += 1
                got = want & seen
                if got and got != want:
                    counts["torn-reads"] += 1
                    example(
                        {
                            "where": "consumer",
                            "process": proc,
                            "txn": tid,
                            "topic": tp[0],
                            "partition": tp[1],
                            "returned": sorted(got),
                            "missed": sorted(want - got),
                        }
                    )
    return Verdict("torn-transaction", counts["torn-final"] + counts["torn-reads"] == 0, counts, bad)
