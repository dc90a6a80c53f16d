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
