"""Build small histories by hand (tests, examples, docs): events with the right fields, in
order, with a controllable clock. Not used on real runs (``HistoryWriter`` records those)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from highwater.core.checks.data import HistoryData, from_events
from highwater.core.history import FORMAT

MS = 1_000_000
Record = tuple[str, int, int, Any]  # topic, partition, offset, value


class HistoryBuilder:
    """Appends events; every event advances the clock by ``step_ms`` (see ``advance``)."""

    def __init__(self, config: Mapping[str, Any] | None = None, *, step_ms: int = 1, **header: Any) -> None:
        self.header: dict[str, Any] = {
            "format": FORMAT,
            "run_id": "synthetic",
            **header,
            "config": {
                "acks": "all",
                "idempotence": True,
                "unclean_leader_election": False,
                "min_insync_replicas": 2,
                **(config or {}),
            },
        }
        self.events: list[dict[str, Any]] = []
        self.now = 0
        self.step = step_ms * MS

    def advance(self, ms: float) -> HistoryBuilder:
        self.now += int(ms * MS)
        return self

    def event(self, process: str, type_: str, f: str, value: Any = None, error: str | None = None) -> dict[str, Any]:
        ev = {
            "index": len(self.events),
            "time_ns": self.now,
            "process": process,
            "type": type_,
            "f": f,
            "value": value,
            "error": error,
        }
        self.events.append(ev)
        self.now += self.step
        return ev

    # workload events -------------------------------------------------------------------

    def send(
        self,
        proc: str,
        topic: str,
        partition: int,
        value: Any,
        offset: int | None = None,
        outcome: str | None = "ok",
        error: str | None = None,
        txn: str | None = None,
    ) -> dict[str, Any]:
        """An invoke, then (unless outcome is None) its completion; returns the completion."""
        v = {"topic": topic, "partition": partition, "key": None, "value": value}
        if txn is not None:
            v["txn"] = txn
        inv = self.event(proc, "invoke", "send", v)
        if outcome is None:
            return inv
        done = dict(v, offset=offset) if outcome == "ok" else dict(v)
        err = None if outcome == "ok" else (error or ("TimeoutError" if outcome == "info" else "Error"))
        return self.event(proc, outcome, "send", done, err)

    def txn(self, proc: str, op: str, txn: str, outcome: str = "ok") -> dict[str, Any]:
        """A transaction's begin/commit/abort: invoke, then its completion."""
        self.event(proc, "invoke", "txn", {"op": op, "txn": txn})
        return self.event(proc, outcome, "txn", {"op": op, "txn": txn}, None if outcome == "ok" else "Error")

    def commit(
        self,
        proc: str,
        group: str,
        topic: str,
        partition: int,
        offset: int,
        outcome: str = "ok",
        txn: str | None = None,
    ) -> dict[str, Any]:
        """Offsets committed for a group (``offset``: the next one to read), inside ``txn``
        when given (an exactly-once copy)."""
        v: dict[str, Any] = {"group": group, "topic": topic, "partition": partition, "offset": offset}
        if txn is not None:
            v["txn"] = txn
        self.event(proc, "invoke", "commit", v)
        return self.event(proc, outcome, "commit", v, None if outcome == "ok" else "Error")

    def poll(
        self, proc: str, records: Iterable[Record], *, replica: int | None = None, epoch: int | None = 0
    ) -> dict[str, Any]:
        recs = [
            {"topic": t, "partition": p, "offset": o, "value": v, "leader_epoch": epoch, "replica": replica}
            for t, p, o, v in records
        ]
        self.event(proc, "invoke", "poll", None)
        return self.event(proc, "ok", "poll", {"records": recs})

    def poll_error(self, proc: str, error: str, type_: str = "fail") -> dict[str, Any]:
        self.event(proc, "invoke", "poll", None)
        return self.event(proc, type_, "poll", None, error)

    def assign(
        self,
        proc: str,
        topic: str | None,
        partition: int | None,
        offset: int | None,
        reason: str = "assign",
        f: str = "assign",
    ) -> dict[str, Any]:
        return self.event(proc, "ok", f, {"topic": topic, "partition": partition, "offset": offset, "reason": reason})

    def seek(self, proc: str, topic: str, partition: int, offset: int | None, reason: str = "seek") -> dict[str, Any]:
        return self.assign(proc, topic, partition, offset, reason, f="seek")

    def meta(
        self,
        topic: str,
        partition: int,
        *,
        leader: int,
        isr: Sequence[int],
        hw: int | None,
        epoch: int = 0,
        leo: Mapping[int, int] | None = None,
        proc: str = "observer",
        **starts: int,
    ) -> dict[str, Any]:
        """A ``meta`` observation; ``starts``: a tiered run's ``log_start`` / ``local_start``."""
        return self.event(
            proc,
            "ok",
            "meta",
            {
                "topic": topic,
                "partition": partition,
                "leader": leader,
                "leader_epoch": epoch,
                "isr": list(isr),
                "hw": hw,
                "leo": {str(k): x for k, x in (leo or {}).items()},
                **starts,
            },
        )

    def fault(self, kind: str, targets: Sequence[Any], **params: Any) -> dict[str, Any]:
        return self.event("nemesis", "info", "fault", {"kind": kind, "targets": list(targets), "params": params})

    def heal(self, kind: str | None, targets: Sequence[Any] = ()) -> dict[str, Any]:
        return self.event("nemesis", "info", "heal", {"kind": kind, "targets": list(targets), "params": {}})

    # share groups (KIP-932) -------------------------------------------------------------

    def acquire(
        self, proc: str, records: Iterable[tuple[str, int, int, Any, int | None]], since_ms: float | None = None
    ) -> dict[str, Any]:
        """One share poll that acquired ``records`` (topic, partition, offset, value, delivery
        count); the poll began ``since_ms`` before now (default: one step)."""
        since = self.now - (self.step if since_ms is None else int(since_ms * MS))
        return self.event(proc, "ok", "acquire", {"since_ns": since, "acquired": [list(r) for r in records]})

    def ack(
        self, proc: str, topic: str, partition: int, offsets: Sequence[int], kinds: Sequence[str] | str
    ) -> dict[str, Any]:
        """A share consumer's acknowledgement of ``offsets`` (one kind for all, or one each)."""
        kinds = [kinds] * len(offsets) if isinstance(kinds, str) else list(kinds)
        return self.event(
            proc, "invoke", "ack", {"topic": topic, "partition": partition, "offsets": list(offsets), "kinds": kinds}
        )

    def acked(
        self, proc: str, topic: str, partition: int, offsets: Sequence[int], type_: str = "ok", error: str | None = None
    ) -> dict[str, Any]:
        """How an acknowledgement ended, as the library reported it."""
        return self.event(proc, type_, "ack", {"topic": topic, "partition": partition, "offsets": list(offsets)}, error)

    def share_state(
        self, group: str, topic: str, partition: int, start_offset: int, lag: int | None = None
    ) -> dict[str, Any]:
        """The group's start offset and lag for a partition, read after the run settled."""
        v = {"group": group, "topic": topic, "partition": partition, "start_offset": start_offset, "lag": lag}
        return self.event("final", "ok", "share-state", v)

    def final(
        self,
        topic: str,
        partition: int,
        replica: int,
        hw: int,
        records: Iterable[tuple[int, Any]],
        log_start: int = 0,
        aborted: Iterable[tuple[int, Any]] = (),
    ) -> dict[str, Any]:
        """One replica's final read: committed ``records``, and ``aborted`` transactional data."""
        v: dict[str, Any] = {
            "topic": topic,
            "partition": partition,
            "replica": replica,
            "hw": hw,
            "log_start": log_start,
            "records": [[o, x] for o, x in records],
        }
        gone = [[o, x] for o, x in aborted]
        if gone:
            v["aborted"] = gone
        return self.event("final", "ok", "final-read", v)

    # output ------------------------------------------------------------------------------

    def data(self) -> HistoryData:
        return from_events(self.header, self.events)

    def write(self, path: str | Path) -> Path:
        p = Path(path)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(self.header) + "\n")
            for ev in self.events:
                fh.write(json.dumps(ev) + "\n")
        return p
