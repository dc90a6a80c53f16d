"""The bridge between the columnar ``HistoryData`` and what transactions say about sends and
polls, and the few checks still judged over plain events.

What a transaction says about a send or a poll (which transaction a value belongs to, whether
it committed, what a read_committed consumer returned) cuts across every event kind. The
loaders gather it in the same pass as everything else (``HistoryData.txn``,
``core.checks.txn_data``), so no check reads the history a second time.

``TxnView`` gives the columnar checks what they need to stay right on transactional histories:
which sends belong to a transaction that did not commit (not owed to the log), and which polled
records are aborted or open transactional data read by a read_uncommitted consumer (allowed).

``on_rows`` runs an event-list check (the exactly-once copy's) on only the events it reads,
fetched by row: those kinds are few, and the bulk (sends, polls) never becomes dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from highwater.core.checks.data import FAIL, OK, HistoryData, cached, okey
from highwater.core.checks.txn import isolation_of
from highwater.core.checks.txn_data import ABORT, COMMIT, TxnData, first_by, last_by
from highwater.core.checks.verdict import Verdict
from highwater.core.checks.windows import bound_ns

EventCheck = Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], Verdict]


def events_at(h: HistoryData, rows: Sequence[int]) -> list[dict[str, Any]]:
    """The events at these rows, in file order (the final reads untrimmed)."""
    return h.source.fetch(sorted({int(r) for r in rows})) if h.source is not None else []


def on_rows(fn: EventCheck, rows: Callable[[HistoryData], Sequence[int]]) -> Callable[[HistoryData], Verdict]:
    """An event-list check as a ``HistoryData`` check, given only the events at ``rows(h)``."""

    def check(h: HistoryData) -> Verdict:
        return fn(h.header, events_at(h, rows(h)))

    check.__name__ = fn.__name__
    check.__doc__ = fn.__doc__
    return check


def txn_outcomes(d: TxnData) -> tuple[np.ndarray, np.ndarray]:
    """``core.checks.txn.txn_ends`` over the columns: per transaction id, 1 if it surely
    committed (an ``ok`` commit; then the time of the last one), 0 if it surely did not (an
    ``ok`` abort or a ``fail`` commit and no ``ok`` commit; then the time of the first such),
    -1 when its end is unknown (time -1)."""
    t, n = d.txns, len(d.txn_names)
    known = t.txn >= 0
    ok_commit = known & (t.op == COMMIT) & (t.type == OK)
    not_done = known & (((t.op == ABORT) & (t.type == OK)) | ((t.op == COMMIT) & (t.type == FAIL)))
    has_commit = np.zeros(n, bool)
    has_commit[t.txn[ok_commit]] = True
    has_fail = np.zeros(n, bool)
    has_fail[t.txn[not_done]] = True
    committed_at = last_by(t.txn[ok_commit], t.time[ok_commit], n, -1)
    failed_at = first_by(t.txn[not_done], t.time[not_done], n, -1)
    outcome = np.where(has_commit, 1, np.where(has_fail, 0, -1))
    return outcome, np.where(has_commit, committed_at, np.where(has_fail, failed_at, -1))


#: states of a send's transaction in ``TxnView.send_state``
NO_TXN, COMMITTED, NOT_COMMITTED, UNDECIDED = 0, 1, 2, 3


@dataclass(frozen=True)
class TxnView:
    send_state: np.ndarray  # per row of ``h.sends``: NO_TXN / COMMITTED / NOT_COMMITTED / UNDECIDED
    #: okey(tp, offset) -> value id: aborted or open records of the final reads (the last read wins)
    uncommitted_data: dict[int, int]
    read_uncommitted: frozenset[int]  # consumers whose isolation level lets them read that data
    # per row of ``h.sends``: when a read_committed consumer could first read the write (its ack,
    # or its transaction's ``ok`` commit), -1 when never (its transaction did not commit, or may not have)
    readable_ns: np.ndarray


def txn_view(h: HistoryData) -> TxnView | None:
    """What the transactions of this history say about its sends and reads; None when it has
    no ``txn`` events (then no send or read is transactional).

    A transaction is COMMITTED with an ``ok`` commit; NOT_COMMITTED with an ``ok`` abort or a
    ``fail`` commit (proven not to have happened); UNDECIDED otherwise (a commit whose outcome is
    unknown, or none at all)."""
    return cached(h, "txn_view", _txn_view) if len(h.txn_rows) else None


def _txn_view(h: HistoryData) -> TxnView:
    d, s = h.txn, h.sends
    outcome, at = txn_outcomes(d)
    state = np.zeros(len(s.row), np.int8)
    readable = s.time.astype(np.int64).copy()
    done = d.sends.type != 0  # completions (not invokes) naming a transaction
    idx = np.searchsorted(s.row, d.sends.row[done])  # both in file order
    txn = d.sends.txn[done]
    state[idx] = np.select([outcome[txn] == 1, outcome[txn] == 0], [COMMITTED, NOT_COMMITTED], UNDECIDED)
    readable[idx] = np.where(outcome[txn] == 1, at[txn], -1)
    uncommitted: dict[int, int] = {}
    for fl in h.finals:
        keys = okey(np.full(len(fl.uncommitted_offsets), fl.tp), fl.uncommitted_offsets)
        uncommitted.update(zip(keys.tolist(), fl.uncommitted_vids.tolist()))
    readers = frozenset(i for i, p in enumerate(h.processes) if isolation_of(h.config, p) == "read_uncommitted")
    return TxnView(state, uncommitted, readers, readable)


def lso_readable(h: HistoryData) -> np.ndarray | None:
    """Per row of ``h.sends``: when a read_committed consumer could first read the write, -1
    when never; None when the history has no ``txn`` events (then it is the ack).

    A read_committed consumer reads a partition up to its last stable offset (LSO): the first
    offset of the earliest transaction still open on it. A write is readable to it from its
    own readability (``TxnView.readable_ns``: its ack, or its transaction's ``ok`` commit) and
    from the end of every transaction with a record below it on the partition (its first
    acknowledged offset there is lower). A transaction ends at its ``ok`` commit or ``ok``
    abort; one whose end the history does not show ends at the first ``ok`` send, commit or
    abort of its process after its last event (a producer that goes on has ended it: a new
    transaction of the same transactional id fences and aborts the old one), and at the
    latest ``txn_hold_bound_ms`` after it began (its coordinator aborts it then). A
    transaction with no acknowledged record on a partition is not seen to hold it."""
    view = txn_view(h)
    if view is None:
        return None
    return cached(h, "lso_readable", lambda hd: _lso_readable(hd, view))


NEVER = np.iinfo(np.int64).max


def _txn_ends(h: HistoryData) -> np.ndarray:
    """Per transaction id: when it ended, by ``lso_readable``'s rule (ns)."""
    d, s = h.txn, h.sends
    t, n = d.txns, len(d.txn_names)
    outcome, at = txn_outcomes(d)
    ok_abort = (t.txn >= 0) & (t.op == ABORT) & (t.type == OK)
    aborted_at = first_by(t.txn[ok_abort], t.time[ok_abort], n, -1)
    # each transaction's events (txn events and its send completions): process, first and last time
    known, done = t.txn >= 0, d.sends.type != 0
    ev_txn = np.concatenate([t.txn[known], d.sends.txn[done]]).astype(np.int64)
    ev_time = np.concatenate([t.time[known], s.time[np.searchsorted(s.row, d.sends.row[done])]]).astype(np.int64)
    proc = np.full(n, -1, np.int64)
    proc[ev_txn] = np.concatenate([t.proc[known], d.sends.proc[done]])
    begun, last = np.full(n, NEVER), np.full(n, -1, np.int64)
    np.minimum.at(begun, ev_txn, ev_time)
    np.maximum.at(last, ev_txn, ev_time)
    # the first ok send, commit or abort of its process after its last event
    goes_on = (t.type == OK) & ((t.op == COMMIT) | (t.op == ABORT))
    on_proc = np.concatenate([s.proc[s.type == OK], t.proc[goes_on]]).astype(np.int64)
    on_time = np.concatenate([s.time[s.type == OK], t.time[goes_on]]).astype(np.int64)
    went_on = np.full(n, NEVER)
    for p in np.unique(proc[proc >= 0]).tolist():
        times = np.sort(on_time[on_proc == p])
        mine = np.nonzero(proc == p)[0]
        i = np.searchsorted(times, last[mine], "right")
        went_on[mine] = np.where(i < len(times), times[np.minimum(i, len(times) - 1)], NEVER)
    timed_out = np.where(begun < NEVER, begun + bound_ns(h, "txn_hold_bound_ms"), NEVER)
    return np.where(outcome == 1, at, np.where(aborted_at >= 0, aborted_at, np.minimum(went_on, timed_out)))


def _lso_readable(h: HistoryData, view: TxnView) -> np.ndarray:
    d, s = h.txn, h.sends
    out = view.readable_ns.copy()
    # each transaction's first acknowledged offset on each partition it wrote, and its end
    acked = (d.sends.type == OK) & (d.sends.offset >= 0) & (d.sends.tp >= 0)
    if not acked.any():
        return out
    pairs = np.stack([d.sends.tp[acked], d.sends.txn[acked]]).astype(np.int64)
    (ttp, txn), inv = np.unique(pairs, axis=1, return_inverse=True)
    first = np.full(len(ttp), NEVER)
    np.minimum.at(first, inv.ravel(), d.sends.offset[acked].astype(np.int64))
    end = _txn_ends(h)[txn]
    writes = (s.type == OK) & (s.tp >= 0) & (s.offset >= 0) & (out >= 0)
    for tp in np.unique(ttp).tolist():
        mine = ttp == tp
        o = np.argsort(first[mine], kind="stable")
        starts = first[mine][o]
        held_until = np.maximum.accumulate(end[mine][o])  # the latest end of those starting so far
        rows = np.nonzero(writes & (s.tp == tp))[0]
        below = np.searchsorted(starts, s.offset[rows].astype(np.int64), "left")  # how many start below
        out[rows] = np.maximum(out[rows], np.where(below > 0, held_until[np.maximum(below - 1, 0)], -1))
    return out


def allowed_uncommitted_reads(h: HistoryData, poll_idx: np.ndarray) -> np.ndarray:
    """For polled records (indices into ``h.polls``) that disagree with the committed final log:
    whether each is aborted or open transactional data, at the offset the final read found it,
    read by a read_uncommitted consumer. Kafka allows that read (it is what read_uncommitted
    means); a read_committed consumer returning it is aborted-read's business."""
    view = txn_view(h)
    out = np.zeros(len(poll_idx), bool)
    if view is None or not view.uncommitted_data or len(poll_idx) == 0:
        return out
    p = h.polls
    keys = okey(p.tp[poll_idx], p.offset[poll_idx]).tolist()
    for j, (i, k) in enumerate(zip(poll_idx.tolist(), keys)):
        want = view.uncommitted_data.get(k)
        if want is not None and int(p.tp[i]) >= 0 and int(p.proc[i]) in view.read_uncommitted:
            out[j] = int(p.vid[i]) == want
    return out
