"""Checks on what consumers read: uncommitted-read, poll-skip, nonmonotonic-poll,
truncation-undetected. All compare polled records with the committed final log
(see ``derived.reference``) or with the consumer's own previous reads."""

from __future__ import annotations

import numpy as np

from highwater.core.checks.data import HistoryData
from highwater.core.checks.derived import (
    AGREE,
    DISAGREE,
    NOAUTH,
    ROW_SHIFT,
    TXN_UNCOMMITTED,
    chains,
    example,
    pick,
    poll_status,
    reference,
)
from highwater.core.checks.verdict import UNKNOWN, Verdict, decide


def uncommitted_read(h: HistoryData) -> Verdict:
    """A poll returned value v at offset o of partition p, but the committed final log of p does
    not hold v at o: either another value is committed there, or o is not committed at all
    (o >= the final high watermark). The consumer saw data above the high watermark that was
    later truncated. One count per polled record. Records of partitions without a final read,
    or below its log start, cannot be judged (unknown).

    Transactions: a read_uncommitted consumer may return records of aborted or still open
    transactions; such a record, found at that offset with that value among the final read's
    ``aborted``/``open`` records, is not counted (``txn_uncommitted_allowed``)."""
    st = poll_status(h)
    p = h.polls
    bad = st == DISAGREE
    ref = reference(h)
    examples = []
    for i in pick(bad):
        found, fv = ref.lookup(p.tp[i : i + 1], p.offset[i : i + 1])
        fl = h.finals[ref.ref[int(p.tp[i])]]  # type: ignore[index]
        examples.append(
            example(
                h,
                "uncommitted-read",
                [p.row[i], fl.row],
                tp=int(p.tp[i]),
                focus={fl.row: [int(p.offset[i])]},
                offset=int(p.offset[i]),
                consumer=h.proc_name(int(p.proc[i])),
                committed=bool(found[0]),
                final_hw=int(fl.hw),
            )
        )
    n_bad, n_unj = int(bad.sum()), int((st == NOAUTH).sum())
    counts = {"uncommitted_reads": n_bad, "records_judged": int((st != NOAUTH).sum()), "records_unjudged": n_unj}
    if len(h.txn_rows):
        counts["txn_uncommitted_allowed"] = int((st == TXN_UNCOMMITTED).sum())
    notes = [] if len(st) else ["no polled records"]
    if n_unj:
        notes.append(f"{n_unj} polled records have no final log to compare with")
    return Verdict("uncommitted-read", decide(n_bad, counts["records_judged"], n_unj), counts, examples, notes)


def _gaps(h: HistoryData) -> dict[str, np.ndarray]:
    """Every step of every consumer's chain: previous/current record positions and offsets."""
    c = chains(h)
    n = len(c.idx)
    i = np.arange(n)
    cont = ~c.new_segment
    prev_off = np.where(cont, np.roll(c.off, 1), c.start_offset)
    prev_row = np.where(cont, np.roll(c.row, 1), c.start_row)
    # a step exists where there is a previous record, or a position change with a known offset
    # (then "previous offset" is that offset - 1: the next record should be exactly there)
    has_prev = cont | (c.start_offset >= 0)
    expected = np.where(cont, prev_off + 1, c.start_offset)
    return {"i": i, "has_prev": has_prev, "expected": expected, "prev_row": prev_row, "cont": cont}


def poll_skip(h: HistoryData) -> Verdict:
    """Between two consecutive polls of one consumer on partition p, with no position change
    of p between them, the consumer jumped from offset a to b > a+1 while the committed final
    log holds some offset in (a, b), or one it could not read back (a remote segment the store
    lost: a consumer must fail there, not pass over it). After a position change to offset s,
    the first record must likewise not jump over such offsets in [s, b). One count per jump (``skipped_offsets``
    totals the offsets jumped over: committed ones and unreadable ones, as each example's
    ``committed_offsets_skipped`` does). A jump in a partition with no final read is unjudged
    (the gap may be transaction markers or truncation)."""
    c, g = chains(h), _gaps(h)
    ref = reference(h)
    step = g["has_prev"]
    lo, hi = g["expected"], c.off
    gap = step & (hi > lo)
    tp = c.tp
    has = ref.has_final[tp] if len(tp) else np.zeros(0, bool)
    missing = np.zeros(len(tp), np.int64)
    if gap.any():
        missing[gap] = ref.count_between(tp[gap], lo[gap], hi[gap]) + ref.unreadable_between(tp[gap], lo[gap], hi[gap])
    skip = gap & has & (missing > 0)
    unjudged = gap & ~has
    examples = [
        example(
            h,
            "poll-skip",
            [g["prev_row"][i], c.row[i]],
            tp=int(tp[i]),
            consumer=h.proc_name(int(c.proc[i])),
            expected_offset=int(lo[i]),
            got_offset=int(hi[i]),
            committed_offsets_skipped=int(missing[i]),
            after_position_change=bool(c.new_segment[i]),
        )
        for i in pick(skip)
    ]
    counts = {
        "skips": int(skip.sum()),
        "skipped_offsets": int(missing[skip].sum()),
        "steps_judged": int((step & ~unjudged).sum()),
        "steps_unjudged": int(unjudged.sum()),
    }
    notes = [] if len(c.idx) else ["no polled records"]
    return Verdict(
        "poll-skip", decide(counts["skips"], counts["steps_judged"], counts["steps_unjudged"]), counts, examples, notes
    )


def nonmonotonic_poll(h: HistoryData) -> Verdict:
    """Between two consecutive polls (or within one) of a consumer on partition p, with no
    position change between them, the offset went backwards or repeated; or the first record
    after a position change to offset s was below s. Needs no final log. One count per step."""
    c, g = chains(h), _gaps(h)
    step = g["has_prev"]
    back = step & (c.off < g["expected"])
    rep = back & g["cont"] & (c.off == g["expected"] - 1)
    examples = [
        example(
            h,
            "nonmonotonic-poll",
            [g["prev_row"][i], c.row[i]],
            tp=int(c.tp[i]),
            consumer=h.proc_name(int(c.proc[i])),
            expected_offset=int(g["expected"][i]),
            got_offset=int(c.off[i]),
            repeated=bool(rep[i]),
        )
        for i in pick(back)
    ]
    counts = {
        "nonmonotonic": int(back.sum()),
        "repeats": int(rep.sum()),
        "backwards": int((back & ~rep).sum()),
        "steps_judged": int(step.sum()),
    }
    notes = [] if len(c.idx) else ["no polled records"]
    return Verdict("nonmonotonic-poll", decide(counts["nonmonotonic"], counts["steps_judged"]), counts, examples, notes)


def truncation_undetected(h: HistoryData) -> Verdict:
    """A consumer read records of p that the committed final log does not hold (the log was
    truncated below its position; let d be the lowest such offset it read) and then neither
    raised a truncation error (a failed poll whose error names truncation, e.g.
    LogTruncationError) nor moved its position to d or below (a seek/assign with offset <= d,
    or whose reason names truncation) before it went on reading committed records above d.
    Also a violation: resolving the position to an offset > d without a truncation reason.
    One count per consumer segment that carried on. Needs a final read of p."""
    c = chains(h)
    st_all = poll_status(h)
    n = len(c.idx)
    ref = reference(h)
    if n == 0 or not ref.has_final.any():
        return Verdict(
            "truncation-undetected",
            UNKNOWN,
            {"segments_with_truncated_reads": 0},
            [],
            ["no polled records" if n == 0 else "no final read"],
        )
    st = st_all[c.idx]
    # segments also end at a truncation error of the consumer
    terr = sorted((e.proc << ROW_SHIFT) | e.row for e in h.poll_errors if e.truncation)
    tkeys = np.array(terr, dtype=np.int64)
    tc = np.searchsorted(tkeys, (c.proc << ROW_SHIFT) | c.row)
    new = c.new_segment.copy()
    if n > 1:
        new[1:] |= tc[1:] != tc[:-1]
    seg = np.cumsum(new) - 1
    nseg = int(seg[-1]) + 1
    bad = st == DISAGREE
    big = np.iinfo(np.int64).max
    first_bad = np.full(nseg, big, np.int64)
    min_bad_off = np.full(nseg, big, np.int64)
    pos = np.arange(n)
    np.minimum.at(first_bad, seg[bad], pos[bad])
    np.minimum.at(min_bad_off, seg[bad], c.off[bad])
    carried = (st == AGREE) & (pos > first_bad[seg]) & (c.off > min_bad_off[seg])
    flagged: dict[int, tuple[int, int, str]] = {}
    for carried_at in np.nonzero(carried)[0]:
        s = int(seg[carried_at])
        if s not in flagged:
            flagged[s] = (int(first_bad[s]), int(carried_at), "went on reading")
    # segments with truncated reads that ended in a position change past d
    last = np.nonzero(np.append(new[1:], True))[0]  # last record of each segment
    for seg_no in np.nonzero(first_bad < big)[0]:
        s = int(seg_no)
        if s in flagged:
            continue
        i = int(last[s])
        k = int(c.next_pos[i])
        if k < 0 or c.pos_trunc[k] or c.pos_off[k] < 0 or c.pos_off[k] <= min_bad_off[s]:
            continue
        t_next = int(tc[i]) if i < n else len(tkeys)
        if (
            t_next < len(tkeys)
            and (tkeys[t_next] >> ROW_SHIFT) == c.proc[i]
            and (tkeys[t_next] & ((1 << ROW_SHIFT) - 1)) < c.pos_row[k]
        ):
            continue  # a truncation error came first
        flagged[int(s)] = (int(first_bad[s]), -1 - k, "moved past the divergence point")
    examples = []
    for s, (fb, j, how) in list(flagged.items())[:5]:
        rows = [c.row[fb], c.row[j] if j >= 0 else c.pos_row[-1 - j]]
        examples.append(
            example(
                h,
                "truncation-undetected",
                rows,
                tp=int(c.tp[fb]),
                consumer=h.proc_name(int(c.proc[fb])),
                divergence_offset=int(min_bad_off[s]),
                how=how,
            )
        )
    counts = {
        "undetected": len(flagged),
        "segments_with_truncated_reads": int((first_bad < big).sum()),
        "records_judged": int((st != NOAUTH).sum()),
    }
    return Verdict("truncation-undetected", decide(len(flagged), counts["records_judged"]), counts, examples)
