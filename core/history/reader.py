"""Reading a history (``.jsonl`` or ``.parquet``): the header validated up front, the events as
a re-iterable stream, strict (the first bad line raises) or lenient (bad lines listed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .format import HistoryError, LineError, check_header, parse_line
from .parquet import iter_parquet, read_parquet_header


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
            yield from iter_parquet(self.path)
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


def event_lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """The raw event lines of a ``.jsonl`` history, after its header: ``(line number, byte
    offset, line)``, the line with its newline (a missing newline is how a cut-off last event
    shows). The one place that walks a history's lines; ``parse_line`` says what one holds."""
    with open(path, "rb") as fh:
        pos = len(fh.readline())  # header, validated by read_history
        for lineno, raw in enumerate(fh, start=2):
            yield lineno, pos, raw
            pos += len(raw)


def _iter_jsonl(path: Path, lenient: bool, errors: list[LineError]) -> Iterator[dict[str, Any]]:
    last_index = -1
    last_time = -1
    for lineno, _, raw in event_lines(path):
        ev = parse_line(raw)
        if isinstance(ev, str):
            problem = ev
        elif ev["index"] <= last_index:
            problem = f"index {ev['index']} does not increase (previous {last_index})"
        elif ev["time_ns"] < last_time:
            problem = f"time_ns {ev['time_ns']} goes backwards (previous {last_time})"
        else:
            last_index, last_time = ev["index"], ev["time_ns"]
            yield ev
            continue
        if not lenient:
            raise HistoryError(problem, line=lineno, path=path)
        errors.append(LineError.of(lineno, problem, raw))
