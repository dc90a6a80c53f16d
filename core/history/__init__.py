"""Histories in format ``highwater.history/1``: recording, reading, Parquet conversion.

Split by concern; every name is importable from ``core.history`` as before:

* :mod:`core.history.format`: the format's name and event schema (``check_header``,
  ``event_problem``), what one line holds (``parse_line``, ``decode_event``), ``HistoryError``/``LineError``, record values as text (``value_text``);
* :mod:`core.history.writer`: ``HistoryWriter`` (one flushed JSON line per event);
* :mod:`core.history.reader`: ``read_history`` and ``History`` (strict or lenient), and
  ``event_lines``, the one walk over a history's lines;
* :mod:`core.history.convert`: ``to_parquet`` and ``read_parquet`` (whole files);
* :mod:`core.history.parquet`: the Parquet codec (``PARQUET_SCHEMA``,
  ``rows_to_events``; the layout is described there).
"""

from __future__ import annotations

from .convert import read_parquet, to_parquet
from .format import (
    EVENT_FIELDS,
    EVENT_TYPES,
    FORMAT,
    FORMAT_PREFIX,
    KNOWN_FS,
    VALUE_JSON,
    VALUE_STR,
    HistoryError,
    LineError,
    check_header,
    decode_event,
    event_problem,
    parse_line,
    text_value,
    value_text,
)
from .parquet import (
    HEADER_METADATA_KEY,
    HOT_KEYS,
    PARQUET_SCHEMA,
    RECORD_TYPE,
    read_parquet_header,
    rows_to_events,
)
from .reader import History, event_lines, read_history
from .writer import HistoryWriter

__all__ = [
    "EVENT_FIELDS",
    "EVENT_TYPES",
    "FORMAT",
    "FORMAT_PREFIX",
    "HEADER_METADATA_KEY",
    "HOT_KEYS",
    "KNOWN_FS",
    "PARQUET_SCHEMA",
    "RECORD_TYPE",
    "VALUE_JSON",
    "VALUE_STR",
    "History",
    "HistoryError",
    "HistoryWriter",
    "LineError",
    "check_header",
    "decode_event",
    "event_lines",
    "event_problem",
    "parse_line",
    "read_history",
    "read_parquet",
    "read_parquet_header",
    "rows_to_events",
    "text_value",
    "to_parquet",
    "value_text",
]
