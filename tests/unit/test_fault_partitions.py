"""Partition topologies: each function cuts exactly the links it promises, and nothing else."""

from __future__ import annotations

import itertools

import pytest

from highwater.faults import partitions as P
from highwater.faults.common import Direction, FaultError
from highwater.harness.topology import Link, Listener, Ports, Topology, client_party


def topo(brokers: int = 5, racks: int = 3, controllers: int = 0) -> Topology:
    return Topology.build(
        brokers=brokers,
        racks=racks,
        controllers=controllers,
        slot=0,
        ports=Ports(
            replication=9091, controller=9093, clients=tuple(9100 + i for i in range(racks)), toxiproxy_api=8474
        ),
    )


TOPOLOGIES = [topo(3, 3), topo(5, 3), topo(4, 2, controllers=3), topo(6, 3, controllers=1)]


def names(t: Topology) -> set[str]:
    return {n.name for n in t.nodes}


def links_between(t: Topology, a: set[str], b: set[str]) -> set[Link]:
    return {l for l in t.links() if (l.src in a and l.dst in b) or (l.src in b and l.dst in a)}


@pytest.mark.parametrize("t", TOPOLOGIES)
def test_isolate_cuts_every_node_link_of_the_node_and_nothing_else(t: Topology) -> None:
    for node in t.nodes:
        cut = P.isolate(t, node.name)
        touching = {l for l in t.links() if node.name in (l.src, l.dst) and l.listener is not Listener.CLIENT}
        assert cut == touching
        assert P.isolate(t, node.node_id) == cut
        # the other nodes still talk to each other; clients still reach the node
        assert all(node.name in (l.src, l.dst) for l in cut)
        assert not any(l.listener is Listener.CLIENT for l in cut)


@pytest.mark.parametrize("t", TOPOLOGIES)
def test_isolate_with_clients_cuts_every_link_in_and_out(t: Topology) -> None:
    b = t.brokers[0]
    cut = P.isolate(t, b.name, clients=True)
    assert cut == {l for l in t.links() if b.name in (l.src, l.dst)}
    assert {l.src for l in cut if l.listener is Listener.CLIENT} == {client_party(r) for r in t.client_racks}


def test_isolate_covers_both_listeners_and_directions() -> None:
    t = topo(3, 3)
    cut = P.isolate(t, "kafka-1")
    for peer in ("kafka-2", "kafka-3"):
        for listener in (Listener.REPLICATION, Listener.CONTROLLER):
            assert Link("kafka-1", peer, listener) in cut
            assert Link(peer, "kafka-1", listener) in cut
    assert Link("kafka-2", "kafka-3", Listener.REPLICATION) not in cut


@pytest.mark.parametrize("t", TOPOLOGIES)
def test_isolate_rack(t: Topology) -> None:
    for rack in t.racks:
        inside = {b.name for b in t.brokers_in_rack(rack)}
        outside = names(t) - inside
        cut = P.isolate_rack(t, rack)
        assert cut == links_between(t, inside, outside)
        assert not links_between(t, inside, inside) & cut
        with_clients = P.isolate_rack(t, rack, clients=True)
        own = client_party(rack)
        assert not {l for l in with_clients if l.src == own and l.dst in inside}
        assert {l for l in t.links() if l.src == own and l.dst in outside} <= with_clients
        others = {client_party(r) for r in t.client_racks} - {own}
        assert {l for l in t.links() if l.src in others and l.dst in inside} <= with_clients
        assert not {l for l in with_clients if l.src in others and l.dst in outside}


@pytest.mark.parametrize("t", TOPOLOGIES)
def test_majority_minority_seeded(t: Topology) -> None:
    for seed in range(20):
        minority = P.pick_minority(t, seed)
        majority = names(t) - minority
        assert 2 * len(minority & {b.name for b in t.brokers}) < len(t.brokers)
        assert 2 * len(minority & {c.name for c in t.controllers}) < len(t.controllers)
        cut = P.majority_minority(t, seed=seed)
        assert cut == links_between(t, minority, majority)
        # every link within each half is up
        assert not (links_between(t, minority, minority) | links_between(t, majority, majority)) & cut
        assert not any(l.listener is Listener.CLIENT for l in cut)
        assert P.pick_minority(t, seed) == minority


def test_majority_minority_varies_with_seed_and_explicit_form() -> None:
    t = topo(5, 3)
    assert len({P.pick_minority(t, s) for s in range(30)}) > 1
    assert P.majority_minority(t, minority=["kafka-1", 2]) == links_between(
        t, {"kafka-1", "kafka-2"}, {"kafka-3", "kafka-4", "kafka-5"}
    )


@pytest.mark.parametrize("bad", [["kafka-1", "kafka-2", "kafka-3"], [], ["clients@rack-a"]])
def test_majority_minority_rejects_non_minorities(bad: list[str]) -> None:
    with pytest.raises(FaultError):
        P.majority_minority(topo(5, 3), minority=bad)


def test_majority_minority_needs_one_of_seed_or_minority() -> None:
    with pytest.raises(FaultError):
        P.majority_minority(topo(5, 3))
    with pytest.raises(FaultError):
        P.majority_minority(topo(5, 3), minority=["kafka-1"], seed=1)


def test_no_minority_in_two_brokers() -> None:
    with pytest.raises(FaultError, match="no non-empty minority"):
        P.pick_minority(topo(2, 2), 0)


@pytest.mark.parametrize("t", TOPOLOGIES)
def test_bridge(t: Topology) -> None:
    for seed in range(10):
        shape = P.pick_bridge(t, seed)
        assert len(shape.middle) == 1
        assert shape.left | shape.middle | shape.right == names(t)
        assert abs(len(shape.left) - len(shape.right)) <= 1
        cut = P.bridge_links(t, shape)
        assert cut == links_between(t, set(shape.left), set(shape.right))
        (mid,) = shape.middle
        assert not any(mid in (l.src, l.dst) for l in cut)


def test_bridge_explicit_needs_a_bridge() -> None:
    t = topo(5, 3)
    with pytest.raises(FaultError, match="neither side"):
        P.bridge(t, left=["kafka-1", "kafka-2"], right=["kafka-3", "kafka-4", "kafka-5"])
    cut = P.bridge(t, left=["kafka-1", "kafka-2"], right=["kafka-4", "kafka-5"])
    assert not any("kafka-3" in (l.src, l.dst) for l in cut)


def test_one_way_cuts_only_links_initiated_by_dst() -> None:
    t = topo(3, 3)
    cut = P.one_way(t, "kafka-1", "kafka-2")
    assert cut == {Link("kafka-2", "kafka-1", Listener.REPLICATION), Link("kafka-2", "kafka-1", Listener.CONTROLLER)}
    streams = P.one_way_data_streams(t, "kafka-1", "kafka-2")
    assert streams == {
        (Link("kafka-1", "kafka-2", l), Direction.DOWNSTREAM) for l in (Listener.REPLICATION, Listener.CONTROLLER)
    }
    # the cut links and the black-holed streams never share a proxy
    assert not {l for l, _ in streams} & cut


def test_one_way_groups_and_overlap() -> None:
    t = topo(5, 3)
    a, b = {"kafka-1", "kafka-2"}, {"kafka-3", "kafka-4"}
    assert P.one_way(t, a, b) == {l for l in t.links() if l.src in b and l.dst in a}
    with pytest.raises(FaultError):
        P.one_way(t, a, {"kafka-2"})


def test_clients_cut_off() -> None:
    t = topo(5, 3)
    assert P.clients_cut_off(t, "rack-b", 2) == {Link("clients@rack-b", "kafka-2", Listener.CLIENT)}
    assert P.clients_cut_off(t, "rack-b", ["kafka-1", "kafka-2"]) == {
        Link("clients@rack-b", f"kafka-{i}", Listener.CLIENT) for i in (1, 2)
    }


def test_clients_cut_off_rejects_controllers() -> None:
    with pytest.raises(FaultError, match="not a broker"):
        P.clients_cut_off(topo(4, 2, controllers=3), "rack-a", "controller-1")


def test_isolate_controllers_dedicated() -> None:
    t = topo(4, 2, controllers=3)
    ctrls = {c.name for c in t.controllers}
    brokers = {b.name for b in t.brokers}
    cut = P.isolate_controllers(t)
    assert cut == links_between(t, ctrls, brokers)
    assert not links_between(t, ctrls, ctrls) & cut
    assert not links_between(t, brokers, brokers) & cut
    one = P.isolate_controllers(t, "controller-2")
    assert one == links_between(t, {"controller-2"}, brokers)


def test_isolate_controllers_combined() -> None:
    t = topo(3, 3)
    assert P.isolate_controllers(t, "kafka-2") == P.isolate(t, "kafka-2")
    assert P.only(P.isolate_controllers(t, "kafka-2"), Listener.CONTROLLER) == {
        l for l in P.isolate(t, "kafka-2") if l.listener is Listener.CONTROLLER
    }
    with pytest.raises(FaultError, match="combined"):
        P.isolate_controllers(t)
    with pytest.raises(FaultError, match="not a controller"):
        P.isolate_controllers(topo(4, 2, controllers=1), "kafka-1")


def test_complete_split() -> None:
    t = topo(6, 3)
    groups = [{"kafka-1", "kafka-2"}, {"kafka-3", "kafka-4"}, {"kafka-5", "kafka-6"}]
    cut = P.complete_split(t, groups)
    for g, h in itertools.permutations(groups, 2):
        assert links_between(t, g, h) <= cut
    for g in groups:
        assert not links_between(t, g, g) & cut
    with pytest.raises(FaultError, match="two split groups"):
        P.complete_split(t, [{"kafka-1"}, {"kafka-1", "kafka-2"}])


@pytest.mark.parametrize(
    "call",
    [
        lambda t: P.isolate(t, "kafka-9"),
        lambda t: P.isolate(t, 42),
        lambda t: P.isolate_rack(t, "rack-z"),
        lambda t: P.clients_cut_off(t, "rack-q", 1),
        lambda t: P.clients_cut_off(t, "rack-a", 7),
        lambda t: P.one_way(t, "kafka-1", "kafka-8"),
        lambda t: P.majority_minority(t, minority=["nope"]),
        lambda t: P.cut_between(t, ["clients@rack-x"], ["kafka-1"]),
    ],
)
def test_unknown_names_raise_one_line_fault_error(call) -> None:
    with pytest.raises(FaultError) as err:
        call(topo(5, 3))
    assert "\n" not in str(err.value)
    assert "no " in str(err.value)


@pytest.mark.parametrize("t", TOPOLOGIES)
def test_every_cut_is_a_subset_of_the_plan(t: Topology) -> None:
    plan = set(t.links())
    cuts = [P.isolate(t, n.name, clients=True) for n in t.nodes]
    cuts += [P.isolate_rack(t, r, clients=True) for r in t.racks]
    cuts += [P.majority_minority(t, seed=1), P.bridge_links(t, P.pick_bridge(t, 1))]
    for c in cuts:
        assert c <= plan
