"""Whole-file conversions between the two forms of a history: JSON Lines to Parquet (streaming,
with the Parquet codec of ``core.history.parquet``), and a Parquet history opened for reading.
Kept apart from the codec so that the codec never imports the reader, which imports it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from .format import LineError
from .parquet import HEADER_METADATA_KEY, PARQUET_SCHEMA, event_columns
from .reader import History, read_history


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
                writer.write_batch(event_columns(batch).replace_schema_metadata(meta))
                batch, n_records = [], 0
            batch.append(ev)
            v = ev["value"]
            if isinstance(v, dict) and isinstance(v.get("records"), list):
                n_records += len(v["records"])
            if len(batch) >= batch_events or n_records >= 4 * batch_events:
                writer.write_batch(event_columns(batch).replace_schema_metadata(meta))
                batch, n_records = [], 0
        if batch:
            writer.write_batch(event_columns(batch).replace_schema_metadata(meta))
    tmp.replace(out)
    return list(hist.errors)


def read_parquet(path: str | Path) -> History:
    """Open a Parquet history; iterating it yields the original events."""
    return read_history(Path(path))
