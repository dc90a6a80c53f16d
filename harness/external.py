"""The ``external`` backend: a cluster highwater did not start, described by a cluster file.

Operators point highwater at *their* cluster (staging, Kubernetes, a managed test tier) with
``--backend external --cluster-file FILE`` (the CLI and the pytest plugin put the path in
``HIGHWATER_CLUSTER_FILE``, because a backend factory only receives a ``ClusterSpec``). The file
(TOML, see ``docs/external-clusters.md``) grants what highwater may do, and nothing more:

* always: clients, admin requests, and topics whose names start with ``topic_prefix`` (deleted
  at ``stop`` unless ``delete_topics = false``);
* link control (:class:`~harness.backend.LinkControl`) only with a ``[toxiproxy]`` table: the
  operator's Toxiproxy API and the proxy name of each directed link; only named links exist;
* process control (:class:`~harness.backend.ProcessControl`) only with a ``[commands]`` table:
  shell templates with ``{id}``, ``{name}`` and ``{host}``.

Capabilities are decided by *class* (:func:`backend_class`), because the protocols are
runtime-checkable by attribute presence: a backend without a Toxiproxy API has no ``links``
attribute at all, so ``faults.capability`` refuses link faults before a run starts.

A malformed file raises :class:`ClusterFileError` (one line: the file, the key, what is wrong)
before anything is contacted.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from .backend import NodeState, Progress
from .config import NO_RACK, ClusterSpec
from .errors import HighwaterError
from .observe import Observer, PartitionWaits
from .security import PLAINTEXT, ClientSecurity, SecurityError
from .topology import Link, Listener, Node, Ports, Role, Topology, client_party
from .toxiproxy import ByteCounters, ToxiproxyAPI
from .waiting import wait_until

if TYPE_CHECKING:
    from .backend import ClusterBackend, ControlledNode, LinkControl, ProcessControl

log = logging.getLogger(__name__)

ENV_CLUSTER_FILE = "HIGHWATER_CLUSTER_FILE"
#: "1": keep the topics a run created (``--keep-topics``), whatever the file's ``delete_topics`` says
ENV_KEEP_TOPICS = "HIGHWATER_KEEP_TOPICS"
DEFAULT_TOPIC_PREFIX = "highwater-"  # what the topics of ours look like on a cluster that is not ours
PROCESS_ACTIONS = ("kill", "stop", "start", "pause", "resume")
COMMAND_TIMEOUT_S = 120.0


class ClusterFileError(HighwaterError, ValueError):
    """A cluster file that is missing, unreadable or malformed."""


class ExternalClusterError(HighwaterError, RuntimeError):
    """The external cluster cannot serve what was asked (too small, unreachable, command failed)."""


# -- the file ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerEntry:
    node_id: int
    rack: str
    host: str


@dataclass(frozen=True)
class ClusterFile:
    """A parsed cluster file. ``brokers`` is empty when ``discover`` is set."""

    path: Path
    name: str
    bootstrap: Mapping[str, tuple[str, ...]]  # client rack (or "default") -> host:port list
    brokers: tuple[BrokerEntry, ...]
    discover: bool
    kafka_version: str
    topic_prefix: str
    delete_topics: bool
    security: ClientSecurity = PLAINTEXT
    toxiproxy_api: str | None = None
    proxies: Mapping[Link, str] = field(default_factory=dict)
    commands: Mapping[str, str] = field(default_factory=dict)


def _err(path: Path, key: str, what: str) -> ClusterFileError:
    return ClusterFileError(f"cluster file {path}: {key}: {what}")


def _str(path: Path, table: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    v = table.get(key, default)
    if not isinstance(v, str) or not v:
        raise _err(path, f"{where}{key}", "must be a non-empty string" if key in table else "is required")
    return v


def _servers(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(s, str) for s in value):
        raise _err(path, key, "must be a host:port string or a non-empty list of them")
    for s in value:
        host, _, port = s.rpartition(":")
        if not host or not port.isdigit():
            raise _err(path, key, f"{s!r} is not host:port")
    return tuple(value)


def parse_link(path: Path, key: str) -> Link:
    """``replication:kafka-1->kafka-2``, ``controller:kafka-1->kafka-2`` or
    ``client:clients@rack-a->kafka-1`` (the same spelling as ``Link.proxy_name``)."""
    listener, sep, rest = key.partition(":")
    src, arrow, dst = rest.partition("->")
    try:
        lis = Listener(listener)
    except ValueError:
        lis = None
    if not sep or not arrow or lis is None or not src or not dst:
        raise _err(
            path,
            f"toxiproxy.proxies.{key!r}",
            "a link is LISTENER:SRC->DST with LISTENER replication, controller or client",
        )
    if lis == Listener.CLIENT and not src.startswith("clients@"):
        raise _err(path, f"toxiproxy.proxies.{key!r}", "a client link starts at clients@RACK")
    return Link(src, dst, lis)


def load_cluster_file(path: str | Path) -> ClusterFile:
    """Parse and validate ``path``; nothing is contacted."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as exc:
        raise ClusterFileError(f"cluster file {p}: cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ClusterFileError(f"cluster file {p}: not valid TOML: {exc}") from None
    known = {"cluster", "bootstrap", "brokers", "security", "toxiproxy", "commands"}
    for key in data:
        if key not in known:
            raise _err(p, key, f"unknown table (known: {', '.join(sorted(known))})")

    cl = data.get("cluster", {})
    if not isinstance(cl, dict):
        raise _err(p, "cluster", "must be a table")
    for key in cl:
        if key not in {"name", "kafka_version", "topic_prefix", "delete_topics", "discover"}:
            raise _err(p, f"cluster.{key}", "unknown key")
    name = _str(p, cl, "name", "cluster.", "external")
    version = _str(p, cl, "kafka_version", "cluster.", "unknown")
    prefix = cl.get("topic_prefix", DEFAULT_TOPIC_PREFIX)
    if not isinstance(prefix, str):
        raise _err(p, "cluster.topic_prefix", "must be a string")
    delete_topics = cl.get("delete_topics", True)
    discover = cl.get("discover", False)
    for key, v in (("delete_topics", delete_topics), ("discover", discover)):
        if not isinstance(v, bool):
            raise _err(p, f"cluster.{key}", "must be true or false")

    bs = data.get("bootstrap")
    if not isinstance(bs, dict) or not bs:
        raise _err(p, "bootstrap", "is required: a table of client rack (or default) = [host:port, ...]")
    bootstrap = {rack: _servers(p, f"bootstrap.{rack}", v) for rack, v in bs.items()}

    raw_brokers = data.get("brokers", [])
    if discover and raw_brokers:
        raise _err(p, "brokers", "give brokers or cluster.discover = true, not both")
    if not discover and not raw_brokers:
        raise _err(p, "brokers", "is required (a [[brokers]] entry per broker) unless cluster.discover = true")
    if not isinstance(raw_brokers, list):
        raise _err(p, "brokers", "must be an array of tables ([[brokers]])")
    brokers: list[BrokerEntry] = []
    for i, b in enumerate(raw_brokers):
        where = f"brokers[{i}]."
        if not isinstance(b, dict):
            raise _err(p, f"brokers[{i}]", "must be a table")
        bid = b.get("id")
        if not isinstance(bid, int) or isinstance(bid, bool) or bid < 0:
            raise _err(p, f"{where}id", "is required: a non-negative integer")
        if any(x.node_id == bid for x in brokers):
            raise _err(p, f"{where}id", f"broker id {bid} is listed twice")
        brokers.append(BrokerEntry(bid, _str(p, b, "rack", where), _str(p, b, "host", where, f"kafka-{bid}")))

    sec = data.get("security", {})
    if not isinstance(sec, dict):
        raise _err(p, "security", "must be a table of client settings")
    try:
        security = ClientSecurity.from_kafka_python(sec)
    except SecurityError as exc:
        raise _err(p, f"security.{exc.key}", exc.what) from None

    api: str | None = None
    proxies: dict[Link, str] = {}
    if "toxiproxy" in data:
        tx = data["toxiproxy"]
        if not isinstance(tx, dict):
            raise _err(p, "toxiproxy", "must be a table")
        api = _str(p, tx, "api", "toxiproxy.")
        u = urlparse(api)
        if u.scheme != "http" or not u.hostname or not u.port:
            raise _err(p, "toxiproxy.api", f"{api!r} is not http://HOST:PORT")
        px = tx.get("proxies")
        if not isinstance(px, dict) or not px:
            raise _err(p, "toxiproxy.proxies", "is required with toxiproxy.api: a table of link = proxy name")
        for key, proxy in px.items():
            if not isinstance(proxy, str) or not proxy:
                raise _err(p, f"toxiproxy.proxies.{key!r}", "must be a proxy name")
            proxies[parse_link(p, key)] = proxy

    commands: dict[str, str] = {}
    if "commands" in data:
        cmds = data["commands"]
        if not isinstance(cmds, dict):
            raise _err(p, "commands", "must be a table")
        for key, tmpl in cmds.items():
            if key not in PROCESS_ACTIONS:
                raise _err(p, f"commands.{key}", f"unknown action (known: {', '.join(PROCESS_ACTIONS)})")
            if not isinstance(tmpl, str) or not tmpl.strip():
                raise _err(p, f"commands.{key}", "must be a command template")
            try:
                tmpl.format(id=0, name="kafka-0", host="h")
            except (KeyError, IndexError, ValueError) as exc:
                raise _err(p, f"commands.{key}", f"bad template ({exc}); use {{id}}, {{name}}, {{host}}") from None
            commands[key] = tmpl
        if "kill" not in commands:
            raise _err(p, "commands.kill", "is required when [commands] is given")

    return ClusterFile(
        path=p,
        name=name,
        bootstrap=bootstrap,
        brokers=tuple(brokers),
        discover=discover,
        kafka_version=version,
        topic_prefix=prefix,
        delete_topics=delete_topics,
        security=security,
        toxiproxy_api=api,
        proxies=proxies,
        commands=commands,
    )


def build_topology(cf: ClusterFile, brokers: Iterable[BrokerEntry]) -> Topology:
    """The ``Topology`` the rest of the code reads: brokers ``kafka-<id>`` in their racks, and
    the client racks the file gives bootstrap servers for (``default`` is the no-rack client)."""
    nodes = tuple(
        Node(node_id=b.node_id, name=f"kafka-{b.node_id}", role=Role.BROKER, rack=b.rack, index=i)
        for i, b in enumerate(sorted(brokers, key=lambda b: b.node_id), start=1)
    )
    racks = tuple(sorted({n.rack for n in nodes if n.rack is not None}))
    client_racks = tuple(NO_RACK if r == "default" else r for r in cf.bootstrap)
    # addresses/ports of the local plan mean nothing here; the bootstrap servers come from the file
    ports = Ports(replication=0, controller=0, clients=tuple(0 for _ in client_racks), toxiproxy_api=0)
    return Topology(slot=0, nodes=nodes, racks=racks, client_racks=client_racks, ports=ports)


def check_shape(cf: ClusterFile, topo: Topology, spec: ClusterSpec) -> None:
    """Refuse, in one line, a spec the external cluster is too small for."""
    if len(topo.brokers) < spec.brokers or len(topo.racks) < spec.racks:
        raise ExternalClusterError(
            f"cluster file {cf.path}: the test wants {spec.brokers} brokers in {spec.racks} racks, "
            f"the external cluster has {len(topo.brokers)} in {len(topo.racks)}"
        )


# -- the backend ------------------------------------------------------------------------------


class ExternalCluster(PartitionWaits):
    """A cluster highwater only connects to: every :class:`ClusterBackend` method, no more."""

    backend_name = "external"

    def __init__(self, cf: ClusterFile, spec: ClusterSpec, progress: Progress | None = None) -> None:
        self.file = cf
        self._spec = spec
        self.progress = progress or (lambda _m: None)
        self._topo: Topology | None = None
        self._observers: dict[str, Observer] = {}
        self.created_topics: list[str] = []

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> ExternalCluster:
        brokers = list(self.file.brokers) if not self.file.discover else self._discover(timeout)
        self.brokers: tuple[BrokerEntry, ...] = tuple(brokers)
        self._topo = build_topology(self.file, brokers)
        check_shape(self.file, self._topo, self._spec)
        self._spec = replace(self._spec, broker_config=self._effective_config())
        self.progress(f"external cluster {self.file.name}: brokers {self.broker_ids} in racks {list(self._topo.racks)}")
        self.wait_for_brokers(timeout)
        return self

    def _effective_config(self) -> dict[str, str]:
        """The time bounds of the timed checks derive from broker settings (``run_settings``):
        read the ones that matter from the cluster itself, since its operator chose them, not us
        (the spec's own ``broker_config`` still wins: a test may state what it relies on)."""
        from .config import fast_failure_defaults

        cfg: dict[str, str] = {}
        first = self.broker_ids[0]
        for key in fast_failure_defaults(len(self.broker_ids)):
            try:
                value = self.observer().describe_broker_config(first, key)
            except Exception as exc:  # noqa: BLE001 - an ACL may forbid it; the defaults then stand
                log.warning("could not read %s from broker %d: %s", key, first, exc)
                return dict(self._spec.broker_config)
            if value is not None:
                cfg[key] = value
        return {**cfg, **dict(self._spec.broker_config)}

    def _discover(self, timeout: float) -> list[BrokerEntry]:
        obs = Observer(list(self._servers(None)), client_id="highwater-discover", security=self.client_security)
        try:
            desc = wait_until(lambda: obs.admin.describe_cluster(), timeout, "the external cluster describes itself")
        finally:
            obs.close()
        out = []
        for b in desc["brokers"]:
            bid = int(b.get("broker_id", b.get("node_id", -1)))  # DescribeCluster / Metadata spelling
            if not b.get("rack"):
                raise ExternalClusterError(
                    f"cluster file {self.file.path}: cluster.discover: broker {bid} has no broker.rack; "
                    "list [[brokers]] with racks instead"
                )
            out.append(BrokerEntry(bid, str(b["rack"]), str(b["host"])))
        return out

    def stop(self, collect_logs_to: Path | None = None) -> None:
        """Delete the topics this run created (unless the file opts out), close clients. Nothing
        else is touched: the cluster outlives us."""
        if collect_logs_to is not None:
            self.collect_logs(collect_logs_to)
        if self.file.delete_topics and self.created_topics and self._topo is not None:
            try:
                self.observer().admin.delete_topics(list(self.created_topics))
            except Exception as exc:  # noqa: BLE001 - best effort; say what is left behind
                log.warning("could not delete topics %s: %s", self.created_topics, exc)
        self.created_topics.clear()
        for obs in self._observers.values():
            obs.close()
        self._observers.clear()

    def collect_logs(self, dest: Path) -> Path:
        """The brokers' logs are the operator's; record which file and cluster were used."""
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "cluster-file.toml").write_text(self.file.path.read_text())
        return dest

    # -- shape ----------------------------------------------------------------------------
    @property
    def spec(self) -> ClusterSpec:
        return self._spec

    @property
    def topo(self) -> Topology:
        if self._topo is None:
            raise ExternalClusterError("external cluster is not connected (start() first)")
        return self._topo

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.topo.brokers]

    def rack_of(self, broker_id: int) -> str:
        rack = self.topo.node(broker_id).rack
        assert rack is not None
        return rack

    @property
    def kafka_version(self) -> str:
        return self.file.kafka_version

    @property
    def client_security(self) -> ClientSecurity:
        """TLS/SASL client settings from the file's ``[security]``."""
        return self.file.security

    def _servers(self, rack: str | None) -> tuple[str, ...]:
        bs = self.file.bootstrap
        if rack is None or rack == NO_RACK:
            return bs.get("default") or bs[next(iter(bs))]
        if rack in bs:
            return bs[rack]
        if "default" in bs:
            return bs["default"]
        raise ExternalClusterError(f"cluster file {self.file.path}: bootstrap: no servers for client rack {rack!r}")

    def bootstrap(self, rack: str | None = None) -> list[str]:
        return list(self._servers(rack))

    def topic_name(self, name: str) -> str:
        """``name`` behind the file's ``topic_prefix`` (once: a name that has it already keeps it)."""
        prefix = self.file.topic_prefix
        return name if name.startswith(prefix) else prefix + name

    def observer(self, rack: str | None = None) -> Observer:
        key = rack or NO_RACK
        if key not in self._observers:
            self._observers[key] = Observer(
                self.bootstrap(rack), client_id=f"highwater-observer-{key}", security=self.client_security
            )
        return self._observers[key]

    # -- waiting and observing ------------------------------------------------------------
    def wait_for_brokers(self, timeout: float = 90.0, ids: list[int] | None = None) -> None:
        want = set(ids or self.broker_ids)
        wait_until(lambda: want <= self.observer().live_brokers(), timeout, f"brokers {sorted(want)} are registered")
        for rack in self.topo.client_racks:
            obs = self.observer(rack)
            wait_until(
                lambda o=obs: all(o.answers(b) for b in sorted(want)),  # type: ignore[misc]
                timeout,
                f"brokers {sorted(want)} answer through client rack {rack}'s bootstrap servers",
            )

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        """Create a topic and wait for its ISR. A topic that already exists is the operator's and
        is refused (we would write into it and delete it); with a ``topic_prefix`` in the file, a
        name without it is refused too. Every topic created here is deleted at ``stop``."""
        prefix = self.file.topic_prefix
        if prefix and not name.startswith(prefix):
            raise ExternalClusterError(
                f"topic {name!r} does not start with the cluster file's topic_prefix {prefix!r}; "
                "highwater creates (and deletes) only prefixed topics on this cluster"
            )
        from kafka.errors import TopicAlreadyExistsError

        if name not in self.created_topics and name in self.observer().admin.list_topics():
            raise ExternalClusterError(
                f"topic {name!r} already exists on external cluster {self.file.name!r}; highwater only uses "
                "topics it creates (delete it, or pick another prefix)"
            )
        rf = replication_factor or min(3, len(self.broker_ids))

        def create() -> bool:
            try:
                self.observer().create_topic(name, partitions, rf, config)
            except TopicAlreadyExistsError:
                pass
            return True

        wait_until(create, timeout, f"topic {name} is created")
        if name not in self.created_topics:
            self.created_topics.append(name)

        def in_sync() -> bool:
            parts = self.observer().topic_partitions(name)
            return len(parts) == partitions and all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == rf for p in parts)

        wait_until(in_sync, timeout, f"topic {name} has {partitions} partitions, each with {rf} replicas in sync")


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

    def ensure_links_healthy(self, links: Iterable[Link], toxic_prefix: str = "") -> None:
        """Each named proxy enabled and without toxics named ``toxic_prefix...``. Unlike the local
        backend, a proxy is never recreated: its listen/upstream addresses are the operator's."""
        api = self._api()
        for link in links:
            proxy = self._proxy(link)
            state = api.proxy(proxy)
            for t in state.get("toxics", []):
                if t["name"].startswith(toxic_prefix):
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


class CommandNode:
    """One broker whose process the operator's command templates act on. ``is_alive`` asks
    Kafka (registered in metadata), since we have no process handle."""

    def __init__(self, cluster: ExternalCluster, node: Node, host: str) -> None:
        self._cluster = cluster
        self._node = node
        self.host = host
        self.state = NodeState.RUNNING

    @property
    def name(self) -> str:
        return self._node.name

    @property
    def node_id(self) -> int:
        return self._node.node_id

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


def cluster_file_from_env() -> Path:
    value = os.environ.get(ENV_CLUSTER_FILE)
    if not value:
        raise ClusterFileError(f"backend 'external' needs --cluster-file FILE (or {ENV_CLUSTER_FILE})")
    return Path(value)


def connect(spec: ClusterSpec, progress: Progress | None = None, path: Path | None = None) -> ExternalCluster:
    """Parse the file (refusing a malformed one before anything is contacted), then connect."""
    cf = with_command_line(load_cluster_file(path or cluster_file_from_env()))
    return backend_class(cf)(cf, spec, progress).start()


def with_command_line(cf: ClusterFile) -> ClusterFile:
    """The file as the command line amends it: ``--keep-topics`` (``HIGHWATER_KEEP_TOPICS=1``,
    set by the CLI and the pytest plugin) keeps the topics a run created."""
    if os.environ.get(ENV_KEEP_TOPICS) == "1":
        return replace(cf, delete_topics=False)
    return cf


if TYPE_CHECKING:  # mypy proves each class implements what it claims

    def _implements(a: ExternalCluster, b: ExternalFull) -> tuple[ClusterBackend, LinkControl, ProcessControl]:
        return a, b, b

    def _node(n: CommandNode) -> ControlledNode:
        return n
