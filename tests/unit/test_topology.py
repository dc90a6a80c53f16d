"""The address plan and the rendered broker configuration (pure, no processes)."""

from __future__ import annotations

import pytest

from highwater.harness.config import RACK_AWARE_SELECTOR, ClusterSpec, render_properties
from highwater.harness.topology import Listener, Ports, Topology, TopologyError, rack_name


def topo(brokers: int = 3, racks: int = 3, controllers: int = 0, slot: int = 0) -> Topology:
    return Topology.build(
        brokers=brokers,
        racks=racks,
        controllers=controllers,
        slot=slot,
        ports=Ports(9092, 9093, tuple(9094 + i for i in range(racks)), 9200),
    )


def test_rack_names() -> None:
    assert [rack_name(i) for i in (0, 1, 25, 26, 27)] == ["rack-a", "rack-b", "rack-z", "rack-aa", "rack-ab"]


def test_brokers_spread_round_robin_over_racks() -> None:
    t = topo(brokers=6, racks=3)
    assert [b.rack for b in t.brokers] == ["rack-a", "rack-b", "rack-c"] * 2
    assert [b.name for b in t.brokers] == [f"kafka-{i}" for i in range(1, 7)]


def test_one_proxy_per_directed_link_and_listener() -> None:
    t = topo(brokers=3, racks=3)
    links = t.links()
    assert len(links) == len(set(links))
    repl = [lk for lk in links if lk.listener == Listener.REPLICATION]
    ctrl = [lk for lk in links if lk.listener == Listener.CONTROLLER]
    client = [lk for lk in links if lk.listener == Listener.CLIENT]
    assert len(repl) == 6 and len(ctrl) == 6  # n*(n-1) directed pairs each
    assert len(client) == 9  # 3 client racks x 3 brokers
    listens = [p.listen for p in t.proxies()]
    assert len(listens) == len(set(listens)), "every proxy has its own listen address"


def test_hosts_file_points_every_peer_at_the_link_proxy() -> None:
    t = topo()
    k1, k2 = t.node("kafka-1"), t.node("kafka-2")
    hosts = t.hosts_file(k1).splitlines()
    assert f"{t.link_address(k1, k2)} kafka-2" in hosts
    assert f"{t.home(k1)} kafka-1" in hosts
    proxy = next(
        p
        for p in t.proxies()
        if p.link.src == "kafka-1" and p.link.dst == "kafka-2" and p.link.listener == Listener.REPLICATION
    )
    assert proxy.listen_host == t.link_address(k1, k2) and proxy.upstream_host == t.home(k2)


def test_dedicated_controllers_get_controller_links_only() -> None:
    t = topo(brokers=3, racks=3, controllers=1)
    c = t.node("controller-1")
    assert c.node_id == 1001 and not c.is_broker and c.is_controller
    assert all(lk.listener == Listener.CONTROLLER for lk in t.links() if "controller-1" in (lk.src, lk.dst))
    assert [n.name for n in t.controllers] == ["controller-1"]


def test_slots_do_not_share_addresses() -> None:
    a, b = topo(slot=0), topo(slot=1)
    assert not {h for h, _ in a.all_listen_addresses()} & {h for h, _ in b.all_listen_addresses()}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"brokers": 2, "racks": 3}, r"more racks \(3\) than brokers \(2\)"),
        ({"brokers": 0, "racks": 1}, "at least one broker"),
        ({"brokers": 3, "racks": 0}, "at least one rack"),
    ],
)
def test_bad_shapes_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        Topology.build(**kwargs, slot=0, ports=Ports(1, 2, (3, 4, 5), 6))


def test_unknown_node_and_rack_errors_name_what_exists() -> None:
    t = topo()
    with pytest.raises(TopologyError, match="no node 'kafka-9'.*kafka-1"):
        t.node("kafka-9")
    with pytest.raises(TopologyError, match="no rack 'rack-q'"):
        t.brokers_in_rack("rack-q")


def test_rendered_properties_follow_the_design() -> None:
    t = topo()
    node = t.node("kafka-2")
    props = render_properties(ClusterSpec(broker_config={"replica.lag.time.max.ms": "9999"}), t, node, "/d")
    assert props["broker.rack"] == "rack-b"
    assert props["replica.selector.class"] == RACK_AWARE_SELECTOR
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"
    assert "REPLICATION://kafka-2:9092" in props["advertised.listeners"]
    assert f"CLIENT_RACK_A://{t.client_address('rack-a', node)}:9094" in props["advertised.listeners"]
    assert props["replica.lag.time.max.ms"] == "9999", "overrides win over fast-failure defaults"
    assert props["inter.broker.listener.name"] == "REPLICATION"


def test_kraft_cluster_ids_never_start_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """An id starting with '-' would be parsed as an option by kafka-storage (seen in CI)."""
    import uuid

    from highwater.harness.local import cluster

    ids = iter([uuid.UUID(bytes=b"\xfb" + b"\x00" * 15), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(cluster.uuid, "uuid4", lambda: next(ids))
    cid = cluster.kraft_cluster_id()
    assert not cid.startswith("-") and len(cid) == 22


def test_controller_listener_is_advertised_by_name_where_raft_fetches_at_advertised_endpoints() -> None:
    """Since 3.9 (KIP-853) Raft followers fetch from the leader at its advertised controller
    endpoint: it must be the node's name (resolved to the proxy of the link), not the bound
    address, or a controller cut misses Raft traffic (HW-8). Older releases reject it for a
    combined node and use the voters' names anyway."""
    t = Topology.build(
        brokers=3,
        racks=3,
        controllers=0,
        slot=0,
        ports=Ports(replication=9091, controller=9093, clients=(9100, 9101, 9102), toxiproxy_api=8474),
    )
    node = t.nodes[0]
    new = render_properties(ClusterSpec(), t, node, "/d", "4.4.0")["advertised.listeners"]
    assert f"CONTROLLER://{node.name}:9093" in new.split(",")
    old = render_properties(ClusterSpec(), t, node, "/d", "3.8.1")["advertised.listeners"]
    assert "CONTROLLER" not in old
