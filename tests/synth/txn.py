"""Synthetic histories with transactions: small event-list builders for the txn/group checks."""

from __future__ import annotations

from typing import Any

FORMAT = "highwater.history/1"


def header(isolation: str | None = "read_committed", consumers: dict[str, Any] | None = None) -> dict[str, Any]:
    """A header whose config carries the isolation level and per-consumer overrides."""
    config: dict[str, Any] = {}
    if isolation is not None:
        config["isolation_level"] = isolation
    if consumers is not None:
        config["consumers"] = consumers
    return {"format": FORMAT, "config": config}


class Events:
    """Appends events with increasing index and time, so tests read like the scenario."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, process: str, typ: str, f: str, value: Any, error: str | None = None) -> Events:
        i = len(self.events)
        self.events.append(
            {
                "index": i,
                "time_ns": 1000 * (i + 1),
                "process": process,
                "type": typ,
                "f": f,
                "value": value,
                "error": error,
            }
        )
        return self

    def txn(self, process: str, op: str, txn: str, outcome: str = "ok") -> Events:
        self.add(process, "invoke", "txn", {"op": op, "txn": txn})
        return self.add(process, outcome, "txn", {"op": op, "txn": txn})

    def send(
        self,
        process: str,
        value: str,
        offset: int | None,
        outcome: str = "ok",
        txn: str | None = None,
        topic: str = "t",
        partition: int = 0,
    ) -> Events:
        v: dict[str, Any] = {"topic": topic, "partition": partition, "key": None, "value": value}
        if txn is not None:
            v["txn"] = txn
        self.add(process, "invoke", "send", dict(v))
        if outcome == "ok":
            v["offset"] = offset
        return self.add(process, outcome, "send", v, None if outcome == "ok" else "Err")

    def poll(self, process: str, records: list[tuple[int, str]], topic: str = "t", partition: int = 0) -> Events:
        self.add(process, "invoke", "poll", None)
        recs = [
            {"topic": topic, "partition": partition, "offset": o, "value": val, "leader_epoch": None, "replica": None}
            for o, val in records
        ]
        return self.add(process, "ok", "poll", {"records": recs})

    def seek(self, process: str, offset: int, reason: str = "seek", topic: str = "t", partition: int = 0) -> Events:
        v = {"topic": topic, "partition": partition, "offset": offset, "reason": reason}
        return self.add(process, "ok", "seek", v)

    def final(
        self,
        records: list[tuple[int, str]],
        hw: int | None = None,
        log_start: int = 0,
        replica: int = 1,
        topic: str = "t",
        partition: int = 0,
    ) -> Events:
        """One replica's final read; ``hw`` defaults to just past the last record."""
        top = hw if hw is not None else (max((o for o, _ in records), default=-1) + 1)
        v = {
            "topic": topic,
            "partition": partition,
            "replica": replica,
            "hw": top,
            "log_start": log_start,
            "records": [[o, val] for o, val in records],
        }
        return self.add("final", "ok", "final-read", v)
