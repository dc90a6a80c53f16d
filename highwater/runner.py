"""One recorded run: workloads + faults on a cluster, then heal, final read and checks.

A run writes ``results/<campaign>/<run_id>/`` (its files named by ``core.run_dir.RunDir``):
- ``history.jsonl`` (flushed as events happen),
- ``verdict.json`` (what ``highwater check --json`` prints),
- ``run.json``: the run manifest (``core.manifest.RunManifest``, format ``highwater.run/1``:
  suite, scenario, Kafka version, client, cluster shape, spec, the nemesis as data, seed, times,
  client bytes, stats, verdict, repro), written at the start and completed at the end,
- ``logs/`` (broker and Toxiproxy logs) when the run found a violation or crashed,
- ``threads.txt`` when consumers were still behind STALL_DUMP_AFTER_S into settling: every
  Python thread's stack at that moment (where a stuck client waits; see docs/findings.md, HW-7).

The client (workloads), the fault injector, the schedule and the checks are separate parts; this
module only sequences them, and its ``finally`` always heals and always closes the history. What
a kind of run (plain, group, transactional, share, an exactly-once copy) does in each phase is
its mode's (``highwater.modes``): the runner asks the run's modes, phase by phase, and branches
on none of them.
"""

from __future__ import annotations

import json
import logging
import platform
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from highwater import progress as live
from highwater.client_road import ClientRoad, client_road, install, road_refusal
from highwater.core.checks import load, overall, run_all_checks
from highwater.core.checks.group_measures import group_measures
from highwater.core.checks.power_measures import power_measures
from highwater.core.checks.tiered_measures import tiered_measures
from highwater.core.checks.verdict import Input, Overall, Valid, Verdict
from highwater.core.errors import HighwaterError
from highwater.core.findings import Classification, RunIdentity, beyond_of, classify, configured
from highwater.core.history import HistoryWriter
from highwater.core.manifest import ClusterShape, NemesisRecord, Racks, RunManifest, RunStats, iso_utc
from highwater.core.run_dir import RunDir
from highwater.faults.capability import check_capabilities, declared_faults
from highwater.faults.clients import group_view
from highwater.faults.group_leader import LiveGroups
from highwater.faults.inject import Injector
from highwater.harness import tiered
from highwater.harness.backend import ClusterBackend, LinkControl, backend_name
from highwater.harness.clients import client_label, get_driver
from highwater.harness.clients.clocks import fake_client_clocks
from highwater.harness.clients.franz_go import recheck_refusal
from highwater.harness.clients.groups import GroupProtocolError, group_protocol_refusal
from highwater.harness.clients.txnversion import TransactionVersionError, transaction_version_refusal
from highwater.harness.clients.worker import copy_worker_logs, live_workers, worker_logs_mark
from highwater.harness.features import ELIGIBLE_LEADER_REPLICAS, FeatureError, elr_refusal, has_elr
from highwater.harness.gcpasses import streaming
from highwater.harness.toxiproxy import ByteCounters
from highwater.harness.waiting import wait_until, wait_until_steady
from highwater.harness.workload import ConsumerWorker, ObserverWorker, ProducerWorker
from highwater.harness.workload.final_read import final_read
from highwater.harness.workload.plant import planted_kind, skip_under
from highwater.modes import Workload, run_modes
from highwater.modes.base import INPUT_ORDER, Consumer, Features
from highwater.run_spec import RunSpec, run_spec_to_json

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    run_id: str
    dir: Path
    valid: Any
    verdicts: list[Verdict]
    stats: dict[str, Any]
    #: the run's class against the known findings (``highwater.core.findings``)
    classification: Classification = field(default_factory=lambda: Classification("unknown"))

    @property
    def violations(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.valid is False]


Nemesis = Callable[[Injector, ClusterBackend, RunSpec], None]


def execute_run(
    cluster: ClusterBackend,
    spec: RunSpec,
    nemesis: Nemesis | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> RunResult:
    """Run ``spec``'s workload for ``spec.duration`` while ``nemesis`` injects faults (it runs
    in this thread and must return within the duration), then heal, settle, read and check:
    the phases of docs/architecture.md ("A run"), one function each."""
    check_capabilities(cluster, declared_faults(nemesis))  # refuse before anything starts
    # the run's topic as the cluster names it (an external cluster file may give a prefix)
    spec = replace(spec, topic=cluster.topic_name(spec.topic))
    phases = PhaseClock()
    driver = get_driver(spec.client)
    record = describe_nemesis(nemesis)
    road = client_road(record, spec, driver.name, driver.version)  # versions and protocols steps move onto
    # what the run's consumers, producers and copy do in each phase
    modes = run_modes(spec, cluster, road.protocols)
    _refuse(cluster, spec, modes, driver.name, driver.version)
    refused = road_refusal(road, spec, cluster.kafka_version)
    if refused is not None:
        raise GroupProtocolError(refused)
    if spec.tiered and not cluster.spec.tiered:
        raise HighwaterError("a tiered run (RunSpec.tiered) needs a tiered cluster: ClusterSpec(tiered=True)")
    retention = spec.retention_refusal()
    if retention is not None:
        raise HighwaterError(retention)
    install(road, progress)
    run = _prepare(cluster, spec, modes, record, client_label(driver), road)
    workers = _workers(cluster, spec, run)
    client_bytes_before = _client_bytes(cluster)
    client_bytes_after = _play(cluster, spec, run, workers, nemesis, phases, progress)
    return _judge(cluster, run, workers, phases, progress, _bytes_read(client_bytes_before, client_bytes_after))


def _refuse(cluster: ClusterBackend, spec: RunSpec, modes: Workload, client: str, version: str) -> None:
    """Phase 1: what the client or the release lacks, each refused in one line before anything
    starts (as a fault whose capability the backend lacks is): what the spec asks whatever its
    modes (a group protocol, a transaction version, eligible leader replicas, the client
    settings, a planted skip) and what each mode needs (``RunMode.refuse``)."""
    kafka = cluster.kafka_version
    refused = group_protocol_refusal(client, version, kafka, spec.group_protocol, spec.group_remote_assignor)
    if refused is not None:
        raise GroupProtocolError(refused)
    for mode in modes.parts:
        mode.refuse(client, version, kafka)
    # refused whatever the modes, as ever: a spec that names a transaction version (or a group
    # protocol, above) the client or release lacks is refused even where no mode would use it
    if spec.transaction_version is not None:
        refused = transaction_version_refusal(client, version, kafka, spec.transaction_version)
        if refused is not None:
            raise TransactionVersionError(refused)
    if spec.eligible_leader_replicas is not None:
        refused = elr_refusal(kafka, spec.eligible_leader_replicas)
        if refused is not None:
            raise FeatureError(refused)
    refused = spec.client_settings_refusal() or recheck_refusal(client, spec.preferred_replica_recheck_ms)
    if refused is not None:
        raise HighwaterError(refused)
    try:
        planted_kind(spec.extra)
    except ValueError as exc:
        raise HighwaterError(str(exc)) from None


@dataclass
class _Run:
    """What phase 2 set up and the later phases use."""

    run_id: str
    out: Path
    seed: int | None
    history: HistoryWriter
    manifest: RunManifest
    modes: Workload
    restore: dict[str, int]  # the cluster features to restore after the run


def _prepare(
    cluster: ClusterBackend,
    spec: RunSpec,
    modes: Workload,
    nemesis_record: NemesisRecord,
    label: str,
    road: ClientRoad | None = None,
) -> _Run:
    """Phase 2: the topics and group configs, the features the run holds, the history's header
    and the manifest."""
    seed = run_seed(spec, nemesis_record)  # a seed that contradicts the schedule's is refused here
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{spec.scenario}-{uuid.uuid4().hex[:6]}"
    out = spec.results_root / spec.campaign / run_id
    out.mkdir(parents=True, exist_ok=True)
    topic_config = {
        "min.insync.replicas": str(spec.min_insync_replicas),
        "unclean.leader.election.enable": str(spec.unclean_leader_election).lower(),
        **(tiered.topic_config(spec.topic_retention_ms()) if spec.tiered else {}),
    }
    for topic in [spec.topic, *(t for mode in modes.parts for t in mode.topics())]:
        cluster.create_topic(topic, spec.partitions, spec.replication_factor, topic_config)
    racks = {
        "brokers": {str(b): cluster.rack_of(b) for b in cluster.broker_ids},
        "clients": {f"consumer-{i}": rack for i, rack in enumerate(cluster.topo.racks)} if spec.client_rack else {},
    }
    for mode in modes.parts:
        mode.prepare(cluster)
    consumers: dict[str, dict[str, str | bool]] = {}
    for mode in modes.parts:
        consumers.update(mode.consumers_header(len(cluster.topo.racks)))
    # the header's config in the order it has always had: the consumers' entries and their
    # reader's, the features the run holds, then the writers' (the copy's)
    header_config = {**spec.header_config(cluster), "consumers": consumers, **modes.reader.header()}
    # where steps restart the clients on (``highwater.client_road``); the run started on the top's
    for key, path in (("client_path", road and road.client_path), ("group_protocol_path", road and road.protocol_path)):
        if path:
            header_config[key] = path
    restore = _hold_features(cluster, spec, modes, header_config)
    for mode in modes.writers:
        header_config.update(mode.header())
    # The inputs this run sets out to record: if one is missing (a crash before the final read),
    # the checks that need it say unknown, not not-applicable.
    # (racks only where the consumers name theirs: without ``client.rack`` no check of rack-aware
    # fetching applies, which is not-applicable rather than a missing input)
    wanted = {Input.SENDS, Input.META, Input.FINAL_READS}.union(*(m.inputs() for m in modes.parts))
    if spec.client_rack:
        wanted.add(Input.RACKS)
    inputs = [i for i in INPUT_ORDER if i in wanted]
    history = HistoryWriter(
        RunDir(out).history,
        run_id=run_id,
        kafka_version=cluster.kafka_version,
        client=label,
        suite=spec.suite,
        scenario=spec.scenario,
        seed=seed,
        config=header_config,
        racks=racks,
        records=[i.value for i in inputs],
    )  # core.checks.PROMISED_KEY
    manifest = RunManifest(
        run_id=run_id,
        suite=spec.suite,
        scenario=spec.scenario,
        campaign=spec.campaign,
        kafka_version=cluster.kafka_version,
        client=label,
        config=header_config,
        seed=seed,
        repro=spec.repro,
        started_at=iso_utc(time.time()),
        python=platform.python_version(),
        racks=Racks(racks["brokers"], racks["clients"]),
        cluster=ClusterShape(
            backend_name(cluster),
            cluster.spec.brokers,
            cluster.spec.racks,
            cluster.spec.controllers,
            {str(k): str(v) for k, v in cluster.spec.broker_config.items()},
            disk=cluster.spec.disk,
            clock=cluster.spec.clock,
        ),
        spec=run_spec_to_json(spec),
        nemesis=nemesis_record,
    )
    manifest.write(RunDir(out).run_json)
    return _Run(run_id, out, seed, history, manifest, modes, restore)


@dataclass
class _Workers:
    """The run's processes of the history: producers, consumers (or share members, copiers and
    the copy's reader), the observer."""

    producers: list[ProducerWorker]
    consumers: list[Consumer]
    observer: ObserverWorker
    log_mark: int  # the client workers started from here on are this run's (``copy_worker_logs``)


def _workers(cluster: ClusterBackend, spec: RunSpec, run: _Run) -> _Workers:
    """Phase 3's cast (not started yet): producers without a rack (they always write to the
    leader), one consumer per broker rack, the observer: each mode's (``RunMode.producers`` and
    ``consumers``)."""
    history, seed = run.history, run.seed
    # taken before the first worker: a client's process starts with its workload worker
    log_mark = worker_logs_mark()
    # every run says whether its workers' clocks are faked, before the first worker's process
    # starts with its environment (so a run that ended badly leaves no setting to the next); a
    # client clock fault moves them (harness.clients.clocks)
    fake_client_clocks(RunDir(run.out).client_clocks if spec.client_clocks else None)
    producers = [p for mode in run.modes.parts for p in mode.producers(cluster, history, seed)]
    consumers = [c for mode in run.modes.parts for c in mode.consumers(cluster, history, seed)]
    observer = ObserverWorker(
        cluster.bootstrap(),
        history,
        spec.topic,
        spec.partitions,
        interval=spec.observe_interval,
        security=cluster.client_security,
        starts=spec.tiered,
    )
    return _Workers(producers, consumers, observer, log_mark)


def _plant(spec: RunSpec, injector: Injector, consumers: Sequence[object]) -> None:
    """highwater's own tests only: the planted skip its spec asks for (``harness.workload.plant``)."""
    kind = planted_kind(spec.extra)
    if kind is None:
        return

    def active() -> list[tuple[str, str]]:
        return [(f.id, f.spec.kind.value) for f in list(injector.active.values())]

    for consumer in consumers:
        if isinstance(consumer, ConsumerWorker):
            consumer.plant = skip_under(kind, active)


def _play(
    cluster: ClusterBackend,
    spec: RunSpec,
    run: _Run,
    workers: _Workers,
    nemesis: Nemesis | None,
    phases: PhaseClock,
    progress: Callable[[str], None],
) -> dict[str, dict[int, ByteCounters]]:
    """Phases 3 and 4: the workload for its duration with the nemesis; then, in ``finally``,
    heal everything, settle, stop the consumers, read every replica's log and close the history.
    Returns the client byte counters once the consumers are closed."""
    history, out = run.history, run.out
    producers, consumers, observer = workers.producers, workers.consumers, workers.observer
    injector = Injector(cluster, history, seed=run.seed, default_partition=(spec.topic, 0))
    _plant(spec, injector, consumers)
    crashed: BaseException | None = None
    # fewer collector passes while records stream (harness.gcpasses); group-leader targets ask
    # this cluster which member leads a group (faults.clients.group_view)
    live_now = live.current()  # the live progress lines (highwater.progress), if anyone shows them
    with (
        streaming(),
        group_view(LiveGroups(cluster.observer)),
        live.watch_run(lambda: _events_so_far(history), lambda: _active_faults(injector), live_now),
    ):
        try:
            for w in [observer, *consumers, *producers]:
                w.start()
            phases.mark("setup")
            progress(f"{run.run_id}: workload running for {spec.duration:.0f}s")
            live_now.phase(f"workload, {spec.duration:.0f}s ({spec.scenario})")
            t_end = time.monotonic() + spec.duration
            if nemesis is not None:
                nemesis(injector, cluster, spec)
            while time.monotonic() < t_end:
                time.sleep(min(0.5, max(0.0, t_end - time.monotonic())))  # the workload's duration
            for p in producers:
                p.stop()
            phases.mark("workload")
        except BaseException as exc:
            crashed = exc
            raise
        finally:
            try:
                injector.heal_all()
                phases.mark("heal")
            finally:
                for p in producers:
                    p.stop()
                if crashed is None:
                    live_now.phase("settle")
                    with ExitStack() as holding:  # what each mode holds open while the run settles
                        for mode in run.modes.parts:
                            holding.enter_context(mode.settling(cluster))
                        _settle(cluster, spec, run.modes, consumers, progress, RunDir(out).threads)
                    phases.mark("settle")
                for w in [*consumers, observer]:
                    w.stop()
                # the libraries' own account of the run
                copy_worker_logs(workers.log_mark, RunDir(out).logs / "clients")
                fake_client_clocks(None)
                # Consumers are closed, so their bytes are being counted; the final read would add its own.
                client_bytes_after = wait_until_steady(
                    lambda: _client_bytes(cluster), CLIENT_BYTES_QUIET_S, 15, "the client byte counters"
                )
                if crashed is None:  # what the cluster's state says, after settling
                    for mode in run.modes.parts:
                        mode.record_state(cluster, history)
                if crashed is None:
                    progress(f"{run.run_id}: final read")
                    live_now.phase("final read")
                    for topic in [spec.topic, *(t for mode in run.modes.parts for t in mode.topics())]:
                        final_read(cluster.bootstrap(), history, topic, spec.partitions, cluster.client_security)
                    phases.mark("final_read")
                history.close()
                _restore_features(cluster, run.restore, progress)
    return client_bytes_after


def _bytes_read(
    before: dict[str, dict[int, ByteCounters]], after: dict[str, dict[int, ByteCounters]]
) -> dict[str, dict[str, int]]:
    """Per client rack and broker, the bytes the brokers sent to that rack's clients during the run."""
    return {
        rack: {str(b): after[rack][b].downstream - before[rack][b].downstream for b in after[rack]}
        for rack in after
        if rack in before
    }


def _judge(
    cluster: ClusterBackend,
    run: _Run,
    workers: _Workers,
    phases: PhaseClock,
    progress: Callable[[str], None],
    client_bytes: dict[str, dict[str, int]],
) -> RunResult:
    """Phase 5: the checks and the measures on the closed history, ``verdict.json``, the
    completed manifest, and the cluster's logs when the run was not valid."""
    out, run_id = run.out, run.run_id
    files = RunDir(out)
    producers, consumers, observer = workers.producers, workers.consumers, workers.observer
    run_stats = RunStats(
        # the copiers write too (a consumer-side process that is a producer)
        producers={p.name: p.stats() for p in [*producers, *(c for c in consumers if isinstance(c, ProducerWorker))]},
        consumers={c.name: c.records_read for c in consumers},
        worker_errors={w.name: repr(w.error) for w in [*producers, *consumers, observer] if w.error},
    )
    live_now = live.current()
    live_now.phase("checks")
    judged = load(files.history)
    verdicts = run_all_checks(judged)
    measures = group_measures(judged)
    if measures is not None:  # what the report compares across group protocols
        _write_json(files.group_measures, measures.to_json())
    power = power_measures(judged, verdicts)
    if power is not None:  # the report's table of power-loss cases
        _write_json(files.power_measures, power.to_json())
    tier = tiered_measures(judged)
    if tier is not None:  # the report's table of tiered runs, with what the remote store holds
        if isinstance(cluster, tiered.RemoteStore):
            topic = str(run.manifest.spec.get("topic", ""))
            try:
                tier = replace(tier, remote_bytes=tiered.remote_bytes(cluster.remote_store, topic))
            except OSError as exc:  # a store being written under us: the measure is left out
                log.warning("could not measure the remote store of %s: %s", topic, exc)
        _write_json(files.tiered_measures, tier.to_json())
    valid = overall(verdicts)
    classification = _classify(run.manifest, {v.check: v.valid for v in verdicts})
    phases.mark("checks")
    run_stats = replace(run_stats, phases=phases.seconds)
    stats = run_stats.to_json()
    _write_json(
        files.verdict_json,
        {
            "history": str(files.history),
            "valid": valid,
            "findings": classification.to_json(),
            "verdicts": [v.to_json() for v in verdicts],
        },
    )
    manifest = replace(
        run.manifest,
        client_bytes=client_bytes,
        stats=run_stats,
        valid=valid,
        findings=classification.to_json(),
        ended_at=iso_utc(time.time()),
    )
    manifest.write(files.run_json)
    if valid is not True:
        cluster.collect_logs(files.logs)
    said = _said(valid, classification)
    progress(f"{run_id}: {said.upper() if valid is not True else said} -> {out}")
    live_now.message(f"{run_id}: {said}")
    return RunResult(run_id, out, valid, verdicts, stats, classification)


def record_beyond(run_dir: Path, finding: str, checks: Iterable[str]) -> Classification | None:
    """A suite's exact judgement that ``finding`` does not explain the violations of ``checks``
    in the run of ``run_dir`` (more was lost or stalled than it can account for): the run is
    classed again with that (``core.findings.classify``'s ``beyond``) and its class rewritten in
    ``verdict.json`` and ``run.json``, where the report finds it. Returns the new class; None
    for a history that is no run's (no ``run.json`` and ``verdict.json`` beside it)."""
    files = RunDir(run_dir)
    if not (files.run_json.is_file() and files.verdict_json.is_file()):
        return None
    manifest = RunManifest.read(files.run_json)
    verdict = json.loads(files.verdict_json.read_text(encoding="utf-8"))
    beyond = {f: set(cs) for f, cs in beyond_of(manifest.findings).items()}
    beyond.setdefault(finding, set()).update(checks)
    c = _classify(manifest, {v["check"]: v["valid"] for v in verdict["verdicts"]}, beyond)
    _write_json(files.verdict_json, {**verdict, "findings": c.to_json()})
    replace(manifest, findings=c.to_json()).write(files.run_json)
    return c


def _classify(
    m: RunManifest, verdicts: Mapping[str, Valid], beyond: Mapping[str, Iterable[str]] | None = None
) -> Classification:
    """The run of manifest ``m`` classed against the known findings (``core.findings``)."""
    return classify(configured(), RunIdentity.of(m.suite, m.scenario, m.client, m.kafka_version), verdicts, beyond)


def _said(valid: Overall, c: Classification) -> str:
    """What a run's end says: its verdict, with the findings that explain it or went missing."""
    if c.run_class == "known":
        return f"violations, all known ({', '.join(c.findings)})"
    if c.run_class == "violated":
        return f"new violations ({', '.join(c.new)})" + (f"; known: {', '.join(c.findings)}" if c.known else "")
    if c.run_class == "fixed?":
        return f"valid; fixed? {', '.join(c.fixed)} did not show"
    return "valid" if valid is True else "unknown"


def _events_so_far(history: HistoryWriter) -> int:
    """How many events the run has recorded (for the live progress: read without the lock)."""
    return int(getattr(history, "_next_index", 0))


def _active_faults(injector: Injector) -> list[str]:
    """The faults in place now, as ``highwater fault apply`` spells them (for the live progress)."""
    return [str(f.spec) for f in tuple(injector.active.values())]


class PhaseClock:
    """Seconds spent in each phase of a run, each phase ending where it is marked."""

    def __init__(self) -> None:
        self._since = time.monotonic()
        self.seconds: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        now = time.monotonic()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._since
        self._since = now


def _client_bytes(cluster: ClusterBackend) -> dict[str, dict[int, ByteCounters]]:
    """Bytes each broker sent to each client rack, where the backend can count them (link
    control); a backend without byte counters gives none and the manifest says so by omission."""
    if not isinstance(cluster, LinkControl):
        return {}
    return {rack: cluster.client_bytes(rack) for rack in cluster.topo.client_racks}


#: Toxiproxy counts a connection's bytes a moment after it ends: counters this long unchanged are final
CLIENT_BYTES_QUIET_S = 0.5

#: a transactional run's consumers have read all they can once their counts stand still this
#: long: several times their poll timeout and the brokers' fetch wait
TXN_READS_QUIET_S = 3.0

#: consumers still behind this long into settling get their threads' stacks written down
STALL_DUMP_AFTER_S = 15.0


def dump_thread_stacks(path: Path, why: str) -> None:
    """Every Python thread's stack, named, into ``path`` (for a client that stopped moving)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = [f"# {why}\n"]
    for ident, frame in sys._current_frames().items():
        parts.append(f"\n--- thread {names.get(ident, '?')} ({ident})\n")
        parts.extend(traceback.format_stack(frame))
    path.write_text("".join(parts), encoding="utf-8")


def _settle(
    cluster: ClusterBackend,
    spec: RunSpec,
    modes: Workload,
    consumers: Sequence[Consumer],
    progress: Callable[[str], None],
    stacks_path: Path | None = None,
) -> None:
    """After healing: wait until every partition has its full ISR and every consumer has read
    up to the high watermark (what that means is the reader mode's, ``ReaderMode.caught_up``: a
    share group, every record settled), so 'unseen' and the final read judge a quiet
    cluster. Consumers
    still behind after STALL_DUMP_AFTER_S get their thread stacks dumped to ``stacks_path``
    once: a client stuck inside kafka-python shows there where it waits. A reader mode whose
    consumer cannot catch up ends the wait at once (``ReaderMode.caught_up``: the plain reader's
    consumer whose client worker died for good)."""

    def full() -> bool:
        return all(
            len(s.isr) == spec.replication_factor and s.leader >= 0
            for s in (cluster.partition_state(spec.topic, p, offsets=False) for p in range(spec.partitions))
        )

    try:
        wait_until(full, spec.settle_timeout, "every partition has its full ISR after healing")
        hws = [cluster.partition_state(spec.topic, p).hw or 0 for p in range(spec.partitions)]
        if modes.writes_transactions:  # what any mode that writes transactions does to the topic:
            # markers and aborted records take offsets no read_committed consumer returns: the
            # high watermarks overstate what there is to read, so wait until reading stops
            wait_until_steady(
                lambda: tuple(c.records_read for c in consumers),
                TXN_READS_QUIET_S,
                spec.settle_timeout,
                "the consumers' reads of a transactional topic",
            )
            return
        done, what = modes.reader.caught_up(spec.topic, hws, consumers)
        since, dumped = time.monotonic(), False

        def caught_up() -> bool:
            nonlocal dumped
            if done():
                return True
            if stacks_path is not None and not dumped and time.monotonic() - since > STALL_DUMP_AFTER_S:
                dumped = True
                read = {c.name: c.records_read for c in consumers}
                dump_thread_stacks(stacks_path, f"waiting until {what}; records read so far: {read}")
                # and the client workers' own threads, in their logs (logs/clients/ of the run)
                asked = [w.info.client_id for w in live_workers() if w.dump_stacks()]
                also = f"; the stacks of {', '.join(asked)} in logs/clients/" if asked else ""
                progress(
                    f"consumers still behind after {STALL_DUMP_AFTER_S:.0f}s ({read}): "
                    f"thread stacks in {stacks_path}{also}"
                )
            return False

        wait_until(caught_up, spec.settle_timeout, what)
    except Exception as exc:  # noqa: BLE001 - the checks judge what happened; note it and go on
        progress(f"settling incomplete: {exc}")


def _hold_features(cluster: ClusterBackend, spec: RunSpec, modes: Workload, header: dict[str, Any]) -> dict[str, int]:
    """Set the feature levels the run asks for (``harness.features``), write the levels the run
    has into the header, and return the levels to restore afterwards (those the run changed).

    - each mode's (``RunMode.features``: ``transaction_version`` for a run with transactions on
      a cluster with the feature);
    - ``eligible_leader_replicas`` (0 or 1): when the run sets it or loses power (what an election
      after the power loss may do depends on it)."""
    wanted: Features = {}
    for mode in modes.parts:
        wanted.update(mode.features(cluster.kafka_version))
    if (spec.eligible_leader_replicas is not None or spec.power_loss_replicas) and has_elr(cluster.kafka_version):
        level = None if spec.eligible_leader_replicas is None else int(spec.eligible_leader_replicas)
        wanted[ELIGIBLE_LEADER_REPLICAS] = ("eligible_leader_replicas", level)
    restore: dict[str, int] = {}
    if not wanted:
        return restore
    observer = cluster.observer()
    for feature, (key, level) in wanted.items():
        before = observer.feature_level(feature)
        have = before if level is None else level
        observer.set_feature_level(feature, have)  # waits until every broker reports it
        header[key] = have
        if have != before:
            restore[feature] = before
    return restore


def _restore_features(cluster: ClusterBackend, restore: Mapping[str, int], progress: Callable[[str], None]) -> None:
    """Give the cluster back the feature levels it had before the run; say so if it refuses."""
    for feature, level in restore.items():
        try:
            cluster.observer().set_feature_level(feature, level)
        except Exception as exc:  # noqa: BLE001 - the run's verdicts stand; the next run sets its own
            progress(f"{feature} not restored to {level}: {exc}")


def describe_nemesis(nemesis: Nemesis | None) -> NemesisRecord:
    """The nemesis as data for the manifest: its own record (``highwater.nemesis.scripted`` and
    ``scheduled`` carry one), else ``custom`` with the function's name (code: not replayable)."""
    if nemesis is None:
        return NemesisRecord("none")
    record = getattr(nemesis, "record", None)
    if isinstance(record, Mapping):
        return NemesisRecord.from_json(record)
    fn = getattr(nemesis, "play", nemesis)
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    return NemesisRecord("custom", name=name)


def run_seed(spec: RunSpec, nemesis: NemesisRecord) -> int | None:
    """The run's seed: ``spec.seed``, else the seeded schedule's. A ``spec.seed`` that differs
    from the schedule's is refused (the manifest would name a seed the faults did not come from)."""
    schedule_seed = nemesis.schedule.get("seed") if nemesis.schedule else None
    if spec.seed is not None and schedule_seed is not None and spec.seed != schedule_seed:
        raise HighwaterError(
            f"run seed {spec.seed} differs from the seed of its fault schedule ({schedule_seed}): "
            "generate the schedule from the run's seed"
        )
    return spec.seed if spec.seed is not None else schedule_seed if isinstance(schedule_seed, int) else None


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)
