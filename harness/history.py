"""Histories in format ``highwater.history/1``: recording, reading, Parquet conversion.

A history is JSON Lines. Line 1 is a header object naming the format and the configuration the
checks' policy depends on; every following line is one event (see DESIGN.md for the fields).
The writer flushes after every event, so a crash mid-run keeps everything recorded so far: at
worst the last line is incomplete, and the lenient reader reports it and reads the rest.

Parquet layout (fixed schema ``PARQUET_SCHEMA``, one row per event, row order = file order)
----------------------------------------------------------------------------------------------
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
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

FORMAT = "highwater.history/1"
FORMAT_PREFIX = "highwater.history/"
EVENT_TYPES = ("invoke", "ok", "fail", "info")
KNOWN_FS = ("send", "poll", "assign", "seek", "commit", "fault", "heal", "meta", "final-read")
EVENT_FIELDS = ("index", "time_ns", "process", "type", "f", "value", "error")
HEADER_METADATA_KEY = b"highwater.header"

#: value_kind codes in Parquet: how the text in ``value`` columns maps back to a JSON value.
VALUE_STR, VALUE_JSON = 0, 1


class HistoryError(ValueError):
    """A history (or one line of it) does not follow ``highwater.history/1``."""

    def __init__(self, message: str, line: int | None = None, path: str | Path | None = None):
        self.line = line
        self.path = str(path) if path is not None else None
        self.reason = message
        where = ""
        if path is not None:
            where += f"{path}"
        if line is not None:
            where += f":{line}" if where else f"line {line}"
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class LineError:
    """One unreadable line, kept by the lenient reader instead of aborting the whole read."""

    line: int  # 1-based line number in the file (the header is line 1)
    message: str
    text: str  # the start of the offending line, for the report

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message, "text": self.text}


def value_text(v: Any) -> tuple[str | None, int]:
    """The text form of a record value and its kind: how values are compared and stored.

    Values identify writes, so checks compare them by this text: a string is itself, anything
    else is compact, key-sorted JSON (so the integer 5 and the string "5" compare equal, which a
    workload producing unique values of one type never notices). ``None`` stays ``None``.
    """
    if type(v) is str:
        return v, VALUE_STR
    if v is None:
        return None, VALUE_STR
    if type(v) is int:
        return str(v), VALUE_JSON
    return json.dumps(v, sort_keys=True, separators=(",", ":")), VALUE_JSON


def text_value(text: str | None, kind: int | None) -> Any:
    """Inverse of ``value_text``."""
    if text is None:
        return None
    return json.loads(text) if kind == VALUE_JSON else text


# --------------------------------------------------------------------------------------------
# Writing


class HistoryWriter:
    """Appends events to a JSON Lines history, one flushed line per event, from any thread.

    ``index`` and ``time_ns`` (monotonic nanoseconds since the writer was created) are assigned
    under one lock, so they increase together and the file order is the recording order.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        run_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        overwrite: bool = False,
        **header_fields: Any,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.header: dict[str, Any] = {
            "format": FORMAT,
            "run_id": run_id or uuid.uuid4().hex,
            **header_fields,
            "config": dict(config or {}),
        }
        self._lock = threading.Lock()
        self._next_index = 0
        self._start_ns = time.monotonic_ns()
        self._file: IO[str] | None = open(  # noqa: SIM115 - closed in close()
            self.path, "w" if overwrite else "x", encoding="utf-8"
        )
        self._write_line(json.dumps(self.header, separators=(",", ":")))

    def _write_line(self, line: str) -> None:
        if self._file is None:
            raise ValueError(f"history {self.path} is closed")
        self._file.write(line + "\n")
        self._file.flush()

    def record(
        self,
        process: str,
        type: str,  # noqa: A002 - the field is called "type" in the format
        f: str,
        value: Mapping[str, Any] | None = None,
        error: str | BaseException | None = None,
    ) -> dict[str, Any]:
        """Record one event and return it (with its assigned ``index`` and ``time_ns``)."""
        if type not in EVENT_TYPES:
            raise ValueError(f"type must be one of {EVENT_TYPES}, not {type!r}")
        if not isinstance(process, str) or not isinstance(f, str):
            raise ValueError("process and f must be strings")
        if error is not None and type in ("invoke", "ok"):
            raise ValueError(f"an {type} event carries no error")
        if isinstance(error, BaseException):
            error = f"{error.__class__.__name__}: {error}" if str(error) else error.__class__.__name__
        with self._lock:
            event = {
                "index": self._next_index,
                "time_ns": time.monotonic_ns() - self._start_ns,
                "process": process,
                "type": type,
                "f": f,
                "value": dict(value) if value is not None else None,
                "error": error,
            }
            # Serialise before taking the index, so an unserialisable value leaves no hole.
            line = json.dumps(event, separators=(",", ":"))
            self._write_line(line)
            self._next_index += 1
        return event

    def invoke(self, process: str, f: str, value: Mapping[str, Any] | None = None,
               error: None = None) -> dict[str, Any]:
        """An operation starts (``error`` must stay None: same signature as fail/info)."""
        return self.record(process, "invoke", f, value, error)

    def ok(self, process: str, f: str, value: Mapping[str, Any] | None = None,
           error: None = None) -> dict[str, Any]:
        """The operation definitely happened (``error`` must stay None)."""
        return self.record(process, "ok", f, value, error)

    def fail(
        self, process: str, f: str, value: Mapping[str, Any] | None = None,
        error: str | BaseException | None = None,
    ) -> dict[str, Any]:
        """The operation definitely did not happen."""
        return self.record(process, "fail", f, value, error)

    def info(
        self, process: str, f: str, value: Mapping[str, Any] | None = None,
        error: str | BaseException | None = None,
    ) -> dict[str, Any]:
        """The outcome is unknown (e.g. a timeout): it may or may not have happened."""
        return self.record(process, "info", f, value, error)

    @property
    def events_written(self) -> int:
        return self._next_index

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Validation


def check_header(obj: Any) -> dict[str, Any]:
    """Validate a header object and return it; raises ``HistoryError`` (without line number)."""
    if not isinstance(obj, dict):
        raise HistoryError(f"header must be a JSON object, got {_jtype(obj)}")
    fmt = obj.get("format")
    if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
        raise HistoryError(f"header has no format {FORMAT!r} (format={fmt!r}); not a highwater history")
    if fmt != FORMAT:
        raise HistoryError(f"unsupported history version {fmt!r}; this reader reads {FORMAT!r}")
    config = obj.get("config", {})
    if not isinstance(config, dict):
        raise HistoryError(f"header 'config' must be an object, got {_jtype(config)}")
    return obj


def _jtype(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number"
    )


def _is_int(v: Any) -> bool:
    return type(v) is int


def _opt_int(v: Any) -> bool:
    return v is None or type(v) is int


def event_problem(ev: Any) -> str | None:
    """What is wrong with one event, or None: the schema of DESIGN.md, field by field."""
    if not isinstance(ev, dict):
        return f"event must be a JSON object, got {_jtype(ev)}"
    missing = [k for k in EVENT_FIELDS if k not in ev]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    if not _is_int(ev["index"]) or ev["index"] < 0:
        return f"'index' must be a non-negative integer, got {ev['index']!r}"
    if not _is_int(ev["time_ns"]) or ev["time_ns"] < 0:
        return f"'time_ns' must be a non-negative integer, got {ev['time_ns']!r}"
    if not isinstance(ev["process"], str) or not ev["process"]:
        return f"'process' must be a non-empty string, got {ev['process']!r}"
    if ev["type"] not in EVENT_TYPES:
        return f"'type' must be one of {', '.join(EVENT_TYPES)}, got {ev['type']!r}"
    f = ev["f"]
    if not isinstance(f, str) or not f:
        return f"'f' must be a non-empty string, got {f!r}"
    if ev["error"] is not None and not isinstance(ev["error"], str):
        return f"'error' must be a string or null, got {_jtype(ev['error'])}"
    v = ev["value"]
    if v is None:
        return None if ev["type"] != "ok" or f not in ("send", "poll", "final-read") else (
            f"an ok {f} needs a 'value' object"
        )
    if not isinstance(v, dict):
        return f"'value' must be an object or null, got {_jtype(v)}"
    return _value_problem(f, ev["type"], v)


def _value_problem(f: str, typ: str, v: dict[str, Any]) -> str | None:
    if f in ("send", "assign", "seek", "meta", "final-read"):
        if "topic" in v and v["topic"] is not None and not isinstance(v["topic"], str):
            return f"value.topic must be a string, got {_jtype(v['topic'])}"
        if not _opt_int(v.get("partition")):
            return f"value.partition must be an integer, got {v.get('partition')!r}"
    if f in ("send", "assign", "seek") and not _opt_int(v.get("offset")):
        return f"value.offset must be an integer or null, got {v.get('offset')!r}"
    if f == "send" and "value" not in v:
        return "send value has no 'value' (the record value)"
    if f == "poll" and typ == "ok":
        recs = v.get("records")
        if not isinstance(recs, list):
            return "ok poll value needs a 'records' array"
        for i, r in enumerate(recs):
            if not isinstance(r, dict):
                return f"value.records[{i}] must be an object"
            for k in ("topic", "partition", "offset", "value"):
                if k not in r:
                    return f"value.records[{i}] has no '{k}'"
            if not isinstance(r["topic"], str) or not _is_int(r["partition"]) or not _is_int(r["offset"]):
                return f"value.records[{i}] needs string topic and integer partition/offset"
            if not _opt_int(r.get("leader_epoch")) or not _opt_int(r.get("replica")):
                return f"value.records[{i}] leader_epoch/replica must be integers or null"
    if f == "final-read" and typ == "ok":
        for k in ("topic", "partition", "replica", "hw", "records"):
            if k not in v:
                return f"final-read value has no '{k}'"
        if not isinstance(v["topic"], str) or not _is_int(v["partition"]) or not _is_int(v["replica"]):
            return "final-read needs string topic and integer partition/replica"
        if not _is_int(v["hw"]) or not _opt_int(v.get("log_start")):
            return "final-read hw/log_start must be integers"
        if not isinstance(v["records"], list):
            return "final-read records must be an array of [offset, value]"
        for i, r in enumerate(v["records"]):
            if not isinstance(r, list) or len(r) != 2 or not _is_int(r[0]):
                return f"final-read records[{i}] must be [offset, value]"
    if f == "meta":
        if not _opt_int(v.get("hw")) or not _opt_int(v.get("leader")):
            return "meta hw/leader must be integers or null"
        isr = v.get("isr")
        if isr is not None and (not isinstance(isr, list) or not all(_is_int(b) for b in isr)):
            return "meta isr must be an array of broker ids"
    return None


# --------------------------------------------------------------------------------------------
# Reading


@dataclass
class History:
    """A readable history: its header, and its events as a stream (re-iterable; each iteration
    reads the file again, so memory stays flat). In lenient mode, unreadable lines are skipped
    and listed in ``errors`` (filled as iteration proceeds)."""

    path: Path
    header: dict[str, Any]
    lenient: bool = False
    errors: list[LineError] = field(default_factory=list)

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.header.get("config") or {})

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.path.suffix == ".parquet":
            yield from _iter_parquet(self.path)
            return
        self.errors.clear()
        yield from _iter_jsonl(self.path, self.lenient, self.errors)


def read_history(path: str | Path, *, lenient: bool = False) -> History:
    """Open a history (``.jsonl`` or ``.parquet``) and validate its header.

    A bad header always raises ``HistoryError``: without it the format is unknown. A bad event
    line raises ``HistoryError`` naming its line number while iterating, unless ``lenient``,
    which records a ``LineError`` in ``History.errors`` and goes on with the next line.
    """
    p = Path(path)
    if p.suffix == ".parquet":
        return History(p, read_parquet_header(p), lenient)
    try:
        with open(p, "rb") as fh:
            first = fh.readline()
    except OSError as e:
        raise HistoryError(f"cannot read history: {e.strerror or e}", path=p) from e
    if not first.strip():
        raise HistoryError("empty file: no header line", line=1, path=p)
    try:
        obj = json.loads(first)
    except ValueError as e:
        raise HistoryError(f"header is not JSON ({e})", line=1, path=p) from e
    try:
        header = check_header(obj)
    except HistoryError as e:
        raise HistoryError(e.reason, line=1, path=p) from e
    return History(p, header, lenient)


def _iter_jsonl(path: Path, lenient: bool, errors: list[LineError]) -> Iterator[dict[str, Any]]:
    last_index = -1
    last_time = -1
    with open(path, "rb") as fh:
        fh.readline()  # header, validated by read_history
        for lineno, raw in enumerate(fh, start=2):
            problem: str | None = None
            ev: Any = None
            if not raw.endswith(b"\n"):
                problem = "incomplete last line (no newline): the writer probably stopped mid-event"
            elif not raw.strip():
                problem = "empty line"
            else:
                try:
                    ev = json.loads(raw)
                except ValueError as e:
                    problem = f"not valid JSON ({e})"
                else:
                    problem = event_problem(ev)
                    if problem is None and ev["index"] <= last_index:
                        problem = f"index {ev['index']} does not increase (previous {last_index})"
                    if problem is None and ev["time_ns"] < last_time:
                        problem = f"time_ns {ev['time_ns']} goes backwards (previous {last_time})"
            if problem is not None:
                if not lenient:
                    raise HistoryError(problem, line=lineno, path=path)
                errors.append(LineError(lineno, problem, raw[:200].decode("utf-8", "replace")))
                continue
            last_index, last_time = ev["index"], ev["time_ns"]
            yield ev


# --------------------------------------------------------------------------------------------
# Parquet

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


def _event_columns(events: list[dict[str, Any]]) -> pa.RecordBatch:
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
        isinstance(r, dict) and r.keys() <= keys and isinstance(r.get("topic"), str)
        and type(r.get("partition")) is int and type(r.get("offset")) is int
        and _opt_int(r.get("leader_epoch")) and _opt_int(r.get("replica"))
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


def to_parquet(
    jsonl: str | Path, parquet: str | Path, *, lenient: bool = False, batch_events: int = 50_000
) -> list[LineError]:
    """Convert a JSON Lines history to Parquet (schema ``PARQUET_SCHEMA``), streaming.

    Returns the skipped lines' errors (lenient mode); strict mode raises on the first one.
    """
    hist = read_history(jsonl, lenient=lenient)
    meta = {HEADER_METADATA_KEY: json.dumps(hist.header).encode()}
    schema = PARQUET_SCHEMA.with_metadata(meta)
    out = Path(parquet)
    tmp = out.with_name(out.name + ".tmp")
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        n_records = 0
        for ev in hist:
            if batch and (ev["f"] == "final-read") != (batch[-1]["f"] == "final-read"):
                # Final reads get row groups of their own: Parquet readers that want only them
                # (the report's reference-replica and committed-log passes) skip every other
                # row group by its dictionary of ``f`` instead of decoding the polls' records.
                writer.write_batch(_event_columns(batch).replace_schema_metadata(meta))
                batch, n_records = [], 0
            batch.append(ev)
            v = ev["value"]
            if isinstance(v, dict) and isinstance(v.get("records"), list):
                n_records += len(v["records"])
            if len(batch) >= batch_events or n_records >= 4 * batch_events:
                writer.write_batch(_event_columns(batch).replace_schema_metadata(meta))
                batch, n_records = [], 0
        if batch:
            writer.write_batch(_event_columns(batch).replace_schema_metadata(meta))
    tmp.replace(out)
    return list(hist.errors)


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


def read_parquet(path: str | Path) -> History:
    """Open a Parquet history; iterating it yields the original events."""
    return read_history(Path(path))


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


def _iter_parquet(path: Path) -> Iterator[dict[str, Any]]:
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=20_000):
        yield from rows_to_events(batch)
