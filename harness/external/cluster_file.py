"""The cluster file of the ``external`` backend (TOML, docs/external-clusters.md): what highwater
may do with a cluster it did not start, parsed and checked before anything is contacted; a
malformed file is one :class:`ClusterFileError` line (the file, the key, what is wrong)."""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from highwater.core.errors import HighwaterError

from ..config import NO_RACK, ClusterSpec
from ..security import PLAINTEXT, ClientSecurity, SecurityError
from ..topology import Link, Listener, Node, Ports, Role, Topology

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


ENV_CLUSTER_FILE = "HIGHWATER_CLUSTER_FILE"
#: "1": keep the topics a run created (``--keep-topics``), whatever the file's ``delete_topics`` says
ENV_KEEP_TOPICS = "HIGHWATER_KEEP_TOPICS"
DEFAULT_TOPIC_PREFIX = "highwater-"  # what the topics of ours look like on a cluster that is not ours
PROCESS_ACTIONS = ("kill", "stop", "start", "pause", "resume")


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


def cluster_file_from_env() -> Path:
    value = os.environ.get(ENV_CLUSTER_FILE)
    if not value:
        raise ClusterFileError(f"backend 'external' needs --cluster-file FILE (or {ENV_CLUSTER_FILE})")
    return Path(value)


def with_command_line(cf: ClusterFile) -> ClusterFile:
    """The file as the command line amends it: ``--keep-topics`` (``HIGHWATER_KEEP_TOPICS=1``,
    set by the CLI and the pytest plugin) keeps the topics a run created."""
    if os.environ.get(ENV_KEEP_TOPICS) == "1":
        return replace(cf, delete_topics=False)
    return cf
