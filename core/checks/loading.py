"""Loading a history file into ``HistoryData`` (``core.checks.data``): JSON Lines here,
leniently (bad lines become ``line_errors``), Parquet through ``core.checks.parquet_load``.
Apart from the columns themselves, so that neither of the two loaders imports the other."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

from core.checks.data import HistoryData, JsonlSource, _Builder, _np, idempotent
from core.checks.parquet_load import load_parquet
from core.history import LineError, event_problem, read_history, read_parquet_header


def load(path: str | Path) -> HistoryData:
    """Load a ``.jsonl`` (leniently: bad lines become ``line_errors``) or ``.parquet`` history.
    Raises ``HistoryError`` if the file or its header is unreadable."""
    p = Path(path)
    if p.suffix == ".parquet":
        return _load_parquet(p)
    return _load_jsonl(p)


def _load_jsonl(path: Path) -> HistoryData:
    header = read_history(path).header  # validates the header line
    b = _Builder(track_invokes=idempotent(header.get("config") or {}))
    errors: list[LineError] = []
    starts = array("q")
    loads = json.loads
    pos = 0
    with open(path, "rb") as fh:
        pos += len(fh.readline())
        for row, raw in enumerate(fh):
            starts.append(pos)
            pos += len(raw)
            lineno = row + 2
            if not raw.endswith(b"\n"):
                errors.append(
                    LineError(
                        lineno, "incomplete last line (no newline): the writer probably stopped mid-event", _head(raw)
                    )
                )
                continue
            try:
                b.add(row, loads(raw.decode()))  # a str: json.loads would sniff the encoding of bytes
            except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
                # The fast path trusts the schema; on any surprise, say precisely what is wrong.
                problem = _explain(raw) or f"unusable event ({e.__class__.__name__}: {e})"
                errors.append(LineError(lineno, problem, _head(raw)))
    return b.build(header, JsonlSource(path, _np(starts, "q")), errors)


def _head(raw: bytes) -> str:
    return raw[:200].decode("utf-8", "replace")


def _explain(raw: bytes) -> str | None:
    try:
        ev = json.loads(raw)
    except ValueError as e:
        return f"not valid JSON ({e})"
    return event_problem(ev)


def _load_parquet(path: Path) -> HistoryData:
    return load_parquet(path, read_parquet_header(path))
