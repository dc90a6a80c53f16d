"""The pytest plugin (entry point ``highwater``): options and a few well-named fixtures.

- ``kafka_version``: the version under test (``--kafka-version`` or ``HIGHWATER_KAFKA_VERSION``,
  default: the newest stable release on Maven Central).
- ``backend``: the backend name (``--backend``, default ``local``; see ``harness.backend``).
- ``client_name``: the client under test as a client spec (``--client``, default
  ``kafka-python``; a comma-separated list such as ``kafka-python,confluent-kafka,java:3.9.1``
  runs every test on each; see ``harness.clients``). ``--client-rotation A,B,C`` instead runs
  the n-th scenario of a test marked ``client_rotation`` on the n-th client, in turn
  (``rotated_client``; what ``make test`` does for the fetching and durability suites), and a
  test marked ``client_turns(A, B, ...)`` once on each of the clients it names (the newest
  clients' turn at a suite whose every scenario the rotation gives the older ones).
- ``run_seed``: ``--seed N`` (default None: each suite's own seeds); a chaos run plays the
  schedule of that seed.
- ``cluster_factory``: start clusters from a ``ClusterSpec`` on that backend; all are torn down
  after the test, with their logs collected to ``results/logs/<test>/`` when the test failed.
- ``cluster``: a 3-broker, 3-rack cluster shared by a test module. To share one across modules,
  a conftest makes a package- or session-scoped fixture of ``shared_cluster`` and a module-scoped
  ``cluster`` of ``healed_for_module`` (as ``suites/`` and ``tests/integration`` do).
- ``highwater_results``: where scenario runs are written (``highwater.scenarios.Results``:
  ``--highwater-results DIR``, default ``results``; ``--highwater-campaign NAME``, default
  ``scenarios-<timestamp>``).
- ``highwater_run``: ``highwater.scenarios.run`` bound to the session's client, seed and results
  and to the command that reruns the test: ``highwater_run(cluster, scenario)``
  (docs/writing-scenarios.md). With these a project of its own needs no conftest of highwater's.

``--highwater-findings FILE`` (repeatable) adds a project's own known findings to every run's
classification, as ``$HIGHWATER_FINDINGS`` does (the file is read at once: a bad one is a usage
error).

At session start, before collection, every Kafka release and client asked for (``--kafka-version``,
``--client``, ``--client-rotation``) is made ready once (``highwater.preflight``); one that cannot
be is a usage error, one line, and no test runs.

Shards (``--shard I/N``, 1 <= I <= N; ``highwater run``/``campaign`` pass theirs): after
collection (and after ``-k``, ``-m`` and ``--deselect``), only shard I of the tests is kept, the
rest reported as deselected; every shard computes the same split from the collected node ids
(``highwater.pytest_runs.partition``). Tests that judge one cached run stay in one shard: those
of a module with the same value of the parameter named by their ``client_rotation(param, ...)``
or ``shared_run(param)`` marker (and the same Kafka version and client). Shards given the same
``--campaign`` and ``--results`` write into one campaign (run ids are unique), and ``highwater
report`` of it after the last shard reports them all. A shard left without tests while the
others have some exits 0, not pytest's "no tests collected".

Live progress (``--highwater-progress auto|rich|plain|off``, default ``$HIGHWATER_PROGRESS`` or
off; ``highwater run``/``campaign``/``sweep``/``bisect`` pass their ``--progress``): a line per
test (``[i/n] node id``, elapsed, about how long is left), per phase of a run, per change of the
faults active, and the events' rate at most every 10 s (``highwater.progress``), written live
past pytest's output capture; coloured on a terminal, plain in a log.

The fixtures are typed by the backend protocols (``ClusterBackend``); a test that needs link or
process control asks for it (``isinstance(cluster, LinkControl)``) or lets a fault be refused.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from highwater.core.errors import HighwaterError
from highwater.core.versions import exact_release
from highwater.harness.backend import ClusterBackend, heal, unhealed
from highwater.harness.backends import DEFAULT_BACKEND, BackendError, get_backend, start_backend
from highwater.harness.clients import (
    DEFAULT_CLIENT,
    ClientSpec,
    UnknownClientError,
    client_names,
    parse_client_spec,
    parse_client_specs,
)
from highwater.harness.config import ClusterSpec

from . import progress as live
from .preflight import preflight, split_versions
from .pytest_runs import Shard, partition, shard_spec

if TYPE_CHECKING:  # imported by the fixtures that use them: the plugin loads in every pytest session
    from highwater.scenarios import Results, ScenarioRunner

ClusterFactory = Callable[..., ClusterBackend]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("highwater")
    group.addoption(
        "--kafka-version",
        action="append",
        default=None,
        help="Kafka version(s) to test, repeatable or comma-separated; every test runs on "
        "each (default: $HIGHWATER_KAFKA_VERSION or the newest stable)",
    )
    group.addoption(
        "--highwater-logs",
        action="store",
        default="results/logs",
        help="where logs of clusters of failed tests are collected",
    )
    group.addoption(
        "--backend",
        action="store",
        default=DEFAULT_BACKEND,
        help=f"where test clusters run (default: {DEFAULT_BACKEND}; see harness.backend)",
    )
    group.addoption(
        "--cluster-file",
        action="store",
        default=None,
        help="with --backend external: the cluster file (docs/external-clusters.md)",
    )
    group.addoption(
        "--keep-topics",
        action="store_true",
        default=False,
        help="with --backend external: keep the topics the tests created (default: deleted at the end)",
    )
    group.addoption(
        "--client",
        action="store",
        default=DEFAULT_CLIENT,
        help=f"the client(s) under test, comma-separated, each NAME[==VERSION] (default: {DEFAULT_CLIENT}; "
        f"known: {', '.join(client_names())}); every test that uses a client runs on each",
    )
    group.addoption(
        "--client-rotation",
        default=None,
        help="comma-separated clients: a test marked client_rotation runs its n-th scenario on the n-th "
        "client (in turn), instead of the session's client; every client runs some scenarios of the "
        "suite for the price of one client (make test); the full matrix is --client A,B,C",
    )
    group.addoption(
        "--seed",
        action="store",
        type=int,
        default=None,
        help="the seed of the runs' schedules (default: each suite's own seeds)",
    )
    group.addoption(
        "--shard",
        type=shard_spec,
        default=None,
        metavar="I/N",
        help="run only shard I of N of the collected tests (1 <= I <= N), the rest deselected; every "
        "shard splits alike, tests sharing a run stay together (CI matrices: the same --campaign and "
        "--results for every shard, one report after the last)",
    )
    group.addoption(
        "--upgrade-from",
        default=None,
        metavar="RELEASE",
        help="the release the upgrades suite's clusters start on and roll from to --kafka-version "
        "(default: 3.9.1; faults.release)",
    )
    group.addoption(
        "--highwater-progress",
        choices=live.MODES,
        default=os.environ.get(live.ENV) or "off",
        help="live progress lines (test i of n, elapsed and remaining, phase, active faults, events/s): "
        "auto/rich coloured on a terminal, plain, or off (default: $HIGHWATER_PROGRESS, else off)",
    )
    group.addoption(
        "--highwater-results",
        default="results",
        help="where highwater_run writes its runs: <DIR>/<campaign>/<run id>/ (default: results)",
    )
    group.addoption(
        "--highwater-campaign",
        default=None,
        help="the campaign of highwater_run's runs (default: scenarios-<timestamp>)",
    )
    group.addoption(
        "--highwater-findings",
        action="append",
        default=[],
        metavar="FILE",
        help="a findings file of the project's own (core/findings.toml's format), repeatable: violations "
        "it explains are known (added to $HIGHWATER_FINDINGS)",
    )
    group.addoption(
        "--highwater-exit-codes",
        action="store_true",
        default=False,
        help="when every failed test failed for the harness (an error that is no assertion: a wait that "
        "timed out, a cluster that did not start, a bug), exit 4 rather than pytest's 1, which then means "
        "a verdict; highwater run, sweep and bisect ask for it (default: pytest's own codes)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a real Kafka cluster (slow)")
    config.addinivalue_line(
        "markers",
        "client_rotation(param, values, first=None, also=()): with --client-rotation, the n-th value of "
        "param runs on the n-th client (starting at first; also: clients added to the rotation for it)",
    )
    config.addinivalue_line(
        "markers",
        "client_turns(*clients): with --client-rotation, the test runs once on each of these clients "
        "(instead of the session's client); a client given as pytest.param(name, marks=...) takes its marks",
    )
    config.addinivalue_line(
        "markers",
        "shared_run(param): the tests of a module with the same value of param judge one cached run: "
        "--shard keeps them in one shard (client_rotation(param, ...) says the same)",
    )
    config.addinivalue_line(
        "markers",
        "nightly(reason, seconds): highwater's own make test leaves the test out for its time budget (the "
        "reason says what covers it there); its CI runs it in rotating --shard slices weighted by seconds",
    )
    try:
        get_backend(config.getoption("--backend"))
    except BackendError as exc:
        raise pytest.UsageError(str(exc)) from None
    start = config.getoption("--upgrade-from")
    if start is not None and exact_release(start) is None:
        raise pytest.UsageError(f"--upgrade-from {start!r}: a release is MAJOR.MINOR.PATCH, e.g. 3.9.1")
    cluster_file = config.getoption("--cluster-file")
    if config.getoption("--backend") == "external" and cluster_file is None:
        cluster_file = os.environ.get("HIGHWATER_CLUSTER_FILE")
        if not cluster_file:
            raise pytest.UsageError("backend 'external' needs --cluster-file FILE (docs/external-clusters.md)")
    if cluster_file is not None:
        from highwater.harness.external import ENV_CLUSTER_FILE, ENV_KEEP_TOPICS, load_cluster_file

        try:
            load_cluster_file(cluster_file)  # a malformed file fails before any test starts
        except HighwaterError as exc:
            raise pytest.UsageError(str(exc)) from None
        os.environ[ENV_CLUSTER_FILE] = os.path.abspath(cluster_file)  # the backend factory reads it
        if config.getoption("--keep-topics"):
            os.environ[ENV_KEEP_TOPICS] = "1"
    findings = [os.path.abspath(f) for f in config.getoption("--highwater-findings")]
    if findings:
        from highwater.core.findings import ENV as FINDINGS_ENV
        from highwater.core.findings import configured

        try:
            configured([Path(f) for f in findings])  # a bad file fails before any test starts
        except HighwaterError as exc:
            raise pytest.UsageError(str(exc)) from None
        known = [f for f in os.environ.get(FINDINGS_ENV, "").split(os.pathsep) if f.strip()]
        os.environ[FINDINGS_ENV] = os.pathsep.join(dict.fromkeys([*known, *findings]))  # every run reads it
    requested_and_rotated_clients(config)  # a bad spec: one line at once (the rest waits for the session)
    mode = config.getoption("--highwater-progress")
    if mode != "off":
        config.pluginmanager.register(LiveProgress(config, styled=mode != "plain"), LiveProgress.NAME)


class LiveProgress:
    """The live progress of a pytest session (``--highwater-progress``): installed as the
    process's reporter (``highwater.progress``) for the session; its lines are written through
    pytest's terminal writer with output capture suspended, as pytest's live logging does."""

    NAME = "highwater-live-progress"
    #: pytest terminal markup of each kind of line
    MARKUP: dict[str, dict[str, bool]] = {
        "step": {"bold": True, "cyan": True},
        "phase": {"blue": True},
        "fault": {"yellow": True, "bold": True},
        "healed": {"green": True},
        "events": {"light": True},
    }

    def __init__(self, config: pytest.Config, styled: bool = True) -> None:
        self.config = config
        self.styled = styled
        self.lock = threading.Lock()
        self.reporter = live.LineReporter(self.write)
        self.total = 0
        self.index = 0
        self.previous: live.Reporter | None = None

    def write(self, kind: str, line: str) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        suspended: AbstractContextManager[object] = (
            capture.global_and_fixture_disabled() if capture is not None else nullcontext()
        )
        with self.lock, suspended:
            if terminal is None:
                print(f"[highwater] {line}", flush=True)
                return
            terminal.ensure_newline()
            # a result letter ('.') may end the line so far
            if getattr(getattr(terminal, "_tw", None), "width_of_current_line", False):
                terminal.write("\n")
            markup = self.MARKUP.get(kind, {}) if self.styled else {}
            terminal.write_line(f"[highwater] {line}", **markup)
            terminal.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.previous = live.install(self.reporter)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(tryfirst=True)  # before pytest writes the test's file name
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.index += 1
        self.reporter.step(self.index, max(self.total, self.index), nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.previous is not None:
            live.install(self.previous)


def requested_and_rotated_clients(config: pytest.Config) -> list[ClientSpec]:
    """Every client spec of ``--client`` and ``--client-rotation``; a bad one is a usage error."""
    try:
        specs = parse_client_specs(config.getoption("--client"))
        if config.getoption("--client-rotation"):
            specs += parse_client_specs(config.getoption("--client-rotation"))
    except UnknownClientError as exc:
        raise pytest.UsageError(str(exc)) from None
    return specs


#: what ``--shard`` did: the shard, the tests collected before the split, the tests it kept
SHARDED = pytest.StashKey[tuple[Shard, int, int]]()
#: the node ids of failed tests, by why: for the harness (an error that is no assertion) or for a verdict
HARNESS_FAILED = pytest.StashKey[list[str]]()
VERDICT_FAILED = pytest.StashKey[list[str]]()
#: parameter values that name themselves alike in every process (others are named by position)
_PLAIN = (str, int, float, bool, type(None))


def shard_group(item: pytest.Item) -> str:
    """The key that keeps a test in one shard with the tests it shares a cached run with (those
    of its module with the same value of the parameter its ``shared_run(param)`` or
    ``client_rotation(param, ...)`` marker names, and the same Kafka version and client: the
    key of ``suites.scenario.run_once``); any other test's is its node id."""
    marker = item.get_closest_marker("shared_run") or item.get_closest_marker("client_rotation")
    callspec = getattr(item, "callspec", None)
    if marker is None or callspec is None or not marker.args or marker.args[0] not in callspec.params:
        return item.nodeid
    parts = [item.nodeid.split("::", 1)[0]]
    for name in (marker.args[0], "kafka_version", "client_name"):
        if name in callspec.params:
            value = callspec.params[name]
            shown = repr(value) if isinstance(value, _PLAIN) else f"#{callspec.indices.get(name)}"
            parts.append(f"{name}={shown}")
    return "::".join(parts)


#: a test's expected seconds when it says none (a short integration test's order of magnitude)
DEFAULT_SECONDS = 30.0


def expected_seconds(item: pytest.Item) -> float:
    """What ``--shard`` weighs a test by: its ``nightly`` mark's seconds, else ``DEFAULT_SECONDS``."""
    mark = item.get_closest_marker("nightly")
    return float(mark.kwargs.get("seconds", DEFAULT_SECONDS)) if mark is not None else DEFAULT_SECONDS


@pytest.hookimpl(trylast=True)  # after -k, -m and --deselect: the shards split what is left
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--shard I/N``: keep shard I of the collected tests (``highwater.pytest_runs.partition``
    of their ``shard_group`` keys), the others deselected."""
    shard: Shard | None = config.getoption("--shard")
    if shard is None:
        return
    shards = partition([shard_group(item) for item in items], shard.total, [expected_seconds(item) for item in items])
    kept = [item for item, s in zip(items, shards) if s == shard.index]
    left = [item for item, s in zip(items, shards) if s != shard.index]
    config.stash[SHARDED] = (shard, len(items), len(kept))
    if left:
        config.hook.pytest_deselected(items=left)
    items[:] = kept


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    sharded = config.stash.get(SHARDED, None)
    if sharded is None:
        return None
    shard, collected, kept = sharded
    return f"highwater: shard {shard}: {kept} of {collected} tests (the other shards' {collected - kept} deselected)"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A shard left without tests while the session collected some has nothing to do: exit 0,
    not pytest's "no tests collected" (5, which ``highwater run`` takes for nothing judged). With
    ``--highwater-exit-codes``, failed tests that all failed for the harness are no verdict: exit
    4 (``highwater.exit_codes``), not 1."""
    config = session.config
    sharded = config.stash.get(SHARDED, None)
    if sharded is not None and sharded[1] > 0 and sharded[2] == 0 and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
    harness, verdicts = config.stash.get(HARNESS_FAILED, []), config.stash.get(VERDICT_FAILED, [])
    if config.getoption("--highwater-exit-codes") and exitstatus == pytest.ExitCode.TESTS_FAILED and harness:
        if not verdicts:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR  # highwater run's 4: no verdict
        _progress(
            f"{len(harness)} test(s) failed for the harness, not for a verdict"
            + (f" (and {len(verdicts)} for a verdict)" if verdicts else ": no verdict, exit 4")
            + f": {', '.join(harness[:3])}{' ...' if len(harness) > 3 else ''}"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Before collection and before any test: every Kafka release and client asked for must be
    usable (``highwater.preflight``: assembled, installed or built now, once), else one line
    and pytest's usage-error exit (4)."""
    config = session.config
    try:
        preflight(
            requested_versions(config),
            requested_and_rotated_clients(config),
            backend=config.getoption("--backend"),
            progress=_progress,
        )
    except HighwaterError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    setattr(item, f"highwater_rep_{report.when}", report)
    if report.failed:
        why = HARNESS_FAILED if failed_for_the_harness(call.excinfo) else VERDICT_FAILED
        item.config.stash.setdefault(why, []).append(item.nodeid)
    return report


def failed_for_the_harness(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """A failure that is no verdict: an exception that is no assertion (a suite states every
    verdict as an ``AssertionError``, ``TimedChecksOnly`` among them) or ``pytest.fail``. A
    strict xfail that passed has no exception: the behaviour changed, a verdict."""
    return excinfo is not None and not excinfo.errisinstance((AssertionError, pytest.fail.Exception))


def _failed(node: pytest.Item) -> bool:
    return any(getattr(getattr(node, f"highwater_rep_{w}", None), "failed", False) for w in ("setup", "call"))


def _safe(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid)[-120:]


def requested_versions(config: pytest.Config) -> list[str]:
    return split_versions(config.getoption("--kafka-version") or [os.environ.get("HIGHWATER_KAFKA_VERSION", "")])


def rotated_client(node: pytest.Item, rotation: str | None, default: str) -> str:
    """The client a test runs on: with ``--client-rotation`` and a ``client_rotation(param,
    values)`` marker, the one at the position of the test's ``param`` value in ``values``
    (modulo the rotation's length), so that every test judging one scenario (and a run cached
    per scenario and client) agrees; otherwise ``default``, the session's client. The marker's
    ``first=<client>`` starts the turn at that client of the rotation (a suite of fewer
    scenarios than clients then leaves out another client than the last one), and its
    ``also=(client, ...)`` adds clients the rotation does not name after its own, for that test
    only (a suite that newer clients take their turn in before every suite does)."""
    marker = node.get_closest_marker("client_rotation")
    callspec = getattr(node, "callspec", None)
    if not rotation or marker is None or callspec is None:
        return default
    clients = [c.strip() for c in rotation.split(",") if c.strip()]
    if not clients:
        return default
    named = {parse_client_spec(c).name for c in clients}
    clients += [c for c in marker.kwargs.get("also", ()) if parse_client_spec(c).name not in named]
    param, values = marker.args
    first = marker.kwargs.get("first")
    start = next((i for i, c in enumerate(clients) if parse_client_spec(c).name == first), 0)
    return clients[(start + list(values).index(callspec.params[param])) % len(clients)]


def requested_clients(config: pytest.Config) -> list[str]:
    """The client specs of ``--client``, as given (``java:3.9.1``)."""
    return [str(spec) for spec in parse_client_specs(config.getoption("--client"))]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    versions = requested_versions(metafunc.config)
    if "kafka_version" in metafunc.fixturenames and len(versions) > 1:
        metafunc.parametrize("kafka_version", versions, scope="session")
    clients = requested_clients(metafunc.config)
    turns = metafunc.definition.get_closest_marker("client_turns")
    if "client_name" in metafunc.fixturenames and turns is not None and metafunc.config.getoption("--client-rotation"):
        # function scope: a session-scoped parameter would regroup the session's tests by client,
        # and a module's cluster would start again for each turn
        metafunc.parametrize("client_name", list(turns.args), scope="function")
    elif "client_name" in metafunc.fixturenames and len(clients) > 1:
        metafunc.parametrize("client_name", clients, scope="session")


@pytest.fixture(scope="session")
def kafka_version(request: pytest.FixtureRequest) -> str:
    from highwater.harness.distribution import default_version

    versions = requested_versions(request.config)
    return versions[0] if versions else default_version()


def _progress(msg: str) -> None:
    """Clusters starting, releases assembled: live with ``--highwater-progress``, else printed
    (and captured with the test's output)."""
    reporter = live.current()
    if isinstance(reporter, live.NullReporter):
        print(f"[highwater] {msg}", flush=True)
    else:
        reporter.message(msg)


@pytest.fixture(scope="session")
def upgrade_from(request: pytest.FixtureRequest) -> str:
    """The release an upgrade's cluster starts on (``--upgrade-from``, default
    ``faults.release.DEFAULT_UPGRADE_FROM``); the suites roll it to ``kafka_version``."""
    from highwater.faults.release import DEFAULT_UPGRADE_FROM

    return str(request.config.getoption("--upgrade-from") or DEFAULT_UPGRADE_FROM)


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the backend test clusters run on (``--backend``)."""
    return str(request.config.getoption("--backend"))


@pytest.fixture(scope="session")
def client_name(request: pytest.FixtureRequest) -> str:
    """The client under test, a client spec (``--client``; parametrized when it lists several)."""
    return requested_clients(request.config)[0]


@pytest.fixture(scope="session")
def run_seed(request: pytest.FixtureRequest) -> int | None:
    """``--seed N``, or None when the suites use their own seeds."""
    seed = request.config.getoption("--seed")
    return int(seed) if seed is not None else None


@pytest.fixture
def cluster_factory(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterFactory]:
    """Start clusters with ``cluster_factory(brokers=3, racks=3, ...)`` (ClusterSpec fields)."""
    started: list[ClusterBackend] = []

    def make(**fields: object) -> ClusterBackend:
        fields.setdefault("kafka_version", kafka_version)
        cluster = start_backend(backend, ClusterSpec(**fields), _progress)  # type: ignore[arg-type]
        started.append(cluster)
        return cluster

    yield make
    logs_root = Path(request.config.getoption("--highwater-logs"))
    for i, cluster in enumerate(started):
        dest = logs_root / f"{_safe(request.node.nodeid)}-{i}" if _failed(request.node) else None
        cluster.stop(collect_logs_to=dest)


def shared_cluster(
    request: pytest.FixtureRequest,
    kafka_version: str,
    backend: str,
    uses: Callable[[pytest.Item], bool],
    name: str,
    broker_config: Mapping[str, str] | None = None,
    disk: str = "plain",
    clock: str = "real",
    tiered: bool = False,
) -> Iterator[ClusterBackend]:
    """A 3-broker, 3-rack cluster (``broker_config`` on top of the defaults; ``disk="lossy"``: its
    data directories on the disk fault layer, ``harness.diskfs``; ``clock="faked"``: its JVMs'
    wall clocks through libfaketime, ``harness.clock``) for the tests that
    ``uses`` says use it: the body of a module-, package- or session-scoped fixture. Booted once,
    stopped at the end (a failed start tears down whatever it started itself), with its logs
    collected to ``<--highwater-logs>/<name>`` (``<name>.shard-I-of-N`` with ``--shard``) when one of those tests failed. Modules that share
    it take it through ``healed_for_module``."""
    spec = ClusterSpec(
        brokers=3,
        racks=3,
        kafka_version=kafka_version,
        broker_config=dict(broker_config or {}),
        disk=disk,
        clock=clock,
        tiered=tiered,
    )
    shard: Shard | None = request.config.getoption("--shard")
    if shard is not None:  # shards on one machine keep their clusters' logs apart
        name = f"{name}.shard-{shard.index}-of-{shard.total}"
    c = start_backend(backend, spec, _progress)
    try:
        yield c
    finally:
        failed = any(_failed(item) for item in request.session.items if uses(item))
        logs_root = Path(request.config.getoption("--highwater-logs"))
        c.stop(collect_logs_to=logs_root / name if failed else None)


def healed_for_module(shared: ClusterBackend, request: pytest.FixtureRequest) -> Iterator[ClusterBackend]:
    """A shared cluster for one module (the body of a module-scoped fixture): healed and checked
    before the module, checked after it (a fault left behind fails the module's teardown; the
    cluster is healed all the same for the next module)."""
    heal(shared)
    left = unhealed(shared)
    assert not left, f"the shared cluster is not healed before {request.module.__name__}: {left}"
    yield shared
    left = unhealed(shared)
    heal(shared)
    assert not left, f"{request.module.__name__} left the shared cluster unhealed: {left}"


def module_cluster(
    request: pytest.FixtureRequest,
    kafka_version: str,
    backend: str,
    broker_config: Mapping[str, str] | None = None,
    disk: str = "plain",
    clock: str = "real",
    tiered: bool = False,
) -> Iterator[ClusterBackend]:
    """``shared_cluster`` for the tests of the requesting module, named after it: the body of a
    module-scoped fixture."""
    module = request.module

    def uses(item: pytest.Item) -> bool:
        return getattr(item, "module", None) is module

    yield from shared_cluster(
        request, kafka_version, backend, uses, _safe(module.__name__), broker_config, disk, clock, tiered
    )


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """A 3-broker, 3-rack cluster shared by the tests of one module (``shared_cluster``)."""
    yield from module_cluster(request, kafka_version, backend)


@pytest.fixture(scope="session")
def highwater_results(request: pytest.FixtureRequest) -> Results:
    """Where ``highwater_run`` writes runs: ``--highwater-results`` / ``--highwater-campaign``."""
    from highwater.scenarios import Results

    campaign = request.config.getoption("--highwater-campaign") or f"scenarios-{time.strftime('%Y%m%dT%H%M%S')}"
    return Results(Path(request.config.getoption("--highwater-results")), campaign)


@pytest.fixture
def highwater_run(
    request: pytest.FixtureRequest,
    kafka_version: str,
    backend: str,
    client_name: str,
    run_seed: int | None,
    highwater_results: Results,
) -> ScenarioRunner:
    """``highwater.scenarios.run`` for this test: ``highwater_run(cluster, scenario)`` runs on the
    session's client and seed, into ``highwater_results``, with this test's repro command."""
    from highwater.scenarios import ScenarioRunner

    repro = ["pytest", shlex.quote(request.node.nodeid), "--kafka-version", kafka_version, "--backend", backend]
    repro += ["--client", client_name, *(["--seed", str(run_seed)] if run_seed is not None else [])]
    return ScenarioRunner(highwater_results, client_name, run_seed, " ".join(repro))
