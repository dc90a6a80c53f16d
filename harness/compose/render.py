"""Render a docker-compose.yml from the templates in ``compose/``.

The address plan and every broker property come from the local backend's own code
(:class:`harness.topology.Topology`, :func:`harness.config.render_properties`), so a compose
cluster is the same model on containers: host networking, each node on its own 127.x address,
each peer name pointed (``extra_hosts``) at the proxy for that directed link, one client listener
per client rack. Scalars are written as JSON strings, which YAML reads verbatim.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from string import Template

from highwater.harness.config import ClusterSpec, effective_client_racks, properties_text, render_properties
from highwater.harness.topology import Node, Ports, Topology

from .reaping import LABEL_CLUSTER, LABEL_NODE, LABEL_OWNER, USER_OWNED

TEMPLATES = Path(__file__).resolve().parents[2] / "compose"
DATA_DIR = "/var/lib/kafka/data"


@dataclass(frozen=True)
class RenderInput:
    spec: ClusterSpec
    cluster_id: str  # our label value, also the compose project name
    kraft_cluster_id: str
    kafka_image: str
    toxiproxy_image: str
    slot: int
    ports: Ports
    owner_pid: int = 0  # 0: owned by the user who starts the file, never reaped


def _template(name: str) -> Template:
    return Template((TEMPLATES / name).read_text())


def _q(value: str) -> str:
    """A YAML scalar: a JSON string, with ``$`` doubled so compose does not interpolate it."""
    return json.dumps(value).replace("$", "$$")


def topology_for(spec: ClusterSpec, slot: int, ports: Ports) -> Topology:
    return Topology.build(
        brokers=spec.brokers,
        racks=spec.racks,
        controllers=spec.controllers,
        client_racks=effective_client_racks(spec),
        slot=slot,
        ports=ports,
    )


def labels(inp: RenderInput, node: str) -> dict[str, str]:
    """A file rendered for a user is owned by no process of ours (``user``): never reaped."""
    return {LABEL_CLUSTER: inp.cluster_id, LABEL_OWNER: str(inp.owner_pid or USER_OWNED), LABEL_NODE: node}


def _labels_block(values: dict[str, str]) -> str:
    return "\n".join(f"      {k}: {_q(v)}" for k, v in values.items())


def broker_command(spec: ClusterSpec) -> str:
    """Write the properties, format the storage once, then run Kafka in the foreground."""
    java = (
        f"java -Xms{spec.heap_mb}m -Xmx{spec.heap_mb}m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp '/opt/kafka/libs/*'"
    )
    return (
        'printf "%s" "$HW_PROPERTIES" > /tmp/server.properties && '
        f'{java} kafka.tools.StorageTool format -t "$HW_CLUSTER_ID" -c /tmp/server.properties --ignore-formatted'
        f" && exec {java} kafka.Kafka /tmp/server.properties"
    )


def proxies_config(topo: Topology) -> list[dict[str, object]]:
    return [
        {"name": p.link.proxy_name, "listen": p.listen, "upstream": p.upstream, "enabled": True} for p in topo.proxies()
    ]


def render(inp: RenderInput) -> str:
    topo = topology_for(inp.spec, inp.slot, inp.ports)
    services = [
        _template("toxiproxy.yml.tmpl").substitute(
            image=inp.toxiproxy_image,
            labels=_labels_block(labels(inp, "toxiproxy")),
            proxies_json=_q(json.dumps(proxies_config(topo))),
            command=_q(
                'printf "%s" "$HW_PROXIES" > /tmp/proxies.json && exec /usr/local/bin/toxiproxy-server '
                f"-host {topo.toxiproxy_host} -port {topo.ports.toxiproxy_api} -proxy-metrics -config /tmp/proxies.json"
            ),
        )
    ]
    version = inp.spec.kafka_version
    for node in topo.nodes:
        services.append(_broker(inp, topo, node, version))
    return _template("docker-compose.yml.tmpl").substitute(cluster_id=inp.cluster_id, services="\n".join(services))


def extra_hosts(topo: Topology, node: Node) -> dict[str, str]:
    """Name -> address in ``node``'s container: itself at home, every peer at the proxy self -> peer."""
    hosts = {node.name: topo.home(node)}
    hosts.update({peer.name: topo.link_address(node, peer) for peer in topo.nodes if peer is not node})
    return hosts


def node_properties(spec: ClusterSpec, topo: Topology, node: Node) -> str:
    return properties_text(render_properties(spec, topo, node, DATA_DIR, spec.kafka_version))


def limits_block(spec: ClusterSpec) -> str:
    """The service keys for the spec's limits (compose's ``cpus``/``mem_limit``, what ``docker
    run --cpus/--memory`` set), each a whole line; empty without limits."""
    lines = []
    if spec.broker_cpus is not None:
        lines.append(f"    cpus: {json.dumps(spec.broker_cpus)}\n")
    if spec.broker_memory is not None:
        lines.append(f"    mem_limit: {_q(spec.broker_memory)}\n")
    return "".join(lines)


def _broker(inp: RenderInput, topo: Topology, node: Node, version: str | None) -> str:
    props = render_properties(inp.spec, topo, node, DATA_DIR, version)
    hosts = [f'      - "{name}:{addr}"' for name, addr in extra_hosts(topo, node).items()]
    return _template("broker.yml.tmpl").substitute(
        name=node.name,
        image=inp.kafka_image,
        limits=limits_block(inp.spec),
        labels=_labels_block(labels(inp, node.name)),
        extra_hosts="\n".join(hosts),
        properties=_q(properties_text(props)),
        kraft_cluster_id=_q(inp.kraft_cluster_id),
        command=_q(broker_command(inp.spec)),
    )
