"""The report's data: every run's verdicts merged, the compliance matrix, failures with their
context, timelines, fetch shares and trends; computed with one SparkSession.

Verdicts come from two places. ``verdict.json`` holds the Python checks' verdicts, written at
the end of each run. Spark recomputes the checks that must scale (poll-skip, lost-write) over
every history; where both exist they must agree, and a disagreement is a harness bug, shown as
such and turning the cell "unknown" (never silently picking one). A run without verdict.json
(crashed before checking) gets Spark's verdicts for those checks and "unknown" for the rest.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pyarrow.parquet as pq

from highwater.core.checks import CHECKS
from highwater.core.checks.verdict import MAX_EXAMPLES, merge_valid, overall_valid
from highwater.core.findings import (
    Classification,
    Finding,
    RunClass,
    RunIdentity,
    beyond_of,
    classify,
    configured,
    worst_class,
)
from highwater.core.history import rows_to_events
from highwater.core.policy import allowed
from highwater.reports.groups import group_rows
from highwater.reports.layout import RunInfo, ensure_parquet, load_runs
from highwater.reports.power import power_rows
from highwater.reports.releases import release_view
from highwater.reports.run_cache import RunCache
from highwater.reports.spark_session import Progress
from highwater.reports.tiered import tiered_rows

CHECK_ORDER = ["history", *CHECKS]
SPARK_CHECKS = ("poll-skip", "lost-write")
#: count keys that both implementations report, compared for agreement
SHARED_COUNTS = {
    "poll-skip": ("skips", "skipped_offsets", "steps_judged", "steps_unjudged"),
    "lost-write": ("lost", "acknowledged", "acknowledged_judged", "acknowledged_unjudged", "expired"),
}
#: shared counts a run's verdict.json lacks when an older harness judged it, and what that meant
#: (lost-write had no ``expired``: no acknowledged write was excused by retention)
COUNTS_ADDED_LATER = {"expired": 0}
MAX_FAILURE_RUNS_PER_CHECK = 5
CONTEXT_RADIUS = 4
CONTEXT_LIMIT = 24  # events shown around one example; the report says how many more there were


@dataclass
class Options:
    master: str = "local[*]"
    max_timelines: int = 40
    spark_checks: bool = True
    cache_dir: Path | None = None
    use_cache: bool = True  # False: recompute every run's Spark results (and refresh the cache)
    #: the known findings each run is classed against (None: ``core.findings.configured()``)
    findings: tuple[Finding, ...] | None = None


#: runs with more events than this plot end-to-end latency from a 1-in-16 hash sample of values
LATENCY_FULL_UP_TO = 50_000


def latency_sample(events: int) -> int:
    """Latency joins every polled value with its send: exact for ordinary runs, sampled (both
    sides by the same hash of the value, so kept values still match) for very long ones."""
    return 1 if events <= LATENCY_FULL_UP_TO else 16


@dataclass
class ReportData:
    """Everything the renderers need, as plain JSON-ready values."""

    generated_at: str
    results_dir: str
    master: str
    checks: list[str]
    runs: list[dict[str, Any]]
    matrix: list[dict[str, Any]]
    columns: list[dict[str, str]]
    failures: list[dict[str, Any]]
    timelines: dict[str, dict[str, Any]]
    fetch: list[dict[str, Any]]
    trends: list[dict[str, Any]]
    disagreements: list[dict[str, Any]]
    errors: list[str] = field(default_factory=list)
    releases: dict[str, Any] = field(default_factory=dict)  # reports.releases.release_view
    groups: list[dict[str, Any]] = field(default_factory=list)  # reports.groups.group_rows
    power: list[dict[str, Any]] = field(default_factory=list)  # reports.power.power_rows
    tiered: list[dict[str, Any]] = field(default_factory=list)  # reports.tiered.tiered_rows

    @property
    def valid(self) -> bool | str:
        return merge_valid(r["valid"] for r in self.runs) if self.runs else "unknown"

    @property
    def run_class(self) -> RunClass:
        """The worst of the runs' classes (``core.findings``): ``violated`` only when some run
        has a violation no known finding explains."""
        return worst_class(run_class_of(r) for r in self.runs)

    def findings_seen(self, key: str) -> dict[str, int]:
        """Finding id -> how many runs it explained (``key`` "known") or went missing in
        ("fixed"), in id order."""
        n: dict[str, int] = defaultdict(int)
        for r in self.runs:
            found = run_findings_of(r)
            ids = found["fixed"] if key == "fixed" else {f for fs in found["known"].values() for f in fs}
            for f in ids:
                n[f] += 1
        return dict(sorted(n.items(), key=lambda kv: _id_order(kv[0])))


def run_class_of(r: dict[str, Any]) -> str:
    """A run row's class; a row built without one (an older caller) is classed by its verdict
    alone, as if no finding were known."""
    c = r.get("class")
    if c is not None:
        return str(c)
    v = r.get("valid")
    return (
        "valid" if v is True else "violated" if v is False else "not-applicable" if v == "not-applicable" else "unknown"
    )


def run_findings_of(r: dict[str, Any]) -> dict[str, Any]:
    """A run row's findings (``Classification.to_json``), empty when it has none."""
    return r.get("findings") or Classification(cast(RunClass, run_class_of(r))).to_json()


def _id_order(fid: str) -> tuple[str, int]:
    prefix, _, number = fid.rpartition("-")
    return (prefix, int(number)) if number.isdigit() else (fid, 0)


def _policy(check: str, v: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """Apply the policy table to a Spark verdict, as ``core.policy.apply_policy`` does."""
    if v["valid"] is False:
        why = allowed(check, config)
        if why:
            return {**v, "valid": True, "allowed": True, "notes": [*v["notes"], f"allowed: {why}"]}
    return v


def merge_run_verdicts(
    run: RunInfo, spark: dict[str, Any] | None, disagreements: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """One verdict per check for a run (see the module doc for the rules)."""
    py = {v["check"]: v for v in (run.verdicts or [])}
    out: dict[str, dict[str, Any]] = {}
    for check in CHECK_ORDER:
        v = py.get(check)
        s = spark.get(check) if spark else None
        if s is not None:
            s = _policy(check, s.to_json(), run.config)
        if v is not None and s is not None:
            py_counts = {**COUNTS_ADDED_LATER, **v["counts"]}
            diff = [k for k in SHARED_COUNTS[check] if py_counts.get(k) != s["counts"].get(k)]
            if (
                not diff
                and _example_sets(v) != _example_sets(s)
                and s["counts"].get(SHARED_COUNTS[check][0], 0) <= MAX_EXAMPLES
            ):
                diff.append("examples")  # all anomalies fit in the examples: same events expected
            # not-applicable: the history lacks the check's inputs; Spark must not find a violation
            if (v["valid"] != s["valid"] or diff) and not (v["valid"] == "not-applicable" and s["valid"] is not False):
                disagreements.append(
                    {"run": run.label, "check": check, "python": v["valid"], "spark": s["valid"], "counts_differ": diff}
                )
                v = {
                    **v,
                    "valid": merge_valid([v["valid"], "unknown"]),
                    "notes": [*v.get("notes", []), "Spark and Python checks disagree: harness bug"],
                }
            out[check] = {**v, "source": "python+spark"}
        elif v is not None:
            out[check] = {**v, "source": "python"}
        elif s is not None:
            out[check] = s
        else:
            why = "no verdict.json" if run.verdicts is None else "check missing from verdict.json"
            out[check] = {
                "check": check,
                "valid": "unknown",
                "counts": {},
                "examples": [],
                "notes": [why],
                "allowed": False,
                "source": "none",
            }
    if run.problems:
        h = out["history"]
        out["history"] = {
            **h,
            "valid": merge_valid([h["valid"], "unknown"]),
            "notes": [*h.get("notes", []), *run.problems],
        }
    return out


def _example_sets(v: dict[str, Any]) -> set[tuple[int, ...]]:
    # sets: Python lists an event once even when both records of a step are in one poll
    return {tuple(sorted(set(_example_indices(ex)))) for ex in v.get("examples", [])}


def build(results: Path, opts: Options, progress: Progress) -> ReportData:
    """Aggregate every run under ``results``. Starts and always stops one SparkSession."""
    from highwater.reports.spark_session import spark_session

    runs = load_runs(results)
    progress.say(f"found {len(runs)} run(s) under {results}")
    if not runs:
        raise FileNotFoundError(f"no runs (history.jsonl / verdict.json / run.json) under {results}")
    cache = opts.cache_dir or (results / ".parquet-cache")
    with progress.step("histories as Parquet"):
        for i, _ in enumerate(ensure_parquet(runs, cache), 1):
            if i % 100 == 0:
                progress.say(f"  {i}/{len(runs)} runs ready")
    with_hist = [r for r in runs if r.parquet is not None]
    disagreements: list[dict[str, Any]] = []
    rc = RunCache(cache / "runs", enabled=opts.use_cache)
    with spark_session(opts.master) as spark, contextlib.ExitStack() as stack:
        from highwater.reports import spark_checks, timelines

        spark_v, fetch_raw, need = _cached_run_results(rc, with_hist, opts)
        progress.say(f"Spark results of {len(with_hist) - len(need)}/{len(with_hist)} run(s) reused from {rc.root}")
        links = stack.enter_context(spark_checks.RunLinks(cache, with_hist)) if with_hist else None
        if need and links is not None:
            what = "poll-skip, lost-write and fetch shares" if opts.spark_checks else "fetch shares"
            with progress.step(f"{what} over {len(need)} histories", spark):
                ev = spark_checks.load_events(spark, links, [r.key for r in need])
                fresh = spark_checks.run_spark_passes(ev, need, checks=opts.spark_checks)
            for r in need:
                if opts.spark_checks:
                    spark_v[r.key] = fresh.verdicts[r.key]
                    rc.put(r, "checks", {c: asdict(v) for c, v in fresh.verdicts[r.key].items()})
                fetch_raw += [{"run": r.key, **x} for x in fresh.fetch[r.key]]
                rc.put(r, "fetch", fresh.fetch[r.key])
        run_rows = []
        findings = configured() if opts.findings is None else opts.findings
        for r in runs:
            verdicts = merge_run_verdicts(r, spark_v.get(r.key), disagreements)
            run_rows.append(_run_row(r, verdicts, findings))
        with progress.step("compliance matrix", spark):
            matrix, columns = _matrix(spark, run_rows)
        chosen = _pick_timeline_runs(runs, run_rows, opts.max_timelines)
        tls: dict[str, dict[str, Any]] = {}
        todo: dict[int, list[RunInfo]] = defaultdict(list)  # latency sample -> runs to compute
        for r in chosen:
            tl = rc.get(r, "timeline")
            if tl is not None:
                tls[r.label] = tl
            else:
                todo[latency_sample(pq.ParquetFile(r.parquet).metadata.num_rows)].append(r)
        if todo and links is not None:
            n = sum(len(v) for v in todo.values())
            with progress.step(f"timelines of {n} run(s) ({len(chosen) - n} cached)", spark):
                for sample, group in sorted(todo.items()):
                    ev_sel = spark_checks.load_events(spark, links, [r.key for r in group])
                    by_key = {r.key: r for r in group}
                    for k, tl_obj in timelines.timelines(ev_sel, sample).items():
                        tls[by_key[k].label] = tl_obj.to_json()
                        rc.put(by_key[k], "timeline", tls[by_key[k].label])
        tls = {r.label: tls[r.label] for r in chosen if r.label in tls}  # failing runs first
    by_key_run = {r.key: r for r in runs}
    with progress.step("failure context"):
        failures = _failures(runs, run_rows)
    return ReportData(
        generated_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        results_dir=str(results),
        master=opts.master,
        checks=CHECK_ORDER,
        runs=run_rows,
        matrix=matrix,
        columns=columns,
        failures=failures,
        timelines=tls,
        fetch=_fetch(fetch_raw, by_key_run),
        trends=_trends(run_rows),
        disagreements=disagreements,
        releases=release_view(run_rows),
        groups=group_rows(runs),
        power=power_rows(runs),
        tiered=tiered_rows(runs),
    )


def _cached_run_results(
    rc: RunCache, runs: list[RunInfo], opts: Options
) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]], list[RunInfo]]:
    """What the cache already holds (Spark verdicts per run key, fetch rows) and which runs
    must go through Spark again: those missing any part (one pass computes all of a run's)."""
    from highwater.reports.spark_checks import SparkVerdict

    spark_v: dict[int, dict[str, Any]] = {}
    fetch_raw: list[dict[str, Any]] = []
    need: list[RunInfo] = []
    for r in runs:
        c = rc.get(r, "checks") if opts.spark_checks else {}
        f = rc.get(r, "fetch")
        if not isinstance(c, dict) or not isinstance(f, list):
            need.append(r)
            continue
        if opts.spark_checks:
            spark_v[r.key] = {k: SparkVerdict(**v) for k, v in c.items()}
        fetch_raw += [{"run": r.key, **x} for x in f]
    return spark_v, fetch_raw, need


def _run_row(r: RunInfo, verdicts: dict[str, dict[str, Any]], findings: tuple[Finding, ...] = ()) -> dict[str, Any]:
    """A run as the renderers read it; its class is judged here, after Spark's verdicts and the
    policy, against the findings known now (a run judged before a finding was recorded is
    known once it is)."""
    c = classify(
        findings,
        RunIdentity.of(r.suite, r.scenario, r.client, r.kafka_version),
        {check: v["valid"] for check, v in verdicts.items()},
        beyond_of(r.manifest.findings if r.manifest is not None else None),
    )
    path = r.config.get("upgrade_path")
    return {
        "key": r.key,
        "label": r.label,
        "campaign": r.campaign,
        "run_id": r.run_id,
        "suite": r.suite,
        "scenario": r.scenario,
        # a run rolled from one release to another is the path's, in every table (the matrix's
        # column, across releases); its findings are matched on the release it started on, above
        "kafka_version": path if isinstance(path, str) and path else r.kafka_version,
        "client": r.client,
        "config": r.config,
        "seed": r.seed,
        "repro": r.repro,
        "started_at": r.started_at,
        "schedule": r.schedule,
        "nemesis": r.nemesis,
        "racks": r.racks,
        "client_bytes": r.client_bytes,
        "problems": r.problems,
        "path": str(r.path),
        "valid": overall_valid((c, v["valid"]) for c, v in verdicts.items()),
        "class": c.run_class,
        "findings": c.to_json(),
        "verdicts": verdicts,
    }


def _matrix(spark: Any, run_rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """check × suite/scenario × Kafka version × client: how many runs passed, failed, were
    unknown or allowed an anomaly; merged validity per cell (false > unknown > true)."""
    from pyspark.sql import functions as F

    rows = [
        (
            r["suite"],
            r["scenario"],
            r["kafka_version"],
            r["client"],
            check,
            "false" if v["valid"] is False else v["valid"] if v["valid"] in ("unknown", "not-applicable") else "true",
            bool(v.get("allowed")),
        )
        for r in run_rows
        for check, v in r["verdicts"].items()
    ]
    df = spark.createDataFrame(
        rows,
        "suite string, scenario string, kafka_version string, "
        "client string, check string, valid string, allowed boolean",
    )
    agg = (
        df.groupBy("suite", "scenario", "kafka_version", "client", "check")
        .agg(
            F.count(F.lit(1)).alias("runs"),
            F.sum((F.col("valid") == "true").cast("int")).alias("passed"),
            F.sum((F.col("valid") == "false").cast("int")).alias("failed"),
            F.sum((F.col("valid") == "unknown").cast("int")).alias("unknown"),
            F.sum((F.col("valid") == "not-applicable").cast("int")).alias("not_applicable"),
            F.sum(F.col("allowed").cast("int")).alias("allowed"),
        )
        .collect()
    )
    matrix = []
    for a in agg:
        d = a.asDict()
        d["valid"] = (
            False
            if d["failed"]
            else "unknown"
            if d["unknown"]
            else "not-applicable"
            if d["not_applicable"] == d["runs"]
            else True
        )
        matrix.append(d)
    order = {c: i for i, c in enumerate(CHECK_ORDER)}
    matrix.sort(key=lambda d: (order.get(d["check"], 99), d["suite"], d["scenario"], d["kafka_version"], d["client"]))
    cols = sorted({(d["suite"], d["scenario"], d["kafka_version"], d["client"]) for d in matrix})
    columns = [{"suite": s, "scenario": sc, "kafka_version": k, "client": c} for s, sc, k, c in cols]
    return matrix, columns


def _pick_timeline_runs(runs: list[RunInfo], rows: list[dict[str, Any]], limit: int) -> list[RunInfo]:
    """Failing runs first, then unknown, then passing ones, up to ``limit``."""
    rank = {False: 0, "unknown": 1, True: 2}
    order = sorted(zip(runs, rows), key=lambda x: (rank[x[1]["valid"]], x[0].label))
    return [r for r, _ in order if r.parquet is not None][:limit]


def context_events(
    parquet: Path, indices: list[int], radius: int = CONTEXT_RADIUS, table: Any = None
) -> list[dict[str, Any]]:
    """The events around the given event indices (read with a row filter: big files stay on
    disk), each marked ``involved`` when it is one of them; every one (the report shows the
    first ``CONTEXT_LIMIT`` and counts the rest). ``table``: rows already read
    (``context_table``) that include them."""
    if not indices:
        return []
    spans = sorted({(max(i - radius, 0), i + radius) for i in indices})
    if table is None:
        table = context_table(parquet, [indices], radius)
    lo, hi = spans[0][0], spans[-1][1]
    import pyarrow.compute as pc

    table = table.filter(pc.and_(pc.greater_equal(table["index"], lo), pc.less_equal(table["index"], hi)))
    events = [e for e in rows_to_events(table) if any(a <= e["index"] <= b for a, b in spans)]
    want = set(indices)
    return [{**e, "involved": e["index"] in want} for e in events]


def context_table(parquet: Path, groups: list[list[int]], radius: int = CONTEXT_RADIUS) -> Any:
    """One read of a history for the context of several examples: only the rows near them."""
    wanted = sorted({j for idx in groups for i in idx for j in range(max(i - radius, 0), i + radius + 1)})
    return pq.read_table(parquet, filters=[("index", "in", wanted)]) if wanted else None


def _example_indices(ex: dict[str, Any]) -> list[int]:
    if "event_indices" in ex:
        return [int(i) for i in ex["event_indices"]]
    return [int(e["index"]) for e in ex.get("events", []) if isinstance(e, dict) and "index" in e]


def _failures(runs: list[RunInfo], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each check, the first few failing runs, each example with the events around it."""
    per_check: dict[str, int] = defaultdict(int)
    tables: dict[int, Any] = {}
    out = []
    for r, row in zip(runs, rows):
        for check, v in row["verdicts"].items():
            if v["valid"] is not False:
                continue
            per_check[check] += 1
            if per_check[check] > MAX_FAILURE_RUNS_PER_CHECK:
                continue
            examples = []
            if r.parquet is not None and r.key not in tables:  # one read per run, all checks
                tables[r.key] = context_table(
                    r.parquet,
                    [
                        _example_indices(ex)
                        for w in row["verdicts"].values()
                        if w["valid"] is False
                        for ex in w.get("examples", [])[:3]
                    ],
                )
            for ex in v.get("examples", [])[:3]:
                idx = _example_indices(ex)
                around = (
                    context_events(r.parquet, idx, table=tables[r.key])
                    if r.parquet is not None and tables[r.key] is not None
                    else []
                )
                brief = {k: x for k, x in ex.items() if k not in ("events", "event_indices")}
                examples.append(
                    {
                        "what": brief,
                        "indices": idx,
                        "context": around[:CONTEXT_LIMIT],
                        "context_more": max(0, len(around) - CONTEXT_LIMIT),  # said in the report
                    }
                )
            out.append(
                {
                    "run": row["label"],
                    "check": check,
                    "counts": v.get("counts", {}),
                    "notes": v.get("notes", []),
                    "repro": row["repro"],
                    "examples": examples,
                }
            )
    for f in out:
        f["runs_failing_check"] = per_check[f["check"]]
    return out


def _fetch(raw: list[dict[str, Any]], runs: dict[int, RunInfo]) -> list[dict[str, Any]]:
    """Per consumer: share of records served by a replica in its own rack (KIP-392), by the
    broker it was served by, and records crossing racks; plus Toxiproxy's bytes per rack."""
    per: dict[tuple[int, str], dict[int | None, int]] = defaultdict(dict)
    for r in raw:
        per[(r["run"], r["process"])][r["replica"]] = int(r["count"])
    out = []
    for (key, proc), counts in sorted(per.items(), key=lambda x: (runs[x[0][0]].label, x[0][1])):
        run = runs[key]
        brokers = {str(k): v for k, v in (run.racks.get("brokers") or {}).items()}
        rack = (run.racks.get("clients") or {}).get(proc)
        total = sum(counts.values())
        known = {b: n for b, n in counts.items() if b is not None}
        local = sum(n for b, n in known.items() if rack and brokers.get(str(b)) == rack)
        cross = sum(n for b, n in known.items() if rack and brokers.get(str(b)) not in (None, rack))
        out.append(
            {
                "run": run.label,
                "consumer": proc,
                "rack": rack,
                "records": total,
                "by_replica": {str(b): n for b, n in sorted(known.items())},
                "unknown_replica": counts.get(None, 0),
                "local_share": (local / total) if rack and total else None,
                "cross_rack_records": cross if rack else None,
                "cross_rack_bytes": _cross_bytes(run, rack, brokers),
            }
        )
    return out


def _cross_bytes(run: RunInfo, rack: str | None, brokers: dict[str, str]) -> int | None:
    cb = run.client_bytes
    if not rack or not isinstance(cb, dict) or not isinstance(cb.get(rack), dict):
        return None
    return sum(int(n) for b, n in cb[rack].items() if brokers.get(str(b)) not in (None, rack))


def _trends(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per campaign (ordered by when its first run started): runs, and per check how many
    runs failed / were unknown; the report plots the failure rate over campaigns."""
    camp: dict[str, dict[str, Any]] = {}
    for r in rows:
        c = camp.setdefault(
            r["campaign"],
            {
                "campaign": r["campaign"],
                "started_at": r["started_at"],
                "runs": 0,
                "failed_runs": 0,
                "unknown_runs": 0,
                "checks": defaultdict(lambda: {"failed": 0, "unknown": 0}),
            },
        )
        c["started_at"] = min(c["started_at"], r["started_at"] or c["started_at"])
        c["runs"] += 1
        c["failed_runs"] += r["valid"] is False
        c["unknown_runs"] += r["valid"] == "unknown"
        for check, v in r["verdicts"].items():
            if v["valid"] is False:
                c["checks"][check]["failed"] += 1
            elif v["valid"] == "unknown":
                c["checks"][check]["unknown"] += 1
    out = sorted(camp.values(), key=lambda c: (c["started_at"], c["campaign"]))
    for c in out:
        c["checks"] = dict(c["checks"])
    return out
