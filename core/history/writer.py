"""Recording a history: ``HistoryWriter`` appends one flushed JSON line per event, from any
thread, so a crash mid-run keeps everything recorded so far (at worst the last line is
incomplete, and the lenient reader reports it and reads the rest)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, TypeAlias

from highwater.core.errors import error_text

from .format import EVENT_TYPES, FORMAT

#: an event's value: its fields, or none
Value: TypeAlias = Mapping[str, Any] | None
#: an event's error: its text, an exception (recorded as ``error_text``), or none
Error: TypeAlias = str | BaseException | None


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

    def clock_ns(self) -> int:
        """The history's clock now (what ``time_ns`` of an event recorded now would be)."""
        return time.monotonic_ns() - self._start_ns

    def record(
        self,
        process: str,
        type: str,  # noqa: A002 - the field is called "type" in the format
        f: str,
        value: Value = None,
        error: Error = None,
    ) -> dict[str, Any]:
        """Record one event and return it (with its assigned ``index`` and ``time_ns``)."""
        if type not in EVENT_TYPES:
            raise ValueError(f"type must be one of {EVENT_TYPES}, not {type!r}")
        if not isinstance(process, str) or not isinstance(f, str):
            raise ValueError("process and f must be strings")
        if error is not None and type in ("invoke", "ok"):
            raise ValueError(f"an {type} event carries no error")
        if isinstance(error, BaseException):
            error = error_text(error)
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

    def invoke(self, process: str, f: str, value: Value = None, error: None = None) -> dict[str, Any]:
        """An operation starts (``error`` must stay None: same signature as fail/info)."""
        return self.record(process, "invoke", f, value, error)

    def ok(self, process: str, f: str, value: Value = None, error: None = None) -> dict[str, Any]:
        """The operation definitely happened (``error`` must stay None)."""
        return self.record(process, "ok", f, value, error)

    def fail(self, process: str, f: str, value: Value = None, error: Error = None) -> dict[str, Any]:
        """The operation definitely did not happen."""
        return self.record(process, "fail", f, value, error)

    def info(self, process: str, f: str, value: Value = None, error: Error = None) -> dict[str, Any]:
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
