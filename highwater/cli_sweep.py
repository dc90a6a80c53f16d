"""``highwater sweep`` (suites across a range of Kafka releases or client versions, resumable)
and ``highwater bisect`` (the version where a scenario's verdict changes). The logic lives in
``highwater.sweep`` and ``highwater.bisect``; this module gives them real versions and pytest.

Both are surveys: exit 0 means the survey is complete (every version has an outcome, or the
boundary was found), whatever the versions' verdicts (the summary says them); 4 a refusal or a
harness error (a bisect whose ends do not differ), 130 interrupted (a sweep resumes with the same
``--campaign``)."""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from highwater.core.errors import HighwaterError
from highwater.harness.backends import DEFAULT_BACKEND, get_backend
from highwater.harness.clients import DEFAULT_CLIENT, ClientSpec, go_worker, parse_client_spec, parse_client_specs
from highwater.harness.clients.ckjs import OLDEST as CKJS_OLDEST
from highwater.harness.clients.ckjs import PACKAGE_NAME as CKJS_PACKAGE
from highwater.harness.clients.franz_go import WORKER as FRANZ_GO_WORKER
from highwater.harness.clients.java import OLDEST as JAVA_OLDEST
from highwater.harness.clients.kafkajs import OLDEST as KAFKAJS_OLDEST
from highwater.harness.clients.python import OLDEST as PYTHON_OLDEST
from highwater.harness.clients.sarama import WORKER as SARAMA_WORKER
from highwater.harness.distribution import (
    MIN_VERSION,
    SetupError,
    check_supported,
    default_version,
    ensure_kafka,
    published_versions,
)

from .bisect import BisectError, Probe, bisect, report_lines
from .cli_run import progress_args
from .console import progress as _say
from .exit_codes import Exit
from .preflight import preflight
from .progress import add_progress_arg
from .pytest_runs import PytestRun, Shard, shard_spec
from .spread import cells_state_file, sweep_spread
from .sweep import (
    STATE_FILE,
    SweepError,
    load_or_start,
    newest,
    newest_patches,
    parse_range,
    parse_version_list,
    path_ends,
    recorded_plan,
    releases_in_range,
    run_sweep,
    select_versions,
    selection_text,
    summary_lines,
    upgrade_paths,
    version_key,
)
from .sweep_cells import CellSettings, checked_master

#: what a sweep runs unless told otherwise: the conformance suites (short, one promise each)
DEFAULT_SWEEP_TESTS = ["suites/conformance", "suites/sweep"]
PYPI_JSON = "https://pypi.org/pypi/{name}/json"

#: The oldest version of each client library its driver supports: the drivers' own floors (why
#: each is where it is: ``harness.clients.python.OLDEST``, ``harness.clients.java.OLDEST``).
#: The driver refuses older ones itself; these let a sweep or bisect refuse them in one line
#: before anything is installed or run.
#: the clients whose versions are the Go module proxy's (``harness.clients.go_worker``)
GO_CLIENTS = {w.name: w for w in (FRANZ_GO_WORKER, SARAMA_WORKER)}
_OLDEST: dict[str, tuple[int, ...]] = {
    **PYTHON_OLDEST,
    "java": JAVA_OLDEST,
    "kafkajs": KAFKAJS_OLDEST,
    "ckjs": CKJS_OLDEST,
    **{name: worker.oldest for name, worker in GO_CLIENTS.items()},
}
KAFKA_PYTHON_OLDEST = _OLDEST["kafka-python"]
#: the clients whose versions are PyPI's releases
PYPI_CLIENTS = ("kafka-python", "confluent-kafka")
#: the clients whose versions are the npm registry's releases, and their packages
NPM_CLIENTS = {"kafkajs": "kafkajs", "ckjs": CKJS_PACKAGE}
NPM_JSON = "https://registry.npmjs.org/{name}"


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1, else argparse's one-line usage error."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "sweep",
        help="run suites on every Kafka release (or client version) in a range (resumable), into one campaign",
        description="Run suites on each Kafka release (--over kafka) or each version of one client library "
        "(--over client) in a range, all into one campaign (then 'highwater report' shows them side by "
        "side). Resumable: the same --campaign runs only the versions not yet recorded. Exit 0: every "
        "version has an outcome (the summary says which failed), 4: refused, 130: interrupted.",
    )
    s.add_argument("tests", nargs="*", help="pytest node ids or paths (default: suites/conformance suites/sweep)")
    s.add_argument(
        "--over",
        choices=["kafka", "client", "path"],
        default="kafka",
        help="sweep Kafka releases, versions of the --client library against one Kafka release, or upgrade "
        "paths between the releases of --kafka-versions (the upgrades suite, one cell per path)",
    )
    s.add_argument(
        "--upgrade-to",
        default=None,
        metavar="B",
        help="with --over path: only the paths ending at release B (default: every path of the range)",
    )
    s.add_argument(
        "--kafka-versions", default=None, help="Kafka releases LOW..HIGH, e.g. 3.3.1..newest or 3.5.0..3.9.1"
    )
    s.add_argument(
        "--versions",
        default=None,
        help="the versions to sweep, comma-separated (Kafka releases, or with --over client)",
    )
    s.add_argument("--from", dest="low", default=None, metavar="A", help="a range of published versions from A ...")
    s.add_argument("--to", dest="high", default=None, metavar="B", help="... to B (default: the newest)")
    s.add_argument(
        "--newest-patch-only",
        action="store_true",
        help="only the newest patch release of each minor line in the range (default: every release)",
    )
    s.add_argument(
        "--newest",
        type=_positive,
        default=None,
        metavar="N",
        help="only the N newest versions of the range, after --newest-patch-only (default: every one), "
        "e.g. a nightly's newest few client versions: --over client --client confluent-kafka --newest 3",
    )
    s.add_argument("--kafka-version", default=None, help="with --over client: the Kafka release (default: newest)")
    _common(s)
    s.add_argument("--campaign", default=None, help="campaign name; the same name resumes an interrupted sweep")
    s.add_argument(
        "--shard",
        type=shard_spec,
        default=None,
        metavar="I/N",
        help="sweep only shard I of N of the versions (every N-th, from the I-th), for a CI matrix: the same "
        "--campaign on every shard, then 'highwater report' over the merged results (needs --campaign)",
    )
    s.add_argument(
        "--master",
        default=None,
        metavar="URL",
        help="run the sweep's cells (release x client x suite) as Spark tasks, one run per task slot: "
        "local[N] on this machine, spark://HOST:PORT on a standalone cluster whose machines all see "
        "--results at the same path (default: one version after another here, without Spark)",
    )
    s.set_defaults(func=cmd_sweep)
    b = sub.add_parser(
        "bisect",
        help="find the first version where a scenario's verdict changes",
        description="Run one scenario --runs times on versions between --good and --bad, halving the range, "
        "and print the boundary with its confidence. Exit 0: found, 4: refused (the ends do not "
        "differ, a version that does not exist), 130: interrupted.",
    )
    b.add_argument("scenario", help="a suite test's node id, e.g. 'suites/conformance/test_kip320.py::test_x'")
    b.add_argument("--good", required=True, help="a version where the scenario passes")
    b.add_argument("--bad", required=True, help="a version where it fails (may be older than --good: a fix)")
    b.add_argument("--runs", type=int, default=3, help="runs per probed version, seeded (default: 3)")
    b.add_argument(
        "--over",
        choices=["kafka", "client"],
        default="kafka",
        help="bisect Kafka releases, or versions of the --client library against one Kafka release",
    )
    b.add_argument("--kafka-version", default=None, help="with --over client: the Kafka release (default: newest)")
    ends = b.add_mutually_exclusive_group()
    ends.add_argument(
        "--upgrade-from",
        metavar="A",
        default=None,
        help="bisect the end of an upgrade path: each probed release B is reached by rolling a cluster "
        "started on A (the upgrades suite's scenarios)",
    )
    ends.add_argument(
        "--upgrade-to",
        metavar="B",
        default=None,
        help="bisect the start of an upgrade path: each probed release A is rolled to B",
    )
    _common(b)
    b.set_defaults(func=cmd_bisect)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile", default="ci", choices=["ci", "nightly"], help="run lengths, rates and seeds (highwater.profiles)"
    )
    p.add_argument("--backend", default=DEFAULT_BACKEND, help="where the clusters run (see harness.backend)")
    p.add_argument(
        "--client",
        default=DEFAULT_CLIENT,
        help=f"client spec(s) (default: {DEFAULT_CLIENT}); with --over client, the library's name alone",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="seed of the runs' schedules (default: each suite's own seeds)"
    )
    p.add_argument("--results", default="results", help="where campaigns and their runs are written")
    add_progress_arg(p)


@dataclass(frozen=True)
class SweepAxis:
    """What a sweep varies, one version per cell: the versions, how the state file names the
    sweep (``plan``), how a version is made ready (``prepare``: raises ``HighwaterError`` to
    skip it) and which client and Kafka release a cell runs."""

    what: str  # a version in progress lines: "release" (Kafka), the client's name, or "path"
    versions: list[str]
    plan: dict[str, object]
    prepare: Callable[[str], None]
    client: Callable[[str], str]
    kafka: Callable[[str], list[str]]
    summary: str  # "12 releases", "3 kafka-python versions on Kafka 4.4.0", "7 upgrade paths"
    extra: Callable[[str], list[str]] = lambda _version: []  # the child pytest's own options for a cell


def _no_range_options(args: argparse.Namespace) -> bool:
    return args.versions is None and args.low is None and args.high is None


def _range_end(args: argparse.Namespace, listed: Sequence[str] | None) -> str | None:
    """``--to``, or ``newest`` when ``--newest N`` is the only selection: the N newest of all."""
    if args.newest is not None and listed is None and args.low is None and args.high is None:
        return "newest"
    return args.high


def kafka_axis(args: argparse.Namespace) -> SweepAxis:
    """A sweep over Kafka releases (the default): the suites on each, with ``--client``."""
    if args.kafka_version is not None:
        raise SweepError(
            "--kafka-version is for --over client; a Kafka sweep's releases are --kafka-versions LOW..HIGH, "
            "--versions A,B or --from A --to B"
        )
    clients = parse_client_specs(args.client)
    if args.kafka_versions is not None:
        if not _no_range_options(args):
            raise SweepError("give the releases once: --kafka-versions LOW..HIGH, --versions A,B or --from A --to B")
        low, high = parse_range(args.kafka_versions)
        releases = releases_in_range(published_versions(), low, high)
        selection = args.kafka_versions
    else:
        listed = parse_version_list(args.versions) if args.versions is not None else None
        releases = select_versions(
            published_versions(),
            listed,
            args.low,
            _range_end(args, listed),
            floor=MIN_VERSION,
            what="Kafka",
            why="the first release with production KRaft",
        )
        selection = selection_text(listed, args.low, args.high)
    if args.newest_patch_only:
        releases = newest_patches(releases)
    releases = newest(releases, args.newest)
    preflight((), clients, backend=args.backend, progress=_say)  # every client installable, before any run
    plan: dict[str, object] = {
        "range": selection,
        "newest_patch_only": args.newest_patch_only,
        **({"newest": args.newest} if args.newest is not None else {}),
        "tests": list(args.tests or DEFAULT_SWEEP_TESTS),
        "client": args.client,
        "profile": args.profile,
        "backend": args.backend,
        "seed": args.seed,
    }
    return SweepAxis(
        what="release",
        versions=releases,
        plan=plan,
        prepare=_prepare_kafka,
        client=lambda _release: str(args.client),
        kafka=lambda release: [release],
        summary=f"{len(releases)} releases",
    )


#: what a sweep over upgrade paths runs unless told: the upgrades suite's make-test case on each
#: path (give ``suites/conformance/test_upgrades.py`` for every case)
UPGRADE_TESTS = [
    "suites/conformance/test_upgrades.py::test_a_roll_with_a_node_killed_in_the_mixed_window_then_finalized_keeps_everything"
]


def path_axis(args: argparse.Namespace) -> SweepAxis:
    """A sweep over upgrade paths (``--over path --kafka-versions LOW..HIGH [--upgrade-to B]``):
    the upgrades suite once per path (``highwater.sweep.upgrade_paths``), its cluster started on
    the path's start (``--upgrade-from``) and rolled to its end (``--kafka-version``)."""
    if args.kafka_versions is None or not _no_range_options(args) or args.kafka_version is not None:
        raise SweepError("--over path takes the releases as --kafka-versions LOW..HIGH (and --upgrade-to B)")
    low, high = parse_range(args.kafka_versions)
    paths = upgrade_paths(releases_in_range(published_versions(), low, high), args.upgrade_to)
    paths = paths if args.newest is None else paths[-args.newest :]  # the paths of the newest starts
    preflight((), parse_client_specs(args.client), backend=args.backend, progress=_say)
    plan: dict[str, object] = {
        "upgrade_paths": args.kafka_versions,
        **({"upgrade_to": args.upgrade_to} if args.upgrade_to else {}),
        "tests": list(args.tests or UPGRADE_TESTS),
        "client": args.client,
        "profile": args.profile,
        "backend": args.backend,
        "seed": args.seed,
    }

    def prepare(path: str) -> None:
        for release in path_ends(path):
            ensure_kafka(release, _say)

    return SweepAxis(
        what="path",
        versions=paths,
        plan=plan,
        prepare=prepare,
        client=lambda _path: str(args.client),
        kafka=lambda path: [path_ends(path)[1]],
        summary=f"{len(paths)} upgrade paths",
        extra=lambda path: ["--upgrade-from", path_ends(path)[0]],
    )


def library_of(text: str, over: str = "sweep") -> ClientSpec:
    """``--client`` of a sweep or bisect over client versions: one library, without a version
    (the versions are the sweep's ``--versions`` or range, the bisect's ``--good`` and ``--bad``)."""
    if "," in text:
        raise SweepError(f"--over client {over}s one client library: --client NAME, not {text!r}")
    spec = parse_client_spec(text)
    if spec.path is not None:
        raise SweepError(
            f"--over client {over}s released versions of a library, not a local build: --client {spec.name}"
        )
    if spec.version is not None:
        versions = "--good and --bad" if over == "bisect" else "--versions or --from/--to"
        raise SweepError(f"with --over client the versions are {versions}: --client {spec.name}, not --client {text}")
    return spec


def client_axis(args: argparse.Namespace, state_path: Path) -> SweepAxis:
    """A sweep over versions of one client library against one Kafka release."""
    if args.kafka_versions is not None:
        raise SweepError(
            "--kafka-versions is the range of a Kafka sweep; with --over client give --versions A,B or "
            "--from A --to B (client versions) and --kafka-version V"
        )
    spec = library_of(args.client)
    listed = parse_version_list(args.versions, spec.name) if args.versions is not None else None
    versions = select_versions(
        client_versions(spec.name, listed or ()),  # a Go proxy's list may leave a named one out
        listed,
        args.low,
        _range_end(args, listed),
        floor=oldest_driven(spec.name) or (0,),
        what=spec.name,
        why="the oldest its driver supports",
    )
    if args.newest_patch_only:
        versions = newest_patches(versions)
    versions = newest(versions, args.newest)
    # the Kafka release: as asked, else the one a resumed sweep ran on, else the newest now
    recorded = recorded_plan(state_path) or {}
    kafka = args.kafka_version or (
        str(recorded["kafka_version"]) if recorded.get("over") == "client" and recorded.get("kafka_version") else None
    )
    kafka = kafka or default_version(_say)
    preflight([kafka], (), backend=args.backend, progress=_say)  # the release exists (and is assembled)
    plan: dict[str, object] = {
        "over": "client",
        "client": spec.name,
        "versions": selection_text(listed, args.low, args.high),
        "newest_patch_only": args.newest_patch_only,
        **({"newest": args.newest} if args.newest is not None else {}),
        "kafka_version": kafka,
        "tests": list(args.tests or DEFAULT_SWEEP_TESTS),
        "profile": args.profile,
        "backend": args.backend,
        "seed": args.seed,
    }
    return SweepAxis(
        what=spec.name,
        versions=versions,
        plan=plan,
        prepare=lambda v: preflight((), [ClientSpec(spec.name, v)], progress=_say),  # installs it
        client=lambda v: str(ClientSpec(spec.name, v)),
        kafka=lambda _v: [kafka],
        summary=f"{len(versions)} {spec.name} versions on Kafka {kafka}",
    )


def shard_versions(versions: Sequence[str], shard: Shard | None) -> list[str]:
    """The versions of ``shard``: every N-th of the sweep's (sorted) list from the I-th, so each
    shard gets old and new releases alike and the N shards cover the list exactly once."""
    return list(versions) if shard is None else list(versions)[shard.index - 1 :: shard.total]


def state_file(shard: Shard | None) -> str:
    """The sweep's state file in its campaign: one per shard, so shards sharing a results
    directory never resume each other's versions."""
    return STATE_FILE if shard is None else STATE_FILE.replace(".json", f".shard-{shard.index}-of-{shard.total}.json")


def cmd_sweep(args: argparse.Namespace) -> int:
    get_backend(args.backend)
    shard: Shard | None = getattr(args, "shard", None)
    if shard is not None and args.campaign is None:
        raise SweepError("--shard needs --campaign NAME: every shard writes into that one campaign")
    tests = args.tests or (UPGRADE_TESTS if args.over == "path" else DEFAULT_SWEEP_TESTS)
    swept = f"{library_of(args.client).name}-" if args.over == "client" else "paths-" if args.over == "path" else ""
    campaign = args.campaign or f"sweep-{swept}{args.profile}-{time.strftime('%Y%m%dT%H%M%S')}"
    master = checked_master(
        getattr(args, "master", None), args.results
    )  # one line before anything starts: a bad or unreachable master
    state_path = Path(args.results) / campaign / (state_file(shard) if master is None else cells_state_file(shard))
    if args.upgrade_to is not None and args.over != "path":
        raise SweepError("--upgrade-to is for --over path")
    axis = {"client": client_axis, "path": lambda a, _state: path_axis(a)}.get(args.over, lambda a, _s: kafka_axis(a))(
        args, state_path
    )
    if shard is not None:
        mine = shard_versions(axis.versions, shard)
        if not mine:
            _say(f"sweep {campaign}: shard {shard} has none of the {len(axis.versions)} versions: nothing to run")
            return Exit.OK
        axis = replace(axis, versions=mine, summary=f"{axis.summary}, shard {shard}: {len(mine)}")
    if master is not None:
        return sweep_spread(
            master=master,
            settings=CellSettings(
                campaign=campaign,
                results=str(Path(args.results).resolve()),
                profile=args.profile,
                backend=args.backend,
                seed=args.seed,
                cwd=os.getcwd(),
            ),
            state_path=state_path,
            plan=axis.plan,
            versions=axis.versions,
            kafka_of=axis.kafka,
            clients_of=axis.client,
            tests=tests,
            summary=axis.summary,
            say=_say,
            upgrade_from_of=(lambda path: path_ends(path)[0]) if args.over == "path" else (lambda _version: None),
        )
    state = load_or_start(state_path, axis.plan, axis.versions)
    _say(f"sweep {campaign}: {axis.summary} ({', '.join(state.releases)}), {len(state.pending())} to run")

    def run_version(version: str) -> int:
        return PytestRun(
            tests=tests,
            campaign=campaign,
            profile=args.profile,
            backend=args.backend,
            client=axis.client(version),
            kafka_versions=axis.kafka(version),
            seed=args.seed,
            results=args.results,
            extra=[*progress_args(args), *axis.extra(version)],
        ).call()

    state = run_sweep(state, state_path, axis.prepare, run_version, _say, what=axis.what)
    for line in summary_lines(state):
        print(line)
    print(f"report: highwater report {Path(args.results) / campaign}")
    return Exit.OK if not state.pending() else Exit.INTERRUPTED  # run_sweep stops early only when interrupted


def _prepare_kafka(version: str) -> None:
    ensure_kafka(version, _say)


def _stable_releases(url: str, what: str, pick: Callable[[dict[str, Any]], dict[str, bool]]) -> list[str]:
    """The stable ``X.Y.Z`` releases in a registry's JSON document at ``url``, oldest first:
    ``pick`` maps the document to each version and whether it can still be installed."""
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:
            usable = pick(json.load(resp))
        stable = []
        for version, ok in usable.items():
            try:
                version_key(version)
            except SweepError:
                continue
            if ok:
                stable.append(version)
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SetupError(f"cannot list {what}: {exc}") from exc
    return sorted(stable, key=version_key)


def pypi_versions(name: str) -> list[str]:
    """The stable releases (``X.Y.Z``, no pre-releases) of a PyPI project that can still be
    installed (some file not yanked), oldest first."""
    return _stable_releases(
        PYPI_JSON.format(name=name),
        f"{name} versions on PyPI",
        lambda doc: {v: any(not f.get("yanked", False) for f in files) for v, files in doc["releases"].items()},
    )


def npm_versions(name: str) -> list[str]:
    """The stable releases (``X.Y.Z``, no pre-releases) of an npm package that are not
    deprecated, oldest first."""
    return _stable_releases(
        NPM_JSON.format(name=name),
        f"{name} versions on the npm registry",
        lambda doc: {v: not meta.get("deprecated") for v, meta in doc["versions"].items()},
    )


def client_versions(name: str, named: Sequence[str] = ()) -> list[str]:
    """Published versions of a client library, oldest first: Kafka's Java client is released
    with every Kafka release; kafka-python's and confluent-kafka's are PyPI's, kafkajs's the
    npm registry's (ckjs's: @confluentinc/kafka-javascript's), the Go clients' the Go module
    proxy's, with the versions of ``named`` it serves though its list leaves them out."""
    if name == "java":
        return published_versions()
    if name in PYPI_CLIENTS:
        return pypi_versions(name)
    if name in NPM_CLIENTS:
        return npm_versions(NPM_CLIENTS[name])
    if name in GO_CLIENTS:
        return go_worker.published_versions(GO_CLIENTS[name], also=named)
    raise BisectError(f"no version list is known for client {name!r}; sweep or bisect over Kafka releases instead")


def oldest_driven(name: str) -> tuple[int, ...] | None:
    """The oldest version of a client library its driver accepts (None: no limit known)."""
    return _OLDEST.get(name)


def check_driven(name: str, versions: Sequence[str]) -> None:
    """Refuse, in one line and before any run, a bisect end the client's driver would refuse
    (every run of it would be an error, judged unknown, and the end never what it was said to be)."""
    oldest = oldest_driven(name)
    if oldest is None:
        return
    for v in versions:
        if version_key(v, name) < oldest:
            raise BisectError(
                f"{name} {v} is older than its driver supports ({'.'.join(map(str, oldest))}): "
                "choose --good and --bad from there on"
            )


def search_order(all_versions: list[str], good: str, bad: str, what: str = "") -> list[str]:
    """The versions from ``good`` to ``bad`` inclusive, in the direction of the search."""
    for v in (good, bad):
        if v not in all_versions:
            name = f"{what} {v}" if what else v
            raise BisectError(f"{name} is not a published version (newest: {', '.join(all_versions[-3:])})")
    lo, hi = sorted((all_versions.index(good), all_versions.index(bad)))
    span = all_versions[lo : hi + 1]
    return span if span[0] == good else list(reversed(span))


def _bisect_path(args: argparse.Namespace) -> Callable[[str], tuple[str, str]] | None:
    """With ``--upgrade-from A`` / ``--upgrade-to B``: the path a probed release is on
    (``(A, release)`` / ``(release, B)``); None for a bisect of releases alone."""
    if args.upgrade_from is None and args.upgrade_to is None:
        return None
    if args.over != "kafka":
        raise BisectError("--upgrade-from and --upgrade-to bisect Kafka releases on a path, not --over client")
    check_supported(args.upgrade_from or args.upgrade_to)
    start, end = args.upgrade_from, args.upgrade_to
    return (lambda v: (start, v)) if start is not None else (lambda v: (v, end))


def _check_path(start: str, end: str) -> None:
    """A path Kafka does not take (``faults.release.path_refusal``): one line."""
    from highwater.faults.release import path_refusal

    refused = path_refusal(start, end)
    if refused is not None:
        raise BisectError(refused)


def cmd_bisect(args: argparse.Namespace) -> int:
    get_backend(args.backend)
    if args.runs < 1:
        raise BisectError("--runs must be at least 1")
    # everything checked before any run: the ends exist and are supported, the client installs,
    # the Kafka release of a client bisect exists (assembled now), the path's ends are a path
    path_of = _bisect_path(args)
    if args.over == "client":
        library = library_of(args.client, "bisect")
        check_driven(library.name, [args.good, args.bad])
        order = search_order(client_versions(library.name, [args.good, args.bad]), args.good, args.bad, library.name)
        kafka = args.kafka_version or default_version(_say)
        preflight([kafka], (), backend=args.backend, progress=_say)
        on = f" on Kafka {kafka}"

        def prepare(version: str) -> None:
            preflight((), [ClientSpec(library.name, version)], progress=_say)  # installs it

        def cell(version: str) -> tuple[str, list[str]]:
            return str(ClientSpec(library.name, version)), [kafka]

        def extra(version: str) -> list[str]:
            return []
    else:
        if args.kafka_version is not None:
            raise BisectError("--kafka-version is for --over client; bisecting Kafka releases, they are --good..--bad")
        client = parse_client_spec(args.client)
        for end in (args.good, args.bad):
            check_supported(end)
        order = search_order(published_versions(), args.good, args.bad, "Kafka")
        on = ""
        if path_of is not None:
            for end in (args.good, args.bad):
                _check_path(*path_of(end))
            on = f" as the {'end' if args.upgrade_from else 'start'} of an upgrade path"
        preflight((), [client], backend=args.backend, progress=_say)

        def prepare(version: str) -> None:
            for release in path_of(version) if path_of is not None else (version,):
                ensure_kafka(release, _say)
            if path_of is not None:
                _check_path(*path_of(version))  # a release the path cannot take is set aside

        def cell(version: str) -> tuple[str, list[str]]:
            return str(client), [version if path_of is None else path_of(version)[1]]

        def extra(version: str) -> list[str]:
            return [] if path_of is None else ["--upgrade-from", path_of(version)[0]]

    campaign = f"bisect-{time.strftime('%Y%m%dT%H%M%S')}"
    base_seed = args.seed if args.seed is not None else 1
    _say(
        f"bisect {args.scenario} over {len(order)} {args.over} versions{on}, {args.runs} runs each; campaign {campaign}"
    )

    def judge(version: str) -> Probe:
        t = time.monotonic()
        probe = judge_runs(version)
        _say(f"{version}: {probe.runs} runs in {(time.monotonic() - t) / 60:.1f} min")
        return probe

    def judge_runs(version: str) -> Probe:
        try:  # assemble the release, or install the client version; set aside when it cannot be
            prepare(version)
        except HighwaterError as exc:
            _say(f"{version} cannot be {'assembled' if args.over == 'kafka' else 'installed'} ({exc}); set aside")
            return Probe(version, runs=0, failed=0, unknown=1)
        client_spec, kafka_versions = cell(version)
        failed = unknown = 0
        for i in range(args.runs):
            code = PytestRun(
                tests=[args.scenario],
                campaign=campaign,
                profile=args.profile,
                backend=args.backend,
                client=client_spec,
                kafka_versions=kafka_versions,
                seed=base_seed + i,
                results=args.results,
                extra=("--runxfail", "-q", *progress_args(args), *extra(version)),
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
