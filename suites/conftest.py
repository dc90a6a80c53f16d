"""Options and fixtures shared by the conformance and chaos suites.

    pytest suites/ [--profile ci|nightly] [--kafka-version 4.3.1,3.9.1] [--campaign NAME] [--results DIR]
                   [--client-rotation kafka-python,confluent-kafka,java]

Every recorded run lands in ``<results>/<campaign>/<run_id>/`` (see highwater.runner).
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from highwater.core.checks import CHECKS
from highwater.core.errors import HighwaterError
from highwater.core.findings import configured, validate
from highwater.harness.backend import ClusterBackend
from highwater.profiles import Profile, get_profile
from highwater.pytest_plugin import healed_for_module, rotated_client, shared_cluster
from highwater.suites.scenario import RUN_OPTIONS, RunOptions, scenario_names


def pytest_configure(config: pytest.Config) -> None:
    """The known findings (``core/findings.toml``, ``$HIGHWATER_FINDINGS``, ``--highwater-findings``)
    held to the checks and to these suites' scenarios before anything starts: a record that
    names one that does not exist is one line, exit 4."""
    try:
        validate(configured(), CHECKS, scenario_names())
    except HighwaterError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("highwater suites")
    group.addoption("--profile", default="ci", help="ci (default) or nightly")
    group.addoption("--campaign", default=None, help="campaign name (default: <profile>-<timestamp>)")
    group.addoption("--results", default="results", help="results root (default: results/)")


@pytest.fixture(scope="session")
def profile(request: pytest.FixtureRequest) -> Profile:
    return get_profile(request.config.getoption("--profile"))


@pytest.fixture(scope="session")
def campaign(request: pytest.FixtureRequest, profile: Profile) -> str:
    return request.config.getoption("--campaign") or f"{profile.name}-{time.strftime('%Y%m%dT%H%M%S')}"


@pytest.fixture(scope="session")
def results_root(request: pytest.FixtureRequest) -> Path:
    root = Path(request.config.getoption("--results"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _uses_cluster(item: pytest.Item) -> bool:
    return "cluster" in getattr(item, "fixturenames", ())


@pytest.fixture(scope="package")
def _suites_cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """One 3-broker, 3-rack cluster for every suite module of a session (per Kafka version): a
    boot per module cost ~6-9 s each, and every scenario takes its own topic."""
    yield from shared_cluster(request, kafka_version, backend, _uses_cluster, "suites.shared-cluster")


@pytest.fixture(scope="module")
def cluster(_suites_cluster: ClusterBackend, request: pytest.FixtureRequest) -> Iterator[ClusterBackend]:
    """The suites' cluster for one module: healed and checked before it and after it
    (``highwater.pytest_plugin.healed_for_module``)."""
    yield from healed_for_module(_suites_cluster, request)


@pytest.fixture(autouse=True)
def run_options(request: pytest.FixtureRequest, client_name: str, run_seed: int | None) -> Iterator[RunOptions]:
    """Every scenario of this test runs with the session's client (or its turn in
    ``--client-rotation``) and seed."""
    client = rotated_client(request.node, request.config.getoption("--client-rotation"), client_name)
    options = RunOptions(client, run_seed)
    token = RUN_OPTIONS.set(options)
    try:
        yield options
    finally:
        RUN_OPTIONS.reset(token)


@pytest.fixture
def repro(
    request: pytest.FixtureRequest, kafka_version: str, profile: Profile, backend: str, run_options: RunOptions
) -> str:
    """The command that reruns exactly this test (with its backend, client, seed and, when it is
    not the default, the release an upgrade starts on)."""
    seed = ["--seed", str(run_options.seed)] if run_options.seed is not None else []
    start = request.config.getoption("--upgrade-from")
    seed += ["--upgrade-from", start] if start else []
    return " ".join(
        [
            "highwater",
            "run",
            "--profile",
            profile.name,
            "--kafka-version",
            kafka_version,
            "--backend",
            backend,
            "--client",
            run_options.client,
            *seed,
            shlex.quote(request.node.nodeid),
        ]
    )


def pytest_report_header(config: pytest.Config) -> str:
    return f"highwater suites: profile={config.getoption('--profile')} python={sys.version.split()[0]}"
