"""``summary.json``: the machine-readable verdict of a report.

Versioned (``format``) so CI scripts can rely on it. A check's validity (per run, and per
matrix cell) is four-valued: ``true`` / ``false`` / ``"unknown"`` (its inputs are in the history
but could not settle it) / ``"not-applicable"`` (the history does not carry its inputs at all,
e.g. no racks in the header or no ``meta`` event: the check did not run; a cell is
not-applicable only when every run of it is). Not-applicable never counts as passing nor as
failing. The validity of a run and of the whole report (``valid``, ``exit_code``) stays
three-valued: not-applicable checks are ignored, and a run where no check applied is
``"unknown"``; a run or cell that could not be judged is never reported as passing.
``attribution`` has one entry per (suite, scenario, Kafka version): the client labels that ran
it and whether a violation lies with the broker or with clients (``reports.attribution``:
``verdict`` in broker / clients / none / single-client / undecided, the blamed ``clients``, the
``undecided`` ones and the per-check detail).
Per run it lists each check's validity, counts and source (python, spark or both);
examples are left to the HTML report and JUnit. ``fetch`` has one entry per (run, consumer):
polled records by serving replica, the share served in the consumer's own rack (KIP-392) and
the records and bytes that crossed racks. Per run, ``stalls`` carries what the progress and
follower-fetch verdicts report about consumer stalls: ``longest_ms`` per check
(``counts["longest_stall_ms"]``) and ``longest``, the longest stall per consumer and partition
with its fault window (index, kind, phase ``fault`` or ``after-heal``) and the bound it was judged
against (one row for both checks when they agree). The helpers here are shared with the HTML
report: ``stall_rows``, ``fault_rows`` (the run's nemesis as at/kind/target/duration rows),
``config_key`` (the header config without the derived time bounds) and ``run_bounds``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from highwater.core.checks.bounds import BOUND_USERS, resolve
from highwater.core.checks.verdict import NOT_APPLICABLE
from highwater.reports.aggregate import ReportData, run_class_of, run_findings_of
from highwater.reports.attribution import attribute
from highwater.reports.latency import latency_rows
from highwater.reports.releases import changes

FORMAT = "highwater.report-summary/2"  # 2: run classes against the known findings
#: the checks whose verdicts carry ``longest_stall_ms`` and ``longest-stall`` examples
STALL_CHECKS = ("progress", "follower-fetch")
#: header config keys that are derived time bounds, not configuration (core.checks.bounds)
BOUND_KEYS = frozenset({"bounds", "bound_settings", *BOUND_USERS})
PHASE_ORDER = {"fault": 0, "after-heal": 1}
#: a report's class (``core.findings``) -> its exit code (the CLI's codes, highwater/exit_codes.py
#: and docs/cli.md, spelled out: the reports floor does not import the CLI's): only a new
#: violation fails it
CLASS_EXIT_CODES = {"valid": 0, "known": 0, "fixed?": 0, "not-applicable": 0, "violated": 1, "unknown": 3}


def class_exit_code(run_class: str) -> int:
    """0 when nothing is new (valid, known findings only, a finding that did not show), 1 on a
    new violation, 3 unknown (nothing new, but some run could not be judged)."""
    return CLASS_EXIT_CODES.get(run_class, 3)


def findings_line(data: ReportData) -> str:
    """One line of the classes: ``no new violation; 3 known: HW-10, HW-12, HW-13; 0 fixed``."""
    new = sum(run_class_of(r) == "violated" for r in data.runs)
    known, fixed = data.findings_seen("known"), data.findings_seen("fixed")
    head = "no new violation" if not new else f"{new} run(s) with a new violation"
    return (
        f"{head}; {len(known)} known{': ' + ', '.join(known) if known else ''}; "
        f"{len(fixed)} fixed?{': ' + ', '.join(fixed) if fixed else ''}"
    )


def summary(data: ReportData) -> dict[str, Any]:
    runs = data.runs
    return {
        "format": FORMAT,
        "generated_at": data.generated_at,
        "results_dir": data.results_dir,
        "valid": data.valid,
        "class": data.run_class,
        "exit_code": class_exit_code(data.run_class),
        "totals": {
            "runs": len(runs),
            "valid": sum(run_class_of(r) in ("valid", "not-applicable") for r in runs),
            "known": sum(run_class_of(r) == "known" for r in runs),
            "violated": sum(run_class_of(r) == "violated" for r in runs),
            "fixed?": sum(run_class_of(r) == "fixed?" for r in runs),
            "unknown": sum(run_class_of(r) == "unknown" for r in runs),
        },
        "findings": {"known": data.findings_seen("known"), "fixed": data.findings_seen("fixed")},
        "line": findings_line(data),
        "checks": data.checks,
        "matrix": data.matrix,
        "attribution": attribution_rows(data.matrix),
        "releases": data.releases,
        "release_changes": changes(data.releases) if data.releases else [],
        "latency": latency_rows(runs),
        "runs": [
            {
                "run": r["label"],
                "campaign": r["campaign"],
                "run_id": r["run_id"],
                "suite": r["suite"],
                "scenario": r["scenario"],
                "kafka_version": r["kafka_version"],
                "client": r["client"],
                "valid": r["valid"],
                "class": run_class_of(r),
                "findings": run_findings_of(r),
                "repro": r["repro"],
                "failed_checks": [c for c, v in r["verdicts"].items() if v["valid"] is False],
                "unknown_checks": [c for c, v in r["verdicts"].items() if v["valid"] == "unknown"],
                "not_applicable_checks": [c for c, v in r["verdicts"].items() if v["valid"] == NOT_APPLICABLE],
                "allowed_checks": [c for c, v in r["verdicts"].items() if v.get("allowed")],
                "problems": r["problems"],
                "checks": {
                    c: {
                        "valid": v["valid"],
                        "allowed": bool(v.get("allowed")),
                        "source": v.get("source"),
                        "counts": v.get("counts", {}),
                    }
                    for c, v in r["verdicts"].items()
                },
                "stalls": {"longest_ms": longest_stall_ms(r), "longest": stall_rows(r)},
            }
            for r in runs
        ],
        "fetch": data.fetch,
        "trends": [{k: v for k, v in t.items()} for t in data.trends],
        "spark_python_disagreements": data.disagreements,
        "errors": data.errors,
    }


def attribution_rows(matrix: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (suite, scenario, Kafka version): the client labels that ran it and ``attribution``
    (``reports.attribution.attribute``: ``verdict``, ``clients``, ``undecided``, ``checks``)."""
    return [
        {
            "suite": s,
            "scenario": sc,
            "kafka_version": k,
            "clients": a["labels"],
            "attribution": {x: a[x] for x in ("verdict", "clients", "undecided", "checks")},
        }
        for (s, sc, k), a in attribute(matrix).items()
    ]


def longest_stall_ms(run: Mapping[str, Any]) -> dict[str, int]:
    """``counts["longest_stall_ms"]`` of each stall check that reports it."""
    out = {}
    for c in STALL_CHECKS:
        v = (run.get("verdicts") or {}).get(c) or {}
        ms = (v.get("counts") or {}).get("longest_stall_ms")
        if isinstance(ms, (int, float)) and not isinstance(ms, bool):
            out[c] = int(ms)
    return out


def stall_rows(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``longest-stall`` examples of a run's progress and follower-fetch verdicts, one row
    per consumer, partition, window, phase and bound (``checks``: which verdicts reported it),
    ordered by consumer, topic, partition, window and phase."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for c in STALL_CHECKS:
        v = (run.get("verdicts") or {}).get(c) or {}
        for ex in v.get("examples") or []:
            if not isinstance(ex, dict) or ex.get("kind") != "longest-stall":
                continue
            w = as_dict(ex.get("window"))
            row = {
                "consumer": ex.get("consumer"),
                "topic": ex.get("topic"),
                "partition": ex.get("partition"),
                "window": w.get("index"),
                "fault_kind": w.get("kind"),
                "phase": w.get("phase"),
                "window_start_ns": w.get("start_ns"),
                "window_end_ns": w.get("end_ns"),
                "stall_ms": ex.get("stall_ms"),
                "bound_ms": ex.get("bound_ms"),
                "from_time_ns": ex.get("from_time_ns"),
                "to_time_ns": ex.get("to_time_ns"),
            }
            sm, bm = row["stall_ms"], row["bound_ms"]
            row["over_bound"] = isinstance(sm, (int, float)) and isinstance(bm, (int, float)) and sm > bm
            k = tuple(
                str(row[x]) for x in ("consumer", "topic", "partition", "window", "phase", "stall_ms", "bound_ms")
            )
            rows.setdefault(k, {**row, "checks": []})["checks"].append(c)
    return sorted(
        rows.values(),
        key=lambda r: (
            str(r["consumer"]),
            str(r["topic"]),
            _num(r["partition"]),
            _num(r["window"]),
            PHASE_ORDER.get(str(r["phase"]), 9),
        ),
    )


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("inf")


def fault_rows(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's faults as planned (nemesis record, else the schedule): ``at_s`` (seconds after
    the nemesis started), ``kind``, ``target`` (with ``peer`` when the fault names one),
    ``duration_s`` and the fault in CLI syntax. A scripted step starts after the previous
    step's heal plus its calm."""
    nem = as_dict(run.get("nemesis"))
    out: list[dict[str, Any]] = []
    if nem.get("kind") == "scripted" and isinstance(nem.get("steps"), list):
        t = 0.0
        for st in nem["steps"]:
            if not isinstance(st, dict):
                continue
            t += _f(st.get("after"))
            kind, target = _parse_cli(str(st.get("fault", "")))
            out.append(
                {
                    "at_s": round(t, 3),
                    "kind": kind,
                    "target": target,
                    "duration_s": _f(st.get("duration")),
                    "cli": str(st.get("fault", "")),
                }
            )
            t += _f(st.get("duration"))
        return out
    sched = as_dict(nem.get("schedule")) or as_dict(run.get("schedule"))
    for f in sched.get("faults") or []:
        if not isinstance(f, dict):
            continue
        cli = str(f.get("cli") or "")
        kind, target = _parse_cli(cli)
        spec = as_dict(f.get("fault"))
        if spec.get("kind"):
            kind = str(spec["kind"])
        if spec.get("target") is not None:
            target = str(spec["target"]) + (f" \u2194 {spec['peer']}" if spec.get("peer") else "")
        out.append(
            {
                "at_s": _f(f.get("start")),
                "kind": kind,
                "target": target,
                "duration_s": _f(f.get("duration")),
                "cli": cli,
            }
        )
    return sorted(out, key=lambda x: x["at_s"])


def as_dict(v: Any) -> dict[str, Any]:
    """``v`` when it is a JSON object, else an empty one (for lenient reading of run data)."""
    return v if isinstance(v, dict) else {}


def _f(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _parse_cli(cli: str) -> tuple[str, str]:
    """Kind and target (\u2194 peer) of a fault in CLI syntax (``kill --target broker:3``)."""
    try:
        words = shlex.split(cli)
    except ValueError:
        words = cli.split()
    opts: dict[str, str] = {}
    for a, b in zip(words, words[1:]):
        if a.startswith("--"):
            opts[a[2:]] = b
    target = opts.get("target", "")
    if opts.get("peer"):
        target += f" \u2194 {opts['peer']}"
    return (words[0] if words else "?"), target


def config_key(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration without the derived time bounds (``bounds`` with its formulas,
    ``bound_settings`` and each bound's flat ``*_ms`` key), which vary per scenario."""
    return {k: v for k, v in config.items() if k not in BOUND_KEYS}


def run_bounds(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The time bounds the checks use for a run's config (``core.checks.bounds.resolve``):
    ``{name: {"ms", "formula", "computed", "given"}}``. The run writes each derived bound flat
    and in ``bounds`` with its formula; a flat value that matches ``bounds`` keeps the formula
    (``given`` only for a bound stated without one, or differently from it)."""
    try:
        resolved = resolve(config)
    except (TypeError, ValueError, OverflowError):  # a malformed config must not break the report
        return {}
    recorded = as_dict(config.get("bounds"))
    out = {}
    for n, b in resolved.items():
        rec = recorded.get(n)
        if b.given and isinstance(rec, Mapping) and rec.get("ms") == b.ms and rec.get("formula"):
            out[n] = {
                "ms": b.ms,
                "formula": str(rec["formula"]),
                "computed": str(rec.get("computed", b.ms)),
                "given": False,
            }
        else:
            out[n] = {**b.to_json(), "given": b.given}
    return out


def write_summary(data: ReportData, path: Path) -> dict[str, Any]:
    s = summary(data)
    write_summary_json(s, path)
    return s


def write_summary_json(s: Mapping[str, Any], path: Path) -> None:
    """A summary (``summary``'s, perhaps with ``highwater report --baseline``'s ``baseline``
    added) written as ``summary.json`` is."""
    path.write_text(json.dumps(s, indent=2, default=str) + "\n", encoding="utf-8")
