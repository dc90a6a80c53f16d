"""Facts several checks share, computed once per ``HistoryData`` (vectorised, cached).

* ``reference(h)``: per partition, the *committed final log*: the records of the final-read
  replica with the highest high watermark (ties: more records, then lower id), from its
  ``log_start`` up to that high watermark. That is what the cluster promises to keep.
* ``poll_status(h)``: for every polled record, whether the committed final log agrees (AGREE),
  disagrees (DISAGREE: other value at that offset, or the offset is not committed), or cannot
  say (NOAUTH: no final read of the partition, or the offset is below its log start), or
  TXN_UNCOMMITTED: a record of an aborted or open transaction returned to a read_uncommitted
  consumer (Kafka allows it; ``core.checks.raw.allowed_uncommitted_reads``).
* ``chains(h)``: every consumer's records of one partition, in poll order, cut into segments
  wherever a position change (assign/seek of that partition, or of all its partitions) happened
  between two polls, with the position change that opened each segment.

Keys combine a partition id and an offset into one sortable int64: ``tp << 40 | offset``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from highwater.core.checks.data import HistoryData, cached, okey
from highwater.core.checks.raw import allowed_uncommitted_reads
from highwater.core.checks.verdict import MAX_EXAMPLES

ROW_SHIFT = 36
AGREE, DISAGREE, NOAUTH = 0, 1, 2
#: a record of an aborted or open transaction read by a read_uncommitted consumer (allowed)
TXN_UNCOMMITTED = 3


@dataclass
class Reference:
    has_final: np.ndarray  # bool per tp
    log_start: np.ndarray  # int64 per tp
    hw: np.ndarray  # committed high watermark per tp (-1 without final)
    ref: list[int | None]  # index into h.finals of the reference replica, per tp
    keys: np.ndarray  # sorted keys of committed records
    vids: np.ndarray  # their value ids
    #: per tp, the reference replica's unreadable [from, to) ranges (``FinalLog.unreadable``)
    unreadable: list[np.ndarray] = field(default_factory=list)

    def in_unreadable(self, tp: np.ndarray, off: np.ndarray) -> np.ndarray:
        """Whether each (tp, offset) lies in a range the reference replica could not read back:
        what was there is unknown, neither agreeing with a read nor absent from the log."""
        out = np.zeros(len(tp), bool)
        for t, ranges in enumerate(self.unreadable):
            for lo, hi in ranges.tolist():
                out |= (tp == t) & (off >= lo) & (off < hi)
        return out

    def unreadable_between(self, tp: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """How many unreadable offsets of tp lie in [lo, hi): offsets a consumer must not pass
        over silently either (a read there fails until the consumer is moved past them)."""
        out = np.zeros(len(tp), np.int64)
        for t, ranges in enumerate(self.unreadable):
            for a, b in ranges.tolist():
                out += np.where(tp == t, np.maximum(np.minimum(hi, b) - np.maximum(lo, a), 0), 0)
        return out

    def lookup(self, tp: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, vid) of the committed record at each (tp, offset)."""
        k = okey(tp, off)
        idx = np.searchsorted(self.keys, k)
        idxc = np.minimum(idx, max(len(self.keys) - 1, 0))
        if len(self.keys) == 0:
            return np.zeros(len(k), bool), np.zeros(len(k), np.int64)
        found = self.keys[idxc] == k
        return found, np.where(found, self.vids[idxc], 0)

    def count_between(self, tp: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """How many committed offsets of tp lie in [lo, hi)."""
        a = np.searchsorted(self.keys, okey(tp, np.maximum(lo, 0)))
        b = np.searchsorted(self.keys, okey(tp, np.maximum(hi, 0)))
        return np.maximum(b - a, 0)


def reference(h: HistoryData) -> Reference:
    return cached(h, "reference", _reference)


def _reference(h: HistoryData) -> Reference:
    n = len(h.tps)
    best: list[int | None] = [None] * n
    for i, fl in enumerate(h.finals):
        j = best[fl.tp]
        if j is None or _rank(fl) > _rank(h.finals[j]):
            best[fl.tp] = i
    has = np.array([b is not None for b in best], dtype=bool)
    ls = np.zeros(n, np.int64)
    hw = np.full(n, -1, np.int64)
    keys, vids = [], []
    for tp, j in enumerate(best):
        if j is None:
            continue
        fl = h.finals[j]
        ls[tp], hw[tp] = fl.log_start, fl.hw
        m = (fl.offsets >= fl.log_start) & (fl.offsets < fl.hw)
        keys.append(okey(np.full(int(m.sum()), tp), fl.offsets[m]))
        vids.append(fl.vids[m])
    k = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    v = np.concatenate(vids) if vids else np.zeros(0, np.int64)
    order = np.argsort(k, kind="stable")
    unreadable = [h.finals[j].unreadable if j is not None else np.zeros((0, 2), np.int64) for j in best]
    return Reference(has, ls, hw, best, k[order], v[order], unreadable)


def _rank(fl: Any) -> tuple[int, int, int]:
    return (fl.hw, len(fl.offsets), -fl.replica)


def poll_status(h: HistoryData) -> np.ndarray:
    return cached(h, "poll_status", _poll_status)


def _poll_status(h: HistoryData) -> np.ndarray:
    p, ref = h.polls, reference(h)
    if len(p.tp) == 0:
        return np.zeros(0, np.int8)
    found, fv = ref.lookup(p.tp, p.offset)
    noauth = ~ref.has_final[p.tp] | (p.offset < ref.log_start[p.tp]) | ref.in_unreadable(p.tp, p.offset)
    agree = found & (fv == p.vid)
    st = np.where(noauth, NOAUTH, np.where(agree, AGREE, DISAGREE)).astype(np.int8)
    if len(h.txn_rows) and (st == DISAGREE).any():
        idx = np.nonzero(st == DISAGREE)[0]
        st[idx[allowed_uncommitted_reads(h, idx)]] = TXN_UNCOMMITTED
    return st


@dataclass
class Chains:
    """Poll records sorted by (consumer, partition, poll order); arrays are in sorted order."""

    idx: np.ndarray  # index into h.polls
    chain: np.ndarray
    proc: np.ndarray
    tp: np.ndarray
    row: np.ndarray
    off: np.ndarray
    new_segment: np.ndarray  # bool: first record of a chain or after a position change
    start_offset: np.ndarray  # at segment starts: offset the opening position change set, or -1
    start_row: np.ndarray  # at segment starts: row of that position change, or -1
    next_pos: np.ndarray  # index into pos_* of the first position change of the chain after, or -1
    pos_row: np.ndarray
    pos_off: np.ndarray
    pos_trunc: np.ndarray


def chains(h: HistoryData) -> Chains:
    return cached(h, "chains", _chains)


def _chains(h: HistoryData) -> Chains:
    p, pos = h.polls, h.positions
    ck = (p.proc.astype(np.int64) << 24) | p.tp.astype(np.int64)
    uniq, chain = np.unique(ck, return_inverse=True)
    chain = chain.reshape(-1).astype(np.int64)
    k = (chain << ROW_SHIFT) | p.row
    order = np.argsort(k, kind="stable")
    s_chain, s_row, s_k = chain[order], p.row[order], k[order]
    del ck, chain, k  # per polled record each: the temporaries are freed as soon as done (peak memory)
    s_proc = p.proc[order].astype(np.int64)

    # position changes of one partition, mapped onto the chains they affect
    specific = pos.tp >= 0
    pck = (pos.proc.astype(np.int64) << 24) | pos.tp.astype(np.int64)
    j = np.searchsorted(uniq, pck)
    jc = np.minimum(j, max(len(uniq) - 1, 0))
    hit = specific & (len(uniq) > 0) & (uniq[jc] == pck if len(uniq) else False)
    pkey = (jc[hit].astype(np.int64) << ROW_SHIFT) | pos.row[hit]
    po = np.argsort(pkey, kind="stable")
    pkey = pkey[po]
    pos_row, pos_off, pos_trunc = pos.row[hit][po], pos.offset[hit][po], pos.truncation[hit][po] != 0
    # position changes of all partitions of a consumer
    wild = pos.tp < 0
    wkey = np.sort((pos.proc[wild].astype(np.int64) << ROW_SHIFT) | pos.row[wild])
    w_rows = wkey & ((1 << ROW_SHIFT) - 1)

    pc_ = np.searchsorted(pkey, s_k)
    del s_k
    wc = np.searchsorted(wkey, (s_proc << ROW_SHIFT) | s_row)
    n = len(order)
    new = np.ones(n, bool)
    if n > 1:
        new[1:] = (s_chain[1:] != s_chain[:-1]) | (pc_[1:] != pc_[:-1]) | (wc[1:] != wc[:-1])

    # the position change that opened each segment: the later of the chain's and the consumer's
    last_p = pc_ - 1
    has_p = (last_p >= 0) & ((pkey[np.maximum(last_p, 0)] >> ROW_SHIFT) == s_chain if len(pkey) else False)
    p_row = np.where(has_p, pos_row[np.maximum(last_p, 0)] if len(pkey) else -1, -1)
    p_off = np.where(has_p, pos_off[np.maximum(last_p, 0)] if len(pkey) else -1, -1)
    del last_p, has_p
    last_w = wc - 1
    del wc
    has_w = (last_w >= 0) & ((wkey[np.maximum(last_w, 0)] >> ROW_SHIFT) == s_proc if len(wkey) else False)
    w_row = np.where(has_w, w_rows[np.maximum(last_w, 0)] if len(wkey) else -1, -1)
    del last_w, has_w
    start_row = np.where(new, np.maximum(p_row, w_row), -1)
    start_offset = np.where(new & (p_row > w_row), p_off, -1)
    del p_row, p_off, w_row

    nxt = pc_
    has_next = (nxt < len(pkey)) & (
        (pkey[np.minimum(nxt, max(len(pkey) - 1, 0))] >> ROW_SHIFT) == s_chain if len(pkey) else False
    )
    return Chains(
        idx=order,
        chain=s_chain,
        proc=s_proc,
        tp=p.tp[order].astype(np.int64),
        row=s_row,
        off=p.offset[order],
        new_segment=new,
        start_offset=start_offset,
        start_row=start_row,
        next_pos=np.where(has_next, nxt, -1),
        pos_row=pos_row,
        pos_off=pos_off,
        pos_trunc=pos_trunc,
    )


def tp_fields(h: HistoryData, tp: int) -> dict[str, Any]:
    name = h.tp_name(int(tp))
    return {"topic": name[0], "partition": name[1]} if name else {"topic": None, "partition": None}


def example(
    h: HistoryData,
    kind: str,
    rows: Sequence[int],
    *,
    tp: int | None = None,
    focus: Mapping[int, Sequence[int]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """One anomaly: what, where, and the events involved (fetched from the source)."""
    out: dict[str, Any] = {"kind": kind}
    if tp is not None:
        out.update(tp_fields(h, tp))
    out.update({k: _plain(v) for k, v in fields.items()})
    uniq_rows = list(dict.fromkeys(int(r) for r in rows if r is not None and int(r) >= 0))
    out["events"] = h.events(uniq_rows, focus)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def pick(mask_or_idx: np.ndarray) -> np.ndarray:
    """The first few positions of a boolean mask (or index array), for examples."""
    idx = np.nonzero(mask_or_idx)[0] if mask_or_idx.dtype == bool else mask_or_idx
    return idx[:MAX_EXAMPLES]
