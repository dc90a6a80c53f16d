"""The format ``highwater.history/1``: its name, the event schema (``event_problem``,
``check_header``), the errors a reader reports, and how record values compare (``value_text``).

A history is JSON Lines. Line 1 is a header object naming the format and the configuration the
checks' policy depends on; every following line is one event (see docs/history-format.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "highwater.history/1"
FORMAT_PREFIX = "highwater.history/"
EVENT_TYPES = ("invoke", "ok", "fail", "info")
KNOWN_FS = ("send", "poll", "assign", "seek", "revoke", "commit", "txn", "fault", "heal", "meta", "final-read")
TXN_OPS = ("begin", "commit", "abort")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
EVENT_FIELDS = ("index", "time_ns", "process", "type", "f", "value", "error")

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

    @classmethod
    def of(cls, line: int, message: str, raw: bytes) -> LineError:
        """The error for one raw line, keeping its first 200 bytes as the report's excerpt."""
        return cls(line, message, raw[:200].decode("utf-8", "replace"))

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message, "text": self.text}


INCOMPLETE_LINE = "incomplete last line (no newline): the writer probably stopped mid-event"


#: the C scanner behind ``json.loads``, called directly: ``loads`` wraps it in three Python calls
#: and two whitespace matches per line, about a third of decoding a short event line (an
#: attribute ``JSONDecoder.__init__`` sets, which typeshed does not declare)
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode_event(raw: bytes) -> Any:
    """One event line as JSON, unvalidated: the fast path of a reader that trusts the schema and
    asks ``parse_line`` only when using the event fails. Decoded from ``str``, since
    ``json.loads`` of bytes would first sniff their encoding. Exactly ``json.loads(raw.decode())``:
    the scanner alone takes a line that is one JSON value followed by its newline (as written);
    any other line (leading or other trailing whitespace, extra data, not JSON) is
    ``json.loads``' to decode or reject."""
    s = raw.decode()
    try:
        ev, end = _scan_once(s, 0)
    except (StopIteration, ValueError):
        return json.loads(s)
    if end == len(s) - 1 and s[end] == "\n":
        return ev
    return json.loads(s)


def parse_line(raw: bytes) -> dict[str, Any] | str:
    """One event line (with its newline): the event, or the text of what is wrong with the line
    (incomplete, empty, not JSON, not an event: ``event_problem``). What the line's place in
    the file adds (increasing index and time) is the reader's to judge."""
    if not raw.endswith(b"\n"):
        return INCOMPLETE_LINE
    if not raw.strip():
        return "empty line"
    try:
        ev = json.loads(raw)
    except ValueError as e:
        return f"not valid JSON ({e})"
    problem = event_problem(ev)
    return ev if problem is None else problem


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


#: an exactly-once copy's value is ``<source value>@<txn id>`` (``harness.workload.copy``): unique
#: per send, and it names the source value it copies
COPY_SEPARATOR = "@"


def copy_value(source_value: str | None, txn_id: str) -> str:
    """The value a copy transaction ``txn_id`` writes for ``source_value``."""
    return f"{source_value}{COPY_SEPARATOR}{txn_id}"


def source_of(copy: str | None) -> str | None:
    """The source value a copy's value names (the text before its last ``@``); None if none."""
    if copy is None or COPY_SEPARATOR not in copy:
        return None
    return copy.rpartition(COPY_SEPARATOR)[0]


def text_value(text: str | None, kind: int | None) -> Any:
    """Inverse of ``value_text``."""
    if text is None:
        return None
    return json.loads(text) if kind == VALUE_JSON else text


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
    problem = _config_problem(config)
    if problem:
        raise HistoryError(problem)
    return obj


def _config_problem(config: dict[str, Any]) -> str | None:
    """The transaction/group additions to the header: ``isolation_level`` is every consumer's
    default, ``consumers.<name>`` may override it per consumer and name its ``group``."""
    iso = config.get("isolation_level")
    if iso is not None and iso not in ISOLATION_LEVELS:
        return f"config.isolation_level must be one of {', '.join(ISOLATION_LEVELS)}, got {iso!r}"
    consumers = config.get("consumers")
    if consumers is None:
        return None
    if not isinstance(consumers, dict):
        return f"config.consumers must be an object, got {_jtype(consumers)}"
    for name, c in consumers.items():
        if not isinstance(c, dict):
            return f"config.consumers.{name} must be an object, got {_jtype(c)}"
        ciso = c.get("isolation_level")
        if ciso is not None and ciso not in ISOLATION_LEVELS:
            return f"config.consumers.{name}.isolation_level must be one of {', '.join(ISOLATION_LEVELS)}, got {ciso!r}"
        if c.get("group") is not None and not isinstance(c["group"], str):
            return f"config.consumers.{name}.group must be a string, got {_jtype(c['group'])}"
    return None


def _jtype(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(v), "number")


def _is_int(v: Any) -> bool:
    return type(v) is int


def opt_int(v: Any) -> bool:
    """None or an integer (not a bool)."""
    return v is None or type(v) is int


def event_problem(ev: Any) -> str | None:
    """What is wrong with one event, or None: the schema of docs/history-format.md, field by field."""
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
        return (
            None
            if ev["type"] != "ok" or f not in ("send", "poll", "final-read")
            else (f"an ok {f} needs a 'value' object")
        )
    if not isinstance(v, dict):
        return f"'value' must be an object or null, got {_jtype(v)}"
    return _value_problem(f, ev["type"], v)


def _value_problem(f: str, typ: str, v: dict[str, Any]) -> str | None:
    if f in ("send", "assign", "seek", "revoke", "meta", "final-read"):
        if "topic" in v and v["topic"] is not None and not isinstance(v["topic"], str):
            return f"value.topic must be a string, got {_jtype(v['topic'])}"
        if not opt_int(v.get("partition")):
            return f"value.partition must be an integer, got {v.get('partition')!r}"
    if f in ("send", "assign", "seek") and not opt_int(v.get("offset")):
        return f"value.offset must be an integer or null, got {v.get('offset')!r}"
    if f == "revoke" and not isinstance(v.get("reason"), str):
        return f"revoke value.reason must be a string, got {_jtype(v.get('reason'))}"
    if f == "send" and "value" not in v:
        return "send value has no 'value' (the record value)"
    if f in ("send", "commit") and v.get("txn") is not None and not isinstance(v["txn"], str):
        return f"value.txn must be a transaction id string, got {_jtype(v['txn'])}"
    if f == "txn":
        if v.get("op") not in TXN_OPS:
            return f"txn value.op must be one of {', '.join(TXN_OPS)}, got {v.get('op')!r}"
        if not isinstance(v.get("txn"), str) or not v["txn"]:
            return f"txn value.txn must be a non-empty transaction id string, got {v.get('txn')!r}"
    if f == "commit":
        if "group" in v and v["group"] is not None and not isinstance(v["group"], str):
            return f"commit value.group must be a string, got {_jtype(v['group'])}"
        if "topic" in v and v["topic"] is not None and not isinstance(v["topic"], str):
            return f"commit value.topic must be a string, got {_jtype(v['topic'])}"
        if not opt_int(v.get("partition")) or not opt_int(v.get("offset")):
            return "commit value.partition/offset must be integers"
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
            if not opt_int(r.get("leader_epoch")) or not opt_int(r.get("replica")):
                return f"value.records[{i}] leader_epoch/replica must be integers or null"
    if f == "final-read" and typ == "ok":
        for k in ("topic", "partition", "replica", "hw", "records"):
            if k not in v:
                return f"final-read value has no '{k}'"
        if not isinstance(v["topic"], str) or not _is_int(v["partition"]) or not _is_int(v["replica"]):
            return "final-read needs string topic and integer partition/replica"
        if not _is_int(v["hw"]) or not opt_int(v.get("log_start")):
            return "final-read hw/log_start must be integers"
        if not isinstance(v["records"], list):
            return "final-read records must be an array of [offset, value]"
        for i, r in enumerate(v["records"]):
            if not isinstance(r, list) or len(r) != 2 or not _is_int(r[0]):
                return f"final-read records[{i}] must be [offset, value]"
    if f == "meta":
        if not opt_int(v.get("hw")) or not opt_int(v.get("leader")):
            return "meta hw/leader must be integers or null"
        isr = v.get("isr")
        if isr is not None and (not isinstance(isr, list) or not all(_is_int(b) for b in isr)):
            return "meta isr must be an array of broker ids"
    return None
