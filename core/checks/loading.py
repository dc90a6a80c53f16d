"""Loading a history file into ``HistoryData`` (``core.checks.data``): JSON Lines here,
leniently (bad lines become ``line_errors``), Parquet through ``core.checks.parquet_load``.
Walking the lines and saying what a bad one holds are ``core.history``'s (``event_lines``,
``parse_line``); this module only fills the columns. Apart from the columns themselves, so
that neither of the two loaders imports the other."""

from __future__ import annotations

from array import array
from pathlib import Path

from highwater.core.checks.data import HistoryData, JsonlSource, _Builder, _np, idempotent
from highwater.core.checks.parquet_load import load_parquet
from highwater.core.history import LineError, decode_event, event_lines, parse_line, read_history, read_parquet_header
from highwater.core.history.format import INCOMPLETE_LINE


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
    for row, (lineno, pos, raw) in enumerate(event_lines(path)):
        starts.append(pos)
        try:
            if not raw.endswith(b"\n"):
                raise ValueError(INCOMPLETE_LINE)
            b.add(row, decode_event(raw))
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
            # The fast path trusts the schema; on any surprise, the format says what is wrong.
            problem = parse_line(raw)
            errors.append(
                LineError.of(
                    lineno,
                    problem if isinstance(problem, str) else f"unusable event ({e.__class__.__name__}: {e})",
                    raw,
                )
            )
    return b.build(header, JsonlSource(path, _np(starts, "q")), errors)


def _load_parquet(path: Path) -> HistoryData:
    return load_parquet(path, read_parquet_header(path))
