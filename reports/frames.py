"""Results as pandas DataFrames: a results tree (``results/<campaign>/<run_id>/``) or one history
loaded as tables, for notebooks, ad-hoc questions and export (``highwater export``).

Pure pandas, no Spark: the runs are found and read by ``reports.layout`` (run.json through
``core.manifest``, the history header, verdict.json), their verdicts merged by the report's
own rule (``reports.aggregate.merge_run_verdicts``: a check missing from verdict.json, or a run
without one, is ``unknown``, never valid), the stalls are the report's (``reports.summary``),
and histories are read by ``core.history`` and ``core.checks.load``. Nothing here parses a
history a second way. docs/results-as-dataframes.md walks through it.

The tables (each function's docstring defines its columns):

* ``runs``: one row per run and check, with the check's verdict and its counts;
* ``figures``: the same counts, one row per run, check and count (tidy, ready to pivot);
* ``stalls``: the longest consumer stalls the progress and follower-fetch verdicts report;
* ``fetch_shares``: per run, consumer and serving replica, how many polled records it served;
* ``events``: one history's events, one row per event.

Verdicts are strings: ``valid`` (the check held, or the policy allowed what it found: see
``allowed``), ``violated``, ``unknown`` (its inputs were there but could not settle it; never a
pass) and ``not-applicable`` (the history lacks its inputs; the check did not run). A run's own
verdict is never ``not-applicable`` (``core.checks.verdict.overall_valid``).

A directory that does not exist, or holds no run, raises ``ResultsError``, whose text is one
line. Inside a tree the reading is lenient, as the report's: a run with an unreadable
verdict.json or history shows up as ``unknown`` with the reason in ``notes``, and each table
lists the runs it could read only in part in ``df.attrs["problems"]`` (``"<run>: <reason>"``;
``fetch_shares``: the runs it left out, their history unreadable).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from highwater.core.checks import load
from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN, overall_valid
from highwater.core.errors import HighwaterError
from highwater.core.history import HistoryError, read_history
from highwater.core.run_dir import HISTORY_FILES, RunDir
from highwater.reports.aggregate import merge_run_verdicts
from highwater.reports.layout import RunInfo, find_run_dirs, load_runs
from highwater.reports.summary import stall_rows

#: a check's (or a run's) validity as the tables spell it
VERDICTS = ("valid", "violated", "unknown", "not-applicable")
#: the columns that say which run a row belongs to, first in every table of a results tree
RUN_COLUMNS: dict[str, str] = {
    "run": "str",
    "campaign": "str",
    "run_id": "str",
    "suite": "str",
    "scenario": "str",
    "kafka_version": "str",
    "client": "str",
}
RUNS_COLUMNS: dict[str, str] = {
    **RUN_COLUMNS,
    "started_at": "datetime64[us, UTC]",
    "seed": "Int64",
    "run_verdict": "str",
    "check": "str",
    "verdict": "str",
    "allowed": "bool",
    "source": "str",
    "counts": "str",
    "notes": "str",
    "path": "str",
}
FIGURES_COLUMNS: dict[str, str] = {**RUN_COLUMNS, "check": "str", "verdict": "str", "figure": "str", "value": "Int64"}
STALLS_COLUMNS: dict[str, str] = {
    **RUN_COLUMNS,
    "consumer": "str",
    "topic": "str",
    "partition": "Int64",
    "window": "Int64",
    "fault_kind": "str",
    "phase": "str",
    "window_start_ns": "Int64",
    "window_end_ns": "Int64",
    "stall_ms": "Int64",
    "bound_ms": "Int64",
    "over_bound": "bool",
    "from_time_ns": "Int64",
    "to_time_ns": "Int64",
    "checks": "str",
}
FETCH_COLUMNS: dict[str, str] = {
    **RUN_COLUMNS,
    "consumer": "str",
    "consumer_rack": "str",
    "replica": "Int64",
    "replica_rack": "str",
    "same_rack": "boolean",
    "records": "int64",
    "share": "float64",
}
EVENTS_COLUMNS: dict[str, str] = {
    "index": "int64",
    "time_ns": "int64",
    "process": "str",
    "type": "str",
    "f": "str",
    "topic": "str",
    "partition": "Int64",
    "offset": "Int64",
    "replica": "Int64",
    "records": "Int64",
    "error": "str",
    "value": "str",
}


class ResultsError(HighwaterError, ValueError):
    """A results tree or history that cannot be loaded at all; the text is one line."""


# ---------------------------------------------------------------------------------------------
# results trees


def runs(results_dir: str | Path) -> pd.DataFrame:
    """One row per run and check (every check of the report's matrix, in its order).

    Columns: ``run`` (``campaign/run_id``, the report's label), ``campaign``, ``run_id``,
    ``suite``, ``scenario``, ``kafka_version``, ``client`` (the client label, ``"<name>
    <version>"``), ``started_at`` (UTC timestamp, NaT when unknown), ``seed`` (nullable int),
    ``run_verdict`` (the whole run's: ``valid`` / ``violated`` / ``unknown``), ``check``,
    ``verdict`` (``valid`` / ``violated`` / ``unknown`` / ``not-applicable``), ``allowed`` (the
    policy turned a violation into an allowed anomaly: ``verdict`` is then ``valid``), ``source``
    (``python``: verdict.json; ``none``: no verdict for the check, hence ``unknown``),
    ``counts`` (the check's counts as JSON text; ``figures`` has them as rows), ``notes`` (the
    verdict's notes joined by ``"; "``; a run's problems are notes of its ``history`` check) and
    ``path`` (the run directory).
    """
    rows: list[dict[str, Any]] = []
    judged = _judged(results_dir)
    for r, verdicts in judged:
        base = {
            **_run_fields(r),
            "started_at": r.started_at,
            "seed": r.seed if isinstance(r.seed, int) and not isinstance(r.seed, bool) else None,
            "run_verdict": _spell(overall_valid((c, v["valid"]) for c, v in verdicts.items())),
            "path": str(r.path),
        }
        for check, v in verdicts.items():
            rows.append(
                {
                    **base,
                    "check": check,
                    "verdict": _spell(v["valid"]),
                    "allowed": bool(v.get("allowed")),
                    "source": str(v.get("source") or "none"),
                    "counts": json.dumps(_counts(v), sort_keys=True),
                    "notes": "; ".join(str(n) for n in v.get("notes") or []),
                }
            )
    df = pd.DataFrame(rows, columns=list(RUNS_COLUMNS))
    df["started_at"] = pd.to_datetime(df["started_at"], utc=True, errors="coerce", format="ISO8601").astype(
        RUNS_COLUMNS["started_at"]
    )
    return _with_problems(_typed(df, RUNS_COLUMNS), judged)


def figures(results_dir: str | Path) -> pd.DataFrame:
    """The checks' counts, one row per run, check and count: the same numbers as ``runs``'
    ``counts`` column, tidy (``df.pivot_table(index="run", columns="figure", values="value")``).

    Columns: the run columns of ``runs`` (``run`` … ``client``), ``check``, ``verdict``,
    ``figure`` (the count's name, e.g. ``skips``, ``lost``, ``longest_stall_ms``) and ``value``
    (nullable int). Counts that are not integers are left out.
    """
    judged = _judged(results_dir)
    rows = [
        {**_run_fields(r), "check": check, "verdict": _spell(v["valid"]), "figure": name, "value": value}
        for r, verdicts in judged
        for check, v in verdicts.items()
        for name, value in _counts(v).items()
    ]
    return _with_problems(_typed(pd.DataFrame(rows, columns=list(FIGURES_COLUMNS)), FIGURES_COLUMNS), judged)


def stalls(results_dir: str | Path) -> pd.DataFrame:
    """The longest consumer stalls that the ``progress`` and ``follower-fetch`` verdicts report
    (their ``longest-stall`` examples: a few per check, the longest first; not every stall),
    one row per run, consumer, partition, fault window, phase and bound, as the report's stall
    table (``reports.summary.stall_rows``; a stall both checks report is one row).

    Columns: the run columns of ``runs`` (``run`` … ``client``), ``consumer``, ``topic``,
    ``partition``, ``window`` (the fault window's number), ``fault_kind``, ``phase`` (``fault``:
    while the fault lasted; ``after-heal``), ``window_start_ns`` / ``window_end_ns`` (on the
    history's clock), ``stall_ms`` (how long the consumer received nothing of the partition
    while records were there to read), ``bound_ms`` (the bound it was judged against),
    ``over_bound`` (``stall_ms > bound_ms``), ``from_time_ns`` / ``to_time_ns`` (the stall) and
    ``checks`` (the checks that report it, comma-separated).
    """
    judged = _judged(results_dir)
    rows = [
        {**_run_fields(r), **s, "checks": ",".join(s["checks"])}
        for r, verdicts in judged
        for s in stall_rows({"verdicts": verdicts})
    ]
    return _with_problems(_typed(pd.DataFrame(rows, columns=list(STALLS_COLUMNS)), STALLS_COLUMNS), judged)


def fetch_shares(results_dir: str | Path) -> pd.DataFrame:
    """Which replica served each consumer's records (KIP-392's follower fetching): one row per
    run, consumer and serving replica, counted over the records of the consumer's ok polls.

    Columns: the run columns of ``runs`` (``run`` … ``client``), ``consumer`` (the polling
    process), ``consumer_rack`` and ``replica_rack`` (from run.json, else the history header;
    NA when unknown), ``replica`` (the broker that served the records; NA when the client could
    not tell), ``same_rack`` (the replica is in the consumer's rack; NA when either rack is
    unknown), ``records`` and ``share`` (``records`` over all the records the consumer polled
    in the run, so ``share`` summed over ``same_rack`` rows is the report's local share).

    A run without a history has no rows; one whose history cannot be read is left out and
    named, with the reason, in ``df.attrs["problems"]``.
    """
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for r in _runs(results_dir):
        path = _history_of(r.path)
        if path is None:
            continue
        try:
            h = load(path)
        except (HistoryError, OSError, ValueError) as e:  # pyarrow's errors are OSError / ValueError
            problems.append(f"{r.label}: left out, its history is unreadable: {e}")
            continue
        p = h.polls
        if not len(p.proc):
            continue
        brokers = {str(k): str(v) for k, v in (r.racks.get("brokers") or {}).items()}
        clients = {str(k): str(v) for k, v in (r.racks.get("clients") or {}).items()}
        pairs, counts = np.unique(
            np.stack([p.proc.astype(np.int64), p.replica.astype(np.int64)]), axis=1, return_counts=True
        )
        totals: dict[int, int] = {}
        for proc, n in zip(pairs[0], counts):
            totals[int(proc)] = totals.get(int(proc), 0) + int(n)
        for proc, replica, n in zip(pairs[0], pairs[1], counts):
            consumer = h.proc_name(int(proc))
            rack = clients.get(consumer)
            rep = int(replica) if replica >= 0 else None
            rep_rack = brokers.get(str(rep)) if rep is not None else None
            rows.append(
                {
                    **_run_fields(r),
                    "consumer": consumer,
                    "consumer_rack": rack,
                    "replica": rep,
                    "replica_rack": rep_rack,
                    "same_rack": (rack == rep_rack) if rack and rep_rack else None,
                    "records": int(n),
                    "share": int(n) / totals[int(proc)],
                }
            )
    df = _typed(pd.DataFrame(rows, columns=list(FETCH_COLUMNS)), FETCH_COLUMNS)
    df = df.sort_values(["run", "consumer", "replica"], na_position="last", kind="stable", ignore_index=True)
    df.attrs["problems"] = problems
    return df


# ---------------------------------------------------------------------------------------------
# one history


def events(history: str | Path, *, strict: bool = False) -> pd.DataFrame:
    """One history's events, one row per event in recording order (docs/history-format.md).

    ``history`` is a ``history.jsonl`` / ``history.parquet`` file or a run directory holding
    one (the Parquet one first). The history's header is in ``df.attrs["header"]``.

    Columns: ``index``, ``time_ns`` (monotonic ns since the recorder started), ``process``,
    ``type`` (``invoke`` / ``ok`` / ``fail`` / ``info``), ``f``, ``topic``, ``partition``,
    ``offset`` and ``replica`` (the value's own keys when it has them: a send, an assign or
    seek, a meta observation, a final read; NA otherwise, e.g. for a poll, whose records may
    span partitions), ``records`` (how many records a poll, final read or acquire carries; NA
    for other events), ``error`` and ``value`` (the whole value as JSON text).

    A bad header raises ``ResultsError``. A bad event line (a run cut mid-line) is skipped and
    listed in ``df.attrs["line_errors"]`` (``"line N: reason"``), or raises with ``strict``.
    """
    path = _history_path(Path(history))
    try:
        h = read_history(path, lenient=not strict)
        rows = [_event_row(ev) for ev in h]
    except HistoryError as e:
        raise ResultsError(str(e)) from None
    except (OSError, ValueError) as e:  # a Parquet file pyarrow cannot read
        raise ResultsError(f"{path}: unreadable history ({e.__class__.__name__}: {e})") from None
    df = _typed(pd.DataFrame(rows, columns=list(EVENTS_COLUMNS)), EVENTS_COLUMNS)
    df.attrs["header"] = h.header
    df.attrs["line_errors"] = [f"line {e.line}: {e.message}" for e in h.errors]
    return df


#: the tables by the names ``highwater export --table`` knows them by
RESULTS_TABLES: dict[str, Callable[[str | Path], pd.DataFrame]] = {
    "runs": runs,
    "figures": figures,
    "stalls": stalls,
    "fetch-shares": fetch_shares,
}
HISTORY_TABLES: dict[str, Callable[[str | Path], pd.DataFrame]] = {"events": events}


# ---------------------------------------------------------------------------------------------
# helpers


def _runs(results_dir: str | Path) -> list[RunInfo]:
    """Every run under ``results_dir`` (``reports.layout``), or one clear ``ResultsError``."""
    root = Path(results_dir)
    if not root.exists():
        raise ResultsError(f"results directory {root} does not exist")
    if not root.is_dir():
        raise ResultsError(f"{root} is a file, not a results directory (one history's events: events())")
    try:
        found = find_run_dirs(root)
    except OSError as e:
        raise ResultsError(f"cannot read results directory {root}: {e.strerror or e}") from None
    if not found:
        raise ResultsError(f"no runs under {root} (no history.jsonl, history.parquet, verdict.json or run.json)")
    return load_runs(root)


def _judged(results_dir: str | Path) -> list[tuple[RunInfo, dict[str, dict[str, Any]]]]:
    """Each run with one verdict per check, merged as the report merges them without Spark,
    their validity made one of the four values."""
    out = []
    for r in _runs(results_dir):
        merged = merge_run_verdicts(r, None, [])
        out.append((r, {c: {**v, "valid": _valid(v.get("valid"))} for c, v in merged.items()}))
    return out


def _with_problems(df: pd.DataFrame, judged: list[tuple[RunInfo, dict[str, dict[str, Any]]]]) -> pd.DataFrame:
    """``df`` with ``attrs["problems"]``: ``"<run>: <reason>"`` for each run read only in part
    (an unreadable run.json, verdict.json or history; no verdict.json)."""
    problems = [f"{r.label}: {p}" for r, _ in judged for p in r.problems]
    problems += [
        f"{r.label}: no verdict.json, its checks are unknown"
        for r, _ in judged
        if not RunDir(r.path).verdict_json.exists()
    ]
    df.attrs["problems"] = problems
    return df


def _valid(v: Any) -> bool | str:
    """A verdict's ``valid`` as one of True, False, "unknown", "not-applicable" (anything else
    a verdict.json may hold is unknown)."""
    if isinstance(v, bool):
        return v
    return v if v in (UNKNOWN, NOT_APPLICABLE) else UNKNOWN


def _spell(v: bool | str) -> str:
    return "valid" if v is True else "violated" if v is False else str(v)


def _run_fields(r: RunInfo) -> dict[str, str]:
    return {
        "run": r.label,
        "campaign": r.campaign,
        "run_id": r.run_id,
        "suite": r.suite,
        "scenario": r.scenario,
        "kafka_version": r.kafka_version,
        "client": r.client,
    }


def _counts(v: Mapping[str, Any]) -> dict[str, int]:
    counts = v.get("counts")
    if not isinstance(counts, Mapping):
        return {}
    out = {}
    for k, n in counts.items():
        if isinstance(n, bool):
            continue
        if isinstance(n, int) or (isinstance(n, float) and n.is_integer()):
            out[str(k)] = int(n)
    return out


def _typed(df: pd.DataFrame, columns: Mapping[str, str]) -> pd.DataFrame:
    """The frame with its documented dtypes (so an empty table has them too). Values of
    another type (a verdict.json written by hand, an older harness) become NA in a nullable
    integer column and text in a text column, instead of failing the whole table."""
    for c, t in columns.items():
        if t == "Int64":
            df[c] = df[c].map(_opt_int, na_action="ignore")
        elif t == "str":
            df[c] = df[c].map(lambda v: v if isinstance(v, str) else str(v), na_action="ignore")
    return df.astype({c: t for c, t in columns.items() if not t.startswith("datetime")})


def _history_of(run_dir: Path) -> Path | None:
    return next((run_dir / n for n in HISTORY_FILES if (run_dir / n).exists()), None)


def _history_path(p: Path) -> Path:
    if p.is_dir():
        found = _history_of(p)
        if found is None:
            raise ResultsError(
                f"no history ({' or '.join(HISTORY_FILES)}) in {p}: events are read from one history "
                "(a history file, or the run directory that holds it)"
            )
        return found
    if not p.exists():
        raise ResultsError(f"history {p} does not exist")
    return p


def _event_row(ev: Mapping[str, Any]) -> dict[str, Any]:
    v = ev.get("value")
    d = v if isinstance(v, dict) else {}
    recs = d.get("records")
    if ev.get("f") == "acquire":
        recs = d.get("acquired")
    return {
        "index": ev["index"],
        "time_ns": ev["time_ns"],
        "process": ev["process"],
        "type": ev["type"],
        "f": ev["f"],
        "topic": _opt_str(d.get("topic")),
        "partition": _opt_int(d.get("partition")),
        "offset": _opt_int(d.get("offset")),
        "replica": _opt_int(d.get("replica")),
        "records": len(recs) if isinstance(recs, list) else None,
        "error": _opt_str(ev.get("error")),
        "value": json.dumps(v, separators=(",", ":"), default=str),
    }


def _opt_int(v: Any) -> int | None:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _opt_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None
