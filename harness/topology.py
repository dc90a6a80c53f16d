"""The address plan of a cluster on one machine: pure data, no processes.

Every node gets its own loopback "home" address, and every connection between two parties goes
through its own Toxiproxy proxy, listening on an address that names the link:

    home of node j                       127.S.0.j
    proxy for link i -> j (i, j nodes)   127.S.i.j      same port as the target listener
    proxy for clients of rack r -> j     127.S.(200+r).j

S is the cluster's slot (several clusters can run side by side). Node JVMs resolve peer names
(``kafka-j``) from their own hosts file, in which every peer points at the proxy for the link
*self -> peer*; because the port is the same everywhere, one advertised ``kafka-j:PORT`` works for
every peer, and each peer's packets take their own proxy. Clients of rack r bootstrap through
their rack's proxies, and every broker advertises those proxies on the rack's client listener, so
a client never leaves its rack's proxies.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from enum import Enum

from highwater.core.errors import HighwaterError

SLOT_BASE = 100  # second octet of slot 0; slots use 127.100.x.y .. 127.(100+MAX_SLOTS-1).x.y
MAX_SLOTS = 50
CLIENT_OCTET_BASE = 200
TOXIPROXY_API_OCTET = 254  # 127.S.0.254 is the Toxiproxy API address
MAX_NODES = 199  # node index must stay below CLIENT_OCTET_BASE


class Role(str, Enum):
    BROKER = "broker"  # broker only (with dedicated controllers)
    CONTROLLER = "controller"  # dedicated controller
    COMBINED = "combined"  # broker + controller in one JVM


class Listener(str, Enum):
    REPLICATION = "replication"
    CONTROLLER = "controller"
    CLIENT = "client"


def rack_name(index: int) -> str:
    """rack-a, rack-b, ... rack-z, rack-aa, ..."""
    letters = string.ascii_lowercase
    name = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        name = letters[rem] + name
    return f"rack-{name}"


def client_party(rack: str) -> str:
    """The name of the clients of a rack, as one end of a link."""
    return f"clients@{rack}"


@dataclass(frozen=True, order=True)
class Link:
    """A directed connection path: ``src`` opens connections to ``dst`` on ``listener``.

    ``src`` is a node name (``kafka-1``, ``controller-1``) or a client party
    (``clients@rack-b``); ``dst`` is always a node name.
    """

    src: str
    dst: str
    listener: Listener

    @property
    def proxy_name(self) -> str:
        return f"{self.listener.value}:{self.src}->{self.dst}"


@dataclass(frozen=True)
class Node:
    node_id: int
    name: str
    role: Role
    rack: str | None  # brokers only
    index: int  # 1-based position in the address plan

    @property
    def is_broker(self) -> bool:
        return self.role in (Role.BROKER, Role.COMBINED)

    @property
    def is_controller(self) -> bool:
        return self.role in (Role.CONTROLLER, Role.COMBINED)


class NodeHandle:
    """What every backend's handle on one node says of it alike: its ``name`` and ``node_id``,
    from the topology's ``node`` it was made for."""

    node: Node

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def node_id(self) -> int:
        return self.node.node_id


@dataclass(frozen=True)
class Ports:
    replication: int
    controller: int
    clients: tuple[int, ...]  # one per client rack
    toxiproxy_api: int

    def all(self) -> tuple[int, ...]:
        return (self.replication, self.controller, *self.clients, self.toxiproxy_api)


@dataclass(frozen=True)
class ProxyPlan:
    link: Link
    listen_host: str
    listen_port: int
    upstream_host: str
    upstream_port: int

    @property
    def listen(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"

    @property
    def upstream(self) -> str:
        return f"{self.upstream_host}:{self.upstream_port}"


class TopologyError(HighwaterError, ValueError):
    """The requested topology cannot be built."""


@dataclass(frozen=True)
class Topology:
    slot: int
    nodes: tuple[Node, ...]
    racks: tuple[str, ...]
    client_racks: tuple[str, ...]
    ports: Ports

    # -- construction -------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        *,
        brokers: int,
        racks: int,
        controllers: int = 0,
        client_racks: tuple[str, ...] | None = None,
        slot: int,
        ports: Ports,
    ) -> Topology:
        """Brokers ``kafka-1..N`` spread round-robin over racks; with ``controllers == 0``
        every broker is also a controller (combined mode)."""
        if brokers < 1:
            raise TopologyError(f"need at least one broker, got {brokers}")
        if racks < 1:
            raise TopologyError(f"need at least one rack, got {racks}")
        if racks > brokers:
            raise TopologyError(f"more racks ({racks}) than brokers ({brokers}): every rack needs a broker")
        if controllers < 0:
            raise TopologyError(f"controllers must be >= 0, got {controllers}")
        if brokers + controllers > MAX_NODES:
            raise TopologyError(f"at most {MAX_NODES} nodes on one machine")
        if not 0 <= slot < MAX_SLOTS:
            raise TopologyError(f"slot must be in [0, {MAX_SLOTS}), got {slot}")
        rack_names = tuple(rack_name(i) for i in range(racks))
        client_rack_names = rack_names if client_racks is None else tuple(client_racks)
        if len(ports.clients) != len(client_rack_names):
            raise TopologyError("need one client port per client rack")
        role = Role.COMBINED if controllers == 0 else Role.BROKER
        nodes = [
            Node(node_id=i, name=f"kafka-{i}", role=role, rack=rack_names[(i - 1) % racks], index=i)
            for i in range(1, brokers + 1)
        ]
        for k in range(1, controllers + 1):
            idx = brokers + k
            # Dedicated controller ids start at 1000 so they never look like broker ids.
            nodes.append(Node(node_id=1000 + k, name=f"controller-{k}", role=Role.CONTROLLER, rack=None, index=idx))
        return cls(slot=slot, nodes=tuple(nodes), racks=rack_names, client_racks=client_rack_names, ports=ports)

    # -- lookups ------------------------------------------------------------------------
    @property
    def brokers(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_broker)

    @property
    def controllers(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_controller)

    def node(self, key: int | str) -> Node:
        for n in self.nodes:
            if n.node_id == key or n.name == key:
                return n
        raise TopologyError(f"no node {key!r} in this cluster (nodes: {[n.name for n in self.nodes]})")

    def brokers_in_rack(self, rack: str) -> tuple[Node, ...]:
        if rack not in self.racks:
            raise TopologyError(f"no rack {rack!r} (racks: {list(self.racks)})")
        return tuple(n for n in self.brokers if n.rack == rack)

    def _octet2(self) -> int:
        return SLOT_BASE + self.slot

    def home(self, node: Node) -> str:
        return f"127.{self._octet2()}.0.{node.index}"

    @property
    def toxiproxy_host(self) -> str:
        return f"127.{self._octet2()}.0.{TOXIPROXY_API_OCTET}"

    def link_address(self, src: Node, dst: Node) -> str:
        return f"127.{self._octet2()}.{src.index}.{dst.index}"

    def client_address(self, rack: str, dst: Node) -> str:
        r = self.client_racks.index(rack)
        return f"127.{self._octet2()}.{CLIENT_OCTET_BASE + r}.{dst.index}"

    def client_port(self, rack: str) -> int:
        if rack not in self.client_racks:
            raise TopologyError(f"no client rack {rack!r} (client racks: {list(self.client_racks)})")
        return self.ports.clients[self.client_racks.index(rack)]

    def client_listener_name(self, rack: str) -> str:
        return "CLIENT_" + rack.upper().replace("-", "_")

    def bootstrap(self, rack: str) -> list[str]:
        """Bootstrap servers for a client in ``rack``: its rack's proxies to every broker."""
        port = self.client_port(rack)
        return [f"{self.client_address(rack, b)}:{port}" for b in self.brokers]

    # -- links and proxies ----------------------------------------------------------------
    def proxies(self) -> list[ProxyPlan]:
        plans: list[ProxyPlan] = []
        for src in self.nodes:
            for dst in self.nodes:
                if src is dst:
                    continue
                addr = self.link_address(src, dst)
                if src.is_broker and dst.is_broker:
                    plans.append(
                        ProxyPlan(
                            Link(src.name, dst.name, Listener.REPLICATION),
                            addr,
                            self.ports.replication,
                            self.home(dst),
                            self.ports.replication,
                        )
                    )
                if dst.is_controller:
                    plans.append(
                        ProxyPlan(
                            Link(src.name, dst.name, Listener.CONTROLLER),
                            addr,
                            self.ports.controller,
                            self.home(dst),
                            self.ports.controller,
                        )
                    )
        for rack in self.client_racks:
            port = self.client_port(rack)
            for dst in self.brokers:
                plans.append(
                    ProxyPlan(
                        Link(client_party(rack), dst.name, Listener.CLIENT),
                        self.client_address(rack, dst),
                        port,
                        self.home(dst),
                        port,
                    )
                )
        return plans

    def links(self) -> list[Link]:
        return [p.link for p in self.proxies()]

    def hosts_file(self, node: Node) -> str:
        """The JVM hosts file of ``node``: every peer name resolves to the proxy self -> peer."""
        lines = ["127.0.0.1 localhost", f"{self.home(node)} {node.name}"]
        for peer in self.nodes:
            if peer is not node:
                lines.append(f"{self.link_address(node, peer)} {peer.name}")
        return "\n".join(lines) + "\n"

    def all_listen_addresses(self) -> list[tuple[str, int]]:
        """Every (address, port) this cluster will bind, for a port-conflict check up front."""
        out: list[tuple[str, int]] = [(self.toxiproxy_host, self.ports.toxiproxy_api)]
        for n in self.nodes:
            if n.is_broker:
                out.append((self.home(n), self.ports.replication))
                out.extend((self.home(n), p) for p in self.ports.clients)
            if n.is_controller:
                out.append((self.home(n), self.ports.controller))
        out.extend((p.listen_host, p.listen_port) for p in self.proxies())
        return out
