"""Shared vocabulary of the fault layer: the error type, stream directions, and party lookups.

A *party* is one end of a :class:`~harness.topology.Link`: a node name (``kafka-2``,
``controller-1``) or a client party (``clients@rack-b``). Every lookup here raises a one-line
:class:`FaultError` naming what exists when asked for something that does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from highwater.core.errors import HighwaterError
from highwater.harness.topology import Node, Topology, client_party

CLIENT_PREFIX = "clients@"


class FaultError(HighwaterError, ValueError):
    """A fault request that cannot be honoured (bad kind, unknown target, contradiction).

    The message is always one line, meant to be shown to a user as is.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class Direction(str, Enum):
    """A Toxiproxy stream direction on one proxy (one :class:`Link`).

    ``upstream`` is the bytes the link's ``src`` sends to its ``dst`` (requests);
    ``downstream`` is the bytes ``dst`` sends back to ``src`` on the same connections
    (responses). ``both`` means one toxic on each stream.
    """

    UPSTREAM = "upstream"
    DOWNSTREAM = "downstream"
    BOTH = "both"

    def streams(self) -> tuple[Direction, ...]:
        """The concrete streams this direction covers (``both`` -> upstream, downstream)."""
        if self is Direction.BOTH:
            return (Direction.UPSTREAM, Direction.DOWNSTREAM)
        return (self,)


def _names(items: Iterable[str]) -> str:
    return ", ".join(items)


def find_node(topology: Topology, key: int | str | Node) -> Node:
    """The node named ``key``: a :class:`Node`, a node id (``2``, ``"2"``, ``1001``) or a name
    (``kafka-2``, ``controller-1``)."""
    if isinstance(key, Node):
        key = key.name
    for n in topology.nodes:
        if n.name == key or n.node_id == key or (isinstance(key, str) and key == str(n.node_id)):
            return n
    raise FaultError(f"no node {key!r} in this cluster (nodes: {_names(n.name for n in topology.nodes)})")


def find_broker(topology: Topology, key: int | str | Node) -> Node:
    """Like :func:`find_node`, but the node must be a broker."""
    node = find_node(topology, key)
    if not node.is_broker:
        raise FaultError(f"{node.name} is not a broker (brokers: {_names(b.name for b in topology.brokers)})")
    return node


def check_rack(topology: Topology, rack: str) -> str:
    """``rack`` if it is a broker rack of this cluster, else a :class:`FaultError`."""
    if rack not in topology.racks:
        raise FaultError(f"no rack {rack!r} in this cluster (racks: {_names(topology.racks)})")
    return rack


def check_client_rack(topology: Topology, rack: str) -> str:
    """``rack`` if clients of this rack have proxies in this cluster, else a FaultError."""
    if rack not in topology.client_racks:
        raise FaultError(f"no client rack {rack!r} in this cluster (client racks: {_names(topology.client_racks)})")
    return rack


def node_names(topology: Topology) -> frozenset[str]:
    return frozenset(n.name for n in topology.nodes)


def client_parties(topology: Topology) -> frozenset[str]:
    return frozenset(client_party(r) for r in topology.client_racks)


def all_parties(topology: Topology) -> frozenset[str]:
    """Every possible end of a link: all node names and all client parties."""
    return node_names(topology) | client_parties(topology)


def party(topology: Topology, key: int | str | Node) -> str:
    """The party named by ``key``: a node (see :func:`find_node`) or ``clients@<rack>``."""
    if isinstance(key, str) and key.startswith(CLIENT_PREFIX):
        check_client_rack(topology, key[len(CLIENT_PREFIX) :])
        return key
    return find_node(topology, key).name


def parties(topology: Topology, keys: int | str | Node | Iterable[int | str | Node]) -> frozenset[str]:
    """A set of parties from one key or an iterable of keys (each resolved with :func:`party`)."""
    if isinstance(keys, (int, str, Node)):
        return frozenset({party(topology, keys)})
    return frozenset(party(topology, k) for k in keys)
