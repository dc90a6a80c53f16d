"""``highwater export SOURCE [--table NAME] [--format csv|parquet] [--out PATH]``: a results tree
(or, for ``--table events``, one history) as a table, written as CSV or Parquet.

The tables are those of ``reports.frames`` (docs/results-as-dataframes.md defines their
columns): ``runs`` (one row per run and check, with the verdict and counts), ``figures`` (the
counts, one row each), ``stalls``, ``fetch-shares`` and ``events``. CSV goes to standard output
unless ``--out`` names a file; Parquet needs ``--out``. A missing or unusable SOURCE, or an
output that cannot be written, is one error line (``HighwaterError``: the CLI's exit status for
refused input); runs that could only be read in part are still exported (as ``unknown``, the
reason in ``notes``) and named on standard error. Exit status 0: the table was written.
``highwater.cli`` calls ``register(subparsers)``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from highwater.core.errors import HighwaterError

#: the tables of a results tree, then that of one history (``reports.frames``)
TABLES = ("runs", "figures", "stalls", "fetch-shares", "events")
FORMATS = ("csv", "parquet")
PARQUET_SUFFIXES = (".parquet", ".pq")


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "export",
        help="export a results tree (or one history) as a CSV or Parquet table",
        description="Load the runs under SOURCE as one table (reports.frames; columns in "
        "docs/results-as-dataframes.md) and write it as CSV or Parquet. Tables: runs (one row "
        "per run and check: verdict, counts), figures (one row per run, check and count), stalls "
        "(the longest consumer stalls of the progress and follower-fetch verdicts), fetch-shares "
        "(records per consumer and serving replica), events (one history's events). Exit 0: "
        "written; an unusable SOURCE or output is one error line and the status of refused input.",
    )
    p.add_argument(
        "source",
        metavar="SOURCE",
        help="results directory (results/<campaign>/<run_id>/, or one campaign or run of it); "
        "for --table events: a history file (.jsonl or .parquet) or a run directory",
    )
    p.add_argument("--table", choices=TABLES, default="runs", help="which table to export")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="output format (default: parquet when --out ends in .parquet or .pq, else csv)",
    )
    p.add_argument(
        "--out",
        metavar="PATH",
        help="file to write (default: standard output, CSV only); an existing file is replaced",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="events: refuse a history with an unreadable line instead of skipping the line",
    )
    p.set_defaults(func=cmd_export)
    return p


def cmd_export(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from highwater.reports import frames

    out = out or sys.stdout
    err = err or sys.stderr
    dest = None if args.out in (None, "-") else Path(args.out)
    fmt = args.format or ("parquet" if dest is not None and dest.suffix.lower() in PARQUET_SUFFIXES else "csv")
    if fmt == "parquet" and dest is None:
        raise HighwaterError("--format parquet needs --out FILE (Parquet is not written to standard output)")
    if args.table == "events":
        df = frames.events(args.source, strict=args.strict)
        warnings = [f"{args.source}: skipped {e}" for e in df.attrs.get("line_errors", [])]
    else:
        df = frames.RESULTS_TABLES[args.table](args.source)
        warnings = list(df.attrs.get("problems", []))  # runs read only in part
    for w in warnings:
        print(f"highwater export: warning: {w}", file=err)
    try:
        if dest is None:
            df.to_csv(out, index=False)
        elif fmt == "parquet":
            df.to_parquet(dest, index=False)
        else:
            df.to_csv(dest, index=False)
    except OSError as e:
        raise HighwaterError(f"cannot write {dest}: {e.strerror or e}") from None
    if dest is not None:
        print(f"highwater export: wrote {len(df)} row(s) of {args.table} to {dest} ({fmt})", file=err)
    return 0
