"""``highwater run`` (the suites through pytest) and ``highwater campaign`` (what ``make
campaign`` runs: the chaos campaign on a local 3-rack cluster, then the HTML report)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    r = sub.add_parser("run", help="run suites (default: all) with a profile, via pytest")
    r.add_argument("tests", nargs="*", help="pytest node ids or paths (default: suites/)")
    _common(r)
    r.set_defaults(func=cmd_run)
    c = sub.add_parser("campaign", help="run the chaos campaign on a local multi-rack cluster and write the report")
    _common(c)
    c.add_argument("--report", default="report", help="where the HTML report goes (default: report/)")
    c.set_defaults(func=cmd_campaign)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="ci", choices=["ci", "nightly"])
    p.add_argument("--kafka-version", action="append", default=None, help="repeatable or comma-separated")
    p.add_argument("--campaign", default=None, help="campaign name (default: <profile>-<timestamp>)")
    p.add_argument("--results", default="results")


def _pytest(tests: list[str], args: argparse.Namespace, campaign: str) -> int:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *tests, "--profile", args.profile,
            "--campaign", campaign, "--results", args.results, "-rxXf"]
    for v in args.kafka_version or []:
        argv += ["--kafka-version", v]
    print("highwater: " + " ".join(argv[1:]), file=sys.stderr, flush=True)
    return subprocess.call(argv, cwd=ROOT)


def cmd_run(args: argparse.Namespace) -> int:
    campaign = args.campaign or f"{args.profile}-{time.strftime('%Y%m%dT%H%M%S')}"
    return _pytest(args.tests or ["suites"], args, campaign)


def cmd_campaign(args: argparse.Namespace) -> int:
    campaign = args.campaign or f"campaign-{args.profile}-{time.strftime('%Y%m%dT%H%M%S')}"
    rc = _pytest(["suites/chaos"], args, campaign)
    report_cmd = [sys.executable, "-m", "harness.cli", "report", str(Path(args.results) / campaign), "--out", args.report]
    print("highwater: " + " ".join(report_cmd[1:]), file=sys.stderr, flush=True)
    report_rc = subprocess.call(report_cmd, cwd=ROOT)
    print(f"highwater: campaign {campaign}: suites exit {rc}, report exit {report_rc}; "
          f"report at {Path(args.report) / 'report.html'}", file=sys.stderr)
    return rc or report_rc
