"""The Parquet codec of ``highwater.history/1``: events to Parquet columns and Parquet rows back
to events (converting a whole file, which also reads histories, is ``core.history.convert``).

Layout: fixed schema ``PARQUET_SCHEMA``, one row per event, row order = file order.
The header is stored as JSON in the schema metadata key ``highwater.header``. Columns:

* ``index`` int64, ``time_ns`` int64, ``process``/``type``/``f``/``error`` string: the event.
* Hot value keys, flattened so Spark and the checks read them without JSON: ``topic`` string,
  ``partition`` int32, ``offset`` int64, ``replica`` int32, ``hw`` int64, ``log_start`` int64,
  ``leader`` int32, ``leader_epoch`` int32 (null where the event's value has no such key).
* ``value`` string + ``value_kind`` int8: a send's *record* value in text form (kind 0: the
  string itself, 1: JSON text; see ``value_text``).
* ``records`` list<struct{topic, partition, offset, value, value_kind, leader_epoch,
  replica}>: a poll's records; for a final-read each ``[offset, value]`` pair becomes an item
  with only ``offset``/``value``/``value_kind`` set.
* ``value_json`` string: the rest of the event's ``value`` as JSON (keys not lifted above,
  e.g. ``key``, ``isr``, ``leo``, ``reason``, ``kind``/``targets``/``params``).
* ``present`` int16: bit i set when key ``HOT_KEYS[i]`` was in the value (bit 8: the send's
  record value, bit 9: records), so nulls and absent keys round-trip exactly.

Row groups never mix ``final-read`` events with other events, so a reader filtering on ``f``
can skip whole row groups (the final reads hold most of a history's records).

Keeping the hot data flat and the records columnar lets the checks run vectorised on Parquet
without parsing one JSON string per event. Events round-trip exactly, except that poll records
gain explicit null ``leader_epoch``/``replica`` keys when they had none.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .format import HistoryError, check_header, opt_int, text_value, value_text

HEADER_METADATA_KEY = b"highwater.header"

RECORD_TYPE = pa.struct(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("value", pa.string()),
        ("value_kind", pa.int8()),
        ("leader_epoch", pa.int32()),
        ("replica", pa.int32()),
    ]
)

#: value keys lifted into their own columns, with the column type each needs; the bit i of the
#: ``present`` column says HOT_KEYS[i] was in the event's value (so nulls round-trip too).
HOT_KEYS: tuple[tuple[str, pa.DataType], ...] = (
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("replica", pa.int32()),
    ("hw", pa.int64()),
    ("log_start", pa.int64()),
    ("leader", pa.int32()),
    ("leader_epoch", pa.int32()),
)
_VALUE_BIT = 1 << len(HOT_KEYS)  # the send's record value, in columns value/value_kind
_RECORDS_BIT = 1 << (len(HOT_KEYS) + 1)  # records, in column records

PARQUET_SCHEMA = pa.schema(
    [
        ("index", pa.int64()),
        ("time_ns", pa.int64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("error", pa.string()),
        *HOT_KEYS,
        ("value", pa.string()),
        ("value_kind", pa.int8()),
        ("records", pa.list_(RECORD_TYPE)),
        ("value_json", pa.string()),
        ("present", pa.int16()),
    ]
)


def _fits(key: str, x: Any) -> bool:
    if x is None:
        return True
    return isinstance(x, str) if key == "topic" else type(x) is int


def event_columns(events: list[dict[str, Any]]) -> pa.RecordBatch:
    cols: dict[str, list[Any]] = {name: [] for name in PARQUET_SCHEMA.names}
    for ev in events:
        for k in ("index", "time_ns", "process", "type", "f", "error"):
            cols[k].append(ev[k])
        v = ev["value"]
        present = 0
        rest: Any = v
        if isinstance(v, dict):
            rest = dict(v)
            for bit, (k, _) in enumerate(HOT_KEYS):
                x = v.get(k)
                if k in v and _fits(k, x):
                    present |= 1 << bit
                    del rest[k]
                    cols[k].append(x)
                else:
                    cols[k].append(None)
            if ev["f"] == "send" and "value" in v:
                present |= _VALUE_BIT
                text, kind = value_text(rest.pop("value"))
                cols["value"].append(text)
                cols["value_kind"].append(kind)
            else:
                cols["value"].append(None)
                cols["value_kind"].append(None)
            recs = v.get("records")
            if isinstance(recs, list) and _records_fit(ev["f"], recs):
                present |= _RECORDS_BIT
                del rest["records"]
                cols["records"].append(_records_column(ev["f"], recs))
            else:
                cols["records"].append(None)
        else:
            for k, _ in HOT_KEYS:
                cols[k].append(None)
            for k in ("value", "value_kind", "records"):
                cols[k].append(None)
        cols["value_json"].append(json.dumps(rest, separators=(",", ":")))
        cols["present"].append(present)
    return pa.RecordBatch.from_pydict(cols, schema=PARQUET_SCHEMA)


def _records_fit(f: str, recs: list[Any]) -> bool:
    if f == "final-read":
        return all(isinstance(r, list) and len(r) == 2 and type(r[0]) is int for r in recs)
    keys = {"topic", "partition", "offset", "value", "leader_epoch", "replica"}
    return all(
        isinstance(r, dict)
        and r.keys() <= keys
        and isinstance(r.get("topic"), str)
        and type(r.get("partition")) is int
        and type(r.get("offset")) is int
        and opt_int(r.get("leader_epoch"))
        and opt_int(r.get("replica"))
        for r in recs
    )


def _records_column(f: str, recs: list[Any]) -> list[dict[str, Any]]:
    out = []
    if f == "final-read":
        for o, val in recs:
            text, kind = value_text(val)
            out.append({"offset": o, "value": text, "value_kind": kind})
        return out
    for r in recs:
        text, kind = value_text(r.get("value"))
        out.append(
            {
                "topic": r["topic"],
                "partition": r["partition"],
                "offset": r["offset"],
                "value": text,
                "value_kind": kind,
                "leader_epoch": r.get("leader_epoch"),
                "replica": r.get("replica"),
            }
        )
    return out


def read_parquet_header(path: str | Path) -> dict[str, Any]:
    try:
        md = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException) as e:
        raise HistoryError(f"not a readable Parquet file ({e})", path=path) from e
    raw = md.get(HEADER_METADATA_KEY)
    if raw is None:
        raise HistoryError("Parquet file has no highwater.header metadata", path=path)
    try:
        return check_header(json.loads(raw))
    except ValueError as e:
        raise HistoryError(f"bad header metadata: {e}", path=path) from e


def rows_to_events(table: pa.Table | pa.RecordBatch) -> list[dict[str, Any]]:
    """Rebuild event dicts from rows of ``PARQUET_SCHEMA``."""
    d = table.to_pydict()
    out = []
    for i in range(len(d["index"])):
        value: Any = json.loads(d["value_json"][i])
        present = d["present"][i] or 0
        if isinstance(value, dict):
            for bit, (k, _) in enumerate(HOT_KEYS):
                if present & (1 << bit):
                    value[k] = d[k][i]
            if present & _VALUE_BIT:
                value["value"] = text_value(d["value"][i], d["value_kind"][i])
            if present & _RECORDS_BIT:
                value["records"] = _records_from_column(d["f"][i], d["records"][i] or [])
        out.append(
            {
                "index": d["index"][i],
                "time_ns": d["time_ns"][i],
                "process": d["process"][i],
                "type": d["type"][i],
                "f": d["f"][i],
                "value": value,
                "error": d["error"][i],
            }
        )
    return out


def _records_from_column(f: str, recs: list[dict[str, Any]]) -> list[Any]:
    if f == "final-read":
        return [[r["offset"], text_value(r["value"], r["value_kind"])] for r in recs]
    return [
        {
            "topic": r["topic"],
            "partition": r["partition"],
            "offset": r["offset"],
            "value": text_value(r["value"], r["value_kind"]),
            "leader_epoch": r["leader_epoch"],
            "replica": r["replica"],
        }
        for r in recs
    ]


def iter_parquet(path: Path) -> Iterator[dict[str, Any]]:
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=20_000):
        yield from rows_to_events(batch)
