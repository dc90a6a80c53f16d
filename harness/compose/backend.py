"""The compose backend: the local backend's model (same topology, broker properties, one
Toxiproxy proxy per directed link) with every node and the proxy in a container, driven through
the docker SDK. Containers use host networking, each node on its own 127.x address, with
``extra_hosts`` pointing every peer name at the proxy for that directed link.

Everything that is not about processes (slots, ports, observers, topics, links, byte counters)
is :class:`harness.local.cluster.Cluster`'s own code; this class replaces how nodes and the proxy are
started, faulted, logged and removed. Process faults go through the engine: ``kill`` (SIGKILL),
``stop`` (SIGTERM, then kill), ``pause``/``resume`` (the cgroup freezer) and ``restart`` (the
container keeps its filesystem, so the data survives).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from highwater.core.errors import ClusterError, SetupError
from highwater.core.progress import Progress
from highwater.harness.backend import NodeState
from highwater.harness.cluster_state import shape_record, spec_from_state, topology_from_state
from highwater.harness.config import ClusterSpec
from highwater.harness.distribution import KafkaDistribution, default_version
from highwater.harness.lifecycle import acquire_slot, reap_stale
from highwater.harness.local.cluster import Cluster, check_spec, kraft_cluster_id
from highwater.harness.paths import clusters_dir
from highwater.harness.procs import OwnerLock, ProcessRegistry
from highwater.harness.topology import Node, NodeHandle
from highwater.harness.toxiproxy import ToxiproxyAPI
from highwater.harness.waiting import wait_until

from .images import resolve_images
from .reaping import LABEL_CLUSTER, LABEL_NODE, owner_labels, reap_dead_owners, remove_cluster
from .render import broker_command, extra_hosts, node_properties

log = logging.getLogger(__name__)

STOP_GRACE_S = 20
TOXIPROXY = "toxiproxy"  # the proxy container's node label


def docker_client() -> Any:
    """The engine's client, or one line saying what to run."""
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError:
        raise SetupError(
            "the docker Python package is missing: pip install docker (in a checkout, `make install`)"
        ) from None
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except Exception:  # noqa: BLE001 - any failure here means "no daemon answers"
        raise SetupError("no Docker daemon answers: run `make system-packages` (starts dockerd) as root") from None
    return client


def node_state(status: str) -> NodeState:
    """What a container's engine status means to the fault injector: a frozen container is
    paused, any other non-running one (exited, created, dead) is a stopped node."""
    return {"running": NodeState.RUNNING, "paused": NodeState.PAUSED}.get(status, NodeState.STOPPED)


def limit_args(spec: ClusterSpec) -> dict[str, int]:
    """The docker SDK's keyword arguments for the spec's CPU and memory limits (none unset)."""
    args: dict[str, int] = {}
    if spec.broker_nano_cpus is not None:
        args["nano_cpus"] = spec.broker_nano_cpus
    if spec.broker_memory_bytes is not None:
        args["mem_limit"] = spec.broker_memory_bytes
    return args


def check_engine_fits(spec: ClusterSpec, engine_cpus: int, engine_memory: int) -> None:
    """One line for limits the engine would refuse (more CPUs than it has) or could never give
    (more memory than its host has), before any container exists."""
    if spec.broker_cpus is not None and spec.broker_cpus > engine_cpus:
        raise ClusterError(f"broker cpus {spec.broker_cpus:g} is more than the {engine_cpus} CPUs docker has")
    limit = spec.broker_memory_bytes
    if limit is not None and limit > engine_memory:
        raise ClusterError(
            f"broker memory {spec.broker_memory} is more than the {engine_memory / 1024**3:.1f} GiB docker's host has"
        )


class ContainerNode(NodeHandle):
    """One node's container; implements :class:`harness.backend.ControlledNode`."""

    def __init__(self, node: Node, container: Any) -> None:
        self.node = node
        self._c = container
        self.state = NodeState.NEW

    @property
    def pid(self) -> int | None:
        self._c.reload()
        return int(self._c.attrs["State"]["Pid"]) or None

    def is_alive(self) -> bool:
        self._c.reload()
        return bool(self._c.status in ("running", "paused"))

    def start(self) -> None:
        if self.state in (NodeState.RUNNING, NodeState.PAUSED):
            raise ClusterError(f"{self.name} is already {self.state.value}")
        self._c.start()
        self.state = NodeState.RUNNING

    def stop(self) -> None:
        """SIGTERM (controlled shutdown), SIGKILL by the engine after the grace period."""
        if self.state == NodeState.PAUSED:
            self.resume()
        self._c.stop(timeout=STOP_GRACE_S)
        self.state = NodeState.STOPPED

    def kill(self) -> None:
        if self.state == NodeState.PAUSED:
            self._c.unpause()  # a frozen cgroup takes the SIGKILL only once thawed
        if self.is_alive():
            self._c.kill()
        wait_until(lambda: not self.is_alive(), 30, f"{self.name}'s container exits")
        self.state = NodeState.STOPPED

    def pause(self) -> None:
        self._c.pause()
        self.state = NodeState.PAUSED

    def resume(self) -> None:
        self._c.unpause()
        self.state = NodeState.RUNNING

    def restart(self, clean: bool = True) -> None:
        if clean:
            self.stop()
        else:
            self.kill()
        self.start()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return bytes(self._c.logs(tail=lines)).decode(errors="replace")
        except Exception:  # noqa: BLE001 - a log tail is best effort inside an error message
            return ""

    def write_log(self, dest: Path) -> None:
        dest.write_bytes(self._c.logs())


class ComposeCluster(Cluster):
    """The compose backend (registered as ``compose``)."""

    backend_name = "compose"

    @property
    def data_files_enabled(self) -> bool:
        """The nodes' data directories live inside their containers: not reached as files here."""
        return False

    def __init__(
        self, spec: ClusterSpec | None = None, progress: Progress | None = None, image: str | None = None
    ) -> None:
        super().__init__(spec, progress)
        self._image = image
        self._docker: Any = None
        self._proxy: Any = None
        self.cluster_id = ""
        self._broker_image = ""

    @classmethod
    def attach(cls, cluster_dir: Path, progress: Progress | None = None) -> ComposeCluster:
        """A handle on a compose cluster another process owns (``highwater cluster up --backend
        compose``): its containers are found by the cluster label recorded in ``cluster.json``.
        Faults act on them through the engine; ``stop`` only closes clients."""
        state = json.loads((cluster_dir / "cluster.json").read_text())
        c = cls(spec_from_state(state), progress, image=state["image"])
        c.attached = True
        c.dir = cluster_dir
        c.cluster_id = state["cluster_id"]
        c.kafka = KafkaDistribution(state["kafka_version"], Path("/opt/kafka/libs"))
        topo = c.topology = topology_from_state(state)
        client = c._docker = docker_client()
        containers = cluster_containers(client, c.cluster_id)
        missing = [name for name in (*(n.name for n in topo.nodes), TOXIPROXY) if name not in containers]
        if missing:
            raise ClusterError(f"compose cluster {c.cluster_id} has lost its containers {missing}")
        nodes: dict[int, ContainerNode] = {}
        for n in topo.nodes:
            node = nodes[n.node_id] = ContainerNode(n, containers[n.name])
            node.state = node_state(containers[n.name].status)
        c.nodes = nodes  # type: ignore[assignment]  # ContainerNode is a ControlledNode too
        c._proxy = containers[TOXIPROXY]
        c.toxiproxy = ToxiproxyAPI(topo.toxiproxy_host, topo.ports.toxiproxy_api)
        return c

    def _start(self, timeout: float) -> None:
        spec = self.spec
        check_spec(spec)
        client = self._docker = docker_client()
        for name in reap_dead_owners(client):
            self._progress(f"reaped container {name} of a dead owner")
        for reaped in reap_stale():
            self._progress(f"reaped a killed run's cluster {reaped.cluster_dir.name}")
        version = spec.kafka_version or default_version(self._progress)
        broker_image, proxy_image = resolve_images(version, self._image)
        if spec.has_limits:
            info = client.info()
            check_engine_fits(spec, int(info["NCPU"]), int(info["MemTotal"]))
        self._broker_image, self._proxy_image = broker_image, proxy_image
        self.kafka = KafkaDistribution(version, Path("/opt/kafka/libs"))  # inside the image
        self.spec = spec = ClusterSpec(**{**spec.__dict__, "kafka_version": version})

        slot, self._slot_lock = acquire_slot()
        self.cluster_id = f"{spec.name}-{slot}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        cdir = self.dir = clusters_dir() / self.cluster_id
        cdir.mkdir(parents=True)
        self._owner_lock = OwnerLock(cdir / "owner.lock")
        if not self._owner_lock.try_acquire():
            raise ClusterError(f"cannot lock new cluster dir {cdir}")
        self._registry = ProcessRegistry(cdir / "processes.json")  # stays empty: no host processes
        topo = self.topology = self._plan(slot)

        self._progress(f"starting the Toxiproxy container on {topo.toxiproxy_host}:{topo.ports.toxiproxy_api}")
        self._proxy = client.containers.run(
            self._proxy_image,
            ["-host", topo.toxiproxy_host, "-port", str(topo.ports.toxiproxy_api), "-proxy-metrics"],
            name=f"{self.cluster_id}-toxiproxy",
            labels=owner_labels(self.cluster_id, TOXIPROXY),
            network_mode="host",
            detach=True,
        )
        api = self.toxiproxy = ToxiproxyAPI(topo.toxiproxy_host, topo.ports.toxiproxy_api)
        wait_until(lambda: self._toxiproxy_alive() and api.version(), 30, "the Toxiproxy container answers")
        api.populate(
            [
                {"name": p.link.proxy_name, "listen": p.listen, "upstream": p.upstream, "enabled": True}
                for p in topo.proxies()
            ]
        )
        kraft_id = kraft_cluster_id()
        self._progress(f"starting {len(topo.nodes)} node containers ({broker_image})")
        nodes: dict[int, ContainerNode] = {}
        for n in topo.nodes:
            container = client.containers.create(
                broker_image,
                ["/bin/sh", "-c", broker_command(spec)],
                entrypoint=[],
                name=f"{self.cluster_id}-{n.name}",
                labels=owner_labels(self.cluster_id, n.name),
                network_mode="host",
                extra_hosts=extra_hosts(topo, n),
                environment={"HW_PROPERTIES": node_properties(spec, topo, n), "HW_CLUSTER_ID": kraft_id},
                **limit_args(spec),
            )
            nodes[n.node_id] = ContainerNode(n, container)
        self.nodes = nodes  # type: ignore[assignment]  # ContainerNode is a ControlledNode too
        for node in nodes.values():
            node.start()
        self._write_compose_state()
        self.wait_for_brokers(timeout)

    def _write_compose_state(self) -> None:
        """``cluster.json``: what ``highwater cluster status`` prints and :meth:`attach` rebuilds
        the cluster from (the local backend's keys, plus the container label and image)."""
        assert self.dir is not None and self.topology is not None
        topo, spec = self.topology, self.spec
        state = {
            "backend": "compose",
            "cluster_id": self.cluster_id,
            "image": self._broker_image,
            "owner_pid": os.getpid(),
            **shape_record(spec, topo, self.kafka_version),
            "nodes": {
                n.name: {
                    "node_id": n.node_id,
                    "rack": n.node.rack,
                    "role": n.node.role.value,
                    "pid": n.pid,
                    "container": f"{self.cluster_id}-{n.name}",
                }
                for n in self.nodes.values()
                if isinstance(n, ContainerNode)
            },
            "logs": f"docker logs {self.cluster_id}-<node> (and {self.cluster_id}-{TOXIPROXY})",
        }
        (self.dir / "cluster.json").write_text(json.dumps(state, indent=2))

    def _toxiproxy_alive(self) -> bool:
        self._proxy.reload()
        if self._proxy.status != "running":
            tail = bytes(self._proxy.logs(tail=10)).decode(errors="replace")
            raise ClusterError(f"the Toxiproxy container exited:\n{tail}")
        return True

    def collect_logs(self, dest: Path) -> Path:
        """Every container's log (``docker logs``) and the node's properties, into ``dest``."""
        dest.mkdir(parents=True, exist_ok=True)
        for node in self.nodes.values():
            assert isinstance(node, ContainerNode)
            nd = dest / node.name
            nd.mkdir(exist_ok=True)
            node.write_log(nd / "node.log")
            if self.topology is not None:
                (nd / "server.properties").write_text(node_properties(self.spec, self.topology, node.node))
        if self._proxy is not None:
            (dest / "toxiproxy.log").write_bytes(self._proxy.logs())
        return dest

    def stop(self, collect_logs_to: Path | None = None, keep_dir: bool = False) -> None:
        """Logs first (containers still exist), then every container of the cluster, then the rest."""
        if collect_logs_to is not None and self._docker is not None:
            try:
                self.collect_logs(collect_logs_to)
            except Exception as exc:  # noqa: BLE001 - teardown goes on
                log.error("collecting container logs failed: %s", exc)
        if self._docker is not None and self.cluster_id and not self.attached:  # attached: not ours
            try:
                remove_cluster(self._docker, self.cluster_id)
            except Exception as exc:  # noqa: BLE001 - the next start reaps what is left
                log.error("removing the containers of %s failed: %s", self.cluster_id, exc)
        self.nodes = {}
        self._proxy = None
        super().stop(collect_logs_to=None, keep_dir=keep_dir)


def cluster_containers(client: Any, cluster_id: str) -> dict[str, Any]:
    """The containers of one cluster by their node label (``kafka-1``..., ``toxiproxy``)."""
    found = client.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={cluster_id}"})
    return {c.labels.get(LABEL_NODE, c.name): c for c in found}


def start_compose(spec: ClusterSpec, progress: Progress | None, image: str | None = None) -> ComposeCluster:
    t0 = time.monotonic()
    cluster = ComposeCluster(spec, progress, image=image or os.environ.get("HIGHWATER_COMPOSE_IMAGE"))
    cluster.start()
    log.info("compose cluster up in %.1f s", time.monotonic() - t0)
    return cluster


def docker_available() -> str | None:
    """None when a daemon answers, else the reason (for a one-line pytest skip)."""
    if shutil.which("docker") is None:
        return "docker is not installed (make system-packages installs Debian's docker.io)"
    try:
        docker_client()
    except SetupError as exc:
        return str(exc)
    return None
