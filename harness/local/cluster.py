"""A running multi-rack KRaft cluster on loopback, every link behind its own Toxiproxy proxy.

    with Cluster(ClusterSpec(brokers=3, racks=3)) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=3)
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap("rack-b"), client_rack="rack-b")

Start order: reap what killed runs left, check Java, assemble Kafka and Toxiproxy (cached), take
an address slot and free ports, start Toxiproxy and create every proxy, format and start every
node, then wait until every broker is registered. ``stop`` never aborts halfway: every step runs
and failures are reported together at the end.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from highwater.core.errors import ClusterError, HighwaterError, PortInUseError
from highwater.core.progress import Progress

from .. import tiered
from ..backend import ClockControl, ClusterBackend, LinkControl, ProcessControl
from ..clock import CLOCK_FILE, ClockError, NodeClock, find_libfaketime, remove_shm
from ..cluster_state import shape_record, spec_from_state, topology_from_state
from ..config import NO_RACK, ClusterSpec, effective_client_racks
from ..diskfs import CONTROL_FILE, DiskError, LossyDisk, ensure_lossyfs, unmount_ours_under
from ..distribution import KafkaDistribution, default_version, ensure_kafka, tiered_store_jar
from ..java_runtime import find_java, jvm_base
from ..lifecycle import acquire_slot, check_ports, pick_base_port, reap_stale
from ..observe import Observer, ObserverPool, PartitionWaits
from ..paths import clusters_dir
from ..procs import OwnerLock, ProcessRegistry, signal_and_wait, spawn
from ..security import ClientSecurity
from ..topology import Ports, Topology
from ..toxiproxy import ToxiproxyAPI, ensure_toxiproxy
from ..waiting import wait_until
from .broker_class_archive import ensure_class_archive
from .node import KafkaNode, NodeState
from .proxy_links import ProxyLinks

log = logging.getLogger(__name__)


def kraft_cluster_id() -> str:
    """A random KRaft cluster id (22 URL-safe base64 characters). Like Kafka's own
    ``Uuid.randomUuid``, never one that starts with '-': the storage tool would read it as an
    option (``-t -abc...`` fails with "expected one argument")."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def check_spec(spec: ClusterSpec) -> None:
    """Raise ``TopologyError`` for a shape that cannot be built (no processes, no I/O)."""
    client_racks = effective_client_racks(spec)
    n_client = len(client_racks)
    Topology.build(
        brokers=spec.brokers,
        racks=spec.racks,
        controllers=spec.controllers,
        client_racks=client_racks,
        slot=0,
        ports=Ports(1, 2, tuple(range(3, 3 + n_client)), 3 + n_client),
    )


class Cluster(ProxyLinks, PartitionWaits):
    """The local backend: implements :class:`~harness.backend.ClusterBackend`,
    :class:`~harness.backend.LinkControl` (one Toxiproxy proxy per directed link) and
    :class:`~harness.backend.ProcessControl` (node JVMs driven by signals)."""

    backend_name = "local"

    def __init__(self, spec: ClusterSpec | None = None, progress: Progress | None = None) -> None:
        self.spec = spec or ClusterSpec()
        self._progress = progress or (lambda msg: log.info("%s", msg))
        self.topology: Topology | None = None
        self.nodes: dict[int, KafkaNode] = {}
        self.disks: dict[str, LossyDisk] = {}  # node name -> its disk layer (ClusterSpec.disk="lossy")
        self.dir: Path | None = None
        self.kafka: KafkaDistribution | None = None
        self.toxiproxy: ToxiproxyAPI | None = None
        self._toxiproxy_proc: subprocess.Popen[bytes] | None = None
        self._slot_lock: OwnerLock | None = None
        self._owner_lock: OwnerLock | None = None
        self._registry: ProcessRegistry | None = None
        self._observers = ObserverPool(self.bootstrap, lambda: self.client_security)
        self.boot_seconds: float | None = None
        self.attached = False  # True: another process owns the cluster (see attach)

    @classmethod
    def attach(cls, cluster_dir: Path, progress: Progress | None = None) -> Cluster:
        """A handle on a running cluster owned by another process (``highwater cluster up``):
        nodes are adopted by pid; ``stop`` on it only closes clients, never kills anything."""
        state = json.loads((cluster_dir / "cluster.json").read_text())
        spec = spec_from_state(state)
        c = cls(spec, progress)
        c.attached = True  # nodes it restarts must outlive this process, like the others
        c.dir = cluster_dir
        c.topology = topology_from_state(state)
        c.kafka = ensure_kafka(state["kafka_version"])
        java = find_java(state["kafka_version"])
        c._registry = ProcessRegistry(cluster_dir / "processes.json")
        records = {r.name: r for r in c._registry.load()}
        c.toxiproxy = ToxiproxyAPI(c.topology.toxiproxy_host, c.topology.ports.toxiproxy_api)
        for n in c.topology.nodes:
            release = (state["nodes"].get(n.name) or {}).get("release", c.kafka.version)  # after a roll
            dist = c.kafka if release == c.kafka.version else ensure_kafka(release)
            node_java = java if release == c.kafka.version else find_java(release)
            node = KafkaNode(n, c.topology, spec, dist, node_java, cluster_dir, c._registry, die_with_parent=False)
            rec = records.get(n.name)
            if rec is not None and rec.still_ours():
                node.adopt(rec.pid)
            else:
                node.state = NodeState.STOPPED
            c.nodes[n.node_id] = node
        return c

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.stop()

    def start(self, timeout: float = 120.0) -> Cluster:
        t0 = time.monotonic()
        try:
            self._start(timeout)
        except BaseException:
            self._progress("start failed; tearing down what was started")
            self.stop()
            raise
        self.boot_seconds = time.monotonic() - t0
        return self

    def _start(self, timeout: float) -> None:
        spec = self.spec
        check_spec(spec)  # bad shapes fail in milliseconds, before any slow work
        if spec.clock == "faked":
            find_libfaketime()  # a missing library is one line before anything starts
        for reaped in reap_stale():
            self._progress(
                f"reaped a killed run's cluster {reaped.cluster_dir.name}: killed {[r.name for r in reaped.killed]}"
            )
        version = spec.kafka_version or default_version(self._progress)
        java = find_java(version)
        self.kafka = ensure_kafka(version, self._progress)
        ensure_class_archive(self.kafka, java, jvm_base(java, spec.heap_mb), self._progress)
        toxiproxy_bin = ensure_toxiproxy(self._progress)
        if spec.tiered:  # a release without it is refused here, in one line, before anything starts
            tiered_store_jar(self.kafka.version, self._progress)

        slot, self._slot_lock = acquire_slot()
        cdir = self.dir = clusters_dir() / f"{spec.name}-{slot}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        cdir.mkdir(parents=True)
        self._owner_lock = OwnerLock(cdir / "owner.lock")
        if not self._owner_lock.try_acquire():
            raise ClusterError(f"cannot lock new cluster dir {cdir}")
        self._registry = ProcessRegistry(cdir / "processes.json")
        self.topology = self._plan(slot)
        topo = self.topology

        self._progress(f"starting Toxiproxy on {topo.toxiproxy_host}:{topo.ports.toxiproxy_api}")
        marker = cdir / "toxiproxy-initial.json"
        marker.write_text("[]")  # -config names the cluster dir: proof the process is ours
        self._toxiproxy_proc = spawn(
            [
                str(toxiproxy_bin),
                "-host",
                topo.toxiproxy_host,
                "-port",
                str(topo.ports.toxiproxy_api),
                "-proxy-metrics",
                "-config",
                str(marker),
            ],
            log_path=cdir / "toxiproxy.log",
        )
        self._registry.add("toxiproxy", self._toxiproxy_proc.pid, str(cdir))
        api = self.toxiproxy = ToxiproxyAPI(topo.toxiproxy_host, topo.ports.toxiproxy_api)
        wait_until(
            lambda: self._toxiproxy_alive() and api.version(),
            20,
            lambda: f"Toxiproxy answers (log: {cdir / 'toxiproxy.log'})",
        )
        plans = topo.proxies()
        api.populate(
            [{"name": p.link.proxy_name, "listen": p.listen, "upstream": p.upstream, "enabled": True} for p in plans]
        )

        cluster_id = kraft_cluster_id()
        self.nodes = {n.node_id: KafkaNode(n, topo, spec, self.kafka, java, cdir, self._registry) for n in topo.nodes}
        if spec.disk == "lossy":  # before formatting: the data directories are the mounts
            binary = ensure_lossyfs(self._progress)
            self._progress(f"mounting {len(self.nodes)} data directories on lossyfs (the disk fault layer)")
            for node in self.nodes.values():
                disk = LossyDisk(node.dir / "disk", node.data_dir, node.dir / CONTROL_FILE)
                self.disks[node.name] = disk.start(
                    binary, self._registry, f"lossyfs-{node.name}", node.dir / "lossyfs.log"
                )
            if spec.tiered:  # the remote store too: disk faults with --target store act on it
                self._progress("mounting the tiered remote store on lossyfs")
                store = self._store_disk()
                self.disks[tiered.STORE_PARTY] = store.start(
                    binary, self._registry, "lossyfs-remote-store", cdir / "store-lossyfs.log"
                )
        self._progress(f"formatting {len(self.nodes)} nodes (Kafka {version})")
        for node in self.nodes.values():
            node.prepare(cluster_id)
        if spec.clock == "faked":  # the files exist before the JVMs read them
            self._progress(f"faking {len(self.nodes)} nodes' wall clocks with libfaketime (offset +0)")
            for node in self.nodes.values():
                NodeClock(node.dir, node.name).create()
        self._progress(f"starting {len(self.nodes)} nodes; logs in {cdir}/nodes/*/node.log")
        for node in self.nodes.values():
            node.start()
        self._write_state(cluster_id)
        self.wait_for_brokers(timeout)

    def _plan(self, slot: int) -> Topology:
        spec = self.spec
        client_racks = effective_client_racks(spec)
        n_client = len(client_racks)
        explicit = spec.base_port is not None
        for _attempt in range(1 if explicit else 20):
            base = spec.base_port if explicit else pick_base_port(3 + n_client)
            assert base is not None
            ports = Ports(
                replication=base,
                controller=base + 1,
                clients=tuple(base + 2 + i for i in range(n_client)),
                toxiproxy_api=base + 2 + n_client,
            )
            topo = Topology.build(
                brokers=spec.brokers,
                racks=spec.racks,
                controllers=spec.controllers,
                client_racks=client_racks,
                slot=slot,
                ports=ports,
            )
            try:
                check_ports(topo.all_listen_addresses(), explicit)
                return topo
            except PortInUseError:
                if explicit:
                    raise
        raise PortInUseError("could not find free ports for the cluster after 20 tries")

    def _toxiproxy_alive(self) -> bool:
        if self._toxiproxy_proc is None or self._toxiproxy_proc.poll() is not None:
            raise ClusterError(f"Toxiproxy exited; see {self.dir}/toxiproxy.log")
        return True

    @property
    def remote_store(self) -> Path:
        """The tiered storage's remote store, shared by every node (``ClusterSpec.tiered``)."""
        assert self.dir is not None, "the cluster has not started"
        return self.dir / tiered.STORE_DIR

    def _write_state(self, cluster_id: str) -> None:
        assert self.dir and self.topology and self.kafka
        topo = self.topology
        state = {
            "cluster_id": cluster_id,
            "owner_pid": os.getpid(),
            **shape_record(self.spec, topo, self.kafka.version),
            "nodes": {
                n.name: {
                    "node_id": n.node_id,
                    "rack": n.node.rack,
                    "pid": n.pid,
                    "role": n.node.role.value,
                    "log": str(n.log_path),
                    "release": n.release,
                }
                for n in self.nodes.values()
            },
        }
        (self.dir / "cluster.json").write_text(json.dumps(state, indent=2))

    def stop(self, collect_logs_to: Path | None = None, keep_dir: bool = False) -> None:
        """Tear everything down. Every step runs even if an earlier one failed."""
        errors: list[str] = []

        def step(what: str, fn: Callable[[], Any]) -> None:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - collected and reported below
                errors.append(f"{what}: {type(exc).__name__}: {exc}")

        errors.extend(self._observers.close())
        if self.attached:  # not ours to stop
            if self.toxiproxy is not None:
                step("close toxiproxy client", self.toxiproxy.close)
            return
        # Data is thrown away, so SIGKILL: a clean shutdown of the last brokers can wait for a
        # quorum that is already gone.
        for node in self.nodes.values():
            step(f"kill {node.name}", node.kill)
        if self._toxiproxy_proc is not None:
            proc = self._toxiproxy_proc
            step("stop toxiproxy", lambda: signal_and_wait(proc.pid, signal.SIGKILL, 10) and proc.wait(5))
        if self.toxiproxy is not None:
            step("close toxiproxy client", self.toxiproxy.close)
        for name, disk in list(self.disks.items()):
            step(f"unmount {name}'s disk", disk.stop)
        if self._registry is not None:
            # Nodes restarted by another process (``highwater fault``) are known only here.
            registry = self._registry
            # a drift stepper is recorded too; what libfaketime kept for a killed JVM is removed
            step("kill recorded processes", lambda: [remove_shm(r.pid) for r in registry.kill_all()])
        if self.dir is not None and not keep_dir:
            cdir_ = self.dir
            step("unmount disks left behind", lambda: unmount_ours_under(cdir_))
        if collect_logs_to is not None:
            step("collect logs", lambda: self.collect_logs(collect_logs_to))
        cdir = self.dir
        if cdir is not None and not keep_dir:
            step("remove cluster dir", lambda: shutil.rmtree(cdir, ignore_errors=False))
        for lock in (self._owner_lock, self._slot_lock):
            if lock is not None:
                step("release lock", lock.release)
        self._toxiproxy_proc = None
        if errors:
            log.error("teardown finished with errors: %s", "; ".join(errors))

    def collect_logs(self, dest: Path) -> Path:
        """Copy every node log, config and the Toxiproxy log to ``dest``."""
        if self.dir is None:
            raise ClusterError("cluster was never started")
        dest.mkdir(parents=True, exist_ok=True)
        for node in self.nodes.values():
            nd = dest / node.name
            nd.mkdir(exist_ok=True)
            for f in ("node.log", "server.properties", "hosts", "format.log"):
                if (node.dir / f).exists():
                    shutil.copy2(node.dir / f, nd / f)
        for f in ("toxiproxy.log", "cluster.json"):
            if (self.dir / f).exists():
                shutil.copy2(self.dir / f, dest / f)
        return dest

    # -- access ---------------------------------------------------------------------------
    @property
    def topo(self) -> Topology:
        if self.topology is None:
            raise ClusterError("cluster is not started")
        return self.topology

    def node(self, key: int | str) -> KafkaNode:
        return self.nodes[self.topo.node(key).node_id]

    @property
    def data_files_enabled(self) -> bool:
        """The nodes' data directories are directories of this machine (``FileControl``): a
        local cluster's are (a container backend says no)."""
        return True

    def data_dir(self, key: int | str) -> Path:
        """A node's data directory: its log directories and KRaft metadata log (the lossyfs
        mount, when there is one: a change made through it is what the node reads back)."""
        return self.node(key).data_dir

    @property
    def disks_enabled(self) -> bool:
        """The nodes' log directories are on lossyfs (``ClusterSpec.disk="lossy"``), mounted by
        this process or, attached, by the one that started the cluster."""
        if self.disks:
            return True
        return bool(self.nodes) and all((n.dir / CONTROL_FILE).is_file() for n in self.nodes.values())

    def _store_disk(self) -> LossyDisk:
        """The remote store's disk layer: its files in ``store-disk``, served at the store."""
        assert self.dir is not None, "the cluster has not started"
        return LossyDisk(self.dir / "store-disk", self.remote_store, self.dir / f"store-{CONTROL_FILE}")

    def disk(self, key: int | str) -> LossyDisk:
        """A node's disk layer (``harness.diskfs``), or with ``tiered.STORE_PARTY`` the remote
        store's; DiskError when the cluster has none."""
        if key == tiered.STORE_PARTY:
            store = self.disks.get(tiered.STORE_PARTY) or self._store_disk()
            if not store.control_file.is_file():
                raise DiskError(
                    "the remote store has no disk layer: start the cluster with ClusterSpec(tiered=True, disk='lossy')"
                )
            return store
        node = self.node(key)
        disk = self.disks.get(node.name)
        if disk is None and (node.dir / CONTROL_FILE).is_file():
            disk = LossyDisk.attach(node.dir, node.data_dir)
        if disk is None:
            raise DiskError(f"{node.name} has no disk layer: start the cluster with ClusterSpec(disk='lossy')")
        return disk

    @property
    def clocks_enabled(self) -> bool:
        """The nodes' JVMs read their wall clocks through libfaketime (``ClusterSpec.clock="faked"``),
        started by this process or, attached, by the one that started the cluster."""
        return self.spec.clock == "faked" or (
            bool(self.nodes) and all((n.dir / CLOCK_FILE).is_file() for n in self.nodes.values())
        )

    def clock(self, key: int | str) -> NodeClock:
        """A node's faked clock (``harness.clock``); ClockError when the cluster has none."""
        node = self.node(key)
        # a drift stops by itself when the cluster's owner is gone (harness.clock)
        owner = OwnerLock(self.dir / "owner.lock").owner_pid() if self.attached and self.dir else os.getpid()
        clock = NodeClock(node.dir, node.name, self._registry, owner)
        if not clock.enabled:
            raise ClockError(f"{node.name} has no faked clock: start the cluster with ClusterSpec(clock='faked')")
        return clock

    def release_of(self, key: int | str) -> str:
        """The Kafka release node ``key`` runs (``ReleaseControl``)."""
        return self.node(key).release

    def restart_on(self, key: int | str, release: str) -> None:
        """Stop node ``key`` cleanly and start it on ``release`` (``ReleaseControl``): the
        release is assembled (cached) and its class archive made before the node goes down."""
        node = self.node(key)
        java = find_java(release)
        dist = ensure_kafka(release, self._progress)
        ensure_class_archive(dist, java, jvm_base(java, self.spec.heap_mb), self._progress)
        if node.state in (NodeState.RUNNING, NodeState.PAUSED):
            node.stop()
        node.switch_release(dist, java)
        node.start()
        if self.dir is not None:
            self._record_releases()

    def _record_releases(self) -> None:
        """Each node's release in ``cluster.json`` (an attached handle starts it on that one)."""
        assert self.dir is not None
        path = self.dir / "cluster.json"
        state = json.loads(path.read_text())
        for n in self.nodes.values():
            state["nodes"].setdefault(n.name, {})["release"] = n.release
        path.write_text(json.dumps(state, indent=2))

    @property
    def kafka_version(self) -> str:
        """The release the cluster was started on (a roll moves nodes: ``release_of``)."""
        if self.kafka is None:
            raise ClusterError("cluster is not started")
        return self.kafka.version

    @property
    def default_client_rack(self) -> str:
        """Clients with no rack use NO_RACK's proxies when the cluster has them."""
        racks = self.topo.client_racks
        return NO_RACK if NO_RACK in racks else racks[0]

    def bootstrap(self, rack: str | None = None) -> list[str]:
        """Bootstrap servers for a client in ``rack`` (default: the clients with no rack)."""
        return self.topo.bootstrap(rack or self.default_client_rack)

    @property
    def client_security(self) -> ClientSecurity:
        """What the client listeners ask for (``ClusterSpec.client_security``)."""
        return self.spec.client_security

    def topic_name(self, name: str) -> str:
        return name  # the cluster is ours: any name is free

    def observer(self, rack: str | None = None) -> Observer:
        return self._observers.get(rack or self.default_client_rack)

    # -- waiting and observing ------------------------------------------------------------
    def wait_for_brokers(self, timeout: float = 90.0, ids: list[int] | None = None) -> None:
        want = set(ids or self.broker_ids)

        def registered() -> bool:
            for node in self.nodes.values():
                if node.state == NodeState.RUNNING and not node.is_alive():
                    raise ClusterError(
                        f"{node.name} exited during start-up: {node.exit_cause()} (log: {node.log_path})"
                    )
            return want <= self.observer().live_brokers()

        wait_until(registered, timeout, f"brokers {sorted(want)} are registered and unfenced")
        # Observers made while brokers were still registering know only some of them by id;
        # callers may hold them, so refresh their metadata rather than replacing them.
        for obs in self._observers.open():
            wait_until(
                functools.partial(obs.knows_brokers, want), 15, f"the observer's metadata lists brokers {sorted(want)}"
            )
        # Registered is not ready: an older release under load registers a broker before its
        # client listeners accept (seen on 3.3.1 in CI). Ready means every broker answers a
        # request through every client rack's proxy, which is the path the workloads use.
        for rack in self.topo.client_racks:
            wait_until(
                functools.partial(self._all_answer, self.observer(rack), want),
                timeout,
                f"brokers {sorted(want)} answer through client rack {rack}'s proxies",
            )

    @staticmethod
    def _all_answer(obs: Observer, ids: set[int]) -> bool:
        return all(obs.answers(b) for b in sorted(ids))


if TYPE_CHECKING:  # mypy proves the local backend implements every protocol

    def _implements(c: Cluster) -> tuple[ClusterBackend, LinkControl, ProcessControl, ClockControl]:
        return c, c, c, c


def run_cluster(spec: ClusterSpec, progress: Progress | None = None) -> Cluster:
    """Start a cluster, turning any failure into a one-line ``HighwaterError``."""
    try:
        return Cluster(spec, progress).start()
    except HighwaterError:
        raise
    except Exception as exc:  # noqa: BLE001 - surface as one clear line
        raise ClusterError(f"cluster failed to start: {type(exc).__name__}: {exc}") from exc
