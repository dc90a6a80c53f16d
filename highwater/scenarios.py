"""Scenarios in your own repository: the public API (docs/writing-scenarios.md).

A ``Scenario`` is data: the faults (``Step``: calm, fault as ``highwater fault apply`` spells it,
seconds held), the checks that must hold, the workload's settings (``Workload``, over
``highwater.run_spec.RunSpec``'s defaults) and, optionally, your own program as the consumers
(``App``). ``run(cluster, scenario)`` carries it out through ``highwater.runner.execute_run``
(the same run every suite makes: history, verdicts, manifest, the known findings), and
``assert_holds(result, scenario)`` fails with the checks that were violated or could not judge,
less the violations a known finding explains (``highwater.core.findings``: printed as known).

With pytest the plugin gives the fixtures (``highwater.pytest_plugin``): ``cluster`` (a 3-broker,
3-rack cluster per test module), ``cluster_factory``, ``highwater_results`` and ``highwater_run``
(``run`` bound to the session's client, seed, results and the test's repro command)::

    from highwater.scenarios import Scenario, Step, assert_holds

    LEADER_KILL = Scenario(
        suite="myapp",
        name="leader-kill",
        steps=(Step(3, "kill --target leader:{topic}/0", 20),),
        checks=("lost-write", "poll-skip", "uncommitted-read"),
    )

    def test_leader_kill(cluster, highwater_run):
        assert_holds(highwater_run(cluster, LEADER_KILL), LEADER_KILL)

**Your program in the workload** (``App``, ``highwater.harness.clients.app``): highwater starts
``App.argv`` in place of each of its consumers (one per rack), with the cluster in environment
variables (``APP_ENV``), and records each JSON line it writes of a record it consumed as a poll
of that consumer, so every check that judges consumers judges the program.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from highwater.core.checks import CHECKS
from highwater.core.checks.bounds import Settings, derive
from highwater.core.checks.verdict import Verdict
from highwater.core.errors import HighwaterError
from highwater.core.run_dir import RunDir
from highwater.faults.spec import parse_fault
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients import (
    DEFAULT_CLIENT,
    get_driver,
    registered,
)
from highwater.harness.clients.app import APP_ENV, App, AppDriver, AppError, app_env, parse_app_line
from highwater.harness.security import PLAINTEXT
from highwater.nemesis import PlannedNemesis, Step, scripted
from highwater.nemesis import workload_seconds as nemesis_workload_seconds
from highwater.run_spec import RunSpec, run_settings
from highwater.runner import RunResult, execute_run

__all__ = [
    "APP_ENV",
    "App",
    "AppError",
    "Judgement",
    "Results",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "ScenarioRunner",
    "Step",
    "Workload",
    "app_env",
    "assert_holds",
    "judge",
    "nemesis_of",
    "parse_app_line",
    "run",
    "run_spec",
    "workload_seconds",
]

#: a scenario's workload lasts at least this long (the ``ci`` profile's conformance run)
DEFAULT_SECONDS = 20.0
#: what a fault step's text may name, filled in when the fault starts (``highwater.nemesis.scripted``)
PLACEHOLDERS = ("topic", "leader", "follower", "txn", "group", "share_group", "copier_txn", "copy_group")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ScenarioError(HighwaterError):
    """A scenario, workload or app that cannot run: one line saying what is wrong."""


# -- a scenario as data -----------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """The run's settings, each None for ``RunSpec``'s default (``highwater.run_spec``).

    ``topic`` is a prefix: every run writes a topic of its own, ``<topic>-<6 hex>`` (default
    ``<suite>-<scenario>-<6 hex>``), so runs on one cluster never read one another's records."""

    topic: str | None = None
    partitions: int | None = None
    replication_factor: int | None = None
    min_insync_replicas: int | None = None
    acks: str | None = None  # "all", "1" or "0"
    idempotence: bool | None = None
    unclean_leader_election: bool | None = None
    producers: int | None = None
    rate: float | None = None  # sends per second, per producer
    value_size: int | None = None
    consumer_mode: str | None = None  # "assign" (each consumer reads every partition), "subscribe", "share"
    group_protocol: str | None = None  # subscribe mode: "classic" or KIP-848's "consumer"
    session_timeout_ms: int | None = None
    transactional: bool | None = None
    txn_records: int | None = None
    txn_abort_share: float | None = None
    isolation_level: str | None = None
    observe_interval: float | None = None  # seconds between the observer's looks (hw-regression wants 0.2)
    settle_timeout: float | None = None

    def overrides(self) -> dict[str, Any]:
        """The ``RunSpec`` fields this workload sets (all but ``topic``, which ``run_spec`` names)."""
        return {f.name: v for f in fields(self) if f.name != "topic" and (v := getattr(self, f.name)) is not None}

    @property
    def mode(self) -> str:
        return self.consumer_mode or "assign"


@dataclass(frozen=True)
class Scenario:
    """One scenario of your suite: ``suite/name`` names it in histories, reports and findings.

    ``steps`` are played in order while the workload runs (each fault held ``duration`` seconds,
    then healed and verified); ``checks`` must each hold (valid: an unknown verdict proves
    nothing), and no other check may be violated. ``duration`` is the workload's length, at least
    the steps plus the calm the timed checks need after the last heal (``workload_seconds``)."""

    suite: str
    name: str
    steps: tuple[Step, ...] = ()
    checks: tuple[str, ...] = ()
    workload: Workload = field(default_factory=Workload)
    app: App | None = None
    duration: float | None = None
    what: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))  # a list given: kept as data, hashable
        object.__setattr__(self, "checks", tuple(self.checks))
        for label, value in (("suite", self.suite), ("name", self.name)):
            if not _NAME.match(value):
                raise ScenarioError(f"scenario {label} {value!r}: letters, digits, '.', '_' and '-' only")
        unknown = [c for c in self.checks if c not in CHECKS]
        if unknown:
            raise ScenarioError(f"{self.key}: unknown check(s) {', '.join(unknown)} (known: {', '.join(CHECKS)})")
        for step in self.steps:
            _check_step(self.key, step)
        if self.app is not None:
            if self.workload.mode != "assign":
                raise ScenarioError(
                    f"{self.key}: an app reads every partition itself (consumer_mode 'assign'), not "
                    f"{self.workload.mode!r}"
                )
            for step in self.steps:
                if step.kind.is_client and "producer" not in step.fault:
                    raise ScenarioError(
                        f"{self.key}: {step.fault!r}: client faults act on highwater's own client workers; "
                        "with an app only the producers' (client:producer-<i>, producers)"
                    )

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.name}"


def _check_step(key: str, step: Step) -> None:
    """A step whose fault does not parse is refused when the scenario is made, not mid-run."""
    if not isinstance(step, Step):
        raise ScenarioError(f"{key}: a step is a highwater.scenarios.Step(after, fault, duration), not {step!r}")
    if step.after < 0 or step.duration <= 0:
        raise ScenarioError(f"{key}: {step.fault!r}: calm >= 0 and a duration > 0 seconds")
    try:
        parse_fault(step.fault.format(**{p: "1" if p in ("leader", "follower") else "x" for p in PLACEHOLDERS}))
    except KeyError as exc:
        raise ScenarioError(
            f"{key}: {step.fault!r} names {{{exc.args[0]}}} (known: {', '.join(PLACEHOLDERS)})"
        ) from None
    except HighwaterError as exc:
        raise ScenarioError(f"{key}: {step.fault!r}: {exc}") from None


@dataclass(frozen=True)
class Results:
    """Where runs are written: ``<root>/<campaign>/<run id>/`` (``highwater report <root>/<campaign>``)."""

    root: Path = Path("results")
    campaign: str = "scenarios"


# -- from a scenario to a run (pure) ------------------------------------------------------------


def workload_seconds(scenario: Scenario, settings: Settings) -> float:
    """The workload's length: ``scenario.duration`` (default ``DEFAULT_SECONDS``), and with steps
    at least their calms and holds plus the progress bound with its margin after the last heal
    (``core.checks.bounds``), so the timed checks can judge the time after it."""
    base = scenario.duration if scenario.duration is not None else DEFAULT_SECONDS
    return nemesis_workload_seconds(base, scenario.steps, derive(settings))


def topic_of(scenario: Scenario, token: str) -> str:
    """The run's topic: the workload's prefix (or ``<suite>-<name>``) and the run's token."""
    prefix = scenario.workload.topic or f"{scenario.suite}-{scenario.name}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{prefix}-{token}")[:200]


def run_spec(
    scenario: Scenario,
    *,
    results: Results,
    client: str,
    settings: Settings,
    seed: int | None = None,
    repro: str = "",
    token: str | None = None,
) -> RunSpec:
    """The ``RunSpec`` of a run of ``scenario`` with ``client`` (the app's name when it has one;
    ``settings``: the cluster's, ``run_settings``, which the workload's length depends on)."""
    extra: dict[str, Any] = {"scenario_api": {"what": scenario.what, "checks": list(scenario.checks)}}
    if scenario.app is not None:
        app = scenario.app
        extra["app"] = {"name": app.name, "version": app.version, "argv": list(app.argv), "producers": client}
        client = app.name
    return RunSpec(
        suite=scenario.suite,
        scenario=scenario.name,
        campaign=results.campaign,
        results_root=results.root,
        topic=topic_of(scenario, token or uuid.uuid4().hex[:6]),
        duration=workload_seconds(scenario, settings),
        client=client,
        seed=seed,
        repro=repro,
        extra=extra,
        **scenario.workload.overrides(),
    )


def nemesis_of(scenario: Scenario) -> PlannedNemesis | None:
    """The scenario's steps as a scripted nemesis (recorded in the manifest), None without steps."""
    return scripted(list(scenario.steps)) if scenario.steps else None


# -- running it -------------------------------------------------------------------------------


def run(
    cluster: ClusterBackend,
    scenario: Scenario,
    *,
    results: Results | None = None,
    client: str = DEFAULT_CLIENT,
    seed: int | None = None,
    repro: str = "",
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Run ``scenario`` on ``cluster`` (any backend; ``execute_run``) and return its result:
    verdicts, the run's directory, and its class against the known findings. ``client`` is the
    client of highwater's producers and consumers (with an app, of the producers unless
    ``App.producers`` says)."""
    results = results or Results()
    say = progress or (lambda m: print(f"[{scenario.suite}] {m}", flush=True))
    observe = scenario.workload.observe_interval or RunSpec.observe_interval
    settings = run_settings(cluster.spec.brokers, cluster.spec.broker_config, observe)
    app = scenario.app
    producers = app.producers if app is not None and app.producers else client
    spec = run_spec(scenario, results=results, client=producers, settings=settings, seed=seed, repro=repro)
    if app is None:
        return execute_run(cluster, spec, nemesis_of(scenario), progress=say)
    if cluster.client_security != PLAINTEXT:
        raise ScenarioError(f"{scenario.key}: an app runs on plaintext clusters only (for now)")
    # the app's logs, until the run's directory exists (named by execute_run)
    logs = results.root / results.campaign / f".app-logs-{spec.topic}"
    with registered(AppDriver(app, get_driver(producers), logs)):
        try:
            result = execute_run(cluster, spec, nemesis_of(scenario), progress=say)
        except BaseException:
            if logs.exists():
                say(f"{app.name}'s logs: {logs}")
            raise
    if logs.exists():
        dest = RunDir(result.dir).logs / "app"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(logs), str(dest))
    return result


@dataclass(frozen=True)
class ScenarioRunner:
    """``run`` bound to a test's settings (the ``highwater_run`` fixture): call it with a cluster
    and a scenario."""

    results: Results
    client: str = DEFAULT_CLIENT
    seed: int | None = None
    repro: str = ""

    def __call__(self, cluster: ClusterBackend, scenario: Scenario, *, client: str | None = None) -> RunResult:
        return run(
            cluster, scenario, results=self.results, client=client or self.client, seed=self.seed, repro=self.repro
        )


# -- judging it -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """A run against the checks it must keep: ``new`` violations (no known finding explains
    them), ``unjudged`` checks that had to hold and were unknown or not applicable, and the
    ``known`` violations with the findings that explain them."""

    run_id: str
    new: tuple[Verdict, ...]
    unjudged: tuple[Verdict, ...]
    known: tuple[tuple[Verdict, tuple[str, ...]], ...]
    fixed: tuple[str, ...] = ()

    @property
    def holds(self) -> bool:
        return not self.new and not self.unjudged

    def describe(self) -> str:
        lines = [f"  VIOLATED {v.check}: {_brief(v)}" for v in self.new]
        lines += [f"  not judged {v.check}: {v.valid} {'; '.join(v.notes)[:300]}" for v in self.unjudged]
        lines += [f"  known {v.check}: explained by {', '.join(ids)}" for v, ids in self.known]
        lines += [f"  fixed? {fid} applied and did not show" for fid in self.fixed]
        return "\n".join(lines)


def _brief(v: Verdict) -> str:
    return f"counts={v.counts} example={json.dumps(v.examples[:1], default=str)[:500]}"


def judge(result: RunResult, checks: Iterable[str] | Scenario) -> Judgement:
    """``result`` against ``checks`` (a scenario: its checks): each must be valid, and no check at
    all violated, but for the violations ``result.classification`` explains by a known finding."""
    must = checks.checks if isinstance(checks, Scenario) else tuple(checks)
    by = {v.check: v for v in result.verdicts}
    unknown = [c for c in must if c not in by]
    if unknown:
        raise ScenarioError(f"no check named {', '.join(unknown)} in run {result.run_id}")
    explained = result.classification.known
    failed = [v for v in result.verdicts if v.valid is False]
    return Judgement(
        run_id=result.run_id,
        new=tuple(v for v in failed if v.check not in explained),
        unjudged=tuple(by[c] for c in must if by[c].valid is not True and by[c].valid is not False),
        known=tuple((v, tuple(explained[v.check])) for v in failed if v.check in explained),
        fixed=tuple(result.classification.fixed),
    )


def assert_holds(result: RunResult, checks: Iterable[str] | Scenario) -> Judgement:
    """``judge``, raising ``AssertionError`` (naming the violated and unjudged checks, the run's
    directory and its repro command) unless it holds. Known violations are printed, not failed."""
    j = judge(result, checks)
    where = f"run {result.run_id} (results: {result.dir}{_repro(result.dir)})"
    if not j.holds:
        raise AssertionError(f"promises broken or not judged in {where}:\n{j.describe()}")
    if j.known or j.fixed:
        print(f"[highwater] {where} holds; known findings:\n{j.describe()}", flush=True)
    return j


def _repro(run_dir: Path) -> str:
    try:
        repro = json.loads(RunDir(run_dir).run_json.read_text(encoding="utf-8")).get("repro")
    except (OSError, ValueError):
        return ""
    return f"; repro: {repro}" if repro else ""
