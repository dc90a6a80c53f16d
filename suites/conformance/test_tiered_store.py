"""Tiered storage (KIP-405) with its remote store failing: what a broken store may cost is time,
never a record.

The module's cluster is tiered and its disks are lossy (``ClusterSpec(tiered=True,
disk="lossy")``): the remote store too sits on lossyfs, so ``disk-fail --target store`` makes
every read and write of it fail with EIO (``harness.diskfs``, ``faults.inject``). In
``store-failing`` the consumers are killed while the producers write; the store fails 8 s later,
for 20 s; the consumers come back 4 s into the failure and start their catch-up read from it.
Copies to the store fail, so a broker must keep each segment locally until it is copied (the
local retention of one second applies only to copied segments); reads of what was copied fail
until the store heals. The data checks hold throughout (nothing lost, skipped, read
uncommitted or written twice by the idempotent producers), every consumer resumed below a
segment the store holds, and they read on after the heal (the progress check after every heal).
``store-slow`` is the same with the store slowed instead (``disk-slow --target store``: 200 ms
before each write, 2 s before each fsync), ``store-full`` with it refusing writes as a full disk
does (``disk-full --target store``, ENOSPC): copies fall behind or fail, reads of what it holds
go on. ``store-lost-unsynced`` makes the store lose what it had not fsynced (``power-loss
--target store``): records are lost there, and what is judged is that no consumer skips them.
kafka-python's follower-served records come late in the first three (HW-22): a non-strict xfail
on it, for the timed checks alone.

Nightly: the catch-up through a leader kill is the tiered suite's ``make test`` scenario.
A backend without a local remote store, or a release before 3.6, is skipped with its one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from highwater.core.history import read_history
from highwater.core.run_dir import RunDir
from highwater.harness import tiered
from highwater.harness.backend import ClusterBackend
from highwater.suites.conformance.test_tiered import assert_caught_up_from_remote, tiered_cluster
from highwater.suites.findings import expect_hw22_tiered
from highwater.suites.nightly import nightly
from highwater.suites.scenario import PLANS, Plan, assert_verdicts, run_plan

STORE_FAILING = PLANS["tiered/store-failing"]
STORE_SLOW = PLANS["tiered/store-slow"]
STORE_FULL = PLANS["tiered/store-full"]
STORE_LOST = PLANS["tiered/store-lost-unsynced"]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """This module's own 3-broker, 3-rack tiered cluster, its disks and remote store on lossyfs."""
    needs = "faults of the remote store need the local backend's store on lossyfs"
    yield from tiered_cluster(request, kafka_version, backend, needs, disk="lossy")


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 75)
def test_a_failing_remote_store_costs_time_not_records(
    request: pytest.FixtureRequest, cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    expect_hw22_tiered(request)
    run_store_fault(cluster, STORE_FAILING, "tiered-store-failing", profile, campaign, results_root, repro)


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 75)
def test_a_slow_remote_store_costs_time_not_records(
    request: pytest.FixtureRequest, cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    expect_hw22_tiered(request)
    run_store_fault(cluster, STORE_SLOW, "tiered-store-slow", profile, campaign, results_root, repro)


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 75)
def test_a_full_remote_store_costs_time_not_records(
    request: pytest.FixtureRequest, cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    expect_hw22_tiered(request)
    run_store_fault(cluster, STORE_FULL, "tiered-store-full", profile, campaign, results_root, repro)


def run_store_fault(
    cluster: ClusterBackend, plan: Plan, topic: str, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    """Run a store-fault plan on a tiered topic of 3 partitions: its checks hold, and every
    consumer resumed below a segment the store holds (its catch-up read met the store)."""
    result = run_plan(
        cluster,
        plan,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic=topic,
        partitions=3,
        tiered=True,
    )
    assert_verdicts(result, must_hold=plan.must_hold)
    assert isinstance(cluster, tiered.RemoteStore)
    events = list(read_history(RunDir(result.dir).history))
    name = next(e["value"]["topic"] for e in events if e.get("f") == "assign")
    remote = {p: tiered.remote_segments(cluster.remote_store, name, p) for p in range(3)}
    assert_caught_up_from_remote(events, remote)


@nightly("the tiered suite's catch-up through a leader kill runs in make test", 100)
def test_a_remote_store_that_loses_its_unsynced_files_loses_records_and_no_consumer_skips_them(
    cluster: ClusterBackend, profile: Any, campaign: str, results_root: Any, repro: str
) -> None:
    """``store-lost-unsynced``: the store loses what it had not fsynced while the consumers are
    down. Kafka's ``LocalTieredStorage`` fsyncs nothing, so every segment copied so far is gone
    from every replica (the local copies were deleted after a second). The records only those
    segments held are lost, allowed by the policy (``remote_store_loss``); the final read finds
    them unreadable below the local log start; and no consumer skips them, rewinds or misses a
    truncation: a fetch there fails, and the consumer waits."""
    result = run_plan(
        cluster,
        STORE_LOST,
        profile=profile,
        campaign=campaign,
        results_root=results_root,
        repro=repro,
        topic="tiered-store-lost",
        partitions=3,
        tiered=True,
        remote_store_loss=True,
        # the consumers wait at the lost segments for good: settling cannot end in their catch-up
        settle_timeout=20.0,
    )
    assert_verdicts(result, must_hold=STORE_LOST.must_hold)
    events = list(read_history(RunDir(result.dir).history))
    dropped = [
        e["value"]["lost"][tiered.STORE_PARTY]
        for e in events
        if e.get("f") == "fault" and e.get("type") == "ok" and e["value"].get("kind") == "power_loss"
    ]
    assert dropped and dropped[0]["removed"] > 0, f"the store lost no file: {dropped}"
    unreadable = [e["value"] for e in events if e.get("f") == "final-read" and e["value"].get("unreadable")]
    assert unreadable, "the final read found every remote segment readable after the store lost them"
    lost = next(v for v in result.verdicts if v.check == "lost-write")
    assert lost.counts["lost"] > 0 and lost.allowed, f"no acknowledged write was lost with the store: {lost.counts}"
    assert_lost_only_where_unreadable(events)
    # the consumers were told: each met the broker's error at the lost segments after the loss
    loss_at = next(e["time_ns"] for e in events if e.get("f") == "fault" and e["value"].get("kind") == "power_loss")
    told = {e["process"] for e in events if e.get("f") == "poll" and e.get("error") and e["time_ns"] > loss_at}
    consumers = {e["process"] for e in events if e.get("f") == "assign"}
    assert told == consumers, f"consumers that never met an error after the store's loss: {sorted(consumers - told)}"


def assert_lost_only_where_unreadable(events: list[dict[str, Any]]) -> None:
    """The policy excuses every lost write of a run whose store lost files; this holds it to the
    ones the store took: each acknowledged write missing from its partition's final read lies in
    a range that read could not read back (``unreadable``)."""
    finals: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.get("f") == "final-read" and e.get("type") == "ok":
            finals.setdefault(e["value"]["partition"], e["value"])
    held = {p: {r[1] for r in v["records"]} for p, v in finals.items()}
    outside = [
        (e["value"]["partition"], e["value"]["offset"])
        for e in events
        if e.get("f") == "send" and e.get("type") == "ok" and e["value"].get("partition") in finals
        if e["value"]["value"] not in held[e["value"]["partition"]]
        and not any(
            lo <= e["value"]["offset"] < hi for lo, hi, *_ in finals[e["value"]["partition"]].get("unreadable") or []
        )
    ]
    assert not outside, f"acknowledged writes lost outside what the store lost (partition, offset): {outside[:10]}"
