"""The ``external`` backend's cluster: every :class:`~harness.backend.ClusterBackend` method
over a cluster highwater only connects to (clients, admin requests, its own topics), and no more."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from highwater.core.progress import Progress

from ..config import NO_RACK, ClusterSpec
from ..observe import Observer, ObserverPool, PartitionWaits
from ..security import ClientSecurity
from ..topology import Topology
from ..waiting import wait_until

if TYPE_CHECKING:
    pass

from .cluster_file import BrokerEntry, ClusterFile, ExternalClusterError, build_topology, check_shape

log = logging.getLogger(__name__)


class ExternalCluster(PartitionWaits):
    """A cluster highwater only connects to: every :class:`ClusterBackend` method, no more."""

    backend_name = "external"

    def __init__(self, cf: ClusterFile, spec: ClusterSpec, progress: Progress | None = None) -> None:
        self.file = cf
        self._spec = spec
        self.progress = progress or (lambda _m: None)
        self._topo: Topology | None = None
        self._observers = ObserverPool(self.bootstrap, lambda: self.client_security)
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
        from ..config import fast_failure_defaults

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
        for error in self._observers.close():
            log.warning("%s", error)

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
        return self._observers.get(rack or NO_RACK)

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

    def _admit_topic(self, name: str) -> None:
        """A topic that already exists is the operator's and is refused (we would write into it
        and delete it); with a ``topic_prefix`` in the file, a name without it is refused too.
        Every topic created here is deleted at ``stop``."""
        prefix = self.file.topic_prefix
        if prefix and not name.startswith(prefix):
            raise ExternalClusterError(
                f"topic {name!r} does not start with the cluster file's topic_prefix {prefix!r}; "
                "highwater creates (and deletes) only prefixed topics on this cluster"
            )
        if name not in self.created_topics and name in self.observer().admin.list_topics():
            raise ExternalClusterError(
                f"topic {name!r} already exists on external cluster {self.file.name!r}; highwater only uses "
                "topics it creates (delete it, or pick another prefix)"
            )

    def _topic_created(self, name: str) -> None:
        if name not in self.created_topics:
            self.created_topics.append(name)
