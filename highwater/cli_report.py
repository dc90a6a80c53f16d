"""``highwater report RESULTS_DIR [--out DIR] [--master URL] [--baseline PATH]``.

Writes ``report.html`` (self-contained), ``summary.json`` and ``junit.xml`` into ``--out``
(default ``RESULTS_DIR/report``). Exit status (``highwater.exit_codes``): 0 nothing new (valid,
known findings only), 1 a new violation, 3 something unknown (and nothing violated), 4 the
report itself could not be built or its input was refused (a harness error: never a silent 0).

``--baseline PATH`` (an earlier report's ``summary.json``, or a directory holding one) adds what
changed since it (``reports.baseline``): read and checked before Spark starts, written into
``summary.json`` as ``baseline`` and told in a few lines. It never changes the exit status.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any

from highwater.reports.spark_session import DEFAULT_MASTER, Progress

from .exit_codes import Exit

#: runs with a new violation named one per line (the rest are in summary.json)
MAX_NEW_LISTED = 10


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report",
        help="aggregate results with Spark into HTML / JSON / JUnit reports",
        description="Aggregate every run under RESULTS_DIR (results/<campaign>/<run_id>/) with "
        "Spark and write report.html, summary.json and junit.xml. Every run is classed against "
        "the known findings (docs/findings.md): a violation one of them explains is known, any "
        "other is new. Exit 0: nothing new (valid, known findings only), 1: a new violation, "
        "3: unknown, 4: the report could not be built.",
    )
    p.add_argument("results", metavar="RESULTS_DIR", help="results directory")
    p.add_argument("--out", metavar="DIR", help="output directory (default: RESULTS_DIR/report)")
    p.add_argument("--master", default=DEFAULT_MASTER, metavar="URL", help="Spark master URL")
    p.add_argument(
        "--max-timelines",
        type=int,
        default=40,
        metavar="N",
        help="plot at most N runs (failing runs first)",
    )
    p.add_argument(
        "--no-spark-checks",
        action="store_true",
        help="use verdict.json only (skip recomputing poll-skip/lost-write in Spark)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="recompute every run's Spark results instead of reusing those of earlier "
        "reports (kept per run under RESULTS_DIR/.parquet-cache/runs, keyed by the "
        "history file and the code)",
    )
    p.add_argument(
        "--findings",
        action="append",
        default=[],
        metavar="FILE",
        help="a TOML file of your own known findings, beside highwater's (repeatable; also "
        "$HIGHWATER_FINDINGS, os.pathsep-separated; docs/findings.md says the format)",
    )
    p.add_argument(
        "--baseline",
        metavar="PATH",
        help="an earlier report's summary.json (or a directory holding one as summary.json or "
        "report/summary.json) to say what changed since: new violations per scenario x release x "
        "client, findings that stopped showing, verdicts that moved; written into summary.json as "
        "'baseline'. It informs: the exit code is the report's own",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output (default: progress on stderr)")
    p.set_defaults(func=cmd_report)
    return p


def cmd_report(args: argparse.Namespace) -> int:
    from highwater.core.checks import CHECKS
    from highwater.core.errors import HighwaterError
    from highwater.core.findings import configured, validate
    from highwater.reports import baseline as baselines
    from highwater.reports.aggregate import Options, build
    from highwater.reports.junit import write_junit
    from highwater.reports.render_html import write_html
    from highwater.reports.summary import summary, write_summary_json

    results = Path(args.results)
    out = Path(args.out) if args.out else results / "report"
    try:  # refused before Spark starts: one line
        findings = configured(Path(f) for f in args.findings)
        validate(findings, CHECKS)
        # read now: the baseline may be the summary this report is about to overwrite
        baseline = baselines.load(Path(args.baseline)) if getattr(args, "baseline", None) else None
    except HighwaterError as e:
        print(f"highwater report: error: {e}", file=sys.stderr)
        return Exit.HARNESS
    progress = Progress(enabled=not getattr(args, "quiet", False))
    try:
        data = build(
            results,
            Options(
                master=args.master,
                max_timelines=args.max_timelines,
                spark_checks=not args.no_spark_checks,
                use_cache=not args.no_cache,
                findings=findings,
            ),
            progress,
        )
        out.mkdir(parents=True, exist_ok=True)
        s = summary(data)
        since = baselines.compare(baseline.summary, s, str(baseline.path)) if baseline else None
        if since:
            s["baseline"] = since.to_json()
        write_html(data, out / "report.html", since)
        write_summary_json(s, out / "summary.json")
        write_junit(data, out / "junit.xml")
    except FileNotFoundError as e:
        print(f"highwater report: error: {e}", file=sys.stderr)
        return Exit.HARNESS
    except Exception as e:  # noqa: BLE001 - a broken report is a harness error, with the reason shown
        traceback.print_exc()
        print(f"highwater report: harness error: {e.__class__.__name__}: {e}", file=sys.stderr)
        return Exit.HARNESS
    t = s["totals"]
    print(
        f"highwater report: {t['runs']} run(s): {t['valid']} valid, {t['known']} known, {t['violated']} violated "
        f"(new), {t['fixed?']} fixed?, {t['unknown']} unknown -> {s['class']}"
    )
    print(f"highwater report: {s['line']}")
    new = [r for r in s["runs"] if r["class"] == "violated"]
    for r in new[:MAX_NEW_LISTED]:  # what fails the report, named
        print(
            f"highwater report: new violation: {', '.join(r['findings']['new'])} in {r['suite']}/{r['scenario']} "
            f"({r['client']}, Kafka {r['kafka_version']}; {r['run']})"
        )
    if len(new) > MAX_NEW_LISTED:
        print(f"highwater report: ... and {len(new) - MAX_NEW_LISTED} more run(s) with a new violation (summary.json)")
    for line in since.lines() if since else []:
        print(f"highwater report: {line}")
    if data.disagreements:
        print(f"highwater report: {len(data.disagreements)} Spark/Python disagreement(s): harness bug", file=sys.stderr)
    print(f"highwater report: wrote {out / 'report.html'}, {out / 'summary.json'}, {out / 'junit.xml'}")
    return Exit(s["exit_code"])
