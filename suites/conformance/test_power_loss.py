"""Power loss: Kafka acknowledges acks=all writes once every in-sync replica holds them in memory
and never fsyncs them by default (``flush.messages`` and ``flush.ms`` are "never"): it relies on
replication. So a power loss of one replica must lose nothing, and a correlated one (a majority
of a partition's copies, every broker) may: what it costs then depends on the election rules.

Each case runs on a cluster whose data directories sit on the disk fault layer (``lossyfs``,
``harness.diskfs``): ``power-loss`` kills the target's processes and drops what their disks had
not fsynced (file tails, creations, renames), then restarts them when healed. acks=all,
min.insync.replicas=2, RF 3; the plans are ``suites.scenario.POWER_CASES``:

==================  ==========================  =====================================================
case                loses power at once          what must hold (the policy table, ``core.policy``)
==================  ==========================  =====================================================
leader              partition 0's leader         nothing acknowledged lost, nothing served vanishes,
                                                 no skip (fewer replicas than min.insync.replicas)
majority            its leader and a follower    no skip, truncation detected (KIP-320), monotonic
                    (``replicas:t/0:2``)         polls; loss allowed (the ISR may have been 2)
majority-elr-off    the same, ELR off            the same
all                 every broker, ELR on where   the same
                    the release has it
all-elr-off         every broker, ELR off        the same
all-unclean         every broker, unclean        the same
                    election on
==================  ==========================  =====================================================

A correlated case takes a majority of the KRaft controller voters too (every broker is one
here): without a quorum nothing in the metadata moves until it is back, so the policy allows its
timed checks' stalls. Whatever a case allows, its run measures what happened (``power-measures.json``: acknowledged
writes lost, records served that then vanished, bytes the disks dropped, how long each partition
took no write) and the report puts the cases side by side per release (``reports.power``).

``make test`` runs the leader case; the correlated cases are nightly (``.ci/run``'s slices).
The suite needs the local backend (the disk layer is a FUSE mount of ours): on another backend it
is skipped with that line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from highwater.core.checks.verdict import Verdict
from highwater.harness.backend import ClusterBackend
from highwater.harness.features import has_elr
from highwater.pytest_plugin import module_cluster
from highwater.runner import RunResult
from highwater.suites.findings import explained_only_by
from highwater.suites.nightly import nightly
from highwater.suites.scenario import PLANS, POWER_CASES, check_verdicts, run_plan

#: the election settings of each case (the RunSpec overrides on top of acks=all, min ISR 2)
ELECTIONS: dict[str, dict[str, Any]] = {
    "leader": {},
    "majority": {"eligible_leader_replicas": True},
    "majority-elr-off": {"eligible_leader_replicas": False},
    "all": {"eligible_leader_replicas": True},
    "all-elr-off": {"eligible_leader_replicas": False},
    "all-unclean": {"unclean_leader_election": True},
}
#: a partition may stay without a leader after a correlated power loss (ELR keeps a broker back
#: from an unclean shutdown out of the election): the settle phase waits this long, not a minute
SETTLE_SECONDS = 30.0
NIGHTLY_CASES = [c for c in POWER_CASES if c != "leader"]
#: the cases whose every replica loses power (the log truncated under the consumers): HW-24's
HW24_CASES = ("power-loss/all", "power-loss/all-elr-off", "power-loss/all-unclean")


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """This module's own 3-broker, 3-rack cluster, every data directory on lossyfs."""
    if backend != "local":
        pytest.skip(f"power loss needs the local backend's disk layer (lossyfs), not the {backend} backend")
    yield from module_cluster(request, kafka_version, backend, disk="lossy")


def assert_power_case(verdicts: list[Verdict], case: str) -> None:
    """The case's assertions: its plan's checks hold, the policy having turned what the case
    allows valid. A correlated power loss takes a majority of the controller voters (every broker
    is one here), so the timed checks' stalls are allowed and measured (``power-measures.json``),
    not promised; the leader's alone leaves the quorum, and its timed checks judge as anywhere."""
    check_verdicts(verdicts, PLANS[f"power-loss/{case}"].must_hold)


def _run(cluster: ClusterBackend, case: str, kafka_version: str, **fixtures: Any) -> RunResult:
    election = dict(ELECTIONS[case])
    if "eligible_leader_replicas" in election and not has_elr(kafka_version):
        if election["eligible_leader_replicas"]:
            pytest.skip(f"Kafka {kafka_version} has no eligible leader replicas (KIP-966): the -elr-off case is it")
        election.pop("eligible_leader_replicas")  # off is all the release has
    _, replicas, _ = POWER_CASES[case]
    return run_plan(
        cluster,
        PLANS[f"power-loss/{case}"],
        acks="all",
        min_insync_replicas=2,
        topic=f"power-{case}",
        power_loss_replicas=replicas,
        settle_timeout=SETTLE_SECONDS,
        **election,
        **fixtures,
    )


def _judge(result: RunResult, case: str, repro: str) -> None:
    scenario = f"power-loss/{case}"
    try:
        assert_power_case(result.verdicts, case)
    except AssertionError as exc:
        # HW-24: a kafka-python rack consumer whose position lost its leader epoch misses the
        # truncation; the run is an xfail when that is all it broke
        if scenario in HW24_CASES:
            why = explained_only_by("HW-24", scenario, result.verdicts, PLANS[scenario].must_hold)
            if why is not None:
                pytest.xfail(why)
        raise type(exc)(f"{exc}\n(results: {result.dir}; repro: {repro})") from None


def test_power_loss_of_the_leader_loses_nothing_acknowledged(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str, kafka_version: str
) -> None:
    result = _run(
        cluster,
        "leader",
        kafka_version,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
    )
    _judge(result, "leader", repro)


@nightly("the leader's power loss runs in make test under the same checks", 55)
@pytest.mark.parametrize("case", NIGHTLY_CASES)
def test_correlated_power_loss_is_detected_and_measured(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str, kafka_version: str, case: str
) -> None:
    result = _run(
        cluster,
        case,
        kafka_version,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
    )
    _judge(result, case, repro)
