"""``highwater sweep`` (suites across a range of Kafka releases, resumable) and ``highwater
bisect`` (the release where a scenario's verdict changes). The logic lives in
``highwater.sweep`` and ``highwater.bisect``; this module gives them real releases and pytest."""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from harness.backend import DEFAULT_BACKEND, get_backend
from harness.clients import DEFAULT_CLIENT, parse_client_spec, parse_client_specs
from harness.distribution import SetupError, ensure_kafka, parse_version, published_versions
from harness.errors import HighwaterError

from .bisect import BisectError, Probe, bisect, report_lines
from .pytest_runs import PytestRun
from .sweep import (
    STATE_FILE,
    load_or_start,
    newest_patches,
    parse_range,
    releases_in_range,
    run_sweep,
    summary_lines,
)

#: what a sweep runs unless told otherwise: the conformance suites (short, one promise each)
DEFAULT_SWEEP_TESTS = ["suites/conformance", "suites/sweep"]
PYPI_JSON = "https://pypi.org/pypi/{name}/json"


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("sweep", help="run suites on every Kafka release in a range (resumable), into one campaign")
    s.add_argument("tests", nargs="*", help="pytest node ids or paths (default: suites/conformance)")
    s.add_argument("--kafka-versions", required=True, help="LOW..HIGH, e.g. 3.3.1..newest or 3.5.0..3.9.1")
    s.add_argument(
        "--newest-patch-only",
        action="store_true",
        help="only the newest patch release of each minor line in the range (default: every release)",
    )
    _common(s)
    s.add_argument("--campaign", default=None, help="campaign name; the same name resumes an interrupted sweep")
    s.set_defaults(func=cmd_sweep)
    b = sub.add_parser("bisect", help="find the first release where a scenario's verdict changes")
    b.add_argument("scenario", help="a suite test's node id, e.g. 'suites/conformance/test_kip320.py::test_x'")
    b.add_argument("--good", required=True, help="a release where the scenario passes")
    b.add_argument("--bad", required=True, help="a release where it fails (may be older than --good: a fix)")
    b.add_argument("--runs", type=int, default=3, help="runs per probed release, seeded (default: 3)")
    b.add_argument(
        "--over",
        choices=["kafka", "client"],
        default="kafka",
        help="bisect Kafka releases (default) or versions of the --client library against one Kafka release",
    )
    b.add_argument("--kafka-version", default=None, help="with --over client: the Kafka release (default: newest)")
    _common(b)
    b.set_defaults(func=cmd_bisect)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="ci", choices=["ci", "nightly"])
    p.add_argument("--backend", default=DEFAULT_BACKEND, help=f"(default: {DEFAULT_BACKEND})")
    p.add_argument("--client", default=DEFAULT_CLIENT, help=f"client spec(s) (default: {DEFAULT_CLIENT})")
    p.add_argument("--seed", type=int, default=None, help="seed of the runs' schedules")
    p.add_argument("--results", default="results")


def _say(msg: str) -> None:
    print(f"highwater: {msg}", file=sys.stderr, flush=True)


def cmd_sweep(args: argparse.Namespace) -> int:
    get_backend(args.backend)
    parse_client_specs(args.client)
    low, high = parse_range(args.kafka_versions)
    releases = releases_in_range(published_versions(), low, high)
    if args.newest_patch_only:
        releases = newest_patches(releases)
    tests = args.tests or DEFAULT_SWEEP_TESTS
    campaign = args.campaign or f"sweep-{args.profile}-{time.strftime('%Y%m%dT%H%M%S')}"
    plan: dict[str, object] = {
        "range": args.kafka_versions,
        "newest_patch_only": args.newest_patch_only,
        "tests": list(tests),
        "client": args.client,
        "profile": args.profile,
        "backend": args.backend,
        "seed": args.seed,
    }
    state_path = Path(args.results) / campaign / STATE_FILE
    state = load_or_start(state_path, plan, releases)
    _say(
        f"sweep {campaign}: {len(state.releases)} releases ({', '.join(state.releases)}), {len(state.pending())} to run"
    )

    def run_release(release: str) -> int:
        return PytestRun(
            tests=tests,
            campaign=campaign,
            profile=args.profile,
            backend=args.backend,
            client=args.client,
            kafka_versions=[release],
            seed=args.seed,
            results=args.results,
        ).call()

    state = run_sweep(state, state_path, _prepare_kafka, run_release, _say)
    for line in summary_lines(state):
        print(line)
    print(f"report: highwater report {Path(args.results) / campaign}")
    return 0 if not state.pending() else 2


def _prepare_kafka(version: str) -> None:
    ensure_kafka(version, _say)


def client_versions(name: str) -> list[str]:
    """Published versions of a client library, oldest first: Kafka's Java client is released
    with every Kafka release; confluent-kafka's are PyPI's."""
    if name == "java":
        return published_versions()
    if name == "confluent-kafka":
        try:
            with urllib.request.urlopen(PYPI_JSON.format(name=name), timeout=20) as resp:
                releases = json.load(resp)["releases"]
        except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
            raise SetupError(f"cannot list {name} versions on PyPI: {exc}") from exc
        stable = [v for v in releases if v.count(".") == 2 and v.replace(".", "").isdigit()]
        return sorted(stable, key=parse_version)
    raise BisectError(f"client {name!r} has one installable version here; bisect over Kafka releases instead")


def oldest_driven(name: str) -> tuple[int, ...] | None:
    """The oldest version of a client library its driver accepts (None: no limit known)."""
    if name == "confluent-kafka":
        from harness.clients.librdkafka import OLDEST as rdkafka_oldest

        return rdkafka_oldest
    if name == "java":
        from harness.clients.java import OLDEST as java_oldest

        return java_oldest
    return None


def check_driven(name: str, versions: Sequence[str]) -> None:
    """Refuse, in one line and before any run, a bisect end the client's driver would refuse
    (every run of it would be an error, judged unknown, and the end never what it was said to be)."""
    oldest = oldest_driven(name)
    if oldest is None:
        return
    for v in versions:
        if parse_version(v) < oldest:
            raise BisectError(
                f"{name} {v} is older than its driver supports ({'.'.join(map(str, oldest))}): "
                "choose --good and --bad from there on"
            )


def search_order(all_versions: list[str], good: str, bad: str) -> list[str]:
    """The versions from ``good`` to ``bad`` inclusive, in the direction of the search."""
    for v in (good, bad):
        if v not in all_versions:
            raise BisectError(f"{v} is not a published version (newest: {', '.join(all_versions[-3:])})")
    lo, hi = sorted((all_versions.index(good), all_versions.index(bad)))
    span = all_versions[lo : hi + 1]
    return span if span[0] == good else list(reversed(span))


def cmd_bisect(args: argparse.Namespace) -> int:
    get_backend(args.backend)
    if args.runs < 1:
        raise BisectError("--runs must be at least 1")
    client = parse_client_spec(args.client)
    versions = client_versions(client.name) if args.over == "client" else published_versions()
    if args.over == "client":
        check_driven(client.name, [args.good, args.bad])
    order = search_order(versions, args.good, args.bad)
    campaign = f"bisect-{time.strftime('%Y%m%dT%H%M%S')}"
    base_seed = args.seed if args.seed is not None else 1
    _say(f"bisect {args.scenario} over {len(order)} {args.over} versions, {args.runs} runs each; campaign {campaign}")

    def judge(version: str) -> Probe:
        t = time.monotonic()
        probe = judge_runs(version)
        _say(f"{version}: {probe.runs} runs in {(time.monotonic() - t) / 60:.1f} min")
        return probe

    def judge_runs(version: str) -> Probe:
        if args.over == "kafka":
            kafka = [version]
            try:
                ensure_kafka(version, _say)
            except HighwaterError as exc:
                _say(f"{version} cannot be assembled ({exc}); set aside")
                return Probe(version, runs=0, failed=0, unknown=1)
        else:
            kafka = [args.kafka_version] if args.kafka_version else []
        failed = unknown = 0
        for i in range(args.runs):
            code = PytestRun(
                tests=[args.scenario],
                campaign=campaign,
                profile=args.profile,
                backend=args.backend,
                client=f"{client.name}=={version}" if args.over == "client" else str(client),
                kafka_versions=kafka,
                seed=base_seed + i,
                results=args.results,
                extra=("--runxfail", "-q"),
            ).call()
            if code == 5:
                raise BisectError(f"{args.scenario!r} names no test")
            failed += code == 1
            unknown += code not in (0, 1)
        return Probe(version, runs=args.runs, failed=failed, unknown=unknown)

    started = time.monotonic()
    result = bisect(order, judge, _say)
    for line in report_lines(result, args.runs, order, time.monotonic() - started):
        print(line)
    print(f"runs: {Path(args.results) / campaign}")
    return 0
