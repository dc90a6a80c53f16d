"""Clocks: Kafka orders and replicates records by offsets and leader epochs, not by time, so a
node's wall clock jumping must lose nothing and make no consumer skip; what a jump may cost is
time, wherever Kafka measures an interval with the wall clock instead of a monotonic one.

Each case runs on a cluster whose node JVMs read their wall clock through libfaketime
(``ClusterSpec(clock="faked")``, ``harness.clock``: ``clock-jump`` moves one node's clock at
once, and its heal moves it back, itself a jump the other way). acks=all, min.insync.replicas=2,
RF 3; the plans are ``suites.scenario.CLOCK_PLANS``:

- ``leader-ahead``: partition 0's leader ten minutes ahead, then back;
- ``leader-back-then-follower-cut``: the same jump held 10 s, so every follower's last caught-up
  time is taken ten minutes ahead; after the jump back a follower's replication is cut;
- ``clients-ahead``: a consumer's clock, then the producers', ten minutes ahead and back (the
  run fakes its client workers' clocks, ``RunSpec(client_clocks=True)``);
- ``controller-ahead``: the active controller ten minutes ahead, then back;
- ``controller-back-then-kill``: the same on the controller, then a follower killed.

``test_a_clock_jump_loses_nothing`` asserts the durability checks; ``test_what_a_clock_jump_costs``
judges the timed checks (ISR stability, progress, the consumers' moves) of the same runs, which
say whether a jump held up the ISR or the producers: it found HW-19 (a strict xfail) and HW-20
(intermittent, a non-strict xfail), docs/findings.md. The suite is nightly (``make test`` runs the
clock faults' own integration test; ``.ci/run`` runs this suite in its rotating nightly slices).

The suite needs the local backend and Debian's libfaketime (``make`` installs it); otherwise it
is skipped with the line that says why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.harness.backend import ClusterBackend
from highwater.harness.clock import ClockError, find_libfaketime
from highwater.pytest_plugin import module_cluster
from highwater.runner import RunResult
from highwater.suites.findings import finding_mark
from highwater.suites.nightly import nightly
from highwater.suites.scenario import CLOCK_PLANS, PLANS, TIMED_CHECKS, check_verdicts, describe, run_once, run_plan

#: HW-19: a follower whose last caught-up time the leader took while its clock was ahead stays in
#: the ISR after the clock went back until the clock passes that time again (Replica's
#: lastCaughtUpTimeMs only grows; the ISR check compares it with the wall clock): broker-side,
#: every client (seen on Java 4.4.0 and kafka-python 3.0.12, 2 runs of 2). Strict
HW19 = finding_mark("HW-19", "clock/leader-back-then-follower-cut")
#: HW-20: after the active controller's clock went back, it may stop committing (intermittent)
HW20 = finding_mark("HW-20", "clock/controller-back-then-kill")
CASES = [p.scenario for p in CLOCK_PLANS]
pytestmark = nightly(
    "make test runs the clock faults' own integration test (tests/integration/test_clock_faults.py)", 50
)
#: what each test expects of each case: the controller's cases come last (HW-20 may leave the
#: controller stalled for minutes after them)
SAFETY_CASES = [pytest.param(c, marks=HW20) if c == "controller-back-then-kill" else c for c in CASES]
COST_CASES = [
    pytest.param(c, marks=HW19)
    if c == "leader-back-then-follower-cut"
    else pytest.param(c, marks=HW20)
    if c.startswith("controller-back")
    else c
    for c in CASES
]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """This module's own 3-broker, 3-rack cluster, every JVM's wall clock faked."""
    if backend != "local":
        pytest.skip(f"clock faults need the local backend's faked clocks (libfaketime), not the {backend} backend")
    try:
        find_libfaketime()
    except ClockError as exc:
        pytest.skip(str(exc))
    yield from module_cluster(request, kafka_version, backend, clock="faked")


def assert_clock_safe(verdicts: list[Verdict], case: str) -> None:
    """No acknowledged write lost, nothing uncommitted read, no skip, whatever the clocks did."""
    check_verdicts([v for v in verdicts if v.check not in TIMED_CHECKS], PLANS[f"clock/{case}"].must_hold)


def timed_problems(verdicts: list[Verdict]) -> list[Verdict]:
    """The timed checks a clock jump made fail (unknown is not counted: a window too short)."""
    return [v for v in verdicts if v.check in TIMED_CHECKS and v.valid is False]


def _run(cluster: ClusterBackend, case: str, kafka_version: str, **fixtures: Any) -> RunResult:
    return run_once(
        kafka_version,
        f"clock/{case}",
        lambda: run_plan(
            cluster,
            PLANS[f"clock/{case}"],
            acks="all",
            min_insync_replicas=2,
            topic=f"clock-{case}",
            client_clocks=case.startswith("clients"),
            **fixtures,
        ),
    )


@pytest.mark.shared_run("case")  # one run per case, judged by both tests: one shard holds both (--shard)
@pytest.mark.parametrize("case", SAFETY_CASES)
def test_a_clock_jump_loses_nothing(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str, kafka_version: str, case: str
) -> None:
    result = _run(
        cluster, case, kafka_version, profile=profile, campaign=campaign, results_root=results_root, repro=repro
    )
    try:
        assert_clock_safe(result.verdicts, case)
    except AssertionError as exc:
        raise type(exc)(f"{exc}\n(results: {result.dir}; repro: {repro})") from None


@pytest.mark.shared_run("case")
@pytest.mark.parametrize("case", COST_CASES)
def test_what_a_clock_jump_costs(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str, kafka_version: str, case: str
) -> None:
    result = _run(
        cluster, case, kafka_version, profile=profile, campaign=campaign, results_root=results_root, repro=repro
    )
    bad = timed_problems(result.verdicts)
    assert not bad, f"a clock jump held Kafka up:\n{describe(bad)}\n(results: {result.dir}; repro: {repro})"
