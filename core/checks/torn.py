"""torn-transaction (issue 17; registered in ``core.checks``), judged over the columns
(``HistoryData`` and its ``txn``, ``core.checks.txn_data``); ``torn_transaction(header,
events)`` builds those columns from an event list first.

A committed transaction is atomic: all of its writes are in the log, or none. Two places can
show a torn one: the final committed log (what every replica agrees is committed after the run)
and what a read_committed consumer returned while it read through the transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from highwater.core.checks.data import FAIL, INVOKE, OK, HistoryData, distinct, from_events, member
from highwater.core.checks.txn import read_committed
from highwater.core.checks.txn_data import COMMIT
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict


def _writes(h: HistoryData) -> dict[str, np.ndarray]:
    """The writes of transactions with an ``ok`` commit, one per (transaction, value): every
    send invoked with the id whose completion is not ``fail`` (a committed transaction cannot
    hold a write that provably did not happen; a ``fail`` inside one is another check's
    business). Its partition and offset are those of its last ``ok`` with an offset, else of its
    first invoke (offset -1: unknown)."""
    d = h.txn
    t, s = d.txns, d.sends
    committed = np.zeros(len(d.txn_names) + 1, bool)
    committed[t.txn[(t.op == COMMIT) & (t.type == OK) & (t.txn >= 0)]] = True
    mine = committed[s.txn] & (s.vid != 0)
    failed = distinct(s.vid[mine & (s.type == FAIL)])
    acked = np.nonzero(mine & (s.type == OK) & (s.offset >= 0))[0]
    invoked = np.nonzero(mine & (s.type == INVOKE))[0]
    cand = np.concatenate([acked[::-1], invoked])  # preference order: last ack, then first invoke
    order = np.lexsort((np.arange(len(cand)), s.vid[cand], s.txn[cand]))
    cand = cand[order]
    first = np.ones(len(cand), bool)
    first[1:] = (s.txn[cand][1:] != s.txn[cand][:-1]) | (s.vid[cand][1:] != s.vid[cand][:-1])
    w = cand[first]
    w = w[~member(s.vid[w], failed)]
    return {
        "txn": s.txn[w].astype(np.int64),
        "vid": s.vid[w],
        "tp": s.tp[w].astype(np.int64),
        "offset": np.where(s.type[w] == OK, s.offset[w], -1),
        "row": s.row[w],
    }


def _finals(h: HistoryData) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Per partition, the most complete replica's final read (highest HW, then most records;
    the first such): whether there is one, its log start, its committed values (sorted ids of
    the records in [log_start, hw))."""
    n = len(h.tps)
    best: list[int | None] = [None] * n
    for i, fl in enumerate(h.finals):
        if fl.tp < 0:
            continue
        j = best[fl.tp]
        if j is None or (fl.hw, len(fl.offsets)) > (h.finals[j].hw, len(h.finals[j].offsets)):
            best[fl.tp] = i
    has = np.array([b is not None for b in best] + [False], bool)  # + [False]: tp -1
    ls = np.zeros(n + 1, np.int64)
    values = [np.zeros(0, np.int64)] * n
    for tp, j in enumerate(best):
        if j is not None:
            fl = h.finals[j]
            ls[tp] = fl.given_log_start
            m = (fl.offsets >= fl.given_log_start) & (fl.offsets < fl.hw) & (fl.vids != 0)
            values[tp] = distinct(fl.vids[m])
    return has, ls, values


def torn_transaction(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """torn-transaction over an event list (``torn_transaction_of``)."""
    return torn_transaction_of(from_events(header, list(events)))  # type: ignore[arg-type]


def torn_transaction_of(h: HistoryData) -> Verdict:
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
    w = _writes(h)
    txns = distinct(w["txn"])
    if len(txns) == 0:
        return Verdict("torn-transaction", NOT_APPLICABLE)
    names = h.txn.txn_names
    rank = names.ranks()  # transactions are judged in id order
    counts = {"committed": len(txns), "judged-final": 0, "torn-final": 0, "judged-reads": 0, "torn-reads": 0}
    bad: list[dict[str, Any]] = []

    has, ls, values = _finals(h)
    tp = w["tp"]
    in_final = has[tp]
    present = np.zeros(len(tp), bool)
    for p in distinct(tp[in_final]).tolist():
        m = tp == p
        present[m] = member(w["vid"][m], values[p])
    below = in_final & (w["offset"] >= 0) & (w["offset"] < ls[tp])
    n = len(names)
    judged = (np.bincount(w["txn"], ~in_final | below, n) == 0)[txns]
    n_present = np.bincount(w["txn"], present, n)[txns]
    n_absent = np.bincount(w["txn"], ~present, n)[txns]
    counts["judged-final"] = int(judged.sum())
    torn = txns[judged & (n_present > 0) & (n_absent > 0)]
    counts["torn-final"] = len(torn)
    for tid in sorted(torn.tolist(), key=lambda i: names[i])[:MAX_EXAMPLES]:
        m = w["txn"] == tid
        texts = h.sent_texts(w["row"][m])
        bad.append(
            {
                "where": "final",
                "txn": names[tid],
                "present": sorted(str(x) for x, y in zip(texts, present[m]) if y),
                "absent": sorted(str(x) for x, y in zip(texts, present[m]) if not y),
            }
        )
    _reads(h, w, rank, counts, bad)
    return Verdict("torn-transaction", counts["torn-final"] + counts["torn-reads"] == 0, counts, bad)


def _by_key(key: np.ndarray) -> dict[int, np.ndarray]:
    """The indices of each distinct key, in their original order (one sort, not a scan per key)."""
    order = np.argsort(key, kind="stable")
    uniq, starts = np.unique(key[order], return_index=True)
    return dict(zip(uniq.tolist(), np.split(order, starts[1:]))) if len(key) else {}


class _Wanted:
    """Of one partition's writes, the transactions whose acked offsets there are all known, in
    id order: their distinct offsets, flat (``starts``/``sizes`` cut them per transaction)."""

    def __init__(self, w: dict[str, np.ndarray], rank: np.ndarray, m: np.ndarray) -> None:
        txn, off = w["txn"][m], w["offset"][m]
        keep = ~member(txn, txn[off < 0])
        txn, off = txn[keep], off[keep]
        order = np.lexsort((off, rank[txn]))
        txn, off = txn[order], off[order]
        first = np.ones(len(off), bool)
        first[1:] = (txn[1:] != txn[:-1]) | (off[1:] != off[:-1])
        txn, self.flat = txn[first], off[first]
        new = np.ones(len(txn), bool)
        new[1:] = txn[1:] != txn[:-1]
        self.starts = np.nonzero(new)[0]
        self.sizes = np.diff(np.append(self.starts, len(txn)))
        self.txns = txn[self.starts]
        self.lo = self.flat[self.starts] if len(txn) else np.zeros(0, np.int64)
        self.hi = self.flat[self.starts + self.sizes - 1] if len(txn) else np.zeros(0, np.int64)

    def offsets(self, j: int) -> np.ndarray:
        return self.flat[self.starts[j] : self.starts[j] + self.sizes[j]]


def _reads(h: HistoryData, w: dict[str, np.ndarray], rank: np.ndarray, counts: dict[str, int], bad: list[Any]) -> None:
    """The consumer half: per read_committed consumer and partition, its forward-reading
    segments (split at every ok assign/seek of that partition) against the transactions there."""
    p, pos = h.polls, h.positions
    rc = read_committed(h)
    idx = np.nonzero(rc[p.proc])[0] if len(rc) else np.zeros(0, np.int64)
    split = (pos.type == OK) & (pos.tp >= 0)
    records = _by_key((p.proc[idx].astype(np.int64) << 32) | p.tp[idx].astype(np.int64))
    cuts_of = _by_key((pos.proc[split].astype(np.int64) << 32) | pos.tp[split].astype(np.int64))
    writes_of = _by_key(w["tp"])
    pairs = sorted(((k >> 32, k & 0xFFFFFFFF) for k in records), key=lambda k: (h.proc_name(k[0]), h.tps[k[1]]))
    names = h.txn.txn_names
    wanted_cache: dict[int, _Wanted] = {}
    for proc, tp in pairs:
        m = idx[records[(proc << 32) | tp]]
        cuts = pos.row[split][cuts_of.get((proc << 32) | tp, np.zeros(0, np.int64))]
        seg = np.searchsorted(cuts, p.row[m])  # position changes before each record
        if tp not in wanted_cache:
            wanted_cache[tp] = _Wanted(w, rank, writes_of.get(tp, np.zeros(0, np.int64)))
        want_tp = wanted_cache[tp]
        if not len(want_tp.txns):
            continue
        hits: list[tuple[int, int]] = []  # (transaction's place, segment) of torn reads
        for k in distinct(seg).tolist():
            seen = distinct(p.offset[m][seg == k])
            judged = (seen[0] <= want_tp.lo) & (seen[-1] > want_tp.hi)
            counts["judged-reads"] += int(judged.sum())
            got = np.add.reduceat(member(want_tp.flat, seen), want_tp.starts)
            hits += [(j, k) for j in np.nonzero(judged & (got > 0) & (got < want_tp.sizes))[0].tolist()]
        counts["torn-reads"] += len(hits)
        for j, k in sorted(hits):  # examples in transaction order, then segment order
            if len(bad) >= MAX_EXAMPLES:
                break
            want = want_tp.offsets(j)
            seen = distinct(p.offset[m][seg == k])
            got = member(want, seen)
            topic, partition = h.tps[tp]
            bad.append(
                {
                    "where": "consumer",
                    "process": h.proc_name(proc),
                    "txn": names[int(want_tp.txns[j])],
                    "topic": topic,
                    "partition": partition,
                    "returned": want[got].tolist(),
                    "missed": want[~got].tolist(),
                }
            )
