"""``highwater run`` (the suites through pytest) and ``highwater campaign`` (what ``make
campaign`` runs: the chaos campaign on a local 3-rack cluster, then the HTML report).

The suites run in a child pytest; its exit code is translated into ours
(``highwater.exit_codes.of_pytest``: a failed test 1, pytest's errors and "no test collected" 4,
an interrupted session 130). A campaign's status is the worse of its suites' and its report's.
The child shows live progress (``--progress``: each test of how many, elapsed and remaining,
each phase, the faults active, events/s; ``highwater.progress``).

``--shard I/N`` runs shard I of N of the collected tests (the plugin's split, the same in every
shard), for CI systems that fan out jobs themselves: every shard is given the same
``--campaign`` (required with ``--shard``) and ``--results``, and ``highwater report`` of the
campaign after the last shard reports them all (docs/ci-recipes.md)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from highwater.core.errors import HighwaterError
from highwater.harness.backends import DEFAULT_BACKEND, get_backend
from highwater.harness.clients import DEFAULT_CLIENT, client_names, parse_client_specs

from .console import progress
from .exit_codes import Exit, of_pytest, worst
from .preflight import preflight, split_versions
from .progress import add_progress_arg
from .pytest_runs import PytestRun, shard_spec


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "run",
        help="run suites (default: all) with a profile, via pytest",
        description="Run suites (pytest node ids or paths; default: every suite) in a child pytest with "
        "the highwater plugin's options. Exit 0: every test passed, 1: a test failed, 4: refused or "
        "a harness error (pytest's own errors, no test collected), 130: interrupted.",
    )
    r.add_argument("tests", nargs="*", help="pytest node ids or paths (default: suites/)")
    _common(r)
    r.set_defaults(func=cmd_run)
    c = sub.add_parser(
        "campaign",
        help="run the chaos campaign on a local multi-rack cluster and write the report",
        description="Run the chaos suites (suites/chaos) into one campaign, then 'highwater report' on it. "
        "Exit: the worse of the suites' status and the report's (0 valid, 3 unknown, 1 violations, "
        "4 harness error, 130 interrupted).",
    )
    _common(c)
    c.add_argument("--report", default="report", help="where the HTML report goes")
    c.set_defaults(func=cmd_campaign)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile", default="ci", choices=["ci", "nightly"], help="run lengths, rates and seeds (highwater.profiles)"
    )
    p.add_argument(
        "--backend",
        default=DEFAULT_BACKEND,
        help=f"where the clusters run (default: {DEFAULT_BACKEND}; see harness.backend)",
    )
    p.add_argument(
        "--cluster-file", default=None, help="with --backend external: the cluster file (docs/external-clusters.md)"
    )
    p.add_argument(
        "--keep-topics",
        action="store_true",
        help="with --backend external: keep the topics the runs created (default: deleted at the end)",
    )
    p.add_argument(
        "--client",
        default=DEFAULT_CLIENT,
        help=f"the client(s) under test, comma-separated, each NAME[==VERSION] or NAME:VERSION "
        f"(default: {DEFAULT_CLIENT}; known: {', '.join(client_names())})",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="seed of the runs' fault schedules (default: each suite's own seeds)"
    )
    p.add_argument(
        "--kafka-version",
        action="append",
        default=None,
        metavar="V",
        help="the Kafka release(s) to test, repeatable or comma-separated; every test runs on each "
        "(default: $HIGHWATER_KAFKA_VERSION, else the newest stable release)",
    )
    p.add_argument(
        "--upgrade-from",
        default=None,
        metavar="RELEASE",
        help="the release the upgrades suite's clusters start on, rolled to --kafka-version (default: 3.9.1)",
    )
    p.add_argument("--campaign", default=None, help="campaign name (default: <profile>-<timestamp>)")
    p.add_argument("--results", default="results", help="where campaigns and their runs are written")
    p.add_argument(
        "--shard",
        type=shard_spec,
        default=None,
        metavar="I/N",
        help="run only shard I of N of the collected tests (1 <= I <= N; tests sharing a run stay "
        "together), for a CI matrix: every shard with the same --campaign (required) and --results, "
        "then 'highwater report RESULTS/CAMPAIGN' once (default: every test)",
    )
    add_progress_arg(p)


def progress_args(args: argparse.Namespace) -> list[str]:
    """The child pytest's option for the live progress (``highwater.pytest_plugin``)."""
    return ["--highwater-progress", str(getattr(args, "progress", "auto"))]


def _pytest(tests: list[str], args: argparse.Namespace, campaign: str) -> int:
    get_backend(args.backend)  # an unknown backend or client fails here, in one line, before pytest starts
    clients = parse_client_specs(args.client)
    if args.backend == "external" and args.cluster_file is None:
        from highwater.harness.external import cluster_file_from_env

        args.cluster_file = str(cluster_file_from_env())  # one line when neither is given
    if args.cluster_file is not None:
        from highwater.harness.external import load_cluster_file

        load_cluster_file(args.cluster_file)  # a malformed file fails here, in one line
    kafka_versions = split_versions(args.kafka_version or [])
    start = getattr(args, "upgrade_from", None)
    if start:
        from highwater.faults.release import path_refusal

        refused = next((r for v in kafka_versions if (r := path_refusal(start, v))), None)
        if refused:
            raise HighwaterError(refused)
    # a release that does not exist, or a client version that cannot be installed: one line, no pytest
    preflight([*kafka_versions, *([start] if start else [])], clients, backend=args.backend, progress=progress)
    extra = ["--cluster-file", str(Path(args.cluster_file).resolve())] if args.cluster_file is not None else []
    if args.keep_topics:
        extra.append("--keep-topics")
    if start:
        extra += ["--upgrade-from", start]
    extra += progress_args(args)
    code = PytestRun(
        tests=tests,
        campaign=campaign,
        profile=args.profile,
        backend=args.backend,
        client=args.client,
        kafka_versions=kafka_versions,
        seed=args.seed,
        results=args.results,
        shard=args.shard,
        extra=extra,
    ).call()
    if code == 5:
        progress("pytest collected no test: nothing was judged")
    return of_pytest(code)


def _shard_without_campaign(args: argparse.Namespace) -> bool:
    """``--shard`` without ``--campaign``: each shard would name its own campaign (a timestamp),
    and no report would see them all; one line, the usage error's status."""
    if getattr(args, "shard", None) is None or args.campaign:
        return False
    print(
        f"highwater {args.command}: error: --shard needs --campaign NAME, the same for every shard "
        "(they all write into that campaign)",
        file=sys.stderr,
    )
    return True


def cmd_run(args: argparse.Namespace) -> int:
    if _shard_without_campaign(args):
        return Exit.USAGE
    scenario_files = [t for t in args.tests if t.endswith(".json") and Path(t).is_file()]
    if scenario_files:
        return _scenario_files(scenario_files, args)
    campaign = args.campaign or f"{args.profile}-{time.strftime('%Y%m%dT%H%M%S')}"
    return _pytest(args.tests or ["suites"], args, campaign)


def _scenario_files(files: list[str], args: argparse.Namespace) -> int:
    """``highwater run SCENARIO.json ...``: each scenario file (a shrunk run of ``highwater
    hunt``, or any run.json) played as ``highwater replay`` plays it; the worst exit status."""
    if len(files) != len(args.tests):
        raise HighwaterError("a scenario file (.json) runs without suites or node ids beside it: give them apart")
    from highwater.cli_replay import replay  # here: cli_replay takes this module's options

    codes = [
        replay(Path(f), results=Path(args.results), campaign=args.campaign, progress_mode=args.progress) for f in files
    ]
    return worst(*codes)


def cmd_campaign(args: argparse.Namespace) -> int:
    if _shard_without_campaign(args):
        return Exit.USAGE
    campaign = args.campaign or f"campaign-{args.profile}-{time.strftime('%Y%m%dT%H%M%S')}"
    rc = _pytest(["suites/chaos"], args, campaign)  # interrupted: the runs done so far are reported
    report_cmd = [
        sys.executable,
        "-m",
        "highwater.cli",
        "report",
        str(Path(args.results) / campaign),
        "--out",
        args.report,
    ]
    progress(" ".join(report_cmd[1:]))
    report_rc = subprocess.call(report_cmd)
    code = worst(rc, report_rc)
    shard = f" (shard {args.shard}: its runs and those of any shard already there)" if args.shard else ""
    progress(
        f"campaign {campaign}: suites exit {int(rc)}, report exit {report_rc} -> exit {int(code)}; "
        f"report at {Path(args.report) / 'report.html'}{shard}"
    )
    return code
