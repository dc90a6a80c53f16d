"""Observations of a running cluster through Kafka's own APIs (never through broker internals).

- leader, leader epoch, replicas, ISR: a Metadata request;
- the high watermark: ListOffsets(LATEST) to the leader as a consumer with READ_UNCOMMITTED,
  which Kafka answers with the leader's HW;
- the log end offset of each replica: ListOffsets(LATEST) sent to that replica with
  ``replica_id = -2`` (``DEBUGGING_REPLICA_ID``): Kafka then neither insists on the leader nor
  applies an isolation level, and answers with that replica's own LEO.

kafka-python 3.0 has no public call for "send this request to broker N"; ``send_to`` uses the
admin client's connection manager (``KafkaAdminClient._manager``), the same path its own admin
calls take (``knows_brokers`` reads its metadata cache the same way).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError, for_code
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from highwater.core.errors import ClusterError

from .security import PLAINTEXT, ClientSecurity
from .topology import Topology
from .waiting import wait_until

log = logging.getLogger(__name__)

CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
LATEST_TIMESTAMP = -1
#: ListOffsets' special timestamps: the log start (on a tiered topic, the remote store's first
#: offset too) and the local log start (KIP-405, v8+): below it the leader serves from remote
EARLIEST_TIMESTAMP = -2
EARLIEST_LOCAL_TIMESTAMP = -4


def _list_offsets(topic: str, partitions: list[int], replica_id: int, timestamp: int) -> Any:
    """A ListOffsets request for ``partitions`` of ``topic`` (``replica_id``: see the module doc)."""
    return ListOffsetsRequest(
        replica_id=replica_id,
        isolation_level=0,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                        partition_index=p, current_leader_epoch=-1, timestamp=timestamp
                    )
                    for p in partitions
                ],
            )
        ],
    )


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # -1 when there is none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    hw: int | None = None  # None when the leader could not be asked
    leo: dict[int, int] = field(default_factory=dict)  # replica -> log end offset, those that answered
    #: the leader's log start and local log start (``starts=True``; None: not asked or no answer)
    log_start: int | None = None
    local_start: int | None = None

    def to_event_value(self) -> dict[str, Any]:
        """The ``meta`` event value of the history format (the starts only where asked)."""
        starts = {"log_start": self.log_start, "local_start": self.local_start}
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "hw": self.hw,
            "leo": {str(k): v for k, v in self.leo.items()},
            **{k: v for k, v in starts.items() if v is not None},
        }


class Observer:
    """An admin connection through one client rack's proxies."""

    def __init__(
        self,
        bootstrap: list[str],
        client_id: str = "highwater-observer",
        request_timeout_ms: int = 5000,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        # A short metadata age: brokers that register (or come back) after this client started
        # must become addressable by id quickly (send_to raises UnknownBrokerIdError otherwise).
        self.admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            metadata_max_age_ms=2000,
            **security.as_kafka_python(),
        )
        self._unanswered: set[int] = set()  # brokers whose last request failed (topic_partitions)

    def close(self) -> None:
        self.admin.close()

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _broker_ids(self) -> list[int]:
        """The brokers this client can address by id, from its metadata cache (see module docstring)."""
        return sorted(int(b.node_id) for b in self.admin._manager.cluster.brokers())

    def elect_unclean(self, topic: str, partitions: list[int]) -> str:
        """ElectLeaders(UNCLEAN) for ``partitions`` of ``topic``; the response, as text. The
        admin client keeps the controller id it was told first (a KRaft broker names a random
        live broker) and sends every controller request there, so after that broker was killed
        each would fail with ``UnknownBrokerIdError``: the id is asked afresh each time."""
        self.admin._controller_id = None  # see module docstring
        return str(self.admin.elect_leaders(1, {topic: partitions}, raise_errors=False))

    def knows_brokers(self, ids: set[int]) -> bool:
        """Whether this client can address every broker in ``ids`` by id (``send_to``); asks
        for a metadata refresh when it cannot yet."""
        if ids <= set(self._broker_ids()):
            return True
        self.admin._manager.cluster.request_update()  # see module docstring
        return False

    def answers(self, node_id: int) -> bool:
        """Whether broker ``node_id`` answers a Metadata request on the address this client knows
        it by (for a rack's observer: that rack's proxy of the broker). False until it does."""
        from kafka.protocol.metadata import MetadataRequest

        if not self.knows_brokers({node_id}):
            return False
        try:
            self.send_to(node_id, MetadataRequest(topics=[], allow_auto_topic_creation=False))
        except Exception:  # noqa: BLE001 - any failure means "not yet"; the caller's wait says what it waited for
            return False
        return True

    # -- raw requests -----------------------------------------------------------------------
    def send_to(self, node_id: int, request: Any) -> Any:
        manager = self.admin._manager  # see module docstring

        async def call() -> Any:
            return await manager.send(request, node_id=node_id)

        return manager.run(call)

    def list_offset(
        self, node_id: int, topic: str, partition: int, *, replica_id: int, timestamp: int = LATEST_TIMESTAMP
    ) -> int:
        resp = self.send_to(node_id, _list_offsets(topic, [partition], replica_id, timestamp))
        part = resp.topics[0].partitions[0]
        err = for_code(part.error_code)
        if part.error_code != 0:
            raise err(f"ListOffsets {topic}-{partition} on broker {node_id}")
        return int(part.offset)

    # -- cluster and partitions -----------------------------------------------------------
    def live_brokers(self) -> set[int]:
        """Ids of the registered, unfenced brokers (KRaft leaves fenced ones out of Metadata).

        A plain Metadata request rather than ``KafkaAdminClient.describe_cluster()``, which
        raises ``KeyError: 'endpoint_type'`` on Kafka 3.3-3.6 (DescribeCluster v0 has no such
        field; kafka-python 3.0.12 pops it unconditionally): docs/findings.md, HW-2."""
        from kafka.protocol.metadata import MetadataRequest

        manager = self.admin._manager
        req = MetadataRequest(topics=[], allow_auto_topic_creation=False)

        async def call() -> Any:
            return await manager.send(req)

        return {int(b.node_id) for b in manager.run(call).brokers}

    def leader_named_by(self, node_id: int, topic: str, partition: int) -> tuple[int, int]:
        """(leader id, leader epoch) of ``topic``-``partition`` as broker ``node_id`` tells its
        clients in a Metadata answer: its own metadata image, which can be stale (a broker cut
        off from the controller keeps the image it had, docs/findings.md, HW-8)."""
        from kafka.protocol.metadata import MetadataRequest

        req = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
        )
        resp = self.send_to(node_id, req)
        found = next(t for t in resp.topics if t.name == topic)
        part = next(p for p in found.partitions if p.partition_index == partition)
        if part.error_code != 0:
            raise for_code(part.error_code)(f"Metadata {topic}-{partition} from broker {node_id}")
        return int(part.leader_id), int(part.leader_epoch)

    def active_controller(self) -> int:
        """The KRaft quorum leader, from DescribeQuorum (brokers forward it to the controller).
        Metadata's ``controller_id`` is no use here: in KRaft it names a random broker."""
        from kafka.protocol.admin.cluster import DescribeQuorumRequest

        req = DescribeQuorumRequest(
            topics=[
                DescribeQuorumRequest.TopicData(
                    topic_name="__cluster_metadata",
                    partitions=[DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)],
                )
            ]
        )
        manager = self.admin._manager

        async def call() -> Any:
            return await manager.send(req)

        resp = manager.run(call)
        if resp.error_code != 0:
            raise for_code(resp.error_code)("DescribeQuorum")
        part = resp.topics[0].partitions[0]
        if part.error_code != 0:
            raise for_code(part.error_code)("DescribeQuorum")
        return int(part.leader_id)

    def coordinator(self, key_type: str, key: str) -> int:
        """The broker coordinating a transactional id (``key_type`` "txn") or a consumer group
        ("group"), asked afresh (FindCoordinator v4+, Kafka 3.0+): the admin client's cached
        answer would outlive a move of the coordinator after a fault."""
        from kafka.protocol.metadata.find_coordinator import CoordinatorType, FindCoordinatorRequest

        kind = {"txn": CoordinatorType.TRANSACTION, "group": CoordinatorType.GROUP}[key_type]
        req = FindCoordinatorRequest(key_type=kind.value, coordinator_keys=[key], min_version=4)
        manager = self.admin._manager

        async def call() -> Any:
            return await manager.send(req)

        found = manager.run(call).coordinators[0]
        if found.error_code != 0:
            raise for_code(found.error_code)(f"FindCoordinator {key_type} {key}")
        return int(found.node_id)

    def topic_partitions(self, topic: str) -> list[dict[str, Any]]:
        """One Metadata answer for ``topic``, asked of one broker at a time: those that have not
        timed out on this observer first, the next one when a broker does not answer.

        Not ``KafkaAdminClient.describe_topics``: it sends to the broker kafka-python ranks least
        loaded, and that ranking puts a broker it has no connection to first (HW-11), so after a
        request to a frozen broker timed out and its connection was closed, the next request went
        to the same frozen broker (CI 2026-11-26: a 15 s wait ran out on two 5 s timeouts)."""
        from kafka.protocol.metadata import MetadataRequest

        req = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
        )
        known = self._broker_ids()
        if not known:  # nothing bootstrapped yet: the admin asks a bootstrap server
            topics = self.admin.describe_topics([topic])
        else:
            topics = self._ask_in_turn(sorted(known, key=lambda b: b in self._unanswered), req)["topics"]
        if not topics or topics[0].get("error_code", 0) != 0:
            code = topics[0].get("error_code") if topics else "?"
            raise for_code(code if isinstance(code, int) else -1)(f"describe {topic}")
        return sorted(topics[0]["partitions"], key=lambda p: p["partition_index"])

    def _ask_in_turn(self, brokers: list[int], request: Any) -> dict[str, Any]:
        """The answer (as a dict) of the first of ``brokers`` that answers ``request``; a broker
        that fails is remembered in ``_unanswered`` (asked last next time) until it answers."""
        failure: KafkaError | None = None
        for broker in brokers:
            try:
                answer = self.send_to(broker, request)
            except KafkaError as exc:  # timed out, disconnected, unknown id: the next broker
                log.info("broker %d did not answer %s (%s); asking the next", broker, type(request).__name__, exc)
                self._unanswered.add(broker)
                failure = exc
                continue
            self._unanswered.discard(broker)
            return cast(dict[str, Any], answer.to_dict())
        assert failure is not None  # brokers is never empty
        raise failure

    def partition_state(self, topic: str, partition: int, *, offsets: bool = True) -> PartitionState:
        return self.partition_states(topic, [partition], offsets=offsets)[0]

    def partition_states(
        self, topic: str, partitions: list[int], *, offsets: bool = True, starts: bool = False
    ) -> list[PartitionState]:
        """The state of each of ``partitions`` of ``topic``: one Metadata answer, then (``offsets``)
        the HW from each leader and every replica's LEO, and (``starts``, a tiered topic's) each
        leader's log start and local log start, all in flight at once (``_offsets``). A
        frozen or cut-off broker then holds an observation for one request timeout, not one per
        partition and replica (asked one by one, three partitions on a frozen broker were seen
        every 10-15 s, and an ISR change it caused first after its heal)."""
        by_index = {p["partition_index"]: p for p in self.topic_partitions(topic)}
        missing = [p for p in partitions if p not in by_index]
        if missing:
            raise KeyError(f"{topic} has no partition {missing[0]}")
        metas = [by_index[p] for p in partitions]
        hw, leo, first = self._offsets(topic, metas, starts) if offsets else ({}, {}, {})
        return [
            PartitionState(
                topic=topic,
                partition=m["partition_index"],
                leader=int(m["leader_id"]),
                leader_epoch=int(m.get("leader_epoch", -1)),
                replicas=tuple(int(r) for r in m["replica_nodes"]),
                isr=tuple(int(r) for r in m["isr_nodes"]),
                hw=hw.get(m["partition_index"]),
                leo=leo.get(m["partition_index"], {}),
                log_start=first.get((m["partition_index"], EARLIEST_TIMESTAMP)),
                local_start=first.get((m["partition_index"], EARLIEST_LOCAL_TIMESTAMP)),
            )
            for m in metas
        ]

    def _offsets(
        self, topic: str, metas: list[dict[str, Any]], starts: bool = False
    ) -> tuple[dict[int, int], dict[int, dict[int, int]], dict[tuple[int, int], int]]:
        """The HW of each partition of ``metas`` from its leader, every replica's LEO (partition
        -> broker -> offset) and, with ``starts``, each leader's log start and local log start
        ((partition, EARLIEST_TIMESTAMP or EARLIEST_LOCAL_TIMESTAMP) -> offset): one ListOffsets
        per broker and kind for all its partitions, all in flight at once. A dying leader or a
        dead or cut replica has no answer: its offsets are left out."""
        asks: list[tuple[int, int, int, list[int]]] = []  # (broker, replica_id, timestamp, partitions)
        leaders: dict[int, list[int]] = {}
        hosts: dict[int, list[int]] = {}
        for m in metas:
            if int(m["leader_id"]) >= 0:
                leaders.setdefault(int(m["leader_id"]), []).append(m["partition_index"])
            for replica in m["replica_nodes"]:
                hosts.setdefault(int(replica), []).append(m["partition_index"])
        asks += [(b, CONSUMER_REPLICA_ID, LATEST_TIMESTAMP, ps) for b, ps in leaders.items()]
        asks += [(b, DEBUGGING_REPLICA_ID, LATEST_TIMESTAMP, ps) for b, ps in hosts.items()]
        if starts:
            asks += [
                (b, CONSUMER_REPLICA_ID, ts, ps)
                for ts in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP)
                for b, ps in leaders.items()
            ]
        answers = self._send_all([(b, _list_offsets(topic, ps, rid, ts)) for b, rid, ts, ps in asks])
        hw: dict[int, int] = {}
        leo: dict[int, dict[int, int]] = {}
        first: dict[tuple[int, int], int] = {}
        for (broker, rid, ts, _), answer in zip(asks, answers):
            if isinstance(answer, BaseException):
                continue
            for part in answer.topics[0].partitions:
                if part.error_code != 0:
                    continue
                if ts != LATEST_TIMESTAMP:
                    first[(part.partition_index, ts)] = int(part.offset)
                elif rid == CONSUMER_REPLICA_ID:
                    hw[part.partition_index] = int(part.offset)
                else:
                    leo.setdefault(part.partition_index, {})[broker] = int(part.offset)
        return hw, leo, first

    def replica_log_start(self, broker: int, topic: str, partition: int, local: bool = False) -> int | None:
        """Where ``broker``'s copy of the partition begins (ListOffsets EARLIEST as the debugging
        replica, which a follower answers too; on a tiered topic, remote segments counted), or
        with ``local`` where its local log begins (EARLIEST_LOCAL, KIP-405: below it a read goes
        to the remote store), or None when it does not answer: once retention deleted the start
        of the log, a read from offset 0 is out of range."""
        ts = EARLIEST_LOCAL_TIMESTAMP if local else EARLIEST_TIMESTAMP
        (answer,) = self._send_all([(broker, _list_offsets(topic, [partition], DEBUGGING_REPLICA_ID, ts))])
        if isinstance(answer, BaseException):
            return None
        part = answer.topics[0].partitions[0]
        return int(part.offset) if part.error_code == 0 else None

    def _send_all(self, requests: list[tuple[int, Any]]) -> list[Any]:
        """Each (broker, request) sent at once, then each answer awaited: the answers, or the
        exception a request ended with, in the order asked."""
        manager = self.admin._manager  # see module docstring

        def send(node_id: int, request: Any) -> Any:
            try:
                return manager.send(request, node_id=node_id)
            except Exception as exc:  # noqa: BLE001 - e.g. a fenced broker, gone from Metadata: UnknownBrokerIdError
                return exc

        async def call() -> list[Any]:
            futures = [send(node_id, request) for node_id, request in requests]
            out: list[Any] = []
            for future in futures:
                try:
                    out.append(future if isinstance(future, Exception) else await future)
                except Exception as exc:  # noqa: BLE001 - returned to the caller, which decides
                    out.append(exc)
            return out

        return manager.run(call)

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, config: dict[str, str] | None = None
    ) -> None:
        self.admin.create_topics([NewTopic(name, partitions, replication_factor, topic_configs=config or {})])

    def feature_level(self, name: str) -> int:
        """The cluster's finalized level of feature ``name`` (KIP-584; 0 when not finalized)."""
        found = self.admin.describe_features().get(name) or {}
        finalized = found.get("finalized")
        return int(finalized[1]) if finalized else 0

    def set_feature_level(self, name: str, level: int) -> None:
        """Finalize feature ``name`` at ``level`` (UpdateFeatures to the controller: an upgrade,
        or a safe downgrade); one clear error if the cluster refuses."""
        current = self.feature_level(name)
        if current == level:
            return
        how = "UPGRADE" if level > current else "SAFE_DOWNGRADE"
        # retried: right after the active controller died the admin client still asks it (a reset
        # connection) until the quorum has elected another; setting a level twice is harmless
        answer = wait_until(
            lambda: self.admin.update_features({name: (how, level)}).get(name),
            30.0,
            f"the active controller answers UpdateFeatures {name}={level}",
            interval=0.5,
        )
        if answer != "OK":
            raise ClusterError(f"the cluster refused {name}={level} (from {current}): {answer}")

        # the controller has it; each broker learns it from the metadata log, and a client takes
        # the level of the broker it asks (ApiVersions): every broker must tell it first. A broker
        # that does not answer (killed, as in a finalization during a fault) is left out: it
        # learns the level from the metadata log when it is back
        def everywhere() -> bool:
            got = self.feature_levels(name)
            return bool(got) and set(got.values()) == {level}

        wait_until(
            everywhere,
            15.0,
            f"every broker that answers reports {name}={level}",
            interval=0.2,
        )

    def feature_levels(self, name: str) -> dict[int, int]:
        """Each known broker's finalized level of feature ``name`` from its own ApiVersions answer
        (0: not finalized; a broker that did not answer is left out)."""
        return self._levels_by_broker(name, finalized=True)

    def supported_levels(self, name: str) -> dict[int, int]:
        """Each known broker's newest supported level of feature ``name`` (ApiVersions'
        ``supported_features``; 0: not supported); a broker that did not answer is left out."""
        return self._levels_by_broker(name, finalized=False)

    def _levels_by_broker(self, name: str, *, finalized: bool) -> dict[int, int]:
        """Each broker's ApiVersions answer for feature ``name``: its finalized level, or the
        newest it supports."""
        from kafka.protocol.metadata import ApiVersionsRequest

        brokers = self._broker_ids()
        ask = ApiVersionsRequest(client_software_name="highwater", client_software_version="0", min_version=3)
        out: dict[int, int] = {}
        for broker, answer in zip(brokers, self._send_all([(b, ask) for b in brokers])):
            if isinstance(answer, BaseException):
                continue
            if finalized:
                levels = {f.name: int(f.max_version_level) for f in (answer.finalized_features or [])}
            else:
                levels = {f.name: int(f.max_version) for f in (answer.supported_features or [])}
            out[broker] = levels.get(name, 0)
        return out

    def voter_caught_up(self, node_id: int, since_ms: int) -> bool:
        """Whether KRaft controller ``node_id`` leads the metadata quorum or, as a voter, has
        caught up with the leader at ``since_ms`` (epoch ms) or later (DescribeQuorum)."""
        quorum = self.admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
        if quorum["leader_id"] == node_id:
            return True
        voter = next((v for v in quorum["current_voters"] if v["replica_id"] == node_id), None)
        return voter is not None and int(voter["last_caught_up_timestamp"]) >= since_ms

    def cluster_record(self) -> dict[str, Any]:
        """What an upgrade must keep, as Kafka reports it now: the cluster id, each topic's id and
        partition count (internal topics left out) and each finalized feature level."""
        cluster = self.admin.describe_cluster()
        topics = {
            str(t["name"]): {"id": str(t["topic_id"]), "partitions": len(t["partitions"])}
            for t in self.admin.describe_topics()
            if not t.get("is_internal") and int(t.get("error_code") or 0) == 0
        }
        features = {
            name: int(found["finalized"][1])
            for name, found in self.admin.describe_features().items()
            if found.get("finalized")
        }
        return {"cluster_id": cluster.get("cluster_id"), "topics": topics, "features": features}

    def under_replicated(self) -> list[str]:
        """The partitions (``topic/p``) whose ISR lacks one of their replicas."""
        return [
            f"{t['name']}/{p['partition_index']}"
            for t in self.admin.describe_topics()
            for p in t["partitions"]
            if set(p["replica_nodes"]) - set(p["isr_nodes"])
        ]

    def set_group_config(self, group: str, configs: dict[str, str]) -> None:
        """Set ``configs`` of consumer group ``group`` (KIP-848's dynamic group configs, Kafka
        4.0+: IncrementalAlterConfigs on a GROUP resource); one clear error if the broker refuses."""
        from kafka.admin import ConfigResource, ConfigResourceType

        res = self.admin.alter_configs(
            [ConfigResource(ConfigResourceType.GROUP, group, dict(configs))], raise_on_unknown=False, incremental=True
        )
        refused = [
            f"{name}: {outcome}" for by_name in res.values() for name, outcome in by_name.items() if outcome != "OK"
        ]
        if refused:  # kafka-python gives each resource "OK" or the error as text
            raise ClusterError(f"the broker refused group config {configs} for {'; '.join(refused)}")

    def describe_broker_config(self, broker_id: int, key: str) -> str | None:
        """The value broker ``broker_id`` reports for ``key`` (None if it reports none)."""
        from kafka.admin import ConfigResource, ConfigResourceType

        res = self.admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(broker_id), {key: None})], config_filter="all"
        )
        for by_name in res.values():
            entry = by_name.get(str(broker_id), {}).get(key)
            if entry is not None:
                return entry.get("value") if isinstance(entry, dict) else str(entry)
        return None


class ObserverPool:
    """The shared observers of one cluster, one per client rack, made on first use and closed
    together: ``bootstrap`` gives a rack's servers, ``security`` the client listeners' settings."""

    def __init__(self, bootstrap: Callable[[str], list[str]], security: Callable[[], ClientSecurity]) -> None:
        self._bootstrap = bootstrap
        self._security = security
        self._by_rack: dict[str, Observer] = {}

    def get(self, rack: str) -> Observer:
        if rack not in self._by_rack:
            self._by_rack[rack] = Observer(
                self._bootstrap(rack), client_id=f"highwater-observer-{rack}", security=self._security()
            )
        return self._by_rack[rack]

    def open(self) -> list[Observer]:
        """The observers made so far (callers may hold them: refresh them, do not replace them)."""
        return list(self._by_rack.values())

    def close(self) -> list[str]:
        """Close every observer, each even if another failed; what failed, one line each."""
        errors: list[str] = []
        for rack, obs in self._by_rack.items():
            try:
                obs.close()
            except Exception as exc:  # noqa: BLE001 - every observer is closed; the failures are returned
                errors.append(f"close observer {rack}: {type(exc).__name__}: {exc}")
        self._by_rack.clear()
        return errors


class PartitionWaits:
    """What every backend whose brokers are a ``Topology`` and that observes through
    ``observer()`` (local, compose through it, external) does alike, written once: its brokers
    and their racks, ``partition_state`` and ``wait_for_isr``, and creating a topic until it is
    in sync."""

    def observer(self, rack: str | None = None) -> Observer:  # pragma: no cover - provided by the backend
        raise NotImplementedError

    @property
    def topo(self) -> Topology:  # pragma: no cover - provided by the backend
        raise NotImplementedError

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.topo.brokers]

    def rack_of(self, broker_id: int) -> str:
        rack = self.topo.node(broker_id).rack
        assert rack is not None
        return rack

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        """Create a topic and wait until every partition has a leader and a full ISR (the
        replication factor is 3, or the number of brokers when fewer). A backend may refuse the
        name first (``_admit_topic``) and note what it created (``_topic_created``)."""
        self._admit_topic(name)
        rf = replication_factor or min(3, len(self.broker_ids))
        self._create(name, partitions, rf, config, timeout)
        self._topic_created(name)
        self._wait_in_sync(name, partitions, rf, timeout)

    def _admit_topic(self, name: str) -> None:
        """Raise when this backend may not create ``name``; ours may create any topic."""

    def _topic_created(self, name: str) -> None:
        """Note that ``name`` was created here (an external cluster deletes its topics at stop)."""

    def _create(self, name: str, partitions: int, rf: int, config: dict[str, str] | None, timeout: float) -> None:
        """Create a topic, retried: right after boot kafka-python may know the controller's id
        before its metadata lists that broker (UnknownBrokerIdError); a retry may find it created."""
        from kafka.errors import TopicAlreadyExistsError

        def create() -> bool:
            try:
                self.observer().create_topic(name, partitions, rf, config)
            except TopicAlreadyExistsError:
                pass
            return True

        wait_until(create, timeout, f"topic {name} is created")

    def _wait_in_sync(self, name: str, partitions: int, rf: int, timeout: float) -> None:
        def in_sync() -> bool:
            parts = self.observer().topic_partitions(name)
            return len(parts) == partitions and all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == rf for p in parts)

        wait_until(in_sync, timeout, f"topic {name} has {partitions} partitions, each with {rf} replicas in sync")

    def partition_state(
        self, topic: str, partition: int = 0, offsets: bool = True, timeout: float = 15.0
    ) -> PartitionState:
        """Leader, epoch, ISR (and HW, LEOs). Metadata reaches brokers asynchronously in KRaft, so
        a broker that has not heard of a new topic yet is asked again until ``timeout``."""
        return wait_until(
            lambda: self.observer().partition_state(topic, partition, offsets=offsets),
            timeout,
            f"metadata of {topic}-{partition} is available",
            interval=0.2,
        )

    def wait_for_isr(
        self, topic: str, partition: int, cond: Callable[[PartitionState], bool], timeout: float, message: str
    ) -> PartitionState:
        return wait_until(
            lambda: (lambda s: s if cond(s) else None)(self.partition_state(topic, partition, offsets=False)),
            timeout,
            message,
            interval=0.1,
        )
