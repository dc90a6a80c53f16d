"""Transaction checks over raw ``highwater.history/1`` events (issue 17; work in progress).

Only ``aborted_read`` is here so far. It reads the event list directly (one linear pass) rather
than the columnar ``HistoryData``, which does not yet carry ``txn`` events; it is not yet
registered in ``harness.checks``.
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
