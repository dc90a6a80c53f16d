"""KIP-392 out-of-range cases 1-4 as protocol probes against a chosen *follower*.

Each test builds one state deterministically on a fresh topic of a 3-broker / 3-rack cluster the
module shares (started once with ``BROKER_CONFIG``; every fault a test made is healed and checked
healed before the next test starts: every broker running and answering, every proxy enabled
with no toxic), then sends raw
consumer Fetch requests (``replica_id=-1``, ``rack_id`` set, the newest Fetch version both sides
speak: v18 on 4.3.1) to the follower with ``suites.conformance.probes.fetch_probe``, once without
``current_leader_epoch`` (-1, pre-KIP-320) and once with the current leader epoch, and asserts
the partition's error code, ``high_watermark``, ``log_start_offset`` and record count.

Expected answers (Kafka 3.3.1 ... 4.3.1: the code paths below are unchanged across them):

============================  ===================  ==============================================
case (offset o on follower F)  error               high_watermark / log_start_offset / records
============================  ===================  ==============================================
1  F.HW < o < F.LEO           NONE (0)            F's HW / F's log start / 0 records
2  F.LEO < o <= leader HW     OFFSET_OUT_OF_RANGE  -1 / -1 / 0
3  o < log start              OFFSET_OUT_OF_RANGE  -1 / -1 / 0
4  o > every LEO              OFFSET_OUT_OF_RANGE  -1 / -1 / 0
============================  ===================  ==============================================

With a *matching* ``current_leader_epoch`` the answers are the same: the epoch is checked first
(``Partition.localLogWithEpochOrThrow``: a newer epoch than the replica's gives
UNKNOWN_LEADER_EPOCH (75), an older one FENCED_LEADER_EPOCH (74)), and only then the offset.

Sources (apache/kafka):
- case 1: ``UnifiedLog.read`` caps a consumer read at the HW (``FetchIsolation.HIGH_WATERMARK``);
  ``LocalLog.read`` returns an empty ``FetchDataInfo`` when ``startOffset >= maxOffsetMetadata``
  and ``startOffset <= logEndOffset`` -- no error. ``Partition.readRecords`` puts the replica's
  own ``initialHighWatermark`` / ``initialLogStartOffset`` into the answer.
- cases 2 and 4: ``LocalLog.read`` throws ``OffsetOutOfRangeException`` when
  ``startOffset > logEndOffset`` (the replica's own LEO; the leader's HW is not consulted).
- case 3: ``UnifiedLog.read`` -> ``checkLogStartOffset`` throws ``OffsetOutOfRangeException``.
- the -1 fields: ``ReplicaManager.readFromLog`` catches ``OffsetOutOfRangeException`` into
  ``handleOffsetOutOfRangeError``, which (no tiered storage) returns
  ``createLogReadResult(e)`` with ``UnifiedLog.UnknownOffset`` (-1) for HW and log start.
- KAFKA-14255 / apache/kafka PR 12734 proposed an *empty* answer instead of
  OFFSET_OUT_OF_RANGE for a v11+ consumer fetch without a leader epoch beyond a follower's LEO;
  the PR was closed unmerged, and 4.3.1's ``ReplicaManager.handleOffsetOutOfRangeError`` has no
  such branch (checked in the 4.3.1 bytecode), so case 2 without an epoch is still
  OFFSET_OUT_OF_RANGE. The client is expected to handle it (Java ``FetchCollector`` and
  kafka-python's fetcher clear the preferred read replica and retry on the leader instead of
  resetting).
- Kafka never answers a Fetch with OFFSET_NOT_AVAILABLE (78); that code is for ListOffsets and
  OffsetsForLeaderEpoch while a new leader's HW lags (KIP-207 / KIP-320).

Every test writes its probes to ``<results>/<campaign>/probes/kip392-case<N>.json``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer, TopicPartition

from highwater.harness.backend import ClusterBackend, heal, unhealed
from highwater.harness.local.cluster import Cluster
from highwater.harness.local.node import NodeState
from highwater.harness.observe import CONSUMER_REPLICA_ID, Observer
from highwater.harness.waiting import wait_until
from highwater.suites.conformance.probes import (
    NONE,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_LEADER_EPOCH,
    fetch_probe,
    record_probe,
    replica_hw,
    replica_leo,
    topic_id,
)

N = 100  # records written (acks=all) before each case is built
# A long lag time keeps the ISR put while a follower is paused or lagging: the states below must
# not be undone by an ISR shrink halfway through (the fast-failure default is 4 s).
BROKER_CONFIG = {"replica.lag.time.max.ms": "30000"}
UNKNOWN = -1  # UnifiedLog.UnknownOffset, in the answer of a failed partition read


def _producer(cluster: Cluster, acks: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=cluster.bootstrap(),
        acks=acks,
        linger_ms=0,
        request_timeout_ms=10000,
        max_block_ms=10000,
        **cluster.client_security.as_kafka_python(),
    )


def _produce(producer: KafkaProducer, topic: str, count: int, prefix: str) -> None:
    for i in range(count):
        producer.send(topic, value=f"{prefix}-{i}".encode(), partition=0).get(timeout=15)


def _healed(cluster: ClusterBackend) -> None:
    """Every fault undone and seen undone (``harness.backend.heal``, then nothing ``unhealed``)."""
    heal(cluster)
    left = unhealed(cluster)
    assert not left, f"not healed: {left}"


@pytest.fixture(scope="module")
def probe_cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """One 3-broker / 3-rack cluster with ``BROKER_CONFIG`` for the module (each case takes a
    fresh topic); its logs are kept when a test of the module failed, as the plugin's ``cluster``
    fixture does."""
    from highwater.pytest_plugin import module_cluster

    yield from module_cluster(request, kafka_version, backend, BROKER_CONFIG)


@pytest.fixture
def cluster(probe_cluster: ClusterBackend) -> Iterator[ClusterBackend]:
    """The module's cluster, checked healed before each case and healed after it."""
    _healed(probe_cluster)
    try:
        yield probe_cluster
    finally:
        _healed(probe_cluster)


class Env:
    """A fresh topic with N committed records: leader L, probed follower F, other G."""

    def __init__(self, cluster: Cluster, topic: str) -> None:
        self.cluster = cluster
        self.topic = topic = cluster.topic_name(topic)
        cluster.create_topic(topic, partitions=1, replication_factor=3)
        # Producers are made while every broker answers: a client bootstrapping later may pick
        # a paused broker, whose socket accepts but never answers.
        self.acks_all = _producer(cluster, "all")
        self.acks_one = _producer(cluster, 1)
        _produce(self.acks_all, topic, N, "base")
        self.acks_one.partitions_for(topic)
        self.obs: Observer = cluster.observer()
        self.tid: uuid.UUID = topic_id(self.obs, topic)
        s = cluster.partition_state(topic, 0)
        self.leader = s.leader
        self.follower, self.other = [r for r in s.replicas if r != s.leader]
        self.epoch = s.leader_epoch
        # F has the records and has heard of the HW that commits them
        wait_until(
            lambda: replica_hw(self.obs, self.follower, topic, self.tid)[0] == N,
            15,
            f"follower {self.follower} has HW {N}",
        )

    def close(self) -> None:
        for p in (self.acks_all, self.acks_one):
            p.close(timeout=5)

    def probe(self, offset: int, epoch: int = -1, node: int | None = None) -> dict[str, Any]:
        return fetch_probe(
            self.obs, self.follower if node is None else node, self.topic, self.tid, 0, offset, leader_epoch=epoch
        )

    def state(self) -> dict[str, Any]:
        hw, ls = replica_hw(self.obs, self.follower, self.topic, self.tid)
        return {
            "leader": self.leader,
            "follower": self.follower,
            "other_follower": self.other,
            "leader_epoch": self.epoch,
            "follower_hw": hw,
            "follower_log_start": ls,
            "follower_leo": replica_leo(self.obs, self.follower, self.topic),
            # ListOffsets(LATEST) to the leader as a consumer: the leader's HW
            "leader_hw": self.obs.list_offset(self.leader, self.topic, 0, replica_id=CONSUMER_REPLICA_ID),
        }


#: the answers each case expects (the table in the module doc); the broken twins in
#: tests/unit/test_broken_twins.py feed ``_check`` answers that break them
OUT_OF_RANGE: dict[str, Any] = {
    "error_code": OFFSET_OUT_OF_RANGE,
    "records": 0,
    "high_watermark": UNKNOWN,
    "log_start_offset": UNKNOWN,
}


def empty_in_range(hw: int, log_start: int = 0) -> dict[str, Any]:
    """Cases 1 and the boundaries: no error, no records, the replica's own HW and log start."""
    return {"error_code": NONE, "records": 0, "high_watermark": hw, "log_start_offset": log_start}


def _check(probes: list[dict[str, Any]], probe: dict[str, Any], what: str, **expected: Any) -> None:
    """Keep the probe (with what was expected) for the record, then compare."""
    probe = {**probe, "case": what, "expected": expected}
    probes.append(probe)
    got = {k: probe["response"][k] for k in expected}
    probe["ok"] = got == expected
    assert got == expected, (
        f"{what}: expected {expected}, got {got} (full answer {probe['response']}, request {probe['request']})"
    )


def _record(
    results_root: Path,
    campaign: str,
    kafka_version: str,
    case: int,
    title: str,
    state: dict[str, Any],
    probes: list[dict[str, Any]],
    repro: str,
) -> None:
    record_probe(
        results_root,
        campaign,
        f"kip392-case{case}",
        kafka_version,
        {
            "case": case,
            "title": title,
            "state": state,
            "probes": probes,
            "repro": repro,
            "valid": all(p.get("ok") for p in probes),
        },
    )


def test_case1_offset_between_follower_hw_and_leo_is_empty_not_an_error(
    cluster: Cluster, kafka_version: str, results_root: Path, campaign: str, repro: str
) -> None:
    """F.HW < o < F.LEO: the follower has the record but does not know it is committed. It must
    not return it (it would be an uncommitted read), and it must not say out of range (it is in
    range): NONE, no records, its own HW and log start, so the consumer simply retries."""
    env = Env(cluster, "kip392-case1")
    cluster, probes, state = env.cluster, [], {}
    try:
        cluster.node(env.other).pause()  # G stops fetching: the leader's HW cannot pass N
        _produce(env.acks_one, env.topic, 20, "uncommitted")  # acks=1: on L at once, then fetched by F
        wait_until(
            lambda: replica_leo(env.obs, env.follower, env.topic) == N + 20,
            15,
            f"follower {env.follower} has fetched the 20 uncommitted records",
        )
        state = env.state()
        assert state["follower_hw"] == N and state["leader_hw"] == N, state
        f_hw, f_leo = state["follower_hw"], state["follower_leo"]
        o = (f_hw + f_leo) // 2
        assert f_hw < o < f_leo
        for epoch in (-1, env.epoch):
            _check(
                probes,
                env.probe(o, epoch),
                f"case 1: F.HW {f_hw} < {o} < F.LEO {f_leo}, epoch {epoch}",
                **empty_in_range(f_hw),
            )
            # the boundary: a tailing consumer at the HW gets the same empty answer
            _check(
                probes,
                env.probe(f_hw, epoch),
                f"case 1 boundary: o = F.HW {f_hw}, epoch {epoch}",
                **empty_in_range(f_hw),
            )
            _check(
                probes,
                env.probe(f_leo - 1, epoch),
                f"case 1: o = F.LEO-1 {f_leo - 1}, epoch {epoch}",
                **empty_in_range(f_hw),
            )
    finally:
        if cluster.node(env.other).state == NodeState.PAUSED:
            cluster.node(env.other).resume()
        env.close()
        _record(
            results_root,
            campaign,
            kafka_version,
            1,
            "offset between the follower's HW and its LEO",
            state,
            probes,
            repro,
        )
    # healed: the HW moves on and the follower now serves the records
    wait_until(
        lambda: replica_hw(env.obs, env.follower, env.topic, env.tid)[0] == N + 20,
        30,
        "the follower's HW reaches its LEO once the other follower resumes",
    )
    served = env.probe(N)["response"]
    assert served["error_code"] == NONE and served["records"] == 20, served


def test_case2_offset_between_follower_leo_and_committed_offset_is_out_of_range(
    cluster: Cluster, kafka_version: str, results_root: Path, campaign: str, repro: str
) -> None:
    """F.LEO < o <= leader HW: o is committed (the leader's HW is past it) but F does not have
    it. Kafka answers OFFSET_OUT_OF_RANGE, with or without a leader epoch; the consumer must then
    go back to the leader rather than reset (KIP-392's out-of-range handling)."""
    env = Env(cluster, "kip392-case2")
    cluster, probes, state = env.cluster, [], {}
    f = env.follower
    links = cluster.replication_links(f, "both")
    try:
        # F leaves the ISR at once when it dies (fencing), whatever the lag time; while it is
        # down the leader and G commit 30 more; F comes back with its replication cut, so its
        # log stays at N while the partition's HW is at N + 30.
        cluster.node(f).kill()
        cluster.wait_for_isr(env.topic, 0, lambda s: f not in s.isr, 30, f"killed broker {f} leaves the ISR")
        _produce(env.acks_all, env.topic, 30, "committed")
        cluster.set_links_enabled(links, False)
        cluster.node(f).start()
        cluster.wait_for_brokers(60, ids=[f])
        # F serves the partition again (its metadata has caught up) at its own LEO
        wait_until(
            lambda: env.probe(replica_leo(env.obs, f, env.topic))["response"]["error_code"] == NONE,
            30,
            f"restarted broker {f} serves {env.topic}-0",
        )
        state = env.state()
        f_leo, leader_hw = state["follower_leo"], state["leader_hw"]
        assert (
            f_leo == N and leader_hw == N + 30 and f not in cluster.partition_state(env.topic, 0, offsets=False).isr
        ), state
        o = (f_leo + leader_hw) // 2
        assert f_leo < o <= leader_hw
        for epoch in (-1, env.epoch):
            _check(
                probes,
                env.probe(o, epoch),
                f"case 2: F.LEO {f_leo} < {o} <= leader HW {leader_hw}, epoch {epoch}",
                **OUT_OF_RANGE,
            )
            _check(
                probes, env.probe(leader_hw, epoch), f"case 2: o = leader HW {leader_hw}, epoch {epoch}", **OUT_OF_RANGE
            )
            # the boundary: at F's own LEO the follower is in range (empty, no error)
            _check(
                probes,
                env.probe(f_leo, epoch),
                f"case 2 boundary: o = F.LEO {f_leo}, epoch {epoch}",
                error_code=NONE,
                records=0,
            )
            # the leader has o and serves it (to a consumer it redirects nobody at offset o
            # unless a replica in the consumer's rack has it: the probe's rack matches none)
            _check(
                probes,
                env.probe(o, epoch, node=env.leader),
                f"case 2 on the leader: o = {o}, epoch {epoch}",
                error_code=NONE,
                records=leader_hw - o,
                high_watermark=leader_hw,
            )
    finally:
        cluster.set_links_enabled(links, True)
        if cluster.node(f).state == NodeState.STOPPED:
            cluster.node(f).start()
        env.close()
        _record(
            results_root,
            campaign,
            kafka_version,
            2,
            "offset between the follower's LEO and a known-committed offset (the leader's HW)",
            state,
            probes,
            repro,
        )
    cluster.wait_for_isr(env.topic, 0, lambda s: len(s.isr) == 3, 60, f"broker {f} rejoins the ISR after healing")


def test_case3_offset_below_log_start_is_out_of_range(
    cluster: Cluster, kafka_version: str, results_root: Path, campaign: str, repro: str
) -> None:
    """o < log start (raised with DeleteRecords): OFFSET_OUT_OF_RANGE; at the log start the
    follower serves records and reports the new log start."""
    env = Env(cluster, "kip392-case3")
    probes: list[dict[str, Any]] = []
    state: dict[str, Any] = {}
    start = 60
    try:
        env.obs.admin.delete_records({TopicPartition(env.topic, 0): start})
        wait_until(
            lambda: replica_hw(env.obs, env.follower, env.topic, env.tid)[1] == start,
            15,
            f"follower {env.follower} has log start {start}",
        )
        state = env.state()
        for epoch in (-1, env.epoch):
            for o in (0, start - 1):
                _check(probes, env.probe(o, epoch), f"case 3: {o} < log start {start}, epoch {epoch}", **OUT_OF_RANGE)
            _check(
                probes,
                env.probe(start, epoch),
                f"case 3 boundary: o = log start {start}, epoch {epoch}",
                error_code=NONE,
                records=N - start,
                high_watermark=N,
                log_start_offset=start,
            )
    finally:
        env.close()
        _record(results_root, campaign, kafka_version, 3, "offset below the log start", state, probes, repro)


def test_case4_offset_above_everything_is_out_of_range(
    cluster: Cluster, kafka_version: str, results_root: Path, campaign: str, repro: str
) -> None:
    """o above every replica's LEO: OFFSET_OUT_OF_RANGE on the follower and on the leader. A
    current_leader_epoch newer than the replica's is refused before the offset is looked at."""
    env = Env(cluster, "kip392-case4")
    probes: list[dict[str, Any]] = []
    state: dict[str, Any] = {}
    try:
        state = env.state()
        top = max(replica_leo(env.obs, b, env.topic) for b in (env.leader, env.follower, env.other))
        for epoch in (-1, env.epoch):
            for o in (top + 1, top + 1_000_000):
                for node, who in ((env.follower, "follower"), (env.leader, "leader")):
                    _check(
                        probes,
                        env.probe(o, epoch, node=node),
                        f"case 4 on the {who}: {o} > every LEO {top}, epoch {epoch}",
                        **OUT_OF_RANGE,
                    )
            _check(
                probes,
                env.probe(top, epoch),
                f"case 4 boundary: o = LEO = HW {top}, epoch {epoch}",
                **empty_in_range(N),
            )
        _check(
            probes,
            env.probe(top + 1, env.epoch + 1),
            f"case 4 with a future epoch {env.epoch + 1}",
            error_code=UNKNOWN_LEADER_EPOCH,
            records=0,
            high_watermark=UNKNOWN,
            log_start_offset=UNKNOWN,
        )
    finally:
        env.close()
        _record(results_root, campaign, kafka_version, 4, "offset above everything", state, probes, repro)
