"""What the cluster file grants beyond connecting: link control through the operator's Toxiproxy
(only the links the file names) and process control through its command templates; the class
with exactly those capabilities (:func:`backend_class`), and :func:`connect`."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from highwater.core.progress import Progress

from ..backend import NodeState
from ..config import ClusterSpec
from ..topology import Link, Listener, Node, NodeHandle, Topology, client_party
from ..toxiproxy import ByteCounters, ToxiproxyAPI

if TYPE_CHECKING:
    from ..backend import ClusterBackend, ControlledNode, LinkControl, ProcessControl

from .cluster import ExternalCluster
from .cluster_file import (
    ClusterFile,
    ExternalClusterError,
    cluster_file_from_env,
    load_cluster_file,
    with_command_line,
)

log = logging.getLogger(__name__)

#: how long a command template may run (a kill, a start) before it counts as failed
COMMAND_TIMEOUT_S = 120.0


class _LinksMixin:
    """Link control through the operator's Toxiproxy: only the links the file names."""

    file: ClusterFile
    topo: Topology
    _toxi: ToxiproxyAPI | None = None

    def _api(self) -> ToxiproxyAPI:
        if self._toxi is None:
            u = urlparse(self.file.toxiproxy_api or "")
            assert u.hostname and u.port
            self._toxi = ToxiproxyAPI(u.hostname, u.port)
        return self._toxi

    def _proxy(self, link: Link) -> str:
        try:
            return self.file.proxies[link]
        except KeyError:
            raise ExternalClusterError(
                f"cluster file {self.file.path}: toxiproxy.proxies names no proxy for link {link.proxy_name}"
            ) from None

    def links(self) -> list[Link]:
        return sorted(self.file.proxies)

    def replication_links(self, broker_id: int, direction: str = "both") -> list[Link]:
        name = self.topo.node(broker_id).name
        return [
            lk
            for lk in self.links()
            if lk.listener == Listener.REPLICATION
            and ((direction in ("out", "both") and lk.src == name) or (direction in ("in", "both") and lk.dst == name))
        ]

    def client_link(self, rack: str, broker_id: int) -> Link:
        return Link(client_party(rack), self.topo.node(broker_id).name, Listener.CLIENT)

    def set_links_enabled(self, links: Iterable[Link], enabled: bool) -> None:
        for link in links:
            self._api().set_enabled(self._proxy(link), enabled)

    def add_toxic(
        self, link: Link, *, name: str, type: str, stream: str, toxicity: float, attributes: Mapping[str, Any]
    ) -> None:
        self._api().add_toxic(
            self._proxy(link), name=name, type=type, stream=stream, toxicity=toxicity, attributes=dict(attributes)
        )

    def remove_toxic(self, link: Link, name: str) -> None:
        self._api().remove_toxic(self._proxy(link), name)

    def reset_links(self) -> None:
        """Only the named proxies: enabled, toxics removed (never Toxiproxy's global reset, which
        would touch proxies the file did not name)."""
        self.ensure_links_healthy(self.links())

    def ensure_links_healthy(self, links: Iterable[Link], toxic_prefix: str = "", keep: Collection[str] = ()) -> None:
        """Each named proxy enabled and without toxics named ``toxic_prefix...`` but those in
        ``keep`` (another fault's, still active). Unlike the local backend, a proxy is never
        recreated: its listen/upstream addresses are the operator's."""
        api = self._api()
        for link in links:
            proxy = self._proxy(link)
            state = api.proxy(proxy)
            for t in state.get("toxics", []):
                if t["name"].startswith(toxic_prefix) and t["name"] not in keep:
                    api.remove_toxic(proxy, t["name"])
            if not state.get("enabled"):
                api.set_enabled(proxy, True)

    def link_bytes(self) -> dict[Link, ByteCounters]:
        counters = self._api().byte_counters()
        return {lk: counters.get(p, ByteCounters(0, 0)) for lk, p in self.file.proxies.items()}

    def client_bytes(self, rack: str) -> dict[int, ByteCounters]:
        counters = self._api().byte_counters()
        out: dict[int, ByteCounters] = {}
        for b in self.topo.brokers:
            proxy = self.file.proxies.get(self.client_link(rack, b.node_id))
            out[b.node_id] = counters.get(proxy, ByteCounters(0, 0)) if proxy else ByteCounters(0, 0)
        return out


class CommandNode(NodeHandle):
    """One broker whose process the operator's command templates act on. ``is_alive`` asks
    Kafka (registered in metadata), since we have no process handle."""

    def __init__(self, cluster: ExternalCluster, node: Node, host: str) -> None:
        self._cluster = cluster
        self.node = node
        self.host = host
        self.state = NodeState.RUNNING

    def _run(self, action: str) -> None:
        tmpl = self._cluster.file.commands.get(action)
        if tmpl is None:
            raise ExternalClusterError(f"cluster file {self._cluster.file.path}: commands.{action} is not given")
        cmd = tmpl.format(id=self.node_id, name=self.name, host=shlex.quote(self.host))
        self._cluster.progress(f"{self.name}: {action}: {cmd}")
        try:
            res = subprocess.run(
                cmd, shell=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=os.environ.copy()
            )
        except subprocess.TimeoutExpired:
            raise ExternalClusterError(f"{self.name}: {action} command timed out: {cmd}") from None
        if res.returncode != 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or [""]
            raise ExternalClusterError(f"{self.name}: {action} command exited {res.returncode}: {cmd}: {tail[0]}")

    def is_alive(self) -> bool:
        try:
            return self.node_id in self._cluster.observer().live_brokers()
        except Exception:  # noqa: BLE001 - not answering counts as not alive
            return False

    def start(self) -> None:
        self._run("start")
        self.state = NodeState.RUNNING

    def stop(self) -> None:
        self._run("stop" if "stop" in self._cluster.file.commands else "kill")
        self.state = NodeState.STOPPED

    def kill(self) -> None:
        self._run("kill")
        self.state = NodeState.STOPPED

    def pause(self) -> None:
        self._run("pause")
        self.state = NodeState.PAUSED

    def resume(self) -> None:
        self._run("resume")
        self.state = NodeState.RUNNING

    def restart(self, clean: bool = True) -> None:
        self.stop() if clean else self.kill()
        self.start()


class _ProcsMixin:
    """Process control through the file's command templates."""

    file: ClusterFile
    topo: Topology
    _nodes: dict[int, CommandNode] | None = None

    @property
    def nodes(self) -> Mapping[int, CommandNode]:
        if getattr(self, "_topo", None) is None:
            return {}  # not connected yet (isinstance checks read this property)
        if self._nodes is None:
            hosts = {b.node_id: b.host for b in getattr(self, "brokers", self.file.brokers)}
            self._nodes = {
                n.node_id: CommandNode(self, n, hosts.get(n.node_id, n.name))  # type: ignore[arg-type]
                for n in self.topo.brokers
            }
        return self._nodes

    def node(self, key: int | str) -> CommandNode:
        return self.nodes[self.topo.node(key).node_id]


class ExternalLinks(_LinksMixin, ExternalCluster):
    """External cluster with link control."""


class ExternalProcs(_ProcsMixin, ExternalCluster):
    """External cluster with process control."""


class ExternalFull(_LinksMixin, _ProcsMixin, ExternalCluster):
    """External cluster with link and process control."""


def backend_class(cf: ClusterFile) -> type[ExternalCluster]:
    """The class with exactly the capabilities the file grants."""
    links, procs = cf.toxiproxy_api is not None, bool(cf.commands)
    if links and procs:
        return ExternalFull
    if links:
        return ExternalLinks
    if procs:
        return ExternalProcs
    return ExternalCluster


def connect(spec: ClusterSpec, progress: Progress | None = None, path: Path | None = None) -> ExternalCluster:
    """Parse the file (refusing a malformed one before anything is contacted), then connect."""
    cf = with_command_line(load_cluster_file(path or cluster_file_from_env()))
    return backend_class(cf)(cf, spec, progress).start()


if TYPE_CHECKING:  # mypy proves each class implements what it claims

    def _implements(a: ExternalCluster, b: ExternalFull) -> tuple[ClusterBackend, LinkControl, ProcessControl]:
        return a, b, b

    def _node(n: CommandNode) -> ControlledNode:
        return n
