"""``cluster.json``: the record a cluster of ours leaves in its directory, written by the local and
compose backends and read back by ``highwater cluster status`` and by ``attach`` (a process that
acts on a cluster another process keeps up). One writer and one reader for both backends, so the
record cannot drift between them; each backend adds its own node entries and keys.
"""

from __future__ import annotations

from typing import Any

from .config import ClusterSpec
from .topology import Ports, Topology


def shape_record(spec: ClusterSpec, topo: Topology, kafka_version: str) -> dict[str, Any]:
    """The keys every backend records: release, slot, shape, ports and addresses."""
    return {
        "kafka_version": kafka_version,
        "slot": topo.slot,
        "spec": {
            "brokers": spec.brokers,
            "racks": spec.racks,
            "controllers": spec.controllers,
            "client_racks": list(topo.client_racks),
            "broker_config": dict(spec.broker_config),
            "heap_mb": spec.heap_mb,
            "name": spec.name,
            "broker_cpus": spec.broker_cpus,
            "broker_memory": spec.broker_memory,
            "clock": spec.clock,  # an attached handle restarts nodes on the same clock
            "tiered": spec.tiered,  # and on the same remote store
        },
        "ports": {
            "replication": topo.ports.replication,
            "controller": topo.ports.controller,
            "clients": list(topo.ports.clients),
            "toxiproxy_api": topo.ports.toxiproxy_api,
        },
        "toxiproxy": f"{topo.toxiproxy_host}:{topo.ports.toxiproxy_api}",
        "bootstrap": {rack: topo.bootstrap(rack) for rack in topo.client_racks},
    }


def spec_from_state(state: dict[str, Any]) -> ClusterSpec:
    """The spec a recorded cluster was started with (records older than the limits lack them)."""
    sp = state["spec"]
    default = ClusterSpec()
    return ClusterSpec(
        brokers=sp["brokers"],
        racks=sp["racks"],
        controllers=sp["controllers"],
        kafka_version=state["kafka_version"],
        broker_config=sp["broker_config"],
        client_racks=tuple(sp["client_racks"]),
        base_port=state["ports"]["replication"],
        heap_mb=sp.get("heap_mb", default.heap_mb),
        name=sp.get("name", default.name),
        broker_cpus=sp.get("broker_cpus"),
        broker_memory=sp.get("broker_memory"),
        clock=sp.get("clock", default.clock),
        tiered=sp.get("tiered", default.tiered),
    )


def topology_from_state(state: dict[str, Any]) -> Topology:
    sp, ports = state["spec"], state["ports"]
    return Topology.build(
        brokers=sp["brokers"],
        racks=sp["racks"],
        controllers=sp["controllers"],
        client_racks=tuple(sp["client_racks"]),
        slot=state["slot"],
        ports=Ports(ports["replication"], ports["controller"], tuple(ports["clients"]), ports["toxiproxy_api"]),
    )
