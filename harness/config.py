"""The one typed configuration object of a cluster, and the broker properties it renders to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .topology import Node, Topology

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
# The client "rack" of clients that have none (producers, admin, observers): its own proxies,
# so their traffic never mixes with what a rack's consumers are measured by.
NO_RACK = "no-rack"


def effective_client_racks(spec: ClusterSpec) -> tuple[str, ...]:
    from .topology import rack_name

    if spec.client_racks is not None:
        return tuple(spec.client_racks)
    return (*(rack_name(i) for i in range(spec.racks)), NO_RACK)


@dataclass(frozen=True)
class ClusterSpec:
    """What cluster to run. ``broker_config`` overrides any rendered broker property."""

    brokers: int = 3
    racks: int = 3
    controllers: int = 0  # 0: every broker is also a KRaft controller (combined mode)
    kafka_version: str | None = None  # None: the newest stable release on Maven Central
    broker_config: Mapping[str, str] = field(default_factory=dict)
    client_racks: tuple[str, ...] | None = None  # None: one per broker rack, plus NO_RACK
    base_port: int | None = None  # None: pick free ports
    heap_mb: int = 320
    name: str = "hw"


def fast_failure_defaults(brokers: int) -> dict[str, str]:
    """Settings that make failures show up in seconds instead of minutes, for tests.

    ``replica.lag.time.max.ms`` is what ISR shrinking is judged against (KAFKA-4485's criteria);
    session and election timeouts make broker death and controller failover quick.
    """
    rf = str(min(3, brokers))
    return {
        "replica.lag.time.max.ms": "4000",
        "replica.fetch.wait.max.ms": "200",
        "replica.socket.timeout.ms": "5000",
        "broker.session.timeout.ms": "4000",
        "broker.heartbeat.interval.ms": "500",
        "controller.quorum.election.timeout.ms": "1000",
        "controller.quorum.fetch.timeout.ms": "2000",
        "controller.quorum.request.timeout.ms": "2000",
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "3",
        "default.replication.factor": rf,
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "auto.leader.rebalance.enable": "false",  # leadership moves only when a test moves it
        "unclean.leader.election.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.segment.bytes": str(16 * 1024 * 1024),
        "socket.connection.setup.timeout.ms": "1000",
        "socket.connection.setup.timeout.max.ms": "3000",
    }


#: since this release (KIP-853) a KRaft follower fetches from the leader at the endpoint the leader
#: *advertises*; without an advertised controller listener that is the bound address, which
#: bypasses the link's proxy (README, Findings, HW-8)
ADVERTISED_CONTROLLER_SINCE = (3, 9)


def _release(version: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2]) if version else (0,)


def render_properties(
    spec: ClusterSpec, topo: Topology, node: Node, data_dir: str, kafka_version: str | None = None
) -> dict[str, str]:
    """``server.properties`` of one node: listeners as in README.md (Topology), defaults, then overrides."""
    ports = topo.ports
    home = topo.home(node)
    listeners: list[str] = []
    advertised: list[str] = []
    protocol_map: list[str] = []
    roles: list[str] = []
    if node.is_broker:
        roles.append("broker")
        listeners.append(f"REPLICATION://{home}:{ports.replication}")
        # Peers resolve kafka-N through their own hosts file to the proxy for the link peer->N.
        advertised.append(f"REPLICATION://{node.name}:{ports.replication}")
        protocol_map.append("REPLICATION:PLAINTEXT")
        for rack in topo.client_racks:
            name = topo.client_listener_name(rack)
            port = topo.client_port(rack)
            listeners.append(f"{name}://{home}:{port}")
            advertised.append(f"{name}://{topo.client_address(rack, node)}:{port}")
            protocol_map.append(f"{name}:PLAINTEXT")
    if node.is_controller:
        roles.append("controller")
        listeners.append(f"CONTROLLER://{home}:{ports.controller}")
        if _release(kafka_version) >= ADVERTISED_CONTROLLER_SINCE:
            # by name, so a peer reaches it through the proxy for its link, like replication
            advertised.append(f"CONTROLLER://{node.name}:{ports.controller}")
    protocol_map.append("CONTROLLER:PLAINTEXT")
    voters = ",".join(f"{c.node_id}@{c.name}:{ports.controller}" for c in topo.controllers)
    props: dict[str, str] = {
        "process.roles": ",".join(roles),
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": ",".join(protocol_map),
        "log.dirs": data_dir,
    }
    if advertised:
        props["advertised.listeners"] = ",".join(advertised)
    if node.is_broker:
        props.update(
            {
                "inter.broker.listener.name": "REPLICATION",
                "broker.rack": node.rack or "",
                "replica.selector.class": RACK_AWARE_SELECTOR,
            }
        )
    props.update(fast_failure_defaults(len(topo.brokers)))
    props.update({k: str(v) for k, v in spec.broker_config.items()})
    return props


def properties_text(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())
