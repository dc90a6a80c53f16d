"""The fault injector ("nemesis"): applies :class:`FaultSpec`s to a live cluster and heals them.

Link faults act on Toxiproxy proxies (a cut disables the proxy, which closes its listener and
every open connection; a toxic is added per link and stream). Process faults act on the node
JVMs through signals. Every fault and heal is written to the history (process ``nemesis``,
``f`` = ``fault``/``heal``, value ``{"kind","targets","params",...}``) as invoke then ok/fail.

Healing is verified: after a heal each proxy must be enabled, carry none of our toxics and
accept a TCP connection; a proxy that does not (a wedged one) is deleted and recreated from the
address plan. ``heal_all`` heals everything still active and then resets every proxy and every
node, whatever state an interrupted run left them in; the pytest fixtures and the campaign runner
call it on every path (``with Injector(...)`` does too).
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from harness.cluster import Cluster
from harness.lifecycle import accepts_connection
from harness.node import NodeState
from harness.topology import Link, ProxyPlan
from harness.waiting import wait_until

from faults.common import FaultError
from faults.conflicts import check_no_conflicts
from faults.scope import resolve_link_fault
from faults.spec import FaultKind, FaultSpec

log = logging.getLogger(__name__)

NEMESIS = "nemesis"
TOXIC_PREFIX = "hw-"


class HistorySink(Protocol):
    """The part of ``harness.history.HistoryWriter`` the injector uses."""

    def invoke(self, process: str, f: str, value: Any = None, error: None = None) -> Any: ...
    def ok(self, process: str, f: str, value: Any = None, error: None = None) -> Any: ...
    def fail(self, process: str, f: str, value: Any = None, error: Any = None) -> Any: ...


class LiveView:
    """Answers the dynamic target questions (leader, replicas, active controller) from Kafka."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def leader(self, topic: str, partition: int) -> int | None:
        leader = self._cluster.partition_state(topic, partition, offsets=False).leader
        return leader if leader >= 0 else None

    def replicas(self, topic: str, partition: int) -> Sequence[int]:
        return self._cluster.partition_state(topic, partition, offsets=False).replicas

    def active_controller(self) -> int | None:
        # Retried: right after a failover the quorum may have no leader for a moment.
        return wait_until(lambda: self._cluster.observer().active_controller(), 15,
                          "the KRaft quorum has a leader")


@dataclass
class ActiveFault:
    id: str
    spec: FaultSpec
    links: frozenset[Link] = frozenset()
    nodes: tuple[str, ...] = ()  # process faults: the nodes acted on
    parties: tuple[str, ...] = ()  # link faults: what the target selector named
    toxics: list[tuple[str, str]] = field(default_factory=list)  # (proxy, toxic name)
    started: float = field(default_factory=time.monotonic)

    def event_value(self) -> dict[str, Any]:
        """The history's fault/heal value. ``params.cuts_off`` lists the brokers whose every
        link the fault cuts (what the ISR and liveness checks expect to drop out)."""
        params: dict[str, Any] = dict(self.spec.params)
        value: dict[str, Any] = {"kind": self.spec.kind.value, "targets": list(self.nodes or self.parties),
                                 "params": params, "id": self.id, "spec": str(self.spec)}
        if self.spec.kind.is_link:
            value["links"] = sorted(lk.proxy_name for lk in self.links)
            params["peer"] = None if self.spec.peer is None else str(self.spec.peer)
            whole = self.spec.peer is None and self.spec.flow.value == "both" and self.spec.kind.value in ("cut", "timeout")
            params["cuts_off"] = sorted(int(p.split("-")[1]) for p in self.parties
                                        if whole and p.startswith("kafka-"))
        return value


class Injector:
    def __init__(self, cluster: Cluster, history: HistorySink | None = None, *, seed: int | None = None,
                 default_partition: tuple[str, int] | None = None, detached: bool = False) -> None:
        """``detached``: nodes restarted by this injector must outlive it (the CLI acting on a
        ``cluster up`` cluster); otherwise they die with this process like every other node."""
        self.cluster = cluster
        self.history = history
        self.seed = seed
        self.default_partition = default_partition
        self.detached = detached
        self.view = LiveView(cluster)
        self.active: dict[str, ActiveFault] = {}
        self._ids = itertools.count(1)

    def __enter__(self) -> "Injector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.heal_all()

    # -- history ------------------------------------------------------------------------
    def _record(self, kind: str, f: str, value: dict[str, Any], error: BaseException | None = None) -> None:
        if self.history is None:
            return
        if kind == "invoke":
            self.history.invoke(NEMESIS, f, value)
        elif kind == "ok":
            self.history.ok(NEMESIS, f, value)
        else:
            self.history.fail(NEMESIS, f, value, error=error)

    # -- apply ----------------------------------------------------------------------------
    def apply(self, spec: FaultSpec) -> ActiveFault:
        topo = self.cluster.topo
        spec.validate(topo)
        check_no_conflicts(topo, [f.spec for f in self.active.values()] + [spec])
        fault = ActiveFault(id=f"f{next(self._ids)}", spec=spec)
        self._resolve(fault)
        self._record("invoke", "fault", fault.event_value())
        try:
            if spec.kind.is_link:
                self._apply_link(fault)
            else:
                self._apply_process(fault)
        except Exception as exc:
            self._record("fail", "fault", fault.event_value(), exc)
            self._undo(fault)  # leave nothing half-applied
            raise FaultError(f"applying {spec} failed: {type(exc).__name__}: {exc}") from exc
        self._record("ok", "fault", fault.event_value())
        if spec.kind not in (FaultKind.RESTART, FaultKind.ROLLING_RESTART):
            self.active[fault.id] = fault
        return fault

    def _resolve(self, fault: ActiveFault) -> None:
        spec, topo = fault.spec, self.cluster.topo
        if spec.kind.is_link:
            fault.links, parties = resolve_link_fault(topo, spec, self.view, seed=self.seed,
                                                      default_partition=self.default_partition)
            fault.parties = tuple(sorted(parties))
        else:
            parties = spec.target.resolve(topo, self.view, seed=self.seed,
                                          default_partition=self.default_partition)
            fault.nodes = tuple(sorted(parties))
        if not fault.links and not fault.nodes:
            raise FaultError(f"fault {spec} resolves to nothing to act on")

    def _apply_link(self, fault: ActiveFault) -> None:
        api = self._api()
        spec = fault.spec
        for link in sorted(fault.links):
            if spec.kind is FaultKind.CUT:
                api.set_enabled(link.proxy_name, False)
                continue
            for stream in spec.streams:
                name = f"{TOXIC_PREFIX}{fault.id}-{stream.value}"
                api.add_toxic(link.proxy_name, name=name, type=spec.kind.value, stream=stream.value,
                              toxicity=spec.effective_toxicity, attributes=dict(spec.params))
                fault.toxics.append((link.proxy_name, name))

    def _apply_process(self, fault: ActiveFault) -> None:
        kind = fault.spec.kind
        nodes = [self.cluster.node(name) for name in fault.nodes]
        if kind is FaultKind.KILL:
            for n in nodes:
                n.kill()
        elif kind is FaultKind.STOP:
            for n in nodes:
                n.stop()
        elif kind is FaultKind.PAUSE:
            for n in nodes:
                n.pause()
        elif kind is FaultKind.RESTART:
            for n in nodes:
                n.restart(clean=bool(fault.spec.param("clean")), die_with_parent=not self.detached)
            self._wait_nodes_back(fault.nodes)
        elif kind is FaultKind.ROLLING_RESTART:
            interval = float(fault.spec.param("interval"))  # type: ignore[arg-type]
            for i, n in enumerate(nodes):
                if i:
                    time.sleep(interval)  # a schedule gap between nodes, not a synchronisation wait
                n.restart(clean=bool(fault.spec.param("clean")), die_with_parent=not self.detached)
                self._wait_nodes_back((n.name,))
        else:  # pragma: no cover - FaultKind is closed
            raise FaultError(f"unknown process fault {kind}")

    def _wait_nodes_back(self, names: Sequence[str], timeout: float = 90.0) -> None:
        brokers = [self.cluster.topo.node(n).node_id for n in names if self.cluster.topo.node(n).is_broker]
        if brokers:
            self.cluster.wait_for_brokers(timeout, ids=brokers)

    # -- heal -----------------------------------------------------------------------------
    def heal(self, fault: ActiveFault | str) -> None:
        fault = self.active[fault] if isinstance(fault, str) else fault
        self._record("invoke", "heal", fault.event_value())
        try:
            self._undo(fault)
        except Exception as exc:
            self._record("fail", "heal", fault.event_value(), exc)
            raise
        self.active.pop(fault.id, None)
        self._record("ok", "heal", fault.event_value())

    def _undo(self, fault: ActiveFault) -> None:
        api = self._api()
        spec = fault.spec
        if spec.kind.is_link:
            for proxy, toxic in fault.toxics:
                try:
                    api.remove_toxic(proxy, toxic)
                except Exception as exc:  # noqa: BLE001 - verified (and recreated) below
                    log.warning("removing toxic %s from %s failed: %s", toxic, proxy, exc)
            if spec.kind is FaultKind.CUT:
                for link in fault.links:
                    try:
                        api.set_enabled(link.proxy_name, True)
                    except Exception as exc:  # noqa: BLE001 - verified (and recreated) below
                        log.warning("enabling %s failed: %s", link.proxy_name, exc)
            self._verify_proxies([p for p in self.cluster.topo.proxies() if p.link in fault.links])
            return
        if spec.kind in (FaultKind.KILL, FaultKind.STOP):
            for name in fault.nodes:
                node = self.cluster.node(name)
                if node.state == NodeState.STOPPED:
                    node.start(die_with_parent=not self.detached)
            self._wait_nodes_back(fault.nodes)
        elif spec.kind is FaultKind.PAUSE:
            for name in fault.nodes:
                node = self.cluster.node(name)
                if node.state == NodeState.PAUSED:
                    node.resume()

    def _verify_proxies(self, plans: Sequence[ProxyPlan]) -> None:
        """Each proxy is enabled, has none of our toxics, and accepts a connection; a proxy that
        is not is deleted and recreated from the plan."""
        api = self._api()
        for plan in plans:
            name = plan.link.proxy_name
            try:
                state = api.proxy(name)
                healthy = (state.get("enabled") and not any(t["name"].startswith(TOXIC_PREFIX)
                                                             for t in state.get("toxics", []))
                           and accepts_connection(plan.listen_host, plan.listen_port))
            except Exception as exc:  # noqa: BLE001 - any failure to confirm means: recreate
                log.warning("proxy %s could not be checked: %s", name, exc)
                healthy = False
            if healthy:
                continue
            log.warning("proxy %s is wedged; recreating it", name)
            try:
                api.delete(name)
            except Exception as exc:  # noqa: BLE001 - it may already be gone
                log.info("deleting %s: %s", name, exc)
            api.create(name, plan.listen, plan.upstream, enabled=True)
            wait_until(lambda: accepts_connection(plan.listen_host, plan.listen_port), 10, f"proxy {name} accepts connections")

    def heal_all(self) -> None:
        """Heal every active fault, then reset every proxy and node to healthy, verified.
        Never stops halfway: errors are collected and raised together at the end."""
        errors: list[str] = []
        value = {"kind": "all", "targets": sorted(self.active), "params": {}}
        self._record("invoke", "heal", value)
        for fault in list(self.active.values()):
            try:
                self.heal(fault)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(f"{fault.id}: {exc}")
                self.active.pop(fault.id, None)
        steps = [("reset proxies", self._api().reset),
                 ("verify proxies", lambda: self._verify_proxies(self.cluster.topo.proxies())),
                 ("revive nodes", self._revive_nodes)]
        for what, step in steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(f"{what}: {exc}")
        if errors:
            self._record("fail", "heal", value, RuntimeError("; ".join(errors)))
            raise FaultError("heal-all finished with errors: " + "; ".join(errors))
        self._record("ok", "heal", value)

    def _revive_nodes(self) -> None:
        revived = []
        for node in self.cluster.nodes.values():
            if node.state == NodeState.PAUSED:
                node.resume()
            elif node.state == NodeState.STOPPED or not node.is_alive():
                node.state = NodeState.STOPPED
                node.start(die_with_parent=not self.detached)
                revived.append(node.name)
        self._wait_nodes_back(revived)

    def _api(self):  # type: ignore[no-untyped-def]
        if self.cluster.toxiproxy is None:
            raise FaultError("the cluster is not running")
        return self.cluster.toxiproxy


