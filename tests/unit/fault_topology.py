"""The address plan the fault unit tests share (pure; no processes)."""

from __future__ import annotations

from highwater.harness.topology import Ports, Topology


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
