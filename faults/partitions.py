"""Network partition topologies as pure functions of a :class:`Topology`.

Every function returns ``frozenset[Link]``: the directed links whose proxies the fault layer
takes down. The model, from :mod:`harness.topology`:

* A :class:`Link` ``src -> dst`` is a direction of connection *initiation*: ``src`` opens TCP
  connections to ``dst`` through that link's own Toxiproxy proxy. Bytes on such a connection
  flow both ways (``upstream`` = src to dst, ``downstream`` = dst to src). Cutting a link (the
  proxy disabled) closes its open connections and refuses new ones, so both streams of every
  connection *src initiated toward dst* stop; connections ``dst`` initiated toward ``src`` use
  the other link and are untouched.
* Node-to-node links exist per listener: ``replication`` between any two brokers (both ways) and
  ``controller`` from any node to any controller-role node. Client links run from
  ``clients@<rack>`` to every broker (listener ``client``); nothing ever connects *to* clients.
* Cutting "between" two sets of parties therefore means cutting the links in *both* initiation
  directions; a one-way cut only cuts one of them (see :func:`one_way`).

Clients are outside the cluster, as the client node is in Jepsen: unless a function says
otherwise (``clients=True``, :func:`clients_cut_off`), client links are never cut, so that e.g.
an isolated leader still serves its clients - the interesting case for lost writes and
uncommitted reads. Only links that exist in ``topology.links()`` are ever returned.

Seeded choices (:func:`pick_minority`, :func:`pick_bridge`) use ``random.Random(seed)`` over
name-sorted nodes only, so they are stable across processes and Python hash seeds.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from highwater.faults.common import (
    Direction,
    FaultError,
    check_client_rack,
    check_rack,
    find_broker,
    find_node,
    node_names,
    parties,
)
from highwater.harness.topology import Link, Listener, Node, Topology, client_party

Key = int | str | Node
Keys = Key | Iterable[Key]


def all_links(topology: Topology) -> frozenset[Link]:
    """Every link of the address plan."""
    return frozenset(topology.links())


def only(links: Iterable[Link], *listeners: Listener) -> frozenset[Link]:
    """The subset of ``links`` on the given listeners, e.g. ``only(isolate(t, 2),
    Listener.REPLICATION)`` cuts a broker off replication but leaves its controller plane up."""
    if not listeners:
        raise FaultError("only() needs at least one listener")
    wanted = set(listeners)
    return frozenset(link for link in links if link.listener in wanted)


def cut_one_way(topology: Topology, initiators: Keys, acceptors: Keys) -> frozenset[Link]:
    """Every link initiated by a party of ``initiators`` toward a party of ``acceptors``.

    Afterwards no party of ``initiators`` can open a connection to a party of ``acceptors``;
    connections in the other direction are not touched.
    """
    src = parties(topology, initiators)
    dst = parties(topology, acceptors)
    return frozenset(link for link in topology.links() if link.src in src and link.dst in dst)


def cut_between(topology: Topology, side_a: Keys, side_b: Keys) -> frozenset[Link]:
    """Every link between ``side_a`` and ``side_b``, initiated in either direction.

    The two sides must be disjoint; parties in neither side keep all their links.
    """
    a = parties(topology, side_a)
    b = parties(topology, side_b)
    both = a & b
    if both:
        raise FaultError(f"a party cannot be on both sides of a cut: {', '.join(sorted(both))}")
    return cut_one_way(topology, a, b) | cut_one_way(topology, b, a)


def complete_split(topology: Topology, groups: Sequence[Keys]) -> frozenset[Link]:
    """Split the parties into ``groups`` that cannot talk to each other (Jepsen's complete grudge).

    Every link whose two ends lie in two different groups is cut, in both directions; links
    within a group, and links of parties that are in no group, stay up. Groups must be disjoint.
    """
    sets = [parties(topology, g) for g in groups]
    if len(sets) < 2:
        raise FaultError(f"a split needs at least two groups, got {len(sets)}")
    seen: set[str] = set()
    for s in sets:
        if not s:
            raise FaultError("a split group is empty")
        dup = seen & s
        if dup:
            raise FaultError(f"a party is in two split groups: {', '.join(sorted(dup))}")
        seen |= s
    group_of = {p: i for i, s in enumerate(sets) for p in s}
    return frozenset(
        link
        for link in topology.links()
        if link.src in group_of and link.dst in group_of and group_of[link.src] != group_of[link.dst]
    )


def isolate(topology: Topology, node: Key, *, clients: bool = False) -> frozenset[Link]:
    """Isolate one node from every other node: every node-to-node link into or out of ``node``
    (all listeners, both initiation directions) is cut, and nothing else.

    With ``clients=True`` the links from every client party to ``node`` are cut as well, so the
    node is alone in the world; by default its clients still reach it.
    """
    name = find_node(topology, node).name
    others = node_names(topology) - {name}
    links = cut_between(topology, {name}, others) if others else frozenset()
    if clients:
        links |= frozenset(l for l in topology.links() if l.dst == name and l.listener is Listener.CLIENT)
    return links


def isolate_rack(topology: Topology, rack: str, *, clients: bool = False) -> frozenset[Link]:
    """Isolate a whole rack: its brokers keep talking among themselves but no link between a
    broker of ``rack`` and any node outside it (other racks' brokers, dedicated controllers,
    which have no rack) survives, in either direction.

    With ``clients=True`` client parties take their rack's side: ``clients@<rack>`` can reach
    only the rack's brokers and every other client party can no longer reach them.
    """
    check_rack(topology, rack)
    inside = frozenset(b.name for b in topology.brokers_in_rack(rack))
    outside = node_names(topology) - inside
    if clients:
        own = client_party(rack)
        if rack in topology.client_racks:
            inside |= {own}
        outside |= frozenset(client_party(r) for r in topology.client_racks if r != rack)
    if not outside:
        raise FaultError(f"rack {rack!r} holds every node: nothing to isolate it from")
    return cut_between(topology, inside, outside)


# -- majority / minority ----------------------------------------------------------------------


def _sorted_names(nodes: Iterable[Node]) -> list[str]:
    return sorted(n.name for n in nodes)


def _dedicated_controllers(topology: Topology) -> list[str]:
    return _sorted_names(n for n in topology.nodes if n.is_controller and not n.is_broker)


def check_minority(topology: Topology, minority: Keys) -> frozenset[str]:
    """``minority`` as node names, if it is a proper minority: non-empty, node names only, holding
    fewer than half of the brokers and fewer than half of the controller-role nodes. The rest
    then holds a broker majority and a KRaft quorum majority."""
    names = parties(topology, minority)
    if not names:
        raise FaultError("the minority is empty")
    clients = sorted(n for n in names if n not in node_names(topology))
    if clients:
        raise FaultError(f"a minority holds nodes, not client parties: {', '.join(clients)}")
    brokers = [b.name for b in topology.brokers]
    controllers = [c.name for c in topology.controllers]
    nb = sum(1 for b in brokers if b in names)
    nc = sum(1 for c in controllers if c in names)
    if 2 * nb >= len(brokers) or 2 * nc >= len(controllers):
        raise FaultError(
            f"{', '.join(sorted(names))} is not a minority: it holds {nb} of {len(brokers)} brokers"
            f" and {nc} of {len(controllers)} controllers (needs fewer than half of each)"
        )
    return names


def pick_minority(topology: Topology, seed: int) -> frozenset[str]:
    """The largest minority, chosen by ``seed``: ``(B-1)//2`` of the B brokers and, with
    dedicated controllers, ``(C-1)//2`` of the C controllers."""
    rng = random.Random(seed)
    brokers = _sorted_names(topology.brokers)
    ctrls = _dedicated_controllers(topology)
    chosen = rng.sample(brokers, (len(brokers) - 1) // 2)
    if ctrls:
        chosen += rng.sample(ctrls, (len(ctrls) - 1) // 2)
    if not chosen:
        raise FaultError(
            f"a cluster of {len(brokers)} broker(s) and {len(ctrls)} dedicated controller(s) has no non-empty minority"
        )
    return check_minority(topology, chosen)


def majority_minority(topology: Topology, *, minority: Keys | None = None, seed: int | None = None) -> frozenset[Link]:
    """Split the nodes into a minority and the majority (everyone else), with every link between
    the two halves cut in both directions and every link within each half up. Give exactly one
    of ``minority`` (explicit, checked by :func:`check_minority`) or ``seed`` (see
    :func:`pick_minority`). Client links stay up."""
    if minority is not None and seed is None:
        small = check_minority(topology, minority)
    elif seed is not None and minority is None:
        small = pick_minority(topology, seed)
    else:
        raise FaultError("majority_minority needs exactly one of minority= or seed=")
    return cut_between(topology, small, node_names(topology) - small)


# -- bridge -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bridge:
    """Jepsen's bridge: ``left`` and ``right`` cannot talk to each other; the ``middle`` nodes
    talk to both sides."""

    left: frozenset[str]
    middle: frozenset[str]
    right: frozenset[str]


def pick_bridge(topology: Topology, seed: int) -> Bridge:
    """Shuffle the nodes with ``seed``; the first ``(n-1)//2`` form ``left``, the next one is the
    bridge, the rest form ``right``. Needs at least three nodes."""
    names = sorted(node_names(topology))
    if len(names) < 3:
        raise FaultError(f"a bridge needs at least 3 nodes, the cluster has {len(names)}")
    random.Random(seed).shuffle(names)
    half = (len(names) - 1) // 2
    return Bridge(frozenset(names[:half]), frozenset({names[half]}), frozenset(names[half + 1 :]))


def bridge(topology: Topology, *, left: Keys, right: Keys) -> frozenset[Link]:
    """Cut every link between ``left`` and ``right`` (both directions); every node in neither is
    a bridge that keeps all its links. ``left``, ``right`` and the bridge must be non-empty."""
    a, b = parties(topology, left), parties(topology, right)
    middle = node_names(topology) - a - b
    if not a or not b:
        raise FaultError("a bridge needs a non-empty left and right side")
    if not middle:
        raise FaultError("a bridge needs at least one node on neither side (the bridge)")
    return cut_between(topology, a, b)


def bridge_links(topology: Topology, shape: Bridge) -> frozenset[Link]:
    """The links cut by a :class:`Bridge` (e.g. from :func:`pick_bridge`)."""
    if shape.middle != node_names(topology) - shape.left - shape.right:
        raise FaultError("bridge middle must be exactly the nodes on neither side")
    return bridge(topology, left=shape.left, right=shape.right)


# -- one-way ------------------------------------------------------------------------------------


def one_way(topology: Topology, src: Keys, dst: Keys) -> frozenset[Link]:
    """``src`` can still reach ``dst``, but ``dst`` can no longer reach ``src``.

    Precisely: every link *initiated by* a party of ``dst`` toward a party of ``src`` is cut;
    links initiated by ``src`` toward ``dst`` stay up. That is one-way at the level of
    *connections*: on a connection ``src`` opened, ``dst`` still answers (requests and responses
    both flow), so e.g. ``one_way(t, leader, follower)`` stops the follower's fetches to the
    leader while the leader's own requests to the follower still work. For a cut that is also
    one-way at the level of *bytes*, the fault layer additionally puts a ``timeout`` toxic
    (``timeout=0``: bytes held forever, connection kept open) on the streams returned by
    :func:`one_way_data_streams`. ``src`` and ``dst`` must be disjoint.
    """
    a, b = parties(topology, src), parties(topology, dst)
    if a & b:
        raise FaultError(f"one-way ends overlap: {', '.join(sorted(a & b))}")
    return cut_one_way(topology, b, a)


def one_way_data_streams(topology: Topology, src: Keys, dst: Keys) -> frozenset[tuple[Link, Direction]]:
    """The streams to black-hole (``timeout`` toxic) to make :func:`one_way` hold for bytes too:
    the ``downstream`` stream (``dst`` to ``src``) of every link ``src`` initiated toward
    ``dst``. Together with :func:`one_way`, no byte from ``dst`` reaches ``src`` while every
    byte from ``src`` is still delivered (``src`` simply never gets answers)."""
    a, b = parties(topology, src), parties(topology, dst)
    if a & b:
        raise FaultError(f"one-way ends overlap: {', '.join(sorted(a & b))}")
    return frozenset((link, Direction.DOWNSTREAM) for link in cut_one_way(topology, a, b))


# -- clients and controllers --------------------------------------------------------------------


def clients_cut_off(topology: Topology, rack: str, brokers: Keys) -> frozenset[Link]:
    """The clients of ``rack`` can no longer reach ``brokers`` (one broker or several): exactly
    the links ``clients@<rack> -> broker`` on the client listener. Other racks' clients and all
    node-to-node links are untouched, so the brokers keep replicating."""
    check_client_rack(topology, rack)
    targets = [brokers] if isinstance(brokers, (int, str, Node)) else list(brokers)
    if not targets:
        raise FaultError("clients_cut_off needs at least one broker")
    names = frozenset(find_broker(topology, b).name for b in targets)
    return cut_one_way(topology, {client_party(rack)}, names)


def isolate_controllers(topology: Topology, controllers: Keys | None = None) -> frozenset[Link]:
    """Isolate controller(s) from the brokers: every link, either direction, any listener,
    between a node of ``controllers`` (default: every controller-role node) and a broker that is
    not itself one of them. Links among the given controllers stay up (the quorum keeps talking),
    and so do links between the remaining nodes.

    With dedicated controllers and the default, the brokers lose the whole quorum. In combined
    mode name the controller(s) (e.g. the active one): then it amounts to isolating those nodes
    from the other brokers; ``only(..., Listener.CONTROLLER)`` keeps replication up and cuts
    just the controller plane.
    """
    if controllers is None:
        chosen = frozenset(c.name for c in topology.controllers)
    else:
        chosen = parties(topology, controllers)
        for name in sorted(chosen):
            if not find_node(topology, name).is_controller:
                raise FaultError(
                    f"{name} is not a controller (controllers: {', '.join(_sorted_names(topology.controllers))})"
                )
    rest = frozenset(b.name for b in topology.brokers) - chosen
    if not chosen:
        raise FaultError("no controller to isolate")
    if not rest:
        raise FaultError(
            "every broker is one of the controllers to isolate (combined mode): name the controller(s) to isolate"
        )
    return cut_between(topology, chosen, rest)
