"""Checks on what producers wrote: lost-write, unseen, duplicate, inconsistent-offsets,
nonmonotonic-send.

They are defined so that one physical anomaly is reported by one check: a poll that disagrees
with the committed final log is an uncommitted-read (not an inconsistent offset), an
acknowledged value absent from the final log is a lost-write (not an inconsistent offset)."""

from __future__ import annotations

import numpy as np

from highwater.core.checks.data import FAIL, INFO, OK, HistoryData, distinct, finite_retention, idempotent, member
from highwater.core.checks.derived import NOAUTH, example, okey, pick, poll_status, reference
from highwater.core.checks.raw import COMMITTED, NOT_COMMITTED, UNDECIDED, txn_view
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, UNKNOWN, Verdict, decide
from highwater.core.history.format import value_text


def _in_final(h: HistoryData, vids: np.ndarray) -> np.ndarray:
    ref = reference(h)
    return member(vids, ref.vids) if len(vids) else np.zeros(0, bool)


def lost_write(h: HistoryData) -> Verdict:
    """A send acknowledged (type ok) whose value is nowhere in the committed final log of its
    partition. Sends with outcome info are uncertain, not lost; fail sends are not expected in
    the log (``failed_but_present`` counts those that are, as information). An ack whose
    partition has no final read, or whose offset is below the log start, is unjudged; on a
    topic with a finite retention (the header's ``retention_ms`` > 0) one below the log start
    is not owed at all (``expired``: retention deleted it, and ``log-start`` judges that it
    was old enough to go). The policy decides when loss is allowed (acks=1, unclean leader
    election).

    Transactions: a send of a transaction that committed (``ok`` commit) is owed to the log
    whatever its own outcome (a committed transaction holds all its writes); a send of one that
    aborted or whose commit failed or is unknown is not (``txn_not_owed`` counts them)."""
    s, ref = h.sends, reference(h)
    ok = (s.type == OK) & (s.vid != 0)
    not_owed = np.zeros(len(s.type), bool)
    view = txn_view(h)
    if view is not None:
        not_owed = (view.send_state == NOT_COMMITTED) | (view.send_state == UNDECIDED)
        ok = (ok | ((view.send_state == COMMITTED) & (s.type == INFO) & (s.vid != 0))) & ~not_owed
    tp_known = s.tp >= 0
    has = np.zeros(len(s.tp), bool)
    has[tp_known] = ref.has_final[s.tp[tp_known]]
    below = np.zeros(len(s.tp), bool)
    below[tp_known] = (s.offset[tp_known] >= 0) & (s.offset[tp_known] < ref.log_start[s.tp[tp_known]])
    present = _in_final(h, s.vid)
    expired = ok & below & has & ~present if finite_retention(h.config) else np.zeros(len(ok), bool)
    judged = ok & has & ~below
    lost = judged & ~present
    unjudged = ok & ~judged & ~present & ~expired
    examples = [
        example(
            h,
            "lost-write",
            [s.row[i]],
            tp=int(s.tp[i]),
            offset=int(s.offset[i]),
            producer=h.proc_name(int(s.proc[i])),
            final_hw=int(ref.hw[s.tp[i]]),
        )
        for i in pick(lost)
    ]
    counts = {
        "lost": int(lost.sum()),
        "acknowledged": int(ok.sum()),
        "acknowledged_judged": int(judged.sum()),
        "acknowledged_unjudged": int(unjudged.sum()),
        "expired": int(expired.sum()),
        "uncertain": int((s.type == INFO).sum()),
        "failed": int((s.type == FAIL).sum()),
        "uncertain_present": int(((s.type == INFO) & present).sum()),
        "failed_but_present": int(((s.type == FAIL) & present).sum()),
        "unresolved_invokes": max(s.invokes - len(s.type), 0),
    }
    if view is not None:
        counts["txn_not_owed"] = int(not_owed.sum())
    notes = []
    if not ref.has_final.any():
        notes.append("no final read: cannot tell what survived")
    elif not ok.any():
        notes.append("no acknowledged send")
    return Verdict(
        "lost-write",
        decide(counts["lost"], counts["acknowledged_judged"], counts["acknowledged_unjudged"]),
        counts,
        examples,
        notes,
    )


def unseen(h: HistoryData) -> Verdict:
    """An acknowledged value that is in the committed final log of p at offset o, that no
    consumer ever polled, although some consumer polled an offset of p above o (it read past
    it). One count per value."""
    s, p, ref = h.sends, h.polls, reference(h)
    if not ref.has_final.any() or len(p.tp) == 0:
        return Verdict("unseen", UNKNOWN, {"unseen": 0}, notes=["no final read" if len(p.tp) else "no polled records"])
    ok = (s.type == OK) & (s.vid != 0) & (s.tp >= 0)
    # where the value really is: its committed final offset (not the acked one)
    order = np.argsort(ref.vids, kind="stable")
    sv = ref.vids[order]
    j = np.searchsorted(sv, s.vid)
    jc = np.minimum(j, max(len(sv) - 1, 0))
    present = ok & (sv[jc] == s.vid) if len(sv) else np.zeros(len(s.vid), bool)
    fkey = ref.keys[order][jc] if len(sv) else np.zeros(len(s.vid), np.int64)
    ftp, foff = fkey >> 40, fkey & ((1 << 40) - 1)
    max_polled = np.full(len(h.tps), -1, np.int64)
    np.maximum.at(max_polled, p.tp, p.offset)
    seen = member(s.vid, p.vid)
    read_past = present & (max_polled[ftp] > foff)
    bad = read_past & ~seen
    examples = [
        example(
            h,
            "unseen",
            [s.row[i]],
            tp=int(ftp[i]),
            offset=int(foff[i]),
            producer=h.proc_name(int(s.proc[i])),
            max_polled_offset=int(max_polled[ftp[i]]),
        )
        for i in pick(bad)
    ]
    counts = {"unseen": int(bad.sum()), "judged": int(read_past.sum()), "acknowledged_in_final": int(present.sum())}
    return Verdict("unseen", decide(counts["unseen"], counts["judged"]), counts, examples)


def duplicate(h: HistoryData) -> Verdict:
    """One value at two or more offsets: in the committed final log, or polled at an offset
    the final log cannot vouch for (no final read of p, or below its log start) besides another
    offset. (Polls that disagree with the final log are uncommitted-reads, not counted here.)
    One count per value. Only a violation where idempotence is on (see the policy)."""
    ref, p = reference(h), h.polls
    st = poll_status(h)
    na = st == NOAUTH
    keys = np.concatenate([ref.keys, okey(p.tp[na], p.offset[na])])
    vids = np.concatenate([ref.vids, p.vid[na]])
    m = vids != 0
    keys, vids = keys[m], vids[m]
    if len(vids) == 0:
        return Verdict(
            "duplicate",
            UNKNOWN,
            {"duplicates": 0},
            notes=["no final read and no unjudged polls: no value placed anywhere"],
        )
    o = np.lexsort((keys, vids))
    pv, pk = vids[o], keys[o]
    keep = np.ones(len(pv), bool)
    keep[1:] = (pv[1:] != pv[:-1]) | (pk[1:] != pk[:-1])  # distinct (value, offset) pairs
    pv, pk = pv[keep], pk[keep]
    dup_start = np.nonzero(np.append(pv[1:] == pv[:-1], False) & np.append(True, pv[1:] != pv[:-1]))[0]
    # the examples are the duplicates that start lowest in the log, not the first value ids:
    # ids follow interning order, which a hash decides, so the same history showed other ones
    dup_start = dup_start[np.argsort(pk[dup_start], kind="stable")]
    examples = []
    for i in dup_start[:5]:
        v = pv[i]
        ks = pk[pv == v]
        tp0 = int(ks[0] >> 40)
        offs = [int(k & ((1 << 40) - 1)) for k in ks]
        rows = _rows_for(h, v, ks)
        examples.append(example(h, "duplicate", rows, tp=tp0, offsets=offs, focus={r: offs for r in rows}))
    judged = int(np.count_nonzero(np.append(True, pv[1:] != pv[:-1])))
    counts = {"duplicates": int(len(dup_start)), "values_judged": judged}
    return Verdict("duplicate", decide(counts["duplicates"], judged), counts, examples)


def _rows_for(h: HistoryData, vid: np.integer, keys: np.ndarray) -> list[int]:
    """Events that show a value: its sends, polls, and the reference final reads."""
    rows = [int(r) for r in h.sends.row[h.sends.vid == vid][:3]]
    rows += [int(r) for r in h.polls.row[h.polls.vid == vid][:3]]
    ref = reference(h)
    for k in keys:
        j = ref.ref[int(k >> 40)]
        if j is not None:
            rows.append(h.finals[j].row)
    return rows


def inconsistent_offsets(h: HistoryData) -> Verdict:
    """One offset seen with two values. Precisely: (a) an acknowledged value that is in the
    committed final log at another offset than the ack said, unless a consumer read that
    value at the acked offset (then the ack was right: that copy was lost later, e.g. by an
    unclean election's truncation, which lost-write/uncommitted-read judge, and the copy the
    log kept is a duplicate from a producer retry, which ``duplicate`` judges; counted as
    ``acked_copy_lost``); (b) where the final log cannot vouch (no final read of p, or below
    its log start), two acks/polls reporting different values at one offset. One count per
    offending ack (a) or per offset (b). Acked values missing from the final log are
    lost-writes; polls disagreeing with it, uncommitted-reads."""
    s, p, ref = h.sends, h.polls, reference(h)
    ok = (s.type == OK) & (s.vid != 0) & (s.tp >= 0) & (s.offset >= 0)
    auth = np.zeros(len(s.tp), bool)
    auth[ok] = ref.has_final[s.tp[ok]] & (s.offset[ok] >= ref.log_start[s.tp[ok]])
    # (a) acked value present in the final log, at another offset
    order = np.argsort(ref.vids, kind="stable")
    sv, sk = ref.vids[order], ref.keys[order]
    a_idx = np.nonzero(ok & auth)[0]
    wrong = np.zeros(len(s.tp), bool)
    final_off = np.full(len(s.tp), -1, np.int64)
    if len(a_idx) and len(sv):
        ak = okey(s.tp[a_idx], s.offset[a_idx])
        lo = np.searchsorted(sv, s.vid[a_idx], "left")
        hi = np.searchsorted(sv, s.vid[a_idx], "right")
        present = hi > lo
        first = sk[np.minimum(lo, len(sk) - 1)]
        mism = present & (first != ak)
        for j in np.nonzero(mism & (hi - lo > 1))[0]:  # a duplicated value: any offset will do
            mism[j] = not np.any(sk[lo[j] : hi[j]] == ak[j])
        wrong[a_idx[mism]] = True
        final_off[a_idx] = np.where(present, first & ((1 << 40) - 1), -1)
    copy_lost = _read_at_acked_offset(h, wrong)
    wrong &= ~copy_lost
    examples = [
        example(
            h, "ack-offset", [s.row[i]], tp=int(s.tp[i]), acked_offset=int(s.offset[i]), final_offset=int(final_off[i])
        )
        for i in pick(wrong)
    ]
    # (b) conflicts the final log cannot settle
    na_p = poll_status(h) == NOAUTH
    na_s = ok & ~auth
    keys = np.concatenate([okey(s.tp[na_s], s.offset[na_s]), okey(p.tp[na_p], p.offset[na_p])])
    vids = np.concatenate([s.vid[na_s], p.vid[na_p]])
    rows = np.concatenate([s.row[na_s], p.row[na_p]])
    n_conf = 0
    judged_b = 0
    if len(keys):
        o = np.lexsort((vids, keys))
        keys, vids, rows = keys[o], vids[o], rows[o]
        same_key = keys[1:] == keys[:-1]
        diff = same_key & (vids[1:] != vids[:-1])
        ck = distinct(keys[1:][diff])
        n_conf = len(ck)
        judged_b = len(distinct(keys))
        for k in ck[: max(0, 5 - len(examples))]:
            r = rows[keys == k]
            examples.append(example(h, "offset-two-values", r[:4], tp=int(k >> 40), offset=int(k & ((1 << 40) - 1))))
    counts = {
        "inconsistent": int(wrong.sum()) + n_conf,
        "ack_offset_mismatch": int(wrong.sum()),
        "acked_copy_lost": int(copy_lost.sum()),
        "conflicting_offsets": n_conf,
        "acks_judged": int(len(a_idx)),
        "offsets_judged_without_final": judged_b,
    }
    return Verdict(
        "inconsistent-offsets", decide(counts["inconsistent"], counts["acks_judged"] + judged_b), counts, examples
    )


def _read_at_acked_offset(h: HistoryData, acks: np.ndarray) -> np.ndarray:
    """Of the sends marked in ``acks``, those whose value some poll returned at the acked
    (partition, offset). Mismatches are rare, so the polls are indexed only when there are."""
    out = np.zeros(len(acks), bool)
    idx = np.nonzero(acks)[0]
    if not len(idx):
        return out
    s, p = h.sends, h.polls
    seen = set(zip(okey(p.tp, p.offset).tolist(), p.vid.tolist()))
    acked = zip(okey(s.tp[idx], s.offset[idx]).tolist(), s.vid[idx].tolist())
    out[idx] = [k in seen for k in acked]
    return out


#: added to a (producer, partition) group's offsets so that one running maximum over the sorted
#: acks never carries a maximum from one group into the next (offsets stay far below it)
_GROUP_STRIDE = 1 << 40


def nonmonotonic_send(h: HistoryData) -> Verdict:
    """nonmonotonic-send: with idempotence on, one producer's acknowledged offsets on one
    partition go backwards in the order the sends were invoked.

    Only ``ok`` sends with an offset are judged (``info``/``fail`` carry no acknowledged offset);
    order is the order of the sends' invoke events (the first invoke of the same process and
    value; an ack without one is placed at its own row) per (process, topic, partition), equal
    places by offset. Counted: ``acked`` (judged sends), ``backwards`` (acks whose offset is below
    the highest offset acked for an earlier-invoked send of the same producer and partition).
    Examples: process, topic, partition, value, offset, previous_max. Not applicable when the
    header says idempotence is off (``config.idempotence`` / ``config.enable_idempotence``) or
    there are no acked sends."""
    s = h.sends
    if not idempotent(h.config):
        return Verdict("nonmonotonic-send", NOT_APPLICABLE, notes=["not applicable: producers were not idempotent"])
    judged = np.nonzero((s.type == OK) & (s.offset >= 0) & (s.tp >= 0))[0]
    if len(judged) == 0:
        return Verdict("nonmonotonic-send", NOT_APPLICABLE)
    invoked = s.invoke_row if s.invoke_row is not None else np.full(len(s.row), -1, np.int64)
    rank = np.where(invoked[judged] >= 0, invoked[judged], s.row[judged])
    proc, tp, off = s.proc[judged].astype(np.int64), s.tp[judged].astype(np.int64), s.offset[judged]
    order = np.lexsort((off, rank, tp, proc))
    proc, tp, off, judged = proc[order], tp[order], off[order], judged[order]
    same = np.zeros(len(off), bool)
    same[1:] = (proc[1:] == proc[:-1]) & (tp[1:] == tp[:-1])
    group = np.cumsum(~same)  # one number per (producer, partition), in sorted order
    running = np.maximum.accumulate(off + group * _GROUP_STRIDE)
    previous = np.empty_like(running)
    previous[0] = -1
    previous[1:] = running[:-1] - group[1:] * _GROUP_STRIDE
    back = np.nonzero(same & (off < previous))[0]
    examples = []
    if len(back):
        shown = back[:MAX_EXAMPLES]
        events = h.source.fetch([int(r) for r in s.row[judged[shown]]]) if h.source is not None else []
        for i, ev in zip(shown.tolist(), events):
            topic, partition = h.tps[int(tp[i])]
            examples.append(
                {
                    "process": h.proc_name(int(proc[i])),
                    "topic": topic,
                    "partition": partition,
                    "value": value_text((ev.get("value") or {}).get("value"))[0] or "",
                    "offset": int(off[i]),
                    "previous_max": int(previous[i]),
                }
            )
    return Verdict("nonmonotonic-send", len(back) == 0, {"acked": len(judged), "backwards": len(back)}, examples)
