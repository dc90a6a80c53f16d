"""Transaction checks over raw ``highwater.history/1`` events: ``aborted-read``,
``open-txn-read`` (registered in ``harness.checks``), and
``txn_ends``, how each transaction surely ended, which the group checks and ``TxnView`` share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, Verdict
from harness.history.format import value_text


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


def aborted_read(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
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
    config = header.get("config") or {}
    aborted: set[str] = set()
    send_txn: dict[str, str] = {}
    failed: set[str] = set()
    for ev in events:
        f, typ, v = ev.get("f"), ev.get("type"), ev.get("value") or {}
        if f == "txn" and typ == "ok" and v.get("op") == "abort":
            aborted.add(v["txn"])
        elif f == "send" and "value" in v:
            text = value_text(v["value"])[0]
            if text is None:
                continue
            if v.get("txn"):
                send_txn[text] = v["txn"]
            if typ == "fail":
                failed.add(text)
    reads = 0
    bad: list[dict[str, Any]] = []
    count = 0
    judged_any = False
    for ev in events:
        if ev.get("f") != "poll" or ev.get("type") != "ok":
            continue
        proc = str(ev.get("process"))
        if isolation_of(config, proc) != "read_committed":
            continue
        judged_any = True
        for r in (ev.get("value") or {}).get("records", []):
            reads += 1
            text = value_text(r.get("value"))[0]
            if text is None:
                continue
            txn = send_txn.get(text)
            why = "txn-aborted" if txn in aborted else "send-failed" if text in failed else None
            if why is None:
                continue
            count += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append(
                    {
                        "process": proc,
                        "topic": r["topic"],
                        "partition": r["partition"],
                        "offset": r["offset"],
                        "value": text,
                        "txn": txn,
                        "why": why,
                    }
                )
    if not judged_any and not any(
        isolation_of(config, str(ev.get("process"))) == "read_committed" for ev in events if ev.get("f") == "poll"
    ):
        return Verdict("aborted-read", NOT_APPLICABLE)
    return Verdict("aborted-read", count == 0, {"reads": reads, "aborted-reads": count}, bad)


def open_txn_read(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
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
    config = header.get("config") or {}
    if not any(ev.get("f") == "txn" for ev in events):
        return Verdict("open-txn-read", NOT_APPLICABLE)
    commit_invoke: dict[str, int] = {}
    aborted: set[str] = set()
    send_txn: dict[str, str] = {}
    for ev in events:
        f, typ, v = ev.get("f"), ev.get("type"), ev.get("value") or {}
        if f == "txn" and v.get("op") == "commit" and typ == "invoke":
            commit_invoke.setdefault(v["txn"], int(ev["time_ns"]))
        elif f == "txn" and v.get("op") == "abort" and typ == "ok":
            aborted.add(v["txn"])
        elif f == "send" and v.get("txn") and "value" in v:
            text = value_text(v["value"])[0]
            if text is not None:
                send_txn[text] = v["txn"]
    if not any(
        ev.get("f") == "poll" and isolation_of(config, str(ev.get("process"))) == "read_committed" for ev in events
    ):
        return Verdict("open-txn-read", NOT_APPLICABLE)
    judged = count = 0
    bad: list[dict[str, Any]] = []
    for ev in events:
        if ev.get("f") != "poll" or ev.get("type") != "ok":
            continue
        proc = str(ev.get("process"))
        if isolation_of(config, proc) != "read_committed":
            continue
        t = int(ev["time_ns"])
        for r in (ev.get("value") or {}).get("records", []):
            text = value_text(r.get("value"))[0]
            txn = send_txn.get(text) if text is not None else None
            if txn is None or txn in aborted:
                continue
            judged += 1
            ci = commit_invoke.get(txn)
            if ci is not None and ci <= t:
                continue
            count += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append(
                    {
                        "process": proc,
                        "topic": r["topic"],
                        "partition": r["partition"],
                        "offset": r["offset"],
                        "value": text,
                        "txn": txn,
                        "poll_ns": t,
                        "commit_invoke_ns": ci,
                    }
                )
    return Verdict("open-txn-read", count == 0, {"txn-reads": judged, "open-txn-reads": count}, bad)
