"""Tiered storage (KIP-405) under faults: reads that cross from the remote store to local
segments keep every promise.

The module's cluster is tiered (``ClusterSpec(tiered=True)``, ``harness.tiered``: Kafka's
``LocalTieredStorage`` on a directory every broker shares, segments copied within seconds), and
its runs' topics tier (``RunSpec(tiered=True)``: a segment every second, kept locally for one
second once copied). ``catch-up-leader-kill`` (``make test``), ``catch-up-leader-partition``
(nightly: partition 0's leader cut off from every other node instead, HW-8 subtracted) and
``metadata-leader-kill`` (nightly: the leader of the remote log metadata's one partition killed):
the consumers are killed while the producers write, so what they have not read moves to the
remote store; started again, they read it back through the brokers, and partition 0's leader (or
the metadata's) is killed or cut off during that catch-up. The data
checks must hold across the boundary: no acknowledged write lost, nothing skipped or read
twice out of order, nothing uncommitted, no duplicate from the idempotent producers.

``retention-race`` (nightly): the topic keeps 30 s of records (``RunSpec.retention_ms``) and the
consumers are down 32 s, so that back they resume where retention is deleting remote segments;
they read on from the log start, and retention deletes no record younger than itself (the
``log-start`` check with a finite retention).

``read-committed-catch-up`` (nightly): transactional producers commit and abort while the
read_committed consumers are down; their catch-up read from remote must skip every aborted record
(``suites.scenario.TIERED_READ_COMMITTED``, judged by the transactions checks).

A backend without a shared remote store, or a release before 3.6, is skipped with its one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from highwater.core.history import read_history
from highwater.core.run_dir import RunDir
from highwater.harness import tiered
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients import get_driver, transactions_refusal
from highwater.pytest_plugin import module_cluster
from highwater.runner import RunResult
from highwater.suites.findings import expect_hw9_tiered
from highwater.suites.hw8 import without_hw8
from highwater.suites.nightly import nightly
from highwater.suites.scenario import (
    PLANS,
    RUN_OPTIONS,
    TIERED_READ_COMMITTED,
    TIERED_RETENTION_MS,
    Plan,
    assert_verdicts,
    run_plan,
)

CATCH_UP = PLANS["tiered/catch-up-leader-kill"]
CATCH_UP_PARTITION = PLANS["tiered/catch-up-leader-partition"]
METADATA_LEADER_KILL = PLANS["tiered/metadata-leader-kill"]
RETENTION_RACE = PLANS["tiered/retention-race"]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """This module's own 3-broker, 3-rack tiered cluster."""
    yield from tiered_cluster(
        request, kafka_version, backend, "tiered storage needs the local backend's shared remote store"
    )


def tiered_cluster(
    request: pytest.FixtureRequest, kafka_version: str, backend: str, needs: str, **spec: Any
) -> Iterator[ClusterBackend]:
    """A module's own tiered cluster (``spec``: more of its ``ClusterSpec``), or the one line
    that skips the module: a backend other than local (``needs`` says what for), a release
    without tiered storage."""
    if backend != "local":
        pytest.skip(f"{needs}, not the {backend} backend")
    refused = tiered.tiered_refusal(kafka_version)
    if refused is not None:
        pytest.skip(refused)
    # closing: a cluster that never tiers (wait_until_tiering raises) is stopped at once, not
    # whenever the suspended generator is collected
    with contextlib.closing(module_cluster(request, kafka_version, backend, tiered=True, **spec)) as clusters:
        for cluster in clusters:
            took = tiered.wait_until_tiering(cluster)
            print(f"[tiered] the brokers tier: a probe topic left the local log {took:.1f} s after it was made")
            yield cluster


def test_a_catch_up_read_from_the_remote_store_through_a_leader_kill_keeps_everything(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    run_catch_up(
        cluster, CATCH_UP, "tiered-catch-up", profile=profile, campaign=campaign, results_root=results_root, repro=repro
    )


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 60)
def test_a_catch_up_read_through_a_partition_of_the_leader_keeps_everything(
    request: pytest.FixtureRequest, cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    """Partition 0's leader is cut off from every other node during the catch-up read. Its
    successor serves the remote segments; the cut leader keeps telling its clients it leads
    (HW-8, subtracted exactly: ``suites.hw8``), and every other promise is judged."""
    expect_hw9_tiered(request)  # librdkafka's rack consumer of the cut broker reads it on (it follows 1 and 2)
    run_catch_up(
        cluster,
        CATCH_UP_PARTITION,
        "tiered-catch-up-cut",
        hw8=True,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
    )


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 60)
def test_a_catch_up_read_through_a_kill_of_the_remote_log_metadata_s_leader_keeps_everything(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    """The remote log metadata's one partition loses its leader during the catch-up read: the
    metadata every broker cached keeps remote reads going, and what it costs is time, not a
    record."""
    run_catch_up(
        cluster,
        METADATA_LEADER_KILL,
        "tiered-metadata-kill",
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
    )


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 45)
def test_read_committed_consumers_catch_up_through_remote_transactions(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    """Transactional producers commit and abort while the read_committed consumers are down
    (one read_uncommitted consumer beside them), so the segments that move to the remote store
    hold both; back, the consumers' catch-up read from remote must skip every aborted record
    (the remote segments' transaction indexes) and return whole committed transactions."""
    driver = get_driver(RUN_OPTIONS.get().client)
    refused = transactions_refusal(driver.name, driver.version)
    if refused is not None:
        pytest.skip(refused)
    result = run_catch_up(
        cluster,
        TIERED_READ_COMMITTED,
        "tiered-read-committed",
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        transactional=True,
        isolation_level="read_committed",
        read_uncommitted_consumers=1,
        acks="all",
        min_insync_replicas=2,
    )
    by = {v.check: v for v in result.verdicts}
    stats = result.stats["producers"]
    assert sum(p["committed"] for p in stats.values()) > 0 and sum(p["aborted"] for p in stats.values()) > 0, stats
    assert by["aborted-read"].counts["reads"] > 0, "the read_committed consumers read nothing to judge"
    assert by["uncommitted-read"].counts.get("txn_uncommitted_allowed", 0) > 0, (
        "the read_uncommitted consumer read no aborted record: the remote segments held none"
    )


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 60)
def test_retention_racing_a_catch_up_read_deletes_only_what_it_may(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    """The topic keeps 30 s of records and the consumers are down 32 s: back, they resume in
    remote segments retention is deleting under them, and must read on from the log start
    (a reset to the earliest offset is theirs to make, a skip of a record still held is not),
    while retention deletes no record younger than itself (``log-start`` with a finite
    retention). Retention must really have deleted records the consumers had not read."""
    result = run_plan(
        cluster,
        RETENTION_RACE,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic="tiered-retention-race",
        partitions=3,
        tiered=True,
        retention_ms=TIERED_RETENTION_MS,
    )
    assert_verdicts(result, must_hold=RETENTION_RACE.must_hold)
    assert_retention_raced(list(read_history(RunDir(result.dir).history)))


def assert_retention_raced(events: list[dict[str, Any]]) -> None:
    """In every partition retention moved the log start past the offset the consumers had
    reached when they were killed: back, they met it."""
    deleted = unread_deleted(events)
    assert deleted, "no partition was read or observed"
    for partition, (reached, start) in sorted(deleted.items()):
        assert start > reached, (
            f"partition {partition}: retention moved the log start to {start}, not past offset {reached} "
            "the consumers had reached when they were killed: they never raced it"
        )


def unread_deleted(events: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per partition: the next offset the consumers would have read when the first fault (their
    kill) began, and the highest log start the observer saw."""
    kill = next(e["time_ns"] for e in events if e.get("f") == "fault")
    reached: dict[int, int] = {}
    starts: dict[int, int] = {}
    for e in events:
        v = e.get("value") or {}
        if e.get("f") == "poll" and e.get("type") == "ok" and e["time_ns"] < kill:
            for r in v.get("records") or ():
                reached[r["partition"]] = max(reached.get(r["partition"], 0), r["offset"] + 1)
        elif e.get("f") == "meta" and isinstance(v.get("log_start"), int):
            starts[v["partition"]] = max(starts.get(v["partition"], 0), v["log_start"])
    return {p: (reached.get(p, 0), starts.get(p, 0)) for p in sorted(set(reached) | set(starts))}


def run_catch_up(cluster: ClusterBackend, plan: Plan, topic: str, *, hw8: bool = False, **run: Any) -> RunResult:
    """Run a catch-up ``plan`` on a tiered topic of 3 partitions: its checks hold (``hw8``: but
    for the stalls HW-8 explains, a plan that cuts a leader off), and every consumer's catch-up
    read began in the remote tier."""
    result = run_plan(cluster, plan, topic=topic, partitions=3, tiered=True, **run)
    if hw8:
        verdicts, zombies = without_hw8(result.verdicts, RunDir(result.dir).history)
        for z in zombies:
            print(z)
        result = dataclasses.replace(result, verdicts=verdicts)
    assert_verdicts(result, must_hold=plan.must_hold)
    assert isinstance(cluster, tiered.RemoteStore)
    events = list(read_history(RunDir(result.dir).history))
    name = next(e["value"]["topic"] for e in events if e.get("f") == "assign")
    remote = {p: tiered.remote_segments(cluster.remote_store, name, p) for p in range(3)}
    assert_caught_up_from_remote(events, remote)
    assert_read_from_remote(RunDir(result.dir))
    return result


def assert_read_from_remote(run: RunDir) -> None:
    """The consumers returned records while those were below their leader's local log start (the
    run's ``tiered-measures.json``: ``remote_records``): the read really crossed the remote tier,
    which the store's segments at the end of the run cannot tell (3.6.2 deleted nothing locally in
    a run's first 30 s, and the catch-up read was all local)."""
    measures = json.loads(run.tiered_measures.read_text())
    assert measures["remote_records"] > 0, f"no record was read from the remote store: {measures}"


def assert_caught_up_from_remote(events: list[dict[str, Any]], remote: dict[int, list[int]]) -> None:
    """Each consumer started again (its second ``assign`` of a partition) at an offset below the
    base of a segment the remote store holds: its catch-up read began in the remote tier."""
    assigns: dict[tuple[str, int], list[int]] = {}
    for e in events:
        if e.get("f") == "assign" and e.get("type") == "ok" and e["value"].get("offset") is not None:
            assigns.setdefault((e["process"], e["value"]["partition"]), []).append(e["value"]["offset"])
    resumed = {k: v[1] for k, v in assigns.items() if len(v) > 1}
    assert resumed, "no consumer was started again: nothing was read back from the remote store"
    for (consumer, p), offset in sorted(resumed.items()):
        segments = remote.get(p) or []
        assert segments and offset < segments[-1], (
            f"{consumer} resumed partition {p} at offset {offset}, not below a remote segment "
            f"(remote bases: {segments[-3:]}): its catch-up read did not cross the remote tier"
        )
