"""The one typed configuration object of a cluster, and the broker properties it renders to."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from highwater.core.errors import HighwaterError
from highwater.core.versions import release_at_least

from .security import PLAINTEXT, ClientSecurity
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
    #: how clients reach the brokers: PLAINTEXT, or SASL_PLAINTEXT with PLAIN on every client
    #: listener (replication and controller listeners stay plaintext); see ``client_listener_security``
    client_security: ClientSecurity = PLAINTEXT
    #: CPUs each node's container may use (docker's ``--cpus``); None: no limit. Only the
    #: compose backend can apply it; the others refuse a spec that sets it.
    broker_cpus: float | None = None
    #: memory each node's container may use, in docker's notation (``"2g"``, ``"512m"``);
    #: None: no limit. Compose backend only, like ``broker_cpus``.
    broker_memory: str | None = None
    #: "plain", or "lossy": every node's log directories (its KRaft metadata log too) on lossyfs,
    #: for the disk faults (power-loss, disk-full, disk-slow; ``harness.diskfs``). Local backend.
    disk: str = "plain"
    #: "real", or "faked": every node's JVM reads its wall clock through libfaketime from a file of
    #: its own (offset +0 at start), for the clock faults (clock-jump, clock-drift;
    #: ``harness.clock``). Local backend.
    clock: str = "real"
    #: tiered storage (KIP-405): every node's segments copied to a remote store, a directory of
    #: the cluster's that every node shares (``harness.tiered``). Local backend, Kafka 3.6+.
    tiered: bool = False

    def __post_init__(self) -> None:
        check_limits(self)
        if self.disk not in DISKS:
            raise SpecError(f"disk must be one of {', '.join(DISKS)}, got {self.disk!r}")
        if self.clock not in CLOCKS:
            raise SpecError(f"clock must be one of {', '.join(CLOCKS)}, got {self.clock!r}")

    @property
    def has_limits(self) -> bool:
        return self.broker_cpus is not None or self.broker_memory is not None

    @property
    def broker_memory_bytes(self) -> int | None:
        return None if self.broker_memory is None else memory_bytes(self.broker_memory)

    @property
    def broker_nano_cpus(self) -> int | None:
        """``broker_cpus`` in the engine's unit (10^-9 CPUs), as the docker SDK takes it."""
        return None if self.broker_cpus is None else round(self.broker_cpus * 1e9)


#: ``ClusterSpec.disk`` values
DISKS = ("plain", "lossy")
#: ``ClusterSpec.clock`` values
CLOCKS = ("real", "faked")


class SpecError(HighwaterError, ValueError):
    """A cluster spec value that cannot work; one line naming the value."""


#: docker refuses a CPU quota below this (``--cpus 0.001``: "Range of CPUs is from 0.01 ...")
MIN_CPUS = 0.01
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)([kmg]?)", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def memory_bytes(text: str) -> int:
    """Docker's memory notation (a number of bytes, or with a ``k``/``m``/``g`` suffix: powers
    of 1024, as the engine reads them) in bytes; a one-line :class:`SpecError` otherwise."""
    match = _MEMORY.fullmatch(text)
    if match is None:
        raise SpecError(f"broker memory must be a size such as 2g or 512m, got {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_cpus(text: str) -> float:
    """A CPU count as typed on a command line (``1.5``); a one-line :class:`SpecError` otherwise."""
    try:
        cpus = float(text)
    except ValueError:
        raise SpecError(f"broker cpus must be a number of CPUs such as 1.5, got {text!r}") from None
    _check_cpus(cpus)
    return cpus


def _check_cpus(cpus: float) -> None:
    if not math.isfinite(cpus) or cpus < MIN_CPUS:
        raise SpecError(f"broker cpus must be at least {MIN_CPUS} (docker's smallest quota), got {cpus:g}")


def check_limits(spec: ClusterSpec) -> None:
    """The limits can be given to docker and leave the broker its heap (no I/O)."""
    if spec.broker_cpus is not None:
        if isinstance(spec.broker_cpus, bool) or not isinstance(spec.broker_cpus, int | float):
            raise SpecError(f"broker cpus must be a number, got {spec.broker_cpus!r}")
        _check_cpus(spec.broker_cpus)
    if spec.broker_memory is not None:
        limit = memory_bytes(spec.broker_memory)
        # the JVM reserves -Xmx up front and needs metaspace and stacks beyond it: a limit at or
        # under the heap is an OOM kill at start-up, not a slow broker
        if limit <= spec.heap_mb * 1024**2:
            raise SpecError(
                f"broker memory {spec.broker_memory} leaves no room for the {spec.heap_mb} MB heap "
                f"(give more than {spec.heap_mb}m)"
            )


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
        # KIP-848 groups take their session timeout from a group config, which these bound from
        # below (45 s and 5 s by default): a scenario's group may then evict a member as fast as
        # a classic one (harness.clients.groups.group_configs); unknown before 3.7, and ignored
        "group.consumer.min.session.timeout.ms": "2000",
        "group.consumer.min.heartbeat.interval.ms": "500",
        # share groups (KIP-932, 4.1+): the same for their session and heartbeat, and for the
        # acquisition lock (15 s at least by default), so a scenario's lock can expire within a
        # run; their state topic as small as the offsets topic
        "group.share.min.session.timeout.ms": "2000",
        "group.share.min.heartbeat.interval.ms": "500",
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.delivery.count.limit": "3",  # reached within a run by a record released again and again
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": "1",
        "share.coordinator.state.topic.num.partitions": "3",
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
#: bypasses the link's proxy (docs/findings.md, HW-8)
ADVERTISED_CONTROLLER_SINCE = (3, 9)


def render_properties(
    spec: ClusterSpec, topo: Topology, node: Node, data_dir: str, kafka_version: str | None = None
) -> dict[str, str]:
    """``server.properties`` of one node: listeners as in docs/clusters.md (Topology), defaults, then overrides."""
    ports = topo.ports
    home = topo.home(node)
    listeners: list[str] = []
    advertised: list[str] = []
    protocol_map: list[str] = []
    roles: list[str] = []
    sasl: dict[str, str] = {}
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
            protocol_map.append(f"{name}:{spec.client_security.protocol}")
            sasl.update(client_listener_security(spec.client_security, name))
    if node.is_controller:
        roles.append("controller")
        listeners.append(f"CONTROLLER://{home}:{ports.controller}")
        if release_at_least(kafka_version or "", ADVERTISED_CONTROLLER_SINCE):
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
    props.update(sasl)
    props.update(fast_failure_defaults(len(topo.brokers)))
    props.update({k: str(v) for k, v in spec.broker_config.items()})
    return props


def client_listener_security(security: ClientSecurity, listener: str) -> dict[str, str]:
    """Broker properties that make the client listener ``listener`` ask for ``security``.

    Only what a cluster of ours can offer without certificates or a credential store: PLAINTEXT,
    or SASL_PLAINTEXT with PLAIN, whose users live in the listener's JAAS line (Kafka's
    ``listener.name.<name>.plain.sasl.jaas.config``). Anything else is refused in one line.
    """
    if security.protocol == "PLAINTEXT":
        return {}
    if security.protocol != "SASL_PLAINTEXT" or security.sasl_mechanism != "PLAIN":
        raise SpecError(
            f"a cluster of ours offers clients PLAINTEXT or SASL_PLAINTEXT with PLAIN, not {security.describe()}"
        )
    user, password = _jaas_quote(str(security.sasl_username)), _jaas_quote(str(security.sasl_password))
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}" user_{user}="{password}";'
    )
    return {
        "sasl.enabled.mechanisms": "PLAIN",
        f"listener.name.{listener.lower()}.plain.sasl.jaas.config": jaas,
    }


def _jaas_quote(text: str) -> str:
    if any(c in text for c in '"\\;= \n'):
        raise SpecError(f"SASL user names and passwords of a cluster of ours are plain words, got {text!r}")
    return text


def properties_text(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())
