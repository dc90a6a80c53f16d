"""The self-contained HTML compliance report: one file, inline CSS/JS/SVG, no network.

It must open from a CI artifact store or an air-gapped laptop, so nothing is fetched: no CDN,
no fonts, no favicon (a ``data:`` icon stops the browser from asking for /favicon.ico). Sections:
verdict matrix (with a row that attributes each suite/scenario and Kafka version's violations to
the broker or to clients, ``reports.attribution``), runs, failures with the events around each
anomaly and the repro command, per-run timelines with fault windows, follower fetching, trends
across campaigns, versions and configuration, and the hunts (``reports.hunts``: each shrunk
failure's original and shrunk fault schedules side by side). Each run's section (under
Timelines) also lists its nemesis schedule, the longest consumer stall per consumer and partition during each fault
and after each heal with the bound that judged it, and the time bounds of its config (which the
configuration table leaves out of its grouping).

The markup lives in Jinja2 templates (``reports/templates/*.html``, one per section, included by
``report.html``), rendered with autoescaping: every text that comes from a history, a manifest
or a verdict is escaped by the template engine. The functions here only shape the report data
into plain values for the templates; the one piece of markup built in Python is the SVG charts
(``reports.svg``, which escapes every text it puts in), passed to the templates as ``Markup``.
The stylesheet and the script (``report.css``, ``report.js``) are inlined, so the report stays
one file.

Links to other files (a failing run's directory, a run's ``run.json`` or ``verdict.json``, the
full follower-fetch table) are relative to the directory the report is written in, so the
report and the results can move together. Nothing is cut silently: where a table or a list
shows only part of its rows, the report says how many it shows of how many, and where the rest
are (``write_html`` writes the full follower-fetch table beside the report as CSV).
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined, Template, select_autoescape
from markupsafe import Markup

from highwater.core.checks.verdict import NOT_APPLICABLE
from highwater.core.run_dir import RunDir
from highwater.reports.aggregate import ReportData, run_class_of, run_findings_of
from highwater.reports.attribution import BROKER, CLIENTS, NONE, SINGLE, attribute, describe
from highwater.reports.baseline import Comparison
from highwater.reports.hunts import HuntFault, ScheduleSide, ShrunkFailure, load_hunts
from highwater.reports.latency import latency_rows
from highwater.reports.releases import changes
from highwater.reports.summary import (
    as_dict,
    config_key,
    fault_rows,
    findings_line,
    longest_stall_ms,
    run_bounds,
    stall_rows,
)
from highwater.reports.svg import line_chart

#: runs without a plotted timeline still get a details section (schedule, stalls), up to this many
MAX_DETAIL_ONLY_RUNS = 200
#: rows of the follower-fetch table shown in the page; all of them go to ``FETCH_CSV``
MAX_FETCH_ROWS = 2000
#: the full follower-fetch table, written beside the report when the page shows only part of it
FETCH_CSV = "follower-fetch.csv"
#: faults of a run's schedule listed in its section (all are in its run.json)
MAX_SCHEDULE_ROWS = 100
#: distinct notes of a not-applicable matrix cell quoted in its tooltip
MAX_NA_NOTES = 3
#: run labels named per group of time bounds in the configuration section
MAX_BOUND_LABELS = 5

WORD = {True: "valid", False: "violated", "unknown": "unknown", "not-applicable": "not applicable"}
MARK = {True: "\u2713", False: "\u2717", "unknown": "?", "not-applicable": "n/a"}
ATTR_CLASS = {BROKER: "v-false", CLIENTS: "v-allowed", NONE: "v-true", SINGLE: "v-na"}


@cache
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("highwater.reports", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(cls=_cls, vkey=_valid_key, word=WORD.__getitem__)
    env.filters["n"] = _n
    return env


def _template(name: str) -> Template:
    return _env().get_template(name)


def _asset(name: str) -> Markup:
    """A stylesheet or script of the templates directory, inlined as is (our own file, not
    data: never escaped, never parsed as a template)."""
    env = _env()
    assert env.loader is not None
    return Markup(env.loader.get_source(env, name)[0].strip("\n"))


def _cls(valid: Any, allowed: bool = False) -> str:
    if valid is True and allowed:
        return "v-allowed"
    if valid == NOT_APPLICABLE:
        return "v-na"
    return {True: "v-true", False: "v-false"}.get(valid, "v-unknown")


def _valid_key(v: Any) -> str:
    if v == NOT_APPLICABLE:
        return NOT_APPLICABLE
    return "true" if v is True else "false" if v is False else "unknown"


def _n(v: int) -> str:
    """A count with thousands separators (2,000)."""
    return f"{v:,}"


def _j(v: Any, limit: int = 300) -> dict[str, Any]:
    """Compact JSON of a value for a ``<code>``, shortened to ``limit`` characters with an
    ellipsis; ``full``: the full length when shortened (the template says so on hover)."""
    s = json.dumps(v, default=str, separators=(",", ":"))
    if len(s) <= limit:
        return {"text": s, "full": None}
    return {"text": s[:limit] + "\u2026", "full": len(s)}


def href(path: str | os.PathLike[str], base: Path) -> str | None:
    """A link to ``path`` relative to ``base`` (the report's directory), URL-quoted; never an
    absolute ``file://`` URL. None when there is no relative path (another drive)."""
    try:
        rel = os.path.relpath(Path(path).resolve(), base.resolve())
    except ValueError:
        return None
    return quote(Path(rel).as_posix())


def render(data: ReportData, base: Path | None = None, since: Comparison | None = None) -> str:
    """The report as one HTML page. ``base``: the directory it will be written in, which its
    links to other files are relative to (default: the current directory); ``since``: what
    changed since a baseline (``highwater report --baseline``), a section of its own."""
    base = Path.cwd() if base is None else base
    return _template("report.html").render(
        d=data,
        since=_since_view(since),
        css=_asset("report.css"),
        js=_asset("report.js"),
        header=_header_view(data),
        matrix=_matrix_view(data),
        releases=_releases_view(data, base),
        runs=_runs_view(data),
        failures=_failures_view(data, base),
        timelines=_timelines_view(data, base),
        fetch=_fetch_view(data),
        groups=_groups_view(data),
        power=_power_view(data),
        tiered=list(data.tiered),
        latency=latency_rows(data.runs),
        trends=_trends_view(data),
        versions=_versions_view(data),
        disagreements=data.disagreements,
        hunts=_hunts_view(data),
    )


def write_html(data: ReportData, path: Path, since: Comparison | None = None) -> None:
    """Write the report to ``path``, and beside it the full follower-fetch table when the page
    shows only part of it (a stale one from an earlier report is removed otherwise)."""
    base = path.parent
    path.write_text(render(data, base, since), encoding="utf-8")
    full = base / FETCH_CSV
    if len(data.fetch) > MAX_FETCH_ROWS:
        write_fetch_csv(data.fetch, full)
    else:
        full.unlink(missing_ok=True)


FETCH_COLUMNS = (
    "run",
    "consumer",
    "rack",
    "records",
    "local_share",
    "cross_rack_records",
    "cross_rack_bytes",
    "unknown_replica",
    "by_replica",
)


def write_fetch_csv(rows: Iterable[Mapping[str, Any]], path: Path) -> None:
    """The follower-fetch rows as CSV (``by_replica`` as JSON; empty cells for unknowns)."""
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(FETCH_COLUMNS)
        for r in rows:
            w.writerow(
                [
                    json.dumps(r.get(c), separators=(",", ":"))
                    if c == "by_replica"
                    else ""
                    if r.get(c) is None
                    else r.get(c)
                    for c in FETCH_COLUMNS
                ]
            )


# the sections: each a view of the report data for its template ----------------------------


def _since_view(c: Comparison | None) -> dict[str, Any] | None:
    """The baseline section's rows, each cell named as the CLI's lines name it."""
    if c is None:
        return None
    return {
        "path": c.path,
        "generated_at": c.generated_at,
        "new_violations": [
            {"where": v.cell.where(), "was": v.cell.was, "checks": v.checks, "runs": v.runs} for v in c.new_violations
        ],
        "stopped_showing": c.stopped_showing,
        "newly_shown": c.newly_shown,
        "moved": [{"where": m.where(), "change": m.change, "was": m.was, "now": m.now} for m in c.moved],
    }


def _header_view(d: ReportData) -> dict[str, Any]:
    """The runs' verdicts counted, and their classes against the known findings (a violation a
    finding explains is known; only a new one fails the report)."""
    return {
        "counts": Counter(_valid_key(r["valid"]) for r in d.runs),
        "classes": Counter(run_class_of(r) for r in d.runs),
        "run_class": d.run_class,
        "line": findings_line(d),
    }


def _known_of(d: ReportData) -> dict[tuple[str, str, str, str, str], tuple[set[str], int]]:
    """(check, suite, scenario, Kafka release, client) -> the findings that explain its failures
    there, and how many of its failures none explains."""
    out: dict[tuple[str, str, str, str, str], tuple[set[str], int]] = {}
    for r in d.runs:
        for check, v in r["verdicts"].items():
            if v["valid"] is not False:
                continue
            key = (check, r["suite"], r["scenario"], r["kafka_version"], r["client"])
            ids, new = out.get(key, (set(), 0))
            explained = run_findings_of(r)["known"].get(check)
            out[key] = (ids | set(explained or ()), new + (0 if explained else 1))
    return out


def _matrix_view(d: ReportData) -> dict[str, Any]:
    cols = d.columns
    cell = {(m["check"], m["suite"], m["scenario"], m["kafka_version"], m["client"]): m for m in d.matrix}
    known = _known_of(d)
    attr = attribute(d.matrix)
    rows = []
    for check in d.checks:
        cells: list[dict[str, Any] | None] = []
        for c in cols:
            m = cell.get((check, c["suite"], c["scenario"], c["kafka_version"], c["client"]))
            if m is None:
                cells.append(None)
                continue
            allowed = bool(m["allowed"]) and m["valid"] is True
            na = int(m.get("not_applicable") or 0)
            judged = m["runs"] - na  # runs where the check applied
            tip = (
                f"{m['runs']} run(s): {m['passed']} valid ({m['allowed']} allowed by policy), "
                f"{m['failed']} violated, {m['unknown']} unknown, {na} not applicable"
            )
            group = (c["suite"], c["scenario"], c["kafka_version"])
            a = attr.get(group, {}).get("checks", {}).get(check)
            if a is not None and a["verdict"] != NONE and len(attr[group]["labels"]) > 1:
                tip += f"; {describe(a)}"
            if m["valid"] == NOT_APPLICABLE:
                notes = _na_notes(d, check, c)
                tip += (": " + "; ".join(notes)) if notes else ""
                text = MARK[NOT_APPLICABLE]
            elif m["valid"] is False:
                text = f"{MARK[False]} {m['failed']}/{judged}"
            else:
                text = f"{MARK[m['valid']]} {m['passed']}/{judged}"
            css = _cls(m["valid"], allowed)
            ids, new = known.get((check, c["suite"], c["scenario"], c["kafka_version"], c["client"]), (set(), 0))
            if ids and not new:  # every failure here is a known finding's: not red
                css, text = "v-known", f"{text} {', '.join(sorted(ids))}"
                tip += f"; every violation known: {', '.join(sorted(ids))}"
            elif ids:
                tip += f"; known: {', '.join(sorted(ids))}, {new} run(s) with a new violation"
            cells.append({"cls": css, "valid": m["valid"], "tip": tip, "text": text})
        rows.append({"check": check, "cells": cells})
    return {"columns": cols, "attribution": _attribution_cells(cols, attr), "rows": rows}


def _attribution_cells(cols: list[dict[str, str]], attr: dict[tuple[str, str, str], dict[str, Any]]) -> list[Any]:
    """One header cell per column group (suite/scenario, Kafka version; its columns are
    adjacent, sorted by client) with the group's attribution and the checks behind it."""
    cells: list[dict[str, Any]] = []
    i = 0
    while i < len(cols):
        key = (cols[i]["suite"], cols[i]["scenario"], cols[i]["kafka_version"])
        n = 1
        while (
            i + n < len(cols) and (cols[i + n]["suite"], cols[i + n]["scenario"], cols[i + n]["kafka_version"]) == key
        ):
            n += 1
        a = attr.get(key)
        if a is None:
            cells.append({"span": n, "verdict": None})
        else:
            v = a["verdict"]
            tip = "; ".join(
                f"{c}: {describe(x)}"
                for c, x in a["checks"].items()
                if x["verdict"] not in (NONE, SINGLE) or x["failed"]
            )
            cells.append(
                {
                    "span": n,
                    "verdict": v,
                    "cls": ATTR_CLASS.get(v, "v-unknown"),
                    "group": "/".join(key),
                    "tip": tip or describe(a),
                    "text": {CLIENTS: "clients: " + ", ".join(a["clients"])}.get(v, v),
                }
            )
        i += n
    return cells


def _na_notes(d: ReportData, check: str, col: dict[str, str]) -> list[str]:
    """Why a check did not apply in a matrix column: its verdicts' notes, once each (the first
    ``MAX_NA_NOTES``, then how many more there are)."""
    notes = (
        n
        for r in d.runs
        if all(r[k] == col[k] for k in ("suite", "scenario", "kafka_version", "client"))
        for n in r["verdicts"].get(check, {}).get("notes", [])
    )
    distinct = list(dict.fromkeys(str(n).removeprefix("not applicable: ") for n in notes))
    more = len(distinct) - MAX_NA_NOTES
    return distinct[:MAX_NA_NOTES] + ([f"and {more} more note(s) in the runs' verdicts"] if more > 0 else [])


def _releases_view(d: ReportData, base: Path) -> dict[str, Any]:
    """Each scenario's verdict across Kafka releases (reports.releases); a changed cell is
    outlined; failing runs link to their directories, relative to the report."""
    view = d.releases or {}
    rels, rows = view.get("releases", []), view.get("rows", [])
    out = []
    for row in rows:
        cells: list[dict[str, Any] | None] = []
        for rel in rels:
            c = row["cells"].get(rel)
            if c is None:
                cells.append(None)
                continue
            links = [
                {"href": h, "label": f["label"]}
                for f in c["failing"]
                if f["path"] and (h := href(f["path"], base)) is not None
            ]
            cells.append(
                {
                    "release": rel,
                    "cls": _cls({"pass": True, "fail": False}.get(c["verdict"], "unknown")),
                    "verdict": c["verdict"],
                    "changed": c["changed"],
                    "passed": c["passed"],
                    "runs": c["runs"],
                    "links": links,
                }
            )
        out.append({"suite": row["suite"], "scenario": row["scenario"], "client": row["client"], "cells": cells})
    return {"releases": rels, "rows": out, "changes": changes(view) if rows else []}


def _runs_view(d: ReportData) -> list[dict[str, Any]]:
    out = []
    for r in d.runs:
        v = {c: x["valid"] for c, x in r["verdicts"].items()}
        out.append(
            {
                "r": r,
                "bad": ", ".join(c for c, x in v.items() if x is False),
                "unknown": ", ".join(c for c, x in v.items() if x == "unknown"),
                "na": ", ".join(c for c, x in v.items() if x == NOT_APPLICABLE),
            }
        )
    return out


def _failures_view(d: ReportData, base: Path) -> dict[str, Any]:
    runs = {r["label"]: r for r in d.runs}
    shown: Counter[str] = Counter(f["check"] for f in d.failures)
    total = {f["check"]: f["runs_failing_check"] for f in d.failures}
    items = []
    for f in d.failures:
        run = runs.get(f["run"]) or {}
        explained = run_findings_of(run)["known"].get(f["check"]) if run else None
        recorded = len(((run.get("verdicts") or {}).get(f["check"]) or {}).get("examples") or [])
        verdict_json = RunDir(Path(run["path"])).verdict_json if run.get("path") else None
        items.append(
            {
                "f": f,
                "counts": _j(f["counts"]),
                "examples": [
                    {
                        "what": _j(ex["what"], 600),
                        "context": [
                            {
                                **e,
                                "ms": f"{e['time_ns'] / 1e6:.1f}",
                                "value_json": _j(e["value"], 240),
                            }
                            for e in ex["context"]
                        ],
                        "context_more": ex.get("context_more", 0),
                    }
                    for ex in f["examples"]
                ],
                "examples_recorded": max(recorded, len(f["examples"])),
                "known": ", ".join(explained) if explained else None,
                "verdict_href": href(verdict_json, base)
                if verdict_json is not None and verdict_json.is_file()
                else None,
            }
        )
    partial = [(c, shown[c], total[c]) for c in shown if shown[c] < total[c]]
    return {"entries": items, "partial": partial}


def mixed_version_window(windows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The band a run's nodes ran different Kafka releases in: from its first ``roll`` window's
    start to its last one's end (``faults.release``; a roll back ends it too), whatever came in
    between; None for a run without a roll. Drawn with ``band: "mixed"``, not as a fault."""
    rolls = [w for w in windows if w.get("kind") == "roll"]
    if not rolls:
        return None
    start, end = min(w["start_s"] for w in rolls), max(w["end_s"] for w in rolls)
    return {"start_s": start, "end_s": end, "kind": "mixed-version window", "targets": "[]", "band": "mixed"}


def _timelines_view(d: ReportData, base: Path) -> dict[str, Any]:
    runs = {r["label"]: r for r in d.runs}
    plotted: list[dict[str, Any]] = []
    for label, tl in d.timelines.items():
        t, fw = tl["t"], tl["faults"]
        mixed = mixed_version_window(fw)
        fw = [mixed, *fw] if mixed else fw
        charts = [
            line_chart(
                t,
                [("acks/s", tl["acks"]), ("polled/s", tl["polled"]), ("send errors/s", tl["send_errors"])],
                title="throughput",
                unit="records/s",
                faults=fw,
            )
        ]
        if any(v is not None for v in tl["latency_p99_ms"]):
            note = f", 1/{tl['latency_sampled']} of values" if tl["latency_sampled"] > 1 else ""
            charts.append(
                line_chart(
                    t,
                    [("p50", tl["latency_p50_ms"]), ("p99", tl["latency_p99_ms"])],
                    title="end-to-end latency" + note,
                    unit="ms",
                    faults=fw,
                )
            )
        if tl["partitions"]:
            parts = sorted(tl["partitions"].items())
            charts.append(line_chart(t, [(p, s["isr"]) for p, s in parts], title="ISR size", faults=fw, step=True))
            charts.append(
                line_chart(
                    t,
                    [(p, s["leader"]) for p, s in parts],
                    title="leader (broker id)",
                    faults=fw,
                    step=True,
                    y_min=None,
                )
            )
        if tl["lag"]:
            charts.append(
                line_chart(
                    t, sorted(tl["lag"].items()), title="consumer lag (HW - position)", unit="records", faults=fw
                )
            )
        windows = [
            {
                "kind": str(w.get("kind")),
                "targets": str(w.get("targets")),
                "span": f"{w['start_s']:.1f}s \u2013 {w['end_s']:.1f}s",
                "unhealed": bool(w.get("unhealed")),
            }
            for w in fw
        ]
        r = runs[label]
        plotted.append({"label": label, "r": r, "charts": charts, "windows": windows, "detail": _run_detail(r, base)})
    rest = [r for r in d.runs if r["label"] not in d.timelines]
    return {
        "plotted": plotted,
        "rest_total": len(rest),
        "rest": [{"r": r, "detail": _run_detail(r, base)} for r in rest[:MAX_DETAIL_ONLY_RUNS]],
        "rest_max": MAX_DETAIL_ONLY_RUNS,
    }


def _run_detail(r: dict[str, Any], base: Path) -> dict[str, Any]:
    """A run's schedule, its longest stalls with their bounds, and its time bounds."""
    nem = as_dict(r.get("nemesis"))
    sched = as_dict(nem.get("schedule")) or as_dict(r.get("schedule"))
    extra = f" {nem['name']}" if nem.get("name") else ""
    if sched.get("seed") is not None:
        extra += f", seed {sched['seed']}"
    faults = fault_rows(r)
    run_json = RunDir(Path(r["path"])).run_json if r.get("path") else None
    stalls = [
        {
            **x,
            "span": f"{_s(x['window_start_ns'])} \u2013 {_s(x['window_end_ns'])}",
            "phase_text": "after heal" if x["phase"] == "after-heal" else str(x["phase"]),
        }
        for x in stall_rows(r)
    ]
    return {
        "kind": str(nem.get("kind") or ("scheduled" if sched else "not recorded")),
        "extra": extra,
        "faults_total": len(faults),
        "faults": [
            {**x, "at": f"{x['at_s']:g}s", "duration": f"{x['duration_s']:g}s"} for x in faults[:MAX_SCHEDULE_ROWS]
        ],
        "run_json_href": href(run_json, base) if run_json is not None else None,
        "longest": ", ".join(f"{c} {ms} ms" for c, ms in longest_stall_ms(r).items()),
        "stalls": stalls,
        "bounds": _bounds(r.get("config") or {}),
    }


def _s(ns: Any) -> str:
    return f"{ns / 1e9:.1f}s" if isinstance(ns, (int, float)) and not isinstance(ns, bool) else "?"


def _bounds(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The time bounds of a config, for one compact line; formulas on hover."""
    return [
        {
            "name": n.removesuffix("_ms"),
            "ms": v["ms"],
            "given": v["given"],
            "formula": v["formula"] + " = " + v["computed"],
        }
        for n, v in run_bounds(config).items()
    ]


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _fetch_view(d: ReportData) -> dict[str, Any]:
    return {
        "total": len(d.fetch),
        "max": MAX_FETCH_ROWS,
        "csv": FETCH_CSV,  # beside the report: a relative link is its name
        "rows": [
            {**f, "share": _pct(f["local_share"]), "replicas": _j(f["by_replica"])} for f in d.fetch[:MAX_FETCH_ROWS]
        ],
    }


def _hunts_view(d: ReportData) -> dict[str, Any] | None:
    """The hunts of the report's results (``reports.hunts``), each shrunk failure with its
    original and shrunk schedules side by side; None (no section) when there is no hunt.json.
    Faults the shrink dropped are greyed in the original, what it shortened or moved is
    outlined in the shrunk one, so the reduction reads at a glance."""
    runs = [Path(r["path"]) for r in d.runs if r.get("path")]
    found = load_hunts(Path(d.results_dir), runs)
    if not found.found:
        return None
    return {
        "hunts": [
            {
                "campaign": h.campaign,
                "path": str(h.path),
                "summary": h.summary,
                "line": h.line,
                "failures": [_shrunk_view(f) for f in h.shrunk],
            }
            for h in found.hunts
        ],
        "notes": found.notes,
    }


def _shrunk_view(f: ShrunkFailure) -> dict[str, Any]:
    kept = {x.id for x in f.shrunk.faults if x.id is not None}
    before = {x.id: x for x in f.original.faults if x.id is not None}
    second = f.second

    def dropped(x: HuntFault) -> dict[str, Any]:
        return {"dropped": x.id is not None and x.id not in kept}

    def changed(x: HuntFault) -> dict[str, Any]:
        was = before.get(x.id) if x.id is not None else None
        return {
            "at_was": f"{was.at_s:g}s" if was is not None and was.at_s != x.at_s else None,
            "duration_was": f"{was.duration_s:g}s" if was is not None and was.duration_s != x.duration_s else None,
        }

    return {
        "f": f,
        "trial": (
            f"failed {f.failed} of {f.tries} tries"
            if f.reproduced and f.failed is not None and f.tries is not None
            else f"not reproduced in {f.original_tries} tries; nothing shrunk"
        ),
        "second": None
        if second is None
        else {
            "client": second.client,
            "same": second.same,
            "verdict": "same check failed: the broker's?" if second.same else "not seen: the client's?",
            "new": ", ".join(second.new),
        },
        "original": _side_view(f.original, dropped),
        "shrunk": {
            **_side_view(f.shrunk, changed),
            "workload_changed": (f.shrunk.producers, f.shrunk.rate) != (f.original.producers, f.original.rate),
        },
    }


def _side_view(s: ScheduleSide, marks: Callable[[HuntFault], dict[str, Any]]) -> dict[str, Any]:
    """One schedule as the rows of a compact fault table (``marks``: what the shrink did to each
    fault), with its workload."""
    return {
        "faults": [
            {
                "at": f"{x.at_s:g}s",
                "duration": f"{x.duration_s:g}s",
                "kind": x.kind,
                "target": x.target,
                "cli": x.cli,
                "dropped": False,
                "at_was": None,
                "duration_was": None,
                **marks(x),
            }
            for x in s.faults
        ],
        "producers": "?" if s.producers is None else s.producers,
        "rate": "?" if s.rate is None else f"{s.rate:g}/s",
        "described": s.described,
        "workload_changed": False,
    }


def _groups_view(d: Any) -> list[dict[str, Any]]:
    return [
        {
            **g,
            "resume": "never" if g["slowest_resume_ms"] is None else g["slowest_resume_ms"] if g["resumes"] else "-",
        }
        for g in d.groups
    ]


def _power_view(d: Any) -> list[dict[str, Any]]:
    return list(d.power)


def _power(d: Any) -> str:
    """The power-loss section alone (``d`` needs only ``power``)."""
    return _template("power.html").render(power=_power_view(d))


def _trends_view(d: ReportData) -> dict[str, Any]:
    if not d.trends:
        return {"chart": None, "checks": [], "rows": []}
    xs = list(range(len(d.trends)))
    fail = [100.0 * t["failed_runs"] / t["runs"] for t in d.trends]
    unk = [100.0 * t["unknown_runs"] / t["runs"] for t in d.trends]
    chart = (
        line_chart(
            xs,
            [("violated runs %", fail), ("unknown runs %", unk)],
            title="runs not valid per campaign",
            unit="%",
            x_labels=[t["campaign"] for t in d.trends],
        )
        if len(xs) > 1
        else None
    )
    checks = sorted({c for t in d.trends for c in t["checks"]})
    return {"chart": chart, "checks": checks, "rows": d.trends}


def _versions_view(d: ReportData) -> dict[str, Any]:
    groups: Counter[tuple[str, str, str]] = Counter()
    by_bounds: dict[str, tuple[list[dict[str, Any]], list[str]]] = {}
    for r in d.runs:
        cfg = r.get("config") or {}
        groups[(r["kafka_version"], r["client"], json.dumps(config_key(cfg), sort_keys=True, default=str))] += 1
        b = _bounds(cfg)
        by_bounds.setdefault(json.dumps(b, default=str), (b, []))[1].append(r["label"])
    return {
        "rows": [{"kafka": k, "client": c, "config": cfg, "runs": n} for (k, c, cfg), n in sorted(groups.items())],
        "bounds": [
            {"labels": labels[:MAX_BOUND_LABELS], "more": len(labels) - MAX_BOUND_LABELS, "bounds": b}
            for b, labels in sorted(by_bounds.values(), key=lambda x: x[1][0])
        ],
    }
