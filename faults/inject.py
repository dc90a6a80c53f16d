"""The fault injector ("nemesis"): applies :class:`FaultSpec`s to a live cluster and heals them.

It acts through the backend protocols of :mod:`harness.backend` only. Link faults need
:class:`~harness.backend.LinkControl` (a cut disables the link, which closes its listener and
every open connection; a toxic is added per link and stream). Process faults need
:class:`~harness.backend.ProcessControl` (the local backend signals the node JVMs), clock faults
:class:`~harness.backend.ClockControl` (``faults.clock``). A fault the backend cannot apply is
refused with one line (:mod:`faults.capability`).

Every fault and heal is written to the history (process ``nemesis``, ``f`` = ``fault``/``heal``,
value ``{"kind","targets","params",...}``) as invoke then ok/fail. A fault that cannot even be
resolved or is refused (no leader right now, a conflict with an active fault, a missing
capability) is recorded as a lone ``fail`` with the reason as ``error``.

Healing is verified: after a heal each link must be enabled, carry none of our toxics and
accept a TCP connection; a link that does not (a wedged proxy) is rebuilt by the backend.
``heal_all`` heals everything still active and then resets every link and every node, whatever
state an interrupted run left them in; the pytest fixtures and the campaign runner call it on
every path (``with Injector(...)`` does too).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from highwater.faults import clients, clock, corrupt, release
from highwater.faults.capability import check_capabilities
from highwater.faults.common import FaultError
from highwater.faults.conflicts import check_no_conflicts
from highwater.faults.scope import resolve_link_fault
from highwater.faults.spec import FaultKind, FaultSpec
from highwater.faults.target import ClientTarget, TargetKind
from highwater.harness import tiered
from highwater.harness.backend import (
    ClusterBackend,
    ControlledNode,
    DiskControl,
    FileControl,
    LinkControl,
    NodeState,
    ProcessControl,
)
from highwater.harness.clients.worker import Relaunch, WorkerInfo
from highwater.harness.diskfs import DiskError
from highwater.harness.topology import Link
from highwater.harness.waiting import wait_until

log = logging.getLogger(__name__)

NEMESIS = "nemesis"
TOXIC_PREFIX = "hw-"


class HistorySink(Protocol):
    """The part of ``core.history.HistoryWriter`` the injector uses."""

    def invoke(self, process: str, f: str, value: Any = None, error: None = None) -> Any: ...
    def ok(self, process: str, f: str, value: Any = None, error: None = None) -> Any: ...
    def fail(self, process: str, f: str, value: Any = None, error: Any = None) -> Any: ...


class LiveView:
    """Answers the dynamic target questions (leader, replicas, active controller) from Kafka."""

    def __init__(self, cluster: ClusterBackend) -> None:
        self._cluster = cluster

    def leader(self, topic: str, partition: int) -> int | None:
        leader = self._cluster.partition_state(topic, partition, offsets=False).leader
        return leader if leader >= 0 else None

    def replicas(self, topic: str, partition: int) -> Sequence[int]:
        return self._cluster.partition_state(topic, partition, offsets=False).replicas

    def coordinator(self, key_type: str, key: str) -> int | None:
        # Retried: while a coordinator moves, FindCoordinator answers COORDINATOR_NOT_AVAILABLE.
        return wait_until(
            lambda: self._cluster.observer().coordinator(key_type, key),
            15,
            f"the {key_type} coordinator of {key} is known",
        )

    def active_controller(self) -> int | None:
        # Retried: right after a failover the quorum may have no leader for a moment.
        return wait_until(lambda: self._cluster.observer().active_controller(), 15, "the KRaft quorum has a leader")


@dataclass
class ActiveFault:
    id: str
    spec: FaultSpec
    links: frozenset[Link] = frozenset()
    nodes: tuple[str, ...] = ()  # process faults: the nodes acted on
    parties: tuple[str, ...] = ()  # link faults: what the target selector named
    toxics: list[tuple[Link, str]] = field(default_factory=list)  # (link, toxic name)
    started: float = field(default_factory=time.monotonic)
    #: power-loss: what each node's disk lost (files removed and truncated, bytes), by node
    lost: dict[str, dict[str, int]] = field(default_factory=dict)
    #: disk-full: how many writes each node's disk had refused when the fault began
    refused_before: dict[str, int] = field(default_factory=dict)
    #: corruption faults: what was done to each node's file (``faults.corrupt.Corruption``)
    corrupted: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: clock faults: each node's clock offset, seconds (as applied; at heal, what it had reached)
    clock_offsets: dict[str, float] = field(default_factory=dict)
    #: roll and finalize: what the step did and observed (``faults.release``)
    release: dict[str, Any] = field(default_factory=dict)
    #: client-restart with --version/--group-protocol: each worker's client and group protocol
    #: before and after, by client id (``{"from": {...}, "to": {...}}``)
    #: and, for a new group protocol, ``"group_type"``: what the group's coordinator then lists
    members: dict[str, dict[str, Any]] = field(default_factory=dict)

    def event_value(self) -> dict[str, Any]:
        """The history's fault/heal value. ``params.cuts_off`` lists the brokers whose every
        link the fault cuts (what the ISR and liveness checks expect to drop out)."""
        params: dict[str, Any] = dict(self.spec.params)
        value: dict[str, Any] = {
            "kind": self.spec.kind.value,
            "targets": list(self.nodes or self.parties),
            "params": params,
            "id": self.id,
            "spec": str(self.spec),
        }
        if self.clock_offsets:
            value["clock"] = dict(sorted(self.clock_offsets.items()))
        if self.corrupted:
            value["corrupted"] = dict(sorted(self.corrupted.items()))
        if self.lost:
            value["lost"] = {name: dict(counts) for name, counts in sorted(self.lost.items())}
        value.update(self.release)
        if self.members:
            value["members"] = dict(sorted(self.members.items()))
        if self.spec.kind.is_link:
            value["links"] = sorted(lk.proxy_name for lk in self.links)
            # which streams the toxic acts on (the quorum model doubles a latency on both)
            value["direction"] = "downstream" if self.spec.direction is None else self.spec.direction.value
            params["peer"] = None if self.spec.peer is None else str(self.spec.peer)
            whole = (
                self.spec.peer is None and self.spec.flow.value == "both" and self.spec.kind.value in ("cut", "timeout")
            )
            params["cuts_off"] = sorted(int(p.split("-")[1]) for p in self.parties if whole and p.startswith("kafka-"))
        return value


class Injector:
    def __init__(
        self,
        cluster: ClusterBackend,
        history: HistorySink | None = None,
        *,
        seed: int | None = None,
        default_partition: tuple[str, int] | None = None,
    ) -> None:
        """Whether nodes restarted here outlive this process is the backend's business (a
        handle attached to a ``highwater cluster up`` cluster restarts them detached)."""
        self.cluster = cluster
        self.history = history
        self.seed = seed
        self.default_partition = default_partition
        self.view = LiveView(cluster)
        self.active: dict[str, ActiveFault] = {}
        self._ids = itertools.count(1)

    def __enter__(self) -> Injector:
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
        """Apply ``spec`` (recorded as invoke, then ok or fail) and return it, active. A fault
        that is refused or cannot be resolved is recorded as a ``fail`` with the reason."""
        fault = ActiveFault(id=f"f{next(self._ids)}", spec=spec)
        try:
            check_capabilities(self.cluster, [spec])
            topo = self.cluster.topo
            spec.validate(topo)
            check_no_conflicts(topo, [f.spec for f in self.active.values()] + [spec])
            self._resolve(fault)
        except Exception as exc:
            self._record("fail", "fault", fault.event_value(), exc)
            raise
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
        if not spec.kind.heals_itself:
            self.active[fault.id] = fault
        return fault

    def _resolve(self, fault: ActiveFault) -> None:
        spec, topo = fault.spec, self.cluster.topo
        if spec.kind.is_link:
            fault.links, parties = resolve_link_fault(
                topo, spec, self.view, seed=self.seed, default_partition=self.default_partition
            )
            fault.parties = tuple(sorted(parties))
        elif isinstance(spec.target, ClientTarget):
            fault.nodes = clients.resolve(spec.target)
            relaunch = _relaunch(spec)
            if relaunch is not None:
                running = clients.infos(fault.nodes).values()
                refused = clients.relaunch_refusal(running, relaunch, self.cluster.kafka_version)
                if refused is not None:
                    raise FaultError(refused)
        else:
            parties = spec.target.resolve(topo, self.view, seed=self.seed, default_partition=self.default_partition)
            fault.nodes = tuple(sorted(parties))
        if not fault.links and not fault.nodes:
            raise FaultError(f"fault {spec} resolves to nothing to act on")

    def _links(self) -> LinkControl:
        if not isinstance(self.cluster, LinkControl):  # refused in apply; here for the types
            raise FaultError(f"backend {self.cluster.backend_name!r} has no link control")
        return self.cluster

    def _disks(self) -> DiskControl:
        if not isinstance(self.cluster, DiskControl):  # refused in apply; here for the types
            raise FaultError(f"backend {self.cluster.backend_name!r} has no disk control")
        return self.cluster

    def _processes(self) -> ProcessControl:
        if not isinstance(self.cluster, ProcessControl):  # refused in apply; here for the types
            raise FaultError(f"backend {self.cluster.backend_name!r} has no process control")
        return self.cluster

    def _apply_link(self, fault: ActiveFault) -> None:
        control = self._links()
        spec = fault.spec
        for link in sorted(fault.links):
            if spec.kind is FaultKind.CUT:
                control.set_links_enabled([link], False)
                continue
            for stream in spec.streams:
                name = f"{TOXIC_PREFIX}{fault.id}-{stream.value}"
                control.add_toxic(
                    link,
                    name=name,
                    type=spec.kind.value,
                    stream=stream.value,
                    toxicity=spec.effective_toxicity,
                    attributes=dict(spec.params),
                )
                fault.toxics.append((link, name))

    def _apply_client(self, fault: ActiveFault) -> None:
        kind, ids = fault.spec.kind, fault.nodes
        if kind is FaultKind.CLIENT_FREEZE:
            clients.freeze(ids)
            return
        relaunch = _relaunch(fault.spec)
        before = clients.infos(ids) if relaunch is not None else {}  # what a relaunch records it moved from
        clients.kill(ids, f"{fault.id} ({kind.cli})")
        if kind is FaultKind.CLIENT_RESTART:
            after = clients.restart(ids, relaunch=relaunch)
            if relaunch is not None:
                fault.members = {
                    cid: {"from": _member(before[cid]), "to": _member(after[cid])}
                    for cid in ids
                    if cid in before and cid in after
                }
                # a member back on the consumer protocol converts a classic group (KIP-848's online
                # migration) at its first heartbeat: what the coordinator then lists, for the record
                for cid, change in fault.members.items():
                    group = after[cid].group_id
                    if relaunch.group_protocol is not None and group is not None:
                        want = "consumer" if relaunch.group_protocol == "consumer" else None
                        change["group_type"] = clients.group_type(group, want)

    def _apply_store(self, fault: ActiveFault) -> None:
        """A disk fault on the tiered remote store (``--target store``): its lossyfs layer slowed,
        full or failing, or losing what was not fsynced (a power loss of the store's machine,
        which is back at once); the brokers go on, and their remote log managers meet the errors
        and the missing files."""
        disk = self._disks().disk(tiered.STORE_PARTY)
        kind = fault.spec.kind
        if kind is FaultKind.POWER_LOSS:
            fault.lost[tiered.STORE_PARTY] = disk.drop_unsynced()
        elif kind is FaultKind.DISK_FULL:
            fault.refused_before[tiered.STORE_PARTY] = int(disk.status()["refused"])
            disk.set_full(True)
        elif kind is FaultKind.DISK_SLOW:
            disk.set_slow(int(fault.spec.param("write_ms")), int(fault.spec.param("fsync_ms")))
        elif kind is FaultKind.DISK_FAIL:
            disk.set_failing(True)

    def _undo_store(self, fault: ActiveFault) -> None:
        """The remote store healed: writable, fast and answering again (nothing to restart: a
        broker's remote log manager retries what failed on its own)."""
        disk = self._disks().disk(tiered.STORE_PARTY)
        disk.set_failing(False)
        disk.set_full(False)
        disk.set_slow(0, 0)

    def _apply_process(self, fault: ActiveFault) -> None:
        kind = fault.spec.kind
        if kind.is_clock:
            fault.clock_offsets = clock.apply(self.cluster, fault.spec, fault.nodes)
            return
        if kind.is_client:
            self._apply_client(fault)
            return
        if kind is FaultKind.FINALIZE:
            release.finalize(
                self.cluster, str(fault.spec.param("feature")), int(fault.spec.param("level")), fault.release
            )
            return
        if kind is FaultKind.ROLL:
            to, interval = str(fault.spec.param("release")), float(fault.spec.param("interval"))
            crash = float(fault.spec.param("crash_after"))
            release.roll(self.cluster, fault.nodes, to, interval, fault.release, crash_after=crash)
            return
        if fault.spec.target.kind is TargetKind.STORE:
            self._apply_store(fault)
            return
        control = self._processes()
        nodes = [control.node(name) for name in fault.nodes]
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
                n.restart(clean=bool(fault.spec.param("clean")))
            self._wait_nodes_back(fault.nodes)
        elif kind.is_corruption:
            self._corrupt(fault, nodes)
        elif kind is FaultKind.POWER_LOSS:
            # the nodes die first: what they had not fsynced is then lost, as when power fails
            for n in nodes:
                n.kill()
            for n in nodes:
                fault.lost[n.name] = self._disks().disk(n.name).drop_unsynced()
        elif kind is FaultKind.DISK_FULL:
            for n in nodes:
                disk = self._disks().disk(n.name)
                fault.refused_before[n.name] = int(disk.status()["refused"])
                disk.set_full(True)
        elif kind is FaultKind.DISK_SLOW:
            for n in nodes:
                self._disks().disk(n.name).set_slow(
                    int(fault.spec.param("write_ms")), int(fault.spec.param("fsync_ms"))
                )
        elif kind is FaultKind.ROLLING_RESTART:
            interval = float(fault.spec.param("interval"))
            for i, n in enumerate(nodes):
                if i:
                    time.sleep(interval)  # a schedule gap between nodes, not a synchronisation wait
                n.restart(clean=bool(fault.spec.param("clean")))
                self._wait_nodes_back((n.name,))
        else:  # pragma: no cover - FaultKind is closed
            raise FaultError(f"unknown process fault {kind}")

    def _corrupt(self, fault: ActiveFault, nodes: Sequence[ControlledNode]) -> None:
        """Kill the nodes, or stop them cleanly (``clean``: flushed and checkpointed), so nothing
        holds the file open or writes it after; then change each one's file. Heal starts them
        (``_undo``), and their log recovery meets it."""
        files = self.cluster
        if not isinstance(files, FileControl) or not files.data_files_enabled:  # refused in apply
            raise FaultError(f"backend {self.cluster.backend_name!r} has no data file access")
        spec = fault.spec
        for n in nodes:
            if spec.param("clean"):
                n.stop()
            else:
                n.kill()
        for n in nodes:
            root = files.data_dir(n.name)
            if spec.kind is FaultKind.TRUNCATE_FILE:
                done = corrupt.truncate_file(root, str(spec.param("file")), int(spec.param("bytes")))
            else:
                done = corrupt.flip_bits(
                    root,
                    str(spec.param("file")),
                    int(spec.param("count")),
                    int(spec.param("seed")),
                    int(spec.param("skip_bytes")),
                )
            fault.corrupted[n.name] = done.to_json()

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
        spec = fault.spec
        if spec.kind.is_link:
            control = self._links()
            # what other faults, still active, hold on these links: a link another fault cuts
            # stays cut, another fault's toxic stays (this heal ends this fault only)
            others = [f for f in self.active.values() if f.id != fault.id and f.spec.kind.is_link]
            still_cut = {link for f in others if f.spec.kind is FaultKind.CUT for link in f.links}
            held = {toxic for f in others for _, toxic in f.toxics}
            for link, toxic in fault.toxics:
                try:
                    control.remove_toxic(link, toxic)
                except Exception as exc:  # noqa: BLE001 - verified (and rebuilt) below
                    log.warning("removing toxic %s from %s failed: %s", toxic, link.proxy_name, exc)
            if spec.kind is FaultKind.CUT:
                for link in fault.links - still_cut:
                    try:
                        control.set_links_enabled([link], True)
                    except Exception as exc:  # noqa: BLE001 - verified (and rebuilt) below
                        log.warning("enabling %s failed: %s", link.proxy_name, exc)
            control.ensure_links_healthy(sorted(fault.links - still_cut), TOXIC_PREFIX, keep=held)
            return
        if spec.target.kind is TargetKind.STORE:
            self._undo_store(fault)
            return
        if spec.kind is FaultKind.CLIENT_FREEZE:
            clients.thaw(fault.nodes)
        elif spec.kind is FaultKind.CLIENT_KILL:
            clients.restart(fault.nodes)
        elif spec.kind is FaultKind.DISK_FULL:
            # A broker a write failed on marks the log directory offline, and one whose every
            # log directory failed shuts itself down (LogManager: "Shutdown broker because all
            # log dirs ... have failed"); only a restart brings a directory back. So a broker
            # whose disk refused a write is restarted (killed first if it is still going down).
            processes = self._processes()
            for name in fault.nodes:
                disk = self._disks().disk(name)
                disk.set_full(False)
                node = processes.node(name)
                hit = int(disk.status()["refused"]) > fault.refused_before.get(name, 0)
                if hit or not node.is_alive():
                    if node.is_alive():
                        node.kill()
                    node.state = NodeState.STOPPED
                    node.start()
            self._wait_nodes_back(fault.nodes)
        elif spec.kind.is_clock:
            fault.clock_offsets = clock.heal(self.cluster, fault.nodes, clock.on_clients(spec))
        elif spec.kind is FaultKind.DISK_SLOW:
            for name in fault.nodes:
                self._disks().disk(name).set_slow(0, 0)
        elif spec.kind in (FaultKind.KILL, FaultKind.STOP, FaultKind.POWER_LOSS) or spec.kind.is_corruption:
            processes = self._processes()
            for name in fault.nodes:
                node = processes.node(name)
                if node.state == NodeState.STOPPED:
                    node.start()
            self._wait_nodes_back(fault.nodes)
        elif spec.kind is FaultKind.PAUSE:
            processes = self._processes()
            for name in fault.nodes:
                node = processes.node(name)
                if node.state == NodeState.PAUSED:
                    node.resume()

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
        steps: list[tuple[str, Callable[[], None]]] = []
        links = self.cluster if isinstance(self.cluster, LinkControl) else None
        if links is not None:
            steps += [
                ("reset links", links.reset_links),
                ("verify links", lambda: links.ensure_links_healthy(links.links(), TOXIC_PREFIX)),
            ]
        if isinstance(self.cluster, DiskControl) and self.cluster.disks_enabled:
            steps.append(("reset disks", self._reset_disks))
        if clock.enabled(self.cluster):
            steps.append(("reset clocks", lambda: clock.reset_all(self.cluster)))
        if isinstance(self.cluster, ProcessControl):
            steps.append(("revive nodes", self._revive_nodes))
        steps.append(("thaw client workers", clients.thaw_all))
        for what, step in steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(f"{what}: {exc}")
        if errors:
            self._record("fail", "heal", value, RuntimeError("; ".join(errors)))
            raise FaultError("heal-all finished with errors: " + "; ".join(errors))
        self._record("ok", "heal", value)

    def _reset_disks(self) -> None:
        """Every node's disk, and a tiered cluster's remote store, writable, fast and answering
        again (what a power loss lost stays lost)."""
        disks = [self._disks().disk(node.name) for node in self._processes().nodes.values()]
        try:
            disks.append(self._disks().disk(tiered.STORE_PARTY))
        except DiskError:
            pass  # an untiered cluster, or its store not on lossyfs: nothing of it to reset
        for disk in disks:
            disk.set_failing(False)
            disk.set_full(False)
            disk.set_slow(0, 0)

    def _revive_nodes(self) -> None:
        revived = []
        for node in self._processes().nodes.values():
            if node.state == NodeState.PAUSED:
                node.resume()
            elif node.state == NodeState.STOPPED or not node.is_alive():
                node.state = NodeState.STOPPED
                node.start()
                revived.append(node.name)
        self._wait_nodes_back(revived)


def _relaunch(spec: FaultSpec) -> Relaunch | None:
    """What a ``client_restart`` asks its workers to restart on (None: as they were)."""
    if spec.kind is not FaultKind.CLIENT_RESTART:
        return None
    version, protocol = str(spec.param("version")), str(spec.param("group_protocol"))
    if not version and not protocol:
        return None
    return Relaunch(version or None, protocol or None)


def _member(info: WorkerInfo) -> dict[str, str | None]:
    """A worker's client and group protocol, as a relaunch's event records them."""
    return {"client": info.client, "group_protocol": info.group_protocol}
