"""A hunt: seeded draws (``highwater.hunt_draw``) played one after another on real clusters
through the runner, the same checks and the known findings as every run; a run with a new
violation is shrunk (``highwater.shrink``) on the same cluster, written as a scenario file that
``highwater replay`` (and ``highwater run``) take, played once on a second client (whose promise
is it: the broker's or the client's?) and drafted as a finding record (docs/hunting.md).

Where it writes (under ``<results>/<campaign>/``): the runs, as every run; ``hunt.json`` (what was
drawn and found, rewritten after every run, so an interrupted hunt says how far it got);
``shrunk/<run>.json`` (a scenario file: the smallest failing run's manifest, with the original
and shrunk schedules and the tries under ``spec.extra.shrunk``); ``findings-draft.toml`` (one
record per new violation, in the format of ``core/findings.toml``, for a person to check).

Clusters: one at a time, of the release the draw names; draws are played in blocks of
``BLOCK`` seeds grouped by release, so a hunt over several releases restarts a cluster once a
block, not once a run. Between runs the cluster is healed and checked healed (``heal``).
"""

from __future__ import annotations

import itertools
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from highwater.core.checks import CHECKS, TIMED_CHECKS
from highwater.core.errors import HighwaterError
from highwater.core.history import HistoryError, read_history
from highwater.core.manifest import RunManifest
from highwater.core.run_dir import RunDir
from highwater.faults.capability import refusal
from highwater.faults.schedule import Schedule
from highwater.faults.spec import FaultKind
from highwater.harness.backend import ClusterBackend, heal
from highwater.harness.backends import start_backend
from highwater.harness.clients import get_driver, transactions_refusal
from highwater.harness.clients.groups import group_protocol_refusal
from highwater.harness.clients.share import share_refusal
from highwater.harness.config import ClusterSpec
from highwater.harness.workload.plant import PLANT_KEY
from highwater.hunt_draw import Draw, HuntError, HuntSpace, draw, power_losses_at_once, schedule_for, schedule_length
from highwater.nemesis import scheduled, shortest_window, tail_seconds
from highwater.pytest_runs import Shard
from highwater.run_spec import RunSpec, run_settings
from highwater.runner import RunResult, execute_run
from highwater.shrink import Candidate, Outcome, ShrinkResult, shrink

log = logging.getLogger(__name__)

#: seeds drawn at once and played grouped by release
BLOCK = 4
#: the hunt's record and its findings draft, in the campaign's folder (a lane's: ``lane_file``)
HUNT_FILE = "hunt.json"
DRAFT_FILE = "findings-draft.toml"


def lane_file(name: str, lane: Shard | None) -> str:
    """``name`` for a whole hunt; ``hunt.lane-2-of-4.json`` for lane 2 of 4 of a spread one."""
    if lane is None:
        return name
    stem, dot, ext = name.partition(".")
    return f"{stem}.lane-{lane.index}-of-{lane.total}{dot}{ext}"


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """``data`` to ``path`` whole or not at all (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


@dataclass(frozen=True)
class HuntSettings:
    """One hunt: the space, the budget (``runs`` or ``minutes``; the first reached ends it), the
    first seed (run i plays seed ``seed + i``), shrinking, and the cluster's disks and clocks
    (lossy disks and faked clocks let disk and clock faults be drawn)."""

    space: HuntSpace
    seed: int = 1
    runs: int | None = None
    minutes: float | None = None
    results: Path = Path("results")
    campaign: str = "hunt"
    tries: int = 3
    shrink: bool = True
    shrink_runs: int = 24
    second_client: str | None = None  # None: another client of the space, if it has one
    disk: str = "plain"
    clock: str = "real"
    plant: str | None = None  # highwater's own tests only: harness.workload.plant
    #: one lane of a hunt spread over Spark (``highwater.hunt_spread``): lane I of N plays the
    #: seeds ``seed + I - 1``, then every N-th, and writes files of its own (``lane_file``)
    lane: Shard | None = None

    def seeds(self) -> Iterator[int]:
        """The seeds this hunt (or lane) plays, in order."""
        if self.lane is None:
            return itertools.count(self.seed)
        return itertools.count(self.seed + self.lane.index - 1, self.lane.total)

    def budget_left(self, done: int, started: float) -> bool:
        if self.runs is not None and done >= self.runs:
            return False
        return not (self.minutes is not None and time.monotonic() - started >= self.minutes * 60)


@dataclass
class HuntedRun:
    """What one drawn run gave."""

    draw: Draw
    run_dir: str
    run_class: str
    new: tuple[str, ...]
    findings: tuple[str, ...]
    faults: int
    shrunk: dict[str, Any] | None = None  # the shrink's summary and its scenario file
    #: the drawn faults' kinds, in schedule order, and how many of them could not be applied when
    #: their time came (the injector's ``fail`` events: no leader right now, no follower in the
    #: rack, no worker the target names): the run went on without them
    kinds: tuple[str, ...] = ()
    not_applied: int = 0
    #: a harness error that ended the run (or its shrink) before it was judged: the run is
    #: classed ``error``, its release's cluster is started anew and the hunt goes on
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "draw": self.draw.to_json(),
            "run_dir": self.run_dir,
            "class": self.run_class,
            "new": list(self.new),
            "findings": list(self.findings),
            "faults": self.faults,
            "shrunk": self.shrunk,
            "kinds": list(self.kinds),
            "not_applied": self.not_applied,
            **({"error": self.error} if self.error is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HuntedRun:
        """A run as ``to_json`` wrote it; ``HuntError`` (one line) for anything else."""
        try:
            return cls(
                Draw.from_json(data["draw"]),
                str(data["run_dir"]),
                str(data["class"]),
                tuple(data.get("new") or ()),
                tuple(data.get("findings") or ()),
                int(data.get("faults", 0)),
                data.get("shrunk"),
                tuple(str(k) for k in data.get("kinds") or ()),
                int(data.get("not_applied", 0)),
                None if data.get("error") is None else str(data["error"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HuntError(f"a hunt's run must have draw, run_dir and class: {exc}") from None


def faults_not_applied(history: Path) -> int:
    """How many of a run's faults could not be applied (the injector's ``fault`` ``fail``
    events, each with its reason in the history); 0, with a warning, for a history that cannot
    be read (the run's own verdict says so already)."""
    try:
        return sum(1 for e in read_history(history, lenient=True) if e.get("f") == "fault" and e.get("type") == "fail")
    except (HistoryError, OSError) as exc:
        log.warning("cannot count the faults not applied in %s: %s", history, exc)
        return 0


@dataclass
class HuntReport:
    """The hunt so far: every run, and what was found."""

    settings: HuntSettings
    runs: list[HuntedRun] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    @property
    def new(self) -> list[HuntedRun]:
        return [r for r in self.runs if r.new]

    @property
    def errors(self) -> list[HuntedRun]:
        """The runs a harness error ended (or whose shrink it ended)."""
        return [r for r in self.runs if r.error is not None]

    def line(self) -> str:
        classes: dict[str, int] = {}
        for r in self.runs:
            classes[r.run_class] = classes.get(r.run_class, 0) + 1
        found = "; ".join(f"{r.run_dir}: {', '.join(r.new)}" for r in self.new) or "no new violation"
        counts = ", ".join(f"{n} {c}" for c, n in sorted(classes.items())) or "no run"
        drawn, missed = sum(r.faults for r in self.runs), sum(r.not_applied for r in self.runs)
        faults = f"{drawn} fault(s) drawn" + (f", {missed} of them not applied" if missed else "")
        errors = (
            f"; {len(self.errors)} harness error(s): seed(s) " + ", ".join(str(r.draw.seed) for r in self.errors)
            if self.errors
            else ""
        )
        return f"hunt: {len(self.runs)} run(s) ({counts}); {faults}; {found}{errors}"

    def to_json(self) -> dict[str, Any]:
        s = self.settings
        return {
            "format": "highwater.hunt/1",
            "space": {
                "releases": list(s.space.releases),
                "clients": list(s.space.clients),
                "workloads": list(s.space.workloads),
                "seconds": s.space.seconds,
            },
            "first_seed": s.seed,
            **({"lane": str(s.lane)} if s.lane is not None else {}),
            "tries": s.tries,
            "runs": [r.to_json() for r in self.runs],
            "refused": self.refused,
            "line": self.line(),
        }


def supports(release: str, client: str) -> tuple[str, ...]:
    """The workloads (and ``group-consumer``: KIP-848's protocol) ``client`` can run on
    ``release``, from the refusals the runner itself applies."""
    driver = get_driver(client)
    out = ["plain", "group"]
    if transactions_refusal(driver.name, driver.version) is None:
        out += ["transactional", "copy"]
    if group_protocol_refusal(driver.name, driver.version, release, "consumer", None) is None:
        out.append("group-consumer")
    if share_refusal(driver.name, driver.version, release) is None:
        out.append("share")
    return tuple(out)


def plays(d: Draw, client: str) -> bool:
    """Whether ``client`` can run draw ``d``'s workload, with its group protocol, on its release."""
    able = supports(d.release, client)
    if d.workload not in able:
        return False
    return d.settings.get("group_protocol") != "consumer" or "group-consumer" in able


def applicable_kinds(cluster: ClusterBackend) -> tuple[str, ...]:
    """The fault kinds ``cluster`` can apply (its backend's capabilities and its disks and clocks)."""
    return tuple(k.value for k in FaultKind if refusal(cluster, [k]) is None)


class _Clusters:
    """One cluster at a time, of the release asked for; stopped when another is asked for or at
    the end (``close``)."""

    def __init__(self, settings: HuntSettings, progress: Callable[[str], None]) -> None:
        self.settings, self.progress = settings, progress
        self.release: str | None = None
        self.cluster: ClusterBackend | None = None

    def get(self, release: str) -> ClusterBackend:
        if self.cluster is not None and self.release == release:
            heal(self.cluster)
            return self.cluster
        self.close()
        spec = ClusterSpec(kafka_version=release, disk=self.settings.disk, clock=self.settings.clock)
        self.cluster, self.release = start_backend("local", spec, self.progress), release
        return self.cluster

    def close(self, collect_logs_to: Path | None = None) -> None:
        cluster, self.cluster, self.release = self.cluster, None, None
        if cluster is not None:
            cluster.stop(collect_logs_to=collect_logs_to)

    def discard(self, collect_logs_to: Path | None = None) -> None:
        """Stop the cluster after a harness error, its logs copied to ``collect_logs_to``; a stop
        that fails too is logged (its processes are the next start's to reap), so the hunt goes on."""
        try:
            self.close(collect_logs_to)
        except (HighwaterError, OSError) as exc:
            log.warning("stopping the cluster after a harness error failed: %s", exc)


def hunt_topic(d: Draw) -> str:
    """The topic of draw ``d``'s run: from its seed, so the schedule drawn with the topic's
    targets is the seed's alone (each hunt starts its own clusters: no topic is there before)."""
    return f"hunt-{d.seed}"


def _try_topic(d: Draw) -> str:
    """A topic of its own for one try of a shrink (its schedule retargeted to it)."""
    return f"hunt-{d.seed}-try-{uuid.uuid4().hex[:6]}"


def spec_of(d: Draw, settings: HuntSettings, topic: str, duration: float, power_loss_replicas: int = 0) -> RunSpec:
    """The run spec of draw ``d`` (its settings, its topic, the hunt's results and campaign);
    ``power_loss_replicas``: the brokers its schedule's power losses may take at once
    (``hunt_draw.power_losses_at_once``)."""
    fields = dict(d.settings)
    extra: dict[str, Any] = {"hunt": d.to_json()}
    if settings.plant:
        extra[PLANT_KEY] = {"skip_under": settings.plant}
    return RunSpec(
        suite="hunt",
        scenario=d.scenario,
        campaign=settings.campaign,
        results_root=settings.results,
        topic=topic,
        client=d.client,
        duration=duration,
        settle_timeout=90.0,
        seed=d.schedule_seed,
        repro="highwater replay RUN_DIR (this run's directory)",
        power_loss_replicas=power_loss_replicas,
        extra=extra,
        **fields,
    )


def retargeted(schedule: Schedule, old_topic: str, new_topic: str) -> Schedule:
    """The schedule with its topic's name (in leader, follower and group targets) changed: every
    try of a shrink writes a topic of its own, and the schedule names the topic it was drawn for
    (the names are unique tokens, so a textual replacement changes nothing else)."""
    return Schedule.from_json(schedule.to_json().replace(old_topic, new_topic))


def _bounds(cluster: ClusterBackend) -> tuple[float, float]:
    from highwater.core.checks.bounds import derive

    b = derive(run_settings(cluster.spec.brokers, cluster.spec.broker_config, 1.0))
    return float(shortest_window(b)), float(tail_seconds(b))


def target_check(new: Iterable[str]) -> str:
    """The check a shrink keeps failing: the first new one in report order that judges what was
    read and written, else the first timed one (a lost record outranks a slow one)."""
    ranked = sorted(new, key=lambda c: (c in TIMED_CHECKS, list(CHECKS).index(c) if c in CHECKS else len(CHECKS), c))
    return ranked[0]


def _outcome(result: RunResult) -> Outcome:
    return Outcome(frozenset(result.classification.new), str(result.dir))


class Hunter:
    """Plays a hunt (``run``) and shrinks what it finds; ``progress`` hears every step."""

    def __init__(self, settings: HuntSettings, progress: Callable[[str], None]) -> None:
        self.settings, self.progress = settings, progress
        self.out = settings.results / settings.campaign
        self.report = HuntReport(settings)

    def run(self) -> HuntReport:
        started = time.monotonic()
        clusters = _Clusters(self.settings, self.progress)
        seed_iter = self.settings.seeds()
        try:
            while self.settings.budget_left(len(self.report.runs), started):
                block = [draw(self.settings.space, next(seed_iter), supports) for _ in range(BLOCK)]
                for d in sorted(block, key=lambda d: (d.release, d.seed)):
                    if not self.settings.budget_left(len(self.report.runs), started):
                        break
                    try:
                        self._play(clusters.get(d.release), d)
                    except (HighwaterError, OSError) as exc:
                        run_dir = self._harness_error(d, exc)
                        # a broker may be down for good: the next run starts anew, and the
                        # cluster's logs (why it would not start) stay with the run
                        clusters.discard(RunDir(Path(run_dir)).logs if run_dir else None)
                    self._write()
        finally:
            clusters.close()
            self._write()
        return self.report

    def _harness_error(self, d: Draw, exc: HighwaterError | OSError) -> str:
        """A harness error ended draw ``d``'s run or its shrink (a broker that would not start
        again after a heal, a cluster that would not start): recorded on the run, which is
        classed ``error`` unless it was judged already (then only its shrink ended), and said.
        Returns the run's folder ("" when it got none)."""
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        last = self.report.runs[-1] if self.report.runs else None
        if last is not None and last.draw.seed == d.seed and last.error is None:
            last.error = text  # judged, then its shrink ended: the verdict stands
            run_dir = last.run_dir
        else:
            begun = sorted(self.out.glob(f"*-{d.seed}-*"))  # the run's folder, if it got that far
            run_dir = str(begun[-1]) if begun else ""
            self.report.runs.append(HuntedRun(d, run_dir, "error", (), (), 0, error=text))
        kept = f"; the cluster's logs in {RunDir(Path(run_dir)).logs}" if run_dir else ""
        self.progress(
            f"hunt seed {d.seed}: harness error ({text}){kept}; the cluster is started anew, the hunt goes on"
        )
        return run_dir

    def _play(self, cluster: ClusterBackend, d: Draw) -> None:
        shortest, tail = _bounds(cluster)
        length = schedule_length(self.settings.space, shortest, tail)
        topic = hunt_topic(d)
        group = f"{topic}-group" if d.settings.get("consumer_mode") == "subscribe" else None
        schedule = schedule_for(
            d, cluster.topo, applicable_kinds(cluster), topic=topic, length=length, shortest=shortest, group=group
        )
        spec = spec_of(
            d, self.settings, topic, self.settings.space.seconds, power_losses_at_once(schedule.faults, cluster.topo)
        )
        self.progress(
            f"hunt seed {d.seed}: Kafka {d.release}, {d.client}, {d.workload}, {len(schedule.faults)} fault(s): "
            + ", ".join(f.spec.kind.value for f in schedule.faults)
        )
        result = execute_run(cluster, spec, scheduled(schedule), progress=self.progress)
        c = result.classification
        hunted = HuntedRun(
            d,
            str(result.dir),
            c.run_class,
            tuple(c.new),
            c.findings,
            len(schedule.faults),
            kinds=tuple(f.spec.kind.value for f in schedule.faults),
            not_applied=faults_not_applied(RunDir(result.dir).history),
        )
        self.report.runs.append(hunted)
        self.progress(f"hunt seed {d.seed}: {c.run_class}{': new ' + ', '.join(c.new) if c.new else ''}")
        if c.new and self.settings.shrink:
            hunted.shrunk = self._shrink(cluster, d, spec, schedule, result, shortest, tail)

    def _shrink(
        self,
        cluster: ClusterBackend,
        d: Draw,
        spec: RunSpec,
        schedule: Schedule,
        result: RunResult,
        shortest: float,
        tail: float,
    ) -> dict[str, Any]:
        check = target_check(result.classification.new)
        original = Candidate(schedule.faults, spec.producers, spec.rate)

        def attempt(c: Candidate, client: str | None = None) -> Outcome:
            heal(cluster)
            topic = _try_topic(d)
            tried = retargeted(replace(schedule, faults=c.faults), spec.topic, topic)
            run = replace(
                spec,
                topic=topic,
                producers=c.producers,
                rate=c.rate,
                duration=max(c.end + tail, shortest + tail),
                client=client or spec.client,
                power_loss_replicas=power_losses_at_once(tried.faults, cluster.topo),
                extra={**spec.extra, "shrinking": str(result.dir)},
            )
            return _outcome(execute_run(cluster, run, scheduled(tried), progress=self.progress))

        found = shrink(
            original,
            check,
            attempt,
            tries=self.settings.tries,
            shortest=shortest,
            max_runs=self.settings.shrink_runs,
            seen=_outcome(result),
            say=self.progress,
        )
        self.progress(f"hunt seed {d.seed}: shrunk {found.line()}")
        summary: dict[str, Any] = {"result": found.to_json()}
        if not found.reproduced or found.final_trial is None:
            return summary
        scenario = self._scenario_file(found, schedule, spec)
        summary["scenario"] = str(scenario)
        second = self._second_client(d)
        if second is not None:
            try:
                outcome = attempt(found.shrunk, second)
            except HighwaterError as exc:  # refused for that client after all: the draft says so
                summary["second_client"] = {"client": second, "refused": str(exc)}
                self.progress(f"hunt seed {d.seed}: the shrunk schedule on {second} was refused: {exc}")
            else:
                summary["second_client"] = {"client": second, "new": sorted(outcome.new), "run_dir": outcome.run_dir}
                self.progress(
                    f"hunt seed {d.seed}: the shrunk schedule on {second}: "
                    + (f"{check} again (the broker's?)" if check in outcome.new else f"no {check} (the client's?)")
                )
        self._draft(d, found, summary, scenario)
        return summary

    def _second_client(self, d: Draw) -> str | None:
        """The client that plays a shrunk schedule again: ``--second-client`` or the first other
        client of the space, if it can run the draw's workload on its release (a share draw has
        no second client on kafka-python); None when none can."""
        if self.settings.second_client is not None:
            candidates = [self.settings.second_client] if self.settings.second_client else []
        else:
            candidates = [c for c in self.settings.space.clients if c != d.client]
        for client in candidates:
            if plays(d, client):
                return client
            self.progress(f"hunt seed {d.seed}: {client} cannot run a {d.workload} workload on Kafka {d.release}")
        return None

    def _scenario_file(self, found: ShrinkResult, schedule: Schedule, spec: RunSpec) -> Path:
        """The smallest failing run's manifest as a scenario file, with how it was shrunk."""
        failing = found.final_trial.failing_run if found.final_trial else ""
        manifest = RunManifest.read(Path(failing))
        data = manifest.to_json()
        extra = data["spec"].setdefault("extra", {})
        extra["shrunk"] = {
            "check": found.check,
            "failed": found.final_trial.failed if found.final_trial else 0,
            "tries": found.final_trial.tries if found.final_trial else 0,
            "original_run": str(found.original_trial.failing_run),
            "original": {"schedule": schedule.to_dict(), **found.original.to_json()},
            "shrunk": found.shrunk.to_json(),
        }
        path = self.out / "shrunk" / f"{manifest.run_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        self.progress(f"scenario file: {path} (highwater replay {path})")
        return path

    def _draft(self, d: Draw, found: ShrinkResult, summary: dict[str, Any], scenario: Path) -> None:
        second: dict[str, Any] | None = summary.get("second_client")
        both = second is not None and found.check in second["new"]
        component = "broker (seen on two clients)" if both else f"client: {d.client} (or broker; one client seen)"
        final = found.final_trial
        record = {
            "id": f"HW-DRAFT-{d.seed}",
            "component": component,
            "what": f"{found.check} says no under {found.shrunk.describe()}",
            "seen": f"Kafka {d.release}; {d.client}"
            + (f"; {second['client']}: {'the same' if both else 'not seen'}" if second else ""),
            "status": f"draft from a hunt; the shrunk run failed {final.failed if final else 0} of "
            f"{final.tries if final else 0} tries",
            "repro": f"`highwater replay {scenario}`",
            "reason": f"FINDING HW-DRAFT-{d.seed}: a hunt's {found.check} (see {scenario})",
        }
        lines = ["[[finding]]"] + [f"{k} = {json.dumps(v)}" for k, v in record.items()]
        path = self.out / lane_file(DRAFT_FILE, self.settings.lane)
        with path.open("a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n\n")
        summary["draft"] = str(path)

    def _write(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / lane_file(HUNT_FILE, self.settings.lane), self.report.to_json())
