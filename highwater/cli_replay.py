"""``highwater replay RUN_DIR``: run a recorded run again, from its manifest (``run.json``).

The replay starts a cluster of the recorded shape (backend, brokers, racks, controllers, broker
configuration, Kafka version), then calls ``execute_run`` with the recorded ``RunSpec`` (same
scenario, topic, workload, client, seed) and the recorded nemesis (the scripted steps, or the
seeded schedule, checked against the new cluster's topology), and writes a new run directory
under ``--results``/``--campaign`` (default ``replay-<original campaign>``); it prints where.
The new run's manifest says what it replays (``spec.extra.replay_of``) and its ``repro`` is this
command.

Refused, in one line, before any cluster starts: a manifest that is malformed or of an unknown
version, a run whose nemesis was code rather than data (``custom``: replay it with its own
``repro`` command) or was not recorded (an old run.json without a schedule), a run without a
recorded cluster shape, and an unknown client. Exit status (``highwater.exit_codes``): 0 valid,
1 violations, 3 unknown, 4 a refusal or a harness error.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from highwater import progress as live
from highwater.console import progress
from highwater.core.errors import HighwaterError
from highwater.core.manifest import NemesisRecord, RunManifest
from highwater.exit_codes import of_verdict
from highwater.faults.schedule import Schedule
from highwater.harness.backends import get_backend, start_backend
from highwater.harness.clients import get_driver
from highwater.harness.config import ClusterSpec
from highwater.nemesis import PlannedNemesis, Step, scheduled, scripted
from highwater.progress import add_progress_arg
from highwater.run_spec import RunSpec, run_spec_from_json
from highwater.runner import execute_run


class ReplayError(HighwaterError):
    """A recorded run that cannot be replayed (the message says why)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="re-run a recorded run from its manifest (run.json): same scenario, "
        "faults, Kafka version, cluster shape and client",
    )
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="a run directory (holding run.json), its run.json, or a scenario file a shrink wrote (highwater hunt)",
    )
    p.add_argument("--results", default="results", help="results root of the new run (default: results)")
    p.add_argument("--campaign", default=None, help="campaign of the new run (default: replay-<original campaign>)")
    add_progress_arg(p)
    p.set_defaults(func=cmd_replay)


@dataclass(frozen=True)
class ReplayPlan:
    """Everything a replay needs, derived from a manifest without touching the world."""

    backend: str
    cluster: ClusterSpec
    spec: RunSpec
    nemesis: PlannedNemesis | None
    schedule: Schedule | None


def nemesis_from_record(record: NemesisRecord) -> tuple[PlannedNemesis | None, Schedule | None]:
    """The recorded nemesis, playable again (and its schedule, to check against the topology)."""
    if record.kind == "none":
        return None, None
    if record.kind == "scripted":
        return scripted([Step(s.after, s.fault, s.duration, s.during) for s in record.steps]), None
    if record.kind == "scheduled" and record.schedule is not None:
        schedule = Schedule.from_dict(record.schedule)
        return scheduled(schedule), schedule
    if record.kind == "custom":
        raise ReplayError(f"its nemesis was code, not data ({record.name}): run it again with its repro command")
    raise ReplayError("its run.json predates recorded nemeses and holds no schedule: what faults ran is unknown")


def plan_replay(manifest: RunManifest, run_dir: Path, *, results_root: Path, campaign: str | None = None) -> ReplayPlan:
    """The cluster, spec and nemesis of a replay of ``manifest`` (recorded in ``run_dir``)."""
    try:
        nemesis, schedule = nemesis_from_record(manifest.nemesis)
    except ReplayError as exc:
        raise ReplayError(f"run {manifest.run_id} cannot be replayed: {exc}") from None
    shape = manifest.cluster
    if shape is None:
        raise ReplayError(f"run {manifest.run_id} cannot be replayed: its run.json records no cluster shape")
    if not manifest.spec:
        raise ReplayError(f"run {manifest.run_id} cannot be replayed: its run.json records no run spec")
    get_backend(shape.backend)  # an unknown backend: one line, before anything starts
    extra = dict(manifest.spec.get("extra") or {})
    extra["replay_of"] = {"run_id": manifest.run_id, "campaign": manifest.campaign, "dir": str(run_dir)}
    spec = run_spec_from_json(
        manifest.spec,
        campaign=campaign or f"replay-{manifest.campaign}",
        results_root=results_root,
        repro=f"highwater replay {run_dir}",
        extra=extra,
    )
    get_driver(spec.client)  # an unknown client: one line, before anything starts
    cluster = ClusterSpec(
        brokers=shape.brokers,
        racks=shape.racks,
        controllers=shape.controllers,
        kafka_version=manifest.kafka_version,
        broker_config=dict(shape.broker_config),
        disk=shape.disk,
        clock=shape.clock,
    )
    return ReplayPlan(shape.backend, cluster, spec, nemesis, schedule)


def cmd_replay(args: argparse.Namespace) -> int:
    return replay(Path(args.run_dir), results=Path(args.results), campaign=args.campaign, progress_mode=args.progress)


def replay(given: Path, *, results: Path, campaign: str | None, progress_mode: str) -> int:
    """Replay the run recorded at ``given`` (a run dir, its run.json, or a shrunk scenario file
    of ``highwater hunt``); the exit status of its verdict."""
    manifest = RunManifest.read(given)
    run_dir = given.parent if given.is_file() else given
    plan = plan_replay(manifest, run_dir, results_root=results, campaign=campaign)
    c = plan.cluster
    progress(
        f"replaying {manifest.campaign}/{manifest.run_id}: {manifest.suite}/{manifest.scenario}, "
        f"Kafka {c.kafka_version or '(default)'}, {c.brokers} brokers in {c.racks} racks"
        f"{f', {c.controllers} controllers' if c.controllers else ''}, client {plan.spec.client}, "
        f"nemesis {manifest.nemesis.kind}, seed {plan.spec.seed}"
    )
    cluster = start_backend(plan.backend, plan.cluster, progress)
    try:
        if plan.schedule is not None:
            plan.schedule.check_topology(cluster.topo)  # the same shape gives the same node names
        with live.using(live.for_stream(sys.stderr, progress_mode)):  # phases, faults, events/s
            result = execute_run(cluster, plan.spec, plan.nemesis, progress=progress)
    finally:
        cluster.stop()
    progress(f"replay of {manifest.run_id}: {result.valid}")
    print(result.dir, flush=True)
    return of_verdict(result.valid)
