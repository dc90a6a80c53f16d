"""Large synthetic histories written straight to Parquet (``PARQUET_SCHEMA``), for the report scale
benchmark: building 100k-event runs event by event in Python would take longer than the
aggregation being measured, so the columns are built with numpy/pyarrow.

Workload per run: ``writes`` sends (invoke + ok) round-robin over 3 partitions, two consumers
each reading every partition in polls of 20 records served by their rack's replica, an
observer's meta events every 300 writes, one broker kill and its heal, and a final read of
each of 3 replicas per partition. ``skip`` drops two records from one poll; ``lost`` replaces
one acknowledged value in every replica's final log.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from highwater.core.checks.bounds import header_entries
from highwater.core.history import FORMAT, HEADER_METADATA_KEY, PARQUET_SCHEMA, RECORD_TYPE
from highwater.run_spec import run_settings

PARTS = 3
BATCH = 20
MS = 1_000_000
_HOT = ("topic", "partition", "offset", "replica", "hw", "log_start", "leader", "leader_epoch")


def writes_for_events(events: int) -> int:
    """How many writes make about ``events`` events (2 per send, ~0.2 per write for polls)."""
    return int(events / 2.215)


def generate(path: Path, run_id: str, events: int = 100_000, *, skip: bool = False, lost: bool = False) -> int:
    """Write one run's history as Parquet; returns the number of events."""
    w = writes_for_events(events)
    i = np.arange(w)
    part, off = i % PARTS, i // PARTS
    vals = np.char.add(f"{run_id}-v", i.astype(str)).astype(object)
    cols: dict[str, list[object]] = {k: [] for k in PARQUET_SCHEMA.names}
    cols["_t"] = []

    def add(
        t: int,
        proc: str,
        typ: str,
        f: str,
        *,
        hot: dict[str, object] | None = None,
        value: object = None,
        records: object = None,
        rest: object = None,
        present: int = 0,
    ) -> None:
        cols["_t"].append(t)
        cols["index"].append(0)
        cols["time_ns"].append(t)
        cols["process"].append(proc)
        cols["type"].append(typ)
        cols["f"].append(f)
        cols["error"].append(None)
        for k in _HOT:
            cols[k].append((hot or {}).get(k))
        cols["value"].append(value)
        cols["value_kind"].append(0 if value is not None else None)
        cols["records"].append(records)
        cols["value_json"].append(json.dumps(rest))
        cols["present"].append(present)

    # sends: a column block, not per-event Python calls
    t_send = i * 2 * MS
    send = {
        "_t": np.concatenate([t_send, t_send + MS]),
        "process": ["producer-0"] * (2 * w),
        "type": ["invoke"] * w + ["ok"] * w,
        "f": ["send"] * (2 * w),
        "topic": ["t"] * (2 * w),
        "partition": np.concatenate([part, part]),
        "offset": [None] * w + off.tolist(),
        "value": np.concatenate([vals, vals]),
    }
    # polls, per consumer and partition, in batches of BATCH offsets
    racks = {"consumer-0": 1, "consumer-1": 2}
    poll_t, poll_proc, poll_recs = [], [], []
    for c, (proc, replica) in enumerate(racks.items()):
        for p in range(PARTS):
            idx = i[part == p]
            for k in range(0, len(idx), BATCH):
                chunk = idx[k : k + BATCH]
                if skip and c == 0 and p == 0 and k == BATCH * 5:
                    chunk = np.delete(chunk, [3, 4])
                t = int(t_send[chunk[-1]] + MS + (5 + c) * MS // 10)
                poll_t.append(t)
                poll_proc.append(proc)
                poll_recs.append(
                    [
                        {
                            "topic": "t",
                            "partition": p,
                            "offset": int(off[j]),
                            "value": vals[j],
                            "value_kind": 0,
                            "leader_epoch": 0,
                            "replica": replica,
                        }
                        for j in chunk
                    ]
                )
    for t, proc, recs in zip(poll_t, poll_proc, poll_recs):
        add(t - MS // 20, proc, "invoke", "poll", rest=None)
        add(t, proc, "ok", "poll", records=recs, rest={}, present=1 << 9)
    fault_w, heal_w = w // 3, 2 * w // 3
    add(int(t_send[fault_w]) + MS // 2, "nemesis", "info", "fault", rest={"kind": "kill", "targets": [3], "params": {}})
    add(int(t_send[heal_w]) + MS // 2, "nemesis", "info", "heal", rest={"kind": "kill", "targets": [3], "params": {}})
    for k in range(0, w, 300):
        isr = [1, 2] if fault_w <= k < heal_w else [1, 2, 3]
        for p in range(PARTS):
            hw = int((part[: k + 1] == p).sum())
            add(
                int(t_send[k]) + MS // 3,
                "observer",
                "ok",
                "meta",
                hot={"topic": "t", "partition": p, "leader": 1 + p % 2, "leader_epoch": 0, "hw": hw},
                rest={"isr": isr, "leo": {str(b): hw for b in isr}},
                present=0b11010011,
            )
    end = int(t_send[-1]) + 10 * MS
    lost_at = int(w * 3 // 4)
    for p in range(PARTS):
        idx = i[part == p]
        fv = vals[idx].copy()
        if lost and p == part[lost_at]:
            fv[np.searchsorted(idx, lost_at)] = f"{run_id}-other"
        recs = [{"offset": int(o), "value": v, "value_kind": 0} for o, v in zip(off[idx], fv)]
        for rep in (1, 2, 3):
            add(
                end,
                "final",
                "ok",
                "final-read",
                records=recs,
                rest={},
                hot={"topic": "t", "partition": p, "replica": rep, "hw": len(idx), "log_start": 0},
                present=0b111011 | (1 << 9),
            )
    # merge the send block with the rest, ordered by time (stable: invoke before ok)
    n_small = len(cols["_t"])
    t_all = np.concatenate([send["_t"], np.asarray(cols["_t"], dtype=np.int64)])
    order = np.argsort(t_all, kind="stable")
    n = len(order)
    table = {
        "index": np.arange(n, dtype=np.int64),
        "time_ns": t_all[order],
        "process": _take(send["process"], cols["process"], order),
        "type": _take(send["type"], cols["type"], order),
        "f": _take(send["f"], cols["f"], order),
        "error": [None] * n,
        "topic": _take(send["topic"], cols["topic"], order),
        "partition": _take(send["partition"].tolist(), cols["partition"], order),
        "offset": _take(send["offset"], cols["offset"], order),
        "replica": _take([None] * (2 * w), cols["replica"], order),
        "hw": _take([None] * (2 * w), cols["hw"], order),
        "log_start": _take([None] * (2 * w), cols["log_start"], order),
        "leader": _take([None] * (2 * w), cols["leader"], order),
        "leader_epoch": _take([None] * (2 * w), cols["leader_epoch"], order),
        "value": _take(send["value"].tolist(), cols["value"], order),
        "value_kind": _take([0] * (2 * w), cols["value_kind"], order),
        "records": _take([None] * (2 * w), cols["records"], order),
        "value_json": _take([json.dumps({"key": None})] * (2 * w), cols["value_json"], order),
        "present": _take([0b111 | (1 << 8)] * w + [0b111 | (1 << 8)] * w, cols["present"], order),
    }
    header = {
        "format": FORMAT,
        "run_id": run_id,
        "kafka_version": "4.3.1",
        "client": "kafka-python 3.0.12",
        "racks": {
            "brokers": {"1": "rack-a", "2": "rack-b", "3": "rack-c"},
            "clients": {"consumer-0": "rack-a", "consumer-1": "rack-b"},
        },
        # as a real run's header: the policy's settings and the timed checks' bounds
        "config": {
            "acks": "all",
            "idempotence": True,
            "unclean_leader_election": False,
            "min_insync_replicas": 2,
            **header_entries(run_settings(3, {}, 1.0)),
        },
    }
    schema = PARQUET_SCHEMA.with_metadata({HEADER_METADATA_KEY: json.dumps(header).encode()})
    arrays = [pa.array(table[name], type=schema.field(name).type) for name in schema.names]
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_arrays(arrays, schema=schema)
    first_final = table["f"].to_pylist().index("final-read")  # the final reads come last
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:  # as core.history.to_parquet:
        writer.write_table(table.slice(0, first_final))  # final reads in row groups of their own
        writer.write_table(table.slice(first_final))
    del n_small
    return n


def _take(block: list[object] | np.ndarray, small: list[object], order: np.ndarray) -> list[object]:
    allv = list(block) + list(small)
    return [allv[j] for j in order]


__all__ = ["generate", "writes_for_events", "RECORD_TYPE"]
