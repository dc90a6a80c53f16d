"""Transaction checks: ``aborted-read`` and ``open-txn-read`` (registered in ``core.checks``),
judged over the columns (``HistoryData`` and its ``txn``, ``core.checks.txn_data``); the
``(header, events)`` forms build those columns from an event list first. ``txn_ends``, how each
transaction surely ended, over events (the transactions suite's accounting and ``settled_commits``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from highwater.core.checks.data import FAIL, OK, HistoryData, from_events, member
from highwater.core.checks.txn_data import ABORT, COMMIT, TxnData, first_by
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict


def isolation_of(config: Mapping[str, Any], process: str) -> str:
    """A consumer's isolation level: ``config.consumers.<process>.isolation_level``, else the
    header's ``config.isolation_level``, else Kafka's default ``read_uncommitted``."""
    own = (config.get("consumers") or {}).get(process) or {}
    return str(own.get("isolation_level") or config.get("isolation_level") or "read_uncommitted")


def txn_ends(events: Sequence[Mapping[str, Any]]) -> dict[str, tuple[bool, int]]:
    """How each transaction surely ended, with the ``time_ns`` of that end: ``(True, t)`` at its
    ``ok`` commit; ``(False, t)`` at its ``ok`` abort or ``fail`` commit (proven not to have
    happened), unless it also has an ``ok`` commit. A transaction not listed ended unknown (a
    commit ``info`` or none at all), which is never counted as committed nor as aborted."""
    ends: dict[str, tuple[bool, int]] = {}
    for ev in events:
        v = ev.get("value") or {}
        txn = v.get("txn")
        if ev.get("f") != "txn" or not isinstance(txn, str):
            continue
        op, typ, t = v.get("op"), ev.get("type"), int(ev.get("time_ns", 0))
        if op == "commit" and typ == "ok":
            ends[txn] = (True, t)
        elif (op == "abort" and typ == "ok") or (op == "commit" and typ == "fail"):
            ends.setdefault(txn, (False, t))
    return ends


def read_committed(h: HistoryData) -> np.ndarray:
    """Per process id: whether it reads with isolation level read_committed."""
    return np.array([isolation_of(h.config, p) == "read_committed" for p in h.processes], bool)


def send_txns(d: TxnData) -> tuple[np.ndarray, np.ndarray]:
    """Value id -> transaction id of the sends naming one (the last such send of a value wins,
    as a dict filled in file order would): (sorted value ids, their transaction ids)."""
    m = d.sends.vid != 0
    vid, txn = d.sends.vid[m], d.sends.txn[m]
    u, last = np.unique(vid[::-1], return_index=True)
    return u, txn[::-1][last].astype(np.int64)


def lookup(keys: np.ndarray, values: np.ndarray, want: np.ndarray, missing: int = -1) -> np.ndarray:
    """``values`` at ``want`` in the sorted ``keys`` (``missing`` where absent)."""
    if len(keys) == 0:
        return np.full(len(want), missing, np.int64)
    at = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    return np.where(keys[at] == want, values[at], missing)


def aborted_txns(d: TxnData) -> np.ndarray:
    """Per transaction id: whether it has an ``ok`` abort."""
    out = np.zeros(len(d.txn_names) + 1, bool)  # + 1: index -1 (no transaction) stays False
    t = d.txns
    m = (t.op == ABORT) & (t.type == OK) & (t.txn >= 0)
    out[t.txn[m]] = True
    return out


def _rc_polls(h: HistoryData) -> tuple[bool, np.ndarray]:
    """(whether any read_committed consumer recorded a poll event, indices of their polled records)."""
    rc = read_committed(h)
    any_poll = any(rc[p] for p in h.txn.poll_procs)
    return any_poll, np.nonzero(rc[h.polls.proc])[0] if len(rc) else np.zeros(0, np.int64)


def _record_example(h: HistoryData, i: int, **extra: Any) -> dict[str, Any]:
    p = h.polls
    topic, partition = h.tps[int(p.tp[i])]
    return {
        "process": h.proc_name(int(p.proc[i])),
        "topic": topic,
        "partition": partition,
        "offset": int(p.offset[i]),
        "value": h.polled_texts([i])[0],
        **extra,
    }


def aborted_read(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """aborted-read over an event list (``aborted_read_of``)."""
    return aborted_read_of(from_events(header, list(events)))  # type: ignore[arg-type]


def aborted_read_of(h: HistoryData) -> Verdict:
    """aborted-read: a read_committed consumer returned a value whose transaction aborted, or
    whose send definitely failed (Jepsen's G1a).

    "Aborted" means an ``ok`` ``txn`` abort event for the send's ``txn`` id; "definitely failed"
    means the send's completion is ``fail``. Unknown outcomes (``info`` commit/abort or send, or
    no completion) are never counted: such a read is not an aborted read. Counted: ``reads`` (ok
    poll records read by read_committed consumers), ``aborted-reads`` (those of an aborted
    transaction or failed send). Examples: process, topic, partition, offset, value, txn, why.
    Reads by read_uncommitted consumers are not judged here (the policy allows them to see
    aborted data). Not applicable when no consumer is read_committed.
    """
    d, s, p = h.txn, h.sends, h.polls
    any_poll, idx = _rc_polls(h)
    if not any_poll:
        return Verdict("aborted-read", NOT_APPLICABLE)
    keys, txns = send_txns(d)
    vid = p.vid[idx]
    txn = lookup(keys, txns, vid)
    failed = member(vid, s.vid[(s.type == FAIL) & (s.vid != 0)])
    aborted = aborted_txns(d)[txn] & (vid != 0)
    bad = aborted | (failed & (vid != 0))
    examples = [
        _record_example(
            h,
            int(idx[j]),
            txn=d.txn_names[int(txn[j])] if txn[j] >= 0 else None,
            why="txn-aborted" if aborted[j] else "send-failed",
        )
        for j in np.nonzero(bad)[0][:MAX_EXAMPLES].tolist()
    ]
    count = int(bad.sum())
    return Verdict("aborted-read", count == 0, {"reads": len(idx), "aborted-reads": count}, examples)


def open_txn_read(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """open-txn-read over an event list (``open_txn_read_of``)."""
    return open_txn_read_of(from_events(header, list(events)))  # type: ignore[arg-type]


def open_txn_read_of(h: HistoryData) -> Verdict:
    """open-txn-read: a read_committed consumer's poll completed before the commit of the
    returned value's transaction was even invoked.

    Times are the history's ``time_ns`` (one monotonic clock). A poll completing after the
    commit invoke but before its ``ok`` is fine (the commit may already be durable). A value whose
    transaction was never committed nor aborted (no commit invoke) counts when it is read, since
    nothing could have made it visible; a transaction with an ``ok`` abort is left to
    aborted-read. Values sent outside transactions are not judged. Counted: ``txn-reads`` (read
    records of transactional sends by read_committed consumers), ``open-txn-reads``. Examples:
    process, topic, partition, offset, value, txn, poll_ns, commit_invoke_ns (or null).
    Not applicable when the history records no ``txn`` event at all (then a missing commit
    invoke says nothing) or no consumer is read_committed.
    """
    d, p = h.txn, h.polls
    if len(d.txns.row) == 0:
        return Verdict("open-txn-read", NOT_APPLICABLE)
    t = d.txns
    m = (t.op == COMMIT) & (t.type == 0) & (t.txn >= 0)  # commit invokes
    invoked = np.append(first_by(t.txn[m], t.time[m], len(d.txn_names), -1), -1)
    any_poll, idx = _rc_polls(h)
    if not any_poll:
        return Verdict("open-txn-read", NOT_APPLICABLE)
    keys, txns = send_txns(d)
    txn = lookup(keys, txns, p.vid[idx])
    judged = (txn >= 0) & (p.vid[idx] != 0) & ~aborted_txns(d)[txn]
    ci = invoked[txn]
    bad = judged & ((ci < 0) | (ci > p.time[idx]))
    examples = [
        _record_example(
            h,
            int(idx[j]),
            txn=d.txn_names[int(txn[j])],
            poll_ns=int(p.time[idx[j]]),
            commit_invoke_ns=int(ci[j]) if ci[j] >= 0 else None,
        )
        for j in np.nonzero(bad)[0][:MAX_EXAMPLES].tolist()
    ]
    count = int(bad.sum())
    return Verdict("open-txn-read", count == 0, {"txn-reads": int(judged.sum()), "open-txn-reads": count}, examples)
