"""The bridge between the columnar ``HistoryData`` and the checks that judge transactions and
group commits over plain events (``harness.checks.txn``, ``torn``, ``groups``).

Transactions and commits are few next to sends and polls, but what they say about a send or a
poll (which transaction a value belongs to, whether it committed, what a read_committed consumer
returned) cuts across every event kind. Rather than add a column per kind for them, a history
that carries ``txn`` or ``commit`` events is read back as events once (cached on the
``HistoryData``) and those checks walk the list. A history without them costs nothing here.
The cost is one more pass over the file for transactional runs, which are test-sized.

``TxnView`` gives the columnar checks what they need to stay right on transactional histories:
which sends belong to a transaction that did not commit (not owed to the log), and which polled
records are aborted or open transactional data read by a read_uncommitted consumer (allowed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.checks.data import HistoryData, cached
from harness.checks.txn import isolation_of, txn_ends
from harness.checks.verdict import Verdict
from harness.history.format import value_text

EventCheck = Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], Verdict]


def raw_events(h: HistoryData) -> list[dict[str, Any]]:
    """Every event of the history, in file order (read back once, then cached)."""
    # the source, not ``h.events``: that trims final reads to an example's offsets
    return cached(h, "raw_events", lambda h: h.source.fetch(list(range(h.n_events))) if h.source is not None else [])


def on_events(fn: EventCheck) -> Callable[[HistoryData], Verdict]:
    """An event-list check as a ``HistoryData`` check."""

    def check(h: HistoryData) -> Verdict:
        return fn(h.header, raw_events(h))

    check.__name__ = fn.__name__
    check.__doc__ = fn.__doc__
    return check


#: states of a send's transaction in ``TxnView.send_state``
NO_TXN, COMMITTED, NOT_COMMITTED, UNDECIDED = 0, 1, 2, 3


@dataclass(frozen=True)
class TxnView:
    send_state: np.ndarray  # per row of ``h.sends``: NO_TXN / COMMITTED / NOT_COMMITTED / UNDECIDED
    uncommitted_data: dict[
        tuple[str, int, int], str
    ]  # (topic, partition, offset) -> value: aborted or open records of the final read
    read_uncommitted: frozenset[str]  # consumers whose isolation level lets them read that data
    # per row of ``h.sends``: when a read_committed consumer could first read the write (its ack,
    # or its transaction's ``ok`` commit), -1 when never (its transaction did not commit, or may not have)
    readable_ns: np.ndarray


def txn_view(h: HistoryData) -> TxnView | None:
    """What the transactions of this history say about its sends and reads; None when it has
    no ``txn`` events (then no send or read is transactional).

    A transaction is COMMITTED with an ``ok`` commit; NOT_COMMITTED with an ``ok`` abort or a
    ``fail`` commit (proven not to have happened); UNDECIDED otherwise (a commit whose outcome is
    unknown, or none at all)."""
    return cached(h, "txn_view", _txn_view) if h.txn_rows else None


def _txn_view(h: HistoryData) -> TxnView:
    events = raw_events(h)
    ends = txn_ends([events[r] for r in h.txn_rows])
    outcome = {txn: COMMITTED if ok else NOT_COMMITTED for txn, (ok, _) in ends.items()}
    committed_at = {txn: t for txn, (ok, t) in ends.items() if ok}
    state = np.zeros(len(h.sends.row), np.int8)
    readable = h.sends.time.astype(np.int64).copy()
    for i, r in enumerate(h.sends.row.tolist()):
        txn = (events[r].get("value") or {}).get("txn")
        if isinstance(txn, str):
            state[i] = outcome.get(txn, UNDECIDED)
            readable[i] = committed_at.get(txn, -1)
    uncommitted: dict[tuple[str, int, int], str] = {}
    for fl in h.finals:
        v = events[fl.row].get("value") or {}
        for rec in [*(v.get("aborted") or []), *(v.get("open") or [])]:
            uncommitted[(str(v.get("topic")), int(v.get("partition") or 0), int(rec[0]))] = str(value_text(rec[1])[0])
    readers = frozenset(p for p in h.processes if isolation_of(h.config, p) == "read_uncommitted")
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
    events = raw_events(h)
    p = h.polls
    for j, i in enumerate(poll_idx.tolist()):
        if h.proc_name(int(p.proc[i])) not in view.read_uncommitted:
            continue
        tp = h.tp_name(int(p.tp[i]))
        if tp is None:
            continue
        key = (tp[0], tp[1], int(p.offset[i]))
        want = view.uncommitted_data.get(key)
        if want is None:
            continue
        for rec in (events[int(p.row[i])].get("value") or {}).get("records", []):
            if rec.get("topic") == key[0] and rec.get("partition") == key[1] and rec.get("offset") == key[2]:
                out[j] = value_text(rec.get("value"))[0] == want
                break
    return out
