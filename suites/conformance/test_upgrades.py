"""The road between releases: a cluster started on an older Kafka release rolled, node by node,
to the release under test while the clients write and read, with faults on the way
(``faults.release``: ``roll`` and ``finalize``; plans in ``suites.scenario.UPGRADE_PLANS``).

Each case's cluster starts on ``--upgrade-from`` (default 3.9.1, of the last 3.x line: Kafka 4.x
upgrades directly from any 3.3.x through 3.9.x) and rolls to the version under test
(``--kafka-version``), filling in the plans' ``{release}`` and ``{from}``; ``highwater sweep
--upgrade-paths`` runs it over many paths.
Every data check holds across the road (no acknowledged write lost, no skip, no uncommitted read)
and the ``upgrade`` check compares what Kafka reported before and after each step: the cluster
id, topic ids and partition counts, the finalized feature levels.

========================  ============================================================================
case                      what happens
========================  ============================================================================
roll-kill-finalize        kafka-1 rolled; kafka-2 (still on the old release) killed for 20 s in the
                          mixed window and restarted on it; every node rolled (controllers first);
                          metadata.version finalized at the newest level every broker supports
crash-mid-roll            every node rolled, each SIGKILLed 3 s into its first start on the new
                          release and started again; finalized
finalize-controller-down  every node rolled; the active controller killed and, 3 s later, while it
                          is down, metadata.version finalized through its successor
mixed-cut                 kafka-1 rolled and then cut off from the nodes still on the old release
                          (and the clients) for 22 s; the roll finished; finalized
roll-under-latency        every link of kafka-2 delayed 150 ms while every node is rolled; finalized
roll-back                 kafka-1 rolled to the new release, then every node to the old one, before
                          anything was finalized
========================  ============================================================================

``make test`` runs roll-kill-finalize; the others are nightly (``.ci/run``'s slices). Each case
starts a cluster of its own (a roll changes a cluster for good). The suite needs the local
backend (``ReleaseControl``: a node restarted on another release); elsewhere it is skipped with
that line, and so is a version under test the path does not reach
(``faults.release.path_refusal``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.core.run_dir import RunDir
from highwater.faults.release import path_refusal
from highwater.faults.spec import FaultKind
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients import parse_client_spec
from highwater.pytest_plugin import shared_cluster
from highwater.suites.findings import HW13_UPGRADES
from highwater.suites.hw27 import HW27_CLIENTS, without_hw27
from highwater.suites.nightly import nightly
from highwater.suites.scenario import PLANS, RUN_OPTIONS, UPGRADE_PLANS, check_verdicts, run_plan

NIGHTLY_CASES = [p.scenario for p in UPGRADE_PLANS if p.scenario != "roll-kill-finalize"]


def assert_road_kept(verdicts: list[Verdict], case: str = "roll-kill-finalize") -> None:
    """The case's checks hold (the data checks and ``upgrade``), and ``upgrade`` judged every
    roll and finalization of it (a step that failed observed nothing to compare)."""
    p = PLANS[f"upgrades/{case}"]
    check_verdicts(verdicts, p.must_hold)
    steps = sum(1 for st in p.steps if st.kind in (FaultKind.ROLL, FaultKind.FINALIZE))
    rolls = sum(1 for st in p.steps if st.kind is FaultKind.ROLL)
    upgrade = next(v for v in verdicts if v.check == "upgrade")
    assert upgrade.counts["steps"] == steps, f"upgrade judged {upgrade.counts['steps']} of {steps} steps"
    # a roll that moved no node (its nodes already on the release) proves nothing
    moved = upgrade.counts["nodes_rolled"]
    assert moved >= rolls, f"only {moved} node restarts moved a release in {rolls} rolls"


@pytest.fixture
def cluster(
    request: pytest.FixtureRequest, kafka_version: str, backend: str, upgrade_from: str
) -> Iterator[ClusterBackend]:
    """Each case's own 3-broker, 3-rack cluster, started on ``upgrade_from``: a roll and a
    finalization change a cluster for good, so no two cases share one."""
    if backend != "local":
        pytest.skip(f"a roll onto another release needs the local backend, not the {backend} backend")
    refused = path_refusal(upgrade_from, kafka_version)
    if refused:
        pytest.skip(refused)
    test = request.node
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"upgrades.{test.name}")
    yield from shared_cluster(request, upgrade_from, backend, lambda item: item is test, name)


def _run_case(cluster: ClusterBackend, case: str, path: tuple[str, str], repro: str, **fixtures: Any) -> None:
    p = PLANS[f"upgrades/{case}"]
    start, to = path
    steps = [
        dataclasses.replace(st, fault=st.fault.replace("{release}", to).replace("{from}", start)) for st in p.steps
    ]
    result = run_plan(
        cluster, dataclasses.replace(p, steps=tuple(steps)), repro=repro, upgrade_path=f"{start}->{to}", **fixtures
    )
    verdicts = result.verdicts
    if parse_client_spec(RUN_OPTIONS.get().client).name in HW27_CLIENTS:
        verdicts = without_hw27(verdicts, RunDir(result.dir).history)  # a consumer stranded by a restart
    try:
        assert_road_kept(verdicts, case)
    except AssertionError as exc:
        raise type(exc)(f"{exc}\n(results: {result.dir}; repro: {repro})") from None


def test_a_roll_with_a_node_killed_in_the_mixed_window_then_finalized_keeps_everything(
    request: pytest.FixtureRequest,
    cluster: ClusterBackend,
    profile: Any,
    campaign: str,
    results_root: Any,
    repro: str,
    kafka_version: str,
    upgrade_from: str,
) -> None:
    HW13_UPGRADES.expect(request)  # a kafkajs consumer crashes when a broker it reads from dies
    path = (upgrade_from, kafka_version)
    _run_case(cluster, "roll-kill-finalize", path, repro, profile=profile, campaign=campaign, results_root=results_root)


@nightly("the roll with a node killed in the mixed window runs in make test under the same checks", 90)
@pytest.mark.parametrize("case", NIGHTLY_CASES)
def test_the_road_under_faults_keeps_everything(
    request: pytest.FixtureRequest,
    cluster: ClusterBackend,
    profile: Any,
    campaign: str,
    results_root: Any,
    repro: str,
    kafka_version: str,
    upgrade_from: str,
    case: str,
) -> None:
    HW13_UPGRADES.expect(request)  # a kafkajs consumer crashes when a broker it reads from dies
    path = (upgrade_from, kafka_version)
    _run_case(cluster, case, path, repro, profile=profile, campaign=campaign, results_root=results_root)
