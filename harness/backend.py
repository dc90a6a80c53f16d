"""What a cluster backend is: one protocol every backend implements, and capability protocols
for what only some can do (the registry that maps ``--backend NAME`` to a factory is
``harness.backends``, above the backends, which import this module).

* :class:`ClusterBackend` (every backend): its name, the shape it runs (``spec``, ``topo``:
  nodes, roles, racks, client racks), ``broker_ids``/``rack_of``, ``kafka_version``,
  ``bootstrap(rack)`` per client rack, an ``observer(rack)`` (Kafka admin APIs), creating a topic
  and waiting for its ISR, ``partition_state``/``wait_for_isr``, ``wait_for_brokers``,
  ``collect_logs`` and ``stop``.
* :class:`LinkControl` (capability): every directed link (``links``) can be cut or restored
  (``set_links_enabled``), carry toxics (``add_toxic``/``remove_toxic``), be reset and verified
  healthy (``reset_links``/``ensure_links_healthy``), and has byte counters (``link_bytes``,
  ``client_bytes`` per client rack).
* :class:`ProcessControl` (capability): every node is a :class:`ControlledNode` (``node``,
  ``nodes``) that can be started, stopped (SIGTERM-like), killed, paused, resumed and restarted.
* :class:`ClockControl` (capability, with ``ClusterSpec(clock="faked")``): every node's wall clock
  is a :class:`ClockHandle` (``clock``) that can jump (``set_offset``) and drift.

Code that needs a capability asks with ``isinstance(backend, LinkControl)`` (the protocols are
runtime-checkable) or :func:`has_capability`; faults declare theirs (``FaultKind.capability``)
and are refused before a run starts when the backend lacks it (``faults.capability``).

The local backend (:class:`harness.local.cluster.Cluster`) implements all three. A new backend
registers a ``harness.backends.BackendEntry`` with ``register_backend``; ``--backend`` on
``highwater cluster up``, ``run``, ``campaign`` and the pytest plugin looks names up with
``harness.backends.get_backend``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .config import ClusterSpec
from .security import ClientSecurity
from .topology import Link, Topology

if TYPE_CHECKING:
    from .observe import Observer, PartitionState
    from .toxiproxy import ByteCounters


class NodeState(str, Enum):
    NEW = "new"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


@runtime_checkable
class ClusterBackend(Protocol):
    """What every backend must do. Node ids and names follow ``topo`` (``kafka-1``...)."""

    #: the registry name of the backend (``local``), used in messages
    backend_name: str

    @property
    def spec(self) -> ClusterSpec:
        """The cluster's shape and broker configuration."""
        ...

    @property
    def topo(self) -> Topology:
        """Nodes (ids, names, roles, racks), client racks and the directed links between them."""
        ...

    @property
    def broker_ids(self) -> list[int]: ...

    def rack_of(self, broker_id: int) -> str: ...

    @property
    def kafka_version(self) -> str: ...

    def bootstrap(self, rack: str | None = None) -> list[str]:
        """Bootstrap servers for a client in ``rack`` (None: clients without a rack)."""
        ...

    @property
    def client_security(self) -> ClientSecurity:
        """TLS/SASL settings every client of this cluster connects with (observer included)."""
        ...

    def observer(self, rack: str | None = None) -> Observer:
        """A shared admin connection through ``rack``'s bootstrap servers."""
        ...

    def topic_name(self, name: str) -> str:
        """The name a topic a suite calls ``name`` has on this cluster: a cluster file's
        ``topic_prefix`` in front on an external cluster, ``name`` itself on ours."""
        ...

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        """Create a topic and wait until every partition has a leader and a full ISR."""
        ...

    def partition_state(
        self, topic: str, partition: int = 0, offsets: bool = True, timeout: float = 15.0
    ) -> PartitionState: ...

    def wait_for_isr(
        self, topic: str, partition: int, cond: Callable[[PartitionState], bool], timeout: float, message: str
    ) -> PartitionState: ...

    def wait_for_brokers(self, timeout: float = 90.0, ids: list[int] | None = None) -> None:
        """Until the brokers ``ids`` (default: all) are registered and unfenced."""
        ...

    def collect_logs(self, dest: Path) -> Path:
        """Copy the nodes' logs (and whatever else explains a run) to ``dest``."""
        ...

    def stop(self, collect_logs_to: Path | None = None) -> None:
        """Release the cluster (a backend that did not start it only closes its clients)."""
        ...


@runtime_checkable
class LinkControl(Protocol):
    """Capability: every directed link (``Link``: src -> dst on a listener) can be acted on."""

    def links(self) -> list[Link]:
        """Every link this backend controls."""
        ...

    def set_links_enabled(self, links: Iterable[Link], enabled: bool) -> None:
        """Cut (listener closed, open connections dropped) or restore links."""
        ...

    def add_toxic(
        self, link: Link, *, name: str, type: str, stream: str, toxicity: float, attributes: Mapping[str, Any]
    ) -> None:
        """A Toxiproxy-style toxic (``latency``, ``timeout``, ...) on one stream of a link."""
        ...

    def remove_toxic(self, link: Link, name: str) -> None: ...

    def reset_links(self) -> None:
        """Every link enabled, every toxic removed."""
        ...

    def ensure_links_healthy(self, links: Iterable[Link], toxic_prefix: str = "", keep: Collection[str] = ()) -> None:
        """Each link is enabled, carries no toxic whose name starts with ``toxic_prefix`` but those
        named in ``keep`` (another fault's, still active: a heal must not end it) and accepts
        connections; a link that does not is rebuilt, with the toxics of ``keep`` it carried."""
        ...

    def link_bytes(self) -> dict[Link, ByteCounters]:
        """Bytes through every link (upstream: src -> dst, downstream: back)."""
        ...

    def client_bytes(self, rack: str) -> dict[int, ByteCounters]:
        """Bytes through the links of ``rack``'s clients, per broker: who served them."""
        ...


@runtime_checkable
class ControlledNode(Protocol):
    """One node's process, as :class:`ProcessControl` hands it out."""

    @property
    def name(self) -> str: ...

    @property
    def node_id(self) -> int: ...

    state: NodeState

    def is_alive(self) -> bool: ...

    def start(self) -> None: ...

    def stop(self) -> None:
        """Clean shutdown (controlled shutdown), forced if it overruns."""
        ...

    def kill(self) -> None:
        """A crash (SIGKILL)."""
        ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def restart(self, clean: bool = True) -> None:
        """Stop (cleanly or by a kill) and start again on the same data."""
        ...


@runtime_checkable
class ProcessControl(Protocol):
    """Capability: node processes can be killed, stopped, paused, resumed and restarted."""

    @property
    def nodes(self) -> Mapping[int, ControlledNode]: ...

    def node(self, key: int | str) -> ControlledNode: ...


@runtime_checkable
class ReleaseControl(Protocol):
    """Capability: a node can be restarted on another Kafka release, on the same data and
    configuration (a rolling upgrade or a roll back, ``faults.release``)."""

    def release_of(self, key: int | str) -> str:
        """The Kafka release node ``key`` runs (or last ran)."""
        ...

    def restart_on(self, key: int | str, release: str) -> None:
        """Stop node ``key`` cleanly, then start it on ``release`` (one clear error if that
        release cannot be had); returns once it is started, not once it is back."""
        ...


class DiskHandle(Protocol):
    """A node's disk under a fault layer (``harness.diskfs.LossyDisk``)."""

    def drop_unsynced(self) -> dict[str, int]: ...

    def set_full(self, on: bool) -> None: ...

    def set_slow(self, write_ms: int, fsync_ms: int) -> None: ...

    def set_failing(self, on: bool) -> None: ...

    def status(self) -> dict[str, Any]: ...


@runtime_checkable
class DiskControl(Protocol):
    """Capability: every node's log directories sit on lossyfs (``ClusterSpec.disk="lossy"``), so
    what was not fsynced can be lost, writes can fail as on a full disk and be slowed. A backend
    that can mount the layer has the method; ``disks_enabled`` says whether this cluster did."""

    @property
    def disks_enabled(self) -> bool: ...

    def disk(self, key: int | str) -> DiskHandle:
        """Node ``key``'s disk layer, or with ``key`` ``tiered.STORE_PARTY`` the tiered remote
        store's (a tiered cluster on lossy disks mounts its store through lossyfs too)."""
        ...


class ClockHandle(Protocol):
    """A node's faked wall clock (``harness.clock.NodeClock``): offsets in seconds, drift rates in
    ms per second of real time, either sign."""

    def offset(self) -> float: ...

    def set_offset(self, seconds: float) -> None: ...

    def start_drift(self, rate_ms: float) -> None: ...

    def stop_drift(self) -> None: ...

    def drifting(self) -> bool: ...

    def reset(self) -> None:
        """No drift, offset +0."""
        ...


@runtime_checkable
class ClockControl(Protocol):
    """Capability: every node's JVM reads its wall clock through libfaketime from a file of ours
    (``ClusterSpec.clock="faked"``), so it can jump and drift while the machine's clock stays
    right. A backend that can fake clocks has the method; ``clocks_enabled`` says whether this
    cluster did."""

    @property
    def clocks_enabled(self) -> bool: ...

    def clock(self, key: int | str) -> ClockHandle: ...


@runtime_checkable
class FileControl(Protocol):
    """Capability: each node's data directory (its log directories and KRaft metadata log) is a
    directory on this machine that the harness may change while the node is down, to corrupt
    its files (``faults.corrupt``). A local cluster's are; a container's are not reached.
    ``data_files_enabled`` says whether this cluster's are."""

    @property
    def data_files_enabled(self) -> bool: ...

    def data_dir(self, key: int | str) -> Path: ...


class Capability(str, Enum):
    """What a fault may need beyond :class:`ClusterBackend`; the value names it in messages."""

    LINK_CONTROL = "link control"
    PROCESS_CONTROL = "process control"
    DISK_CONTROL = "disk control"
    CLOCK_CONTROL = "clock control"
    FILE_CONTROL = "data file access"
    RELEASE_CONTROL = "release control"

    @property
    def protocol(self) -> type:
        return {
            Capability.LINK_CONTROL: LinkControl,
            Capability.PROCESS_CONTROL: ProcessControl,
            Capability.DISK_CONTROL: DiskControl,
            Capability.CLOCK_CONTROL: ClockControl,
            Capability.FILE_CONTROL: FileControl,
            Capability.RELEASE_CONTROL: ReleaseControl,
        }[self]


def has_capability(backend: object, capability: Capability) -> bool:
    if capability is Capability.DISK_CONTROL:
        return isinstance(backend, DiskControl) and backend.disks_enabled
    if capability is Capability.CLOCK_CONTROL:
        return isinstance(backend, ClockControl) and backend.clocks_enabled
    if capability is Capability.FILE_CONTROL:
        return isinstance(backend, FileControl) and backend.data_files_enabled
    return isinstance(backend, capability.protocol)


def capabilities(backend: object) -> frozenset[Capability]:
    return frozenset(c for c in Capability if has_capability(backend, c))


def backend_name(backend: object) -> str:
    return str(getattr(backend, "backend_name", type(backend).__name__))


def unhealed(c: ClusterBackend) -> list[str]:
    """What is not healed on a cluster: nodes not running, proxies disabled or with toxics
    (empty for a backend without process or link control: nothing of ours to undo there)."""
    out: list[str] = []
    if isinstance(c, ProcessControl):
        out += [f"{n.name} is {n.state.value}" for n in c.nodes.values() if n.state != NodeState.RUNNING]
    api = getattr(c, "toxiproxy", None)
    if isinstance(c, LinkControl) and api is not None:
        for plan in c.topo.proxies():
            state = api.proxy(plan.link.proxy_name)
            if not state.get("enabled") or state.get("toxics"):
                out.append(f"proxy {plan.link.proxy_name}: enabled={state.get('enabled')} toxics={state.get('toxics')}")
    if isinstance(c, ClockControl) and c.clocks_enabled and isinstance(c, ProcessControl):
        for node in c.nodes.values():
            clock = c.clock(node.name)
            if clock.offset() or clock.drifting():
                drifting = ", drifting" if clock.drifting() else ""
                out.append(f"{node.name}'s clock is off by {clock.offset():+.3f}s{drifting}")
    return out


def heal(c: ClusterBackend, timeout: float = 90.0) -> None:
    """Undo every fault (resume paused nodes, start stopped ones, enable every proxy and drop its
    toxics, every faked clock back to +0) and wait until every broker is registered and answers."""
    if isinstance(c, ClockControl) and c.clocks_enabled and isinstance(c, ProcessControl):
        for node in c.nodes.values():
            c.clock(node.name).reset()
    if isinstance(c, ProcessControl):
        for node in c.nodes.values():
            if node.state == NodeState.PAUSED:
                node.resume()
            elif node.state == NodeState.STOPPED:
                node.start()
    if isinstance(c, LinkControl):
        c.reset_links()
        c.ensure_links_healthy(c.links())
    c.wait_for_brokers(timeout)
