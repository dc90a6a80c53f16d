"""The run manifest (``run.json``), format ``highwater.run/1``: one versioned dataclass, written
by the runner (``highwater.runner.execute_run``) and read by the reports through the same type,
so writer and reader cannot drift apart.

A manifest says what ran (suite, scenario, campaign, Kafka version, client, the cluster's shape
and broker configuration, the run's spec), what was done to it (the nemesis *as data*: the
scripted steps or the seeded schedule, so ``highwater replay`` can run it again), when (start
and end, ISO 8601 UTC), what came out (client bytes per rack and broker, worker stats, the
overall verdict) and how to reproduce it (``repro``).

The runner writes it twice: at the start (``valid``, ``ended_at``, ``client_bytes`` and
``stats`` still null) and once the checks are done. :meth:`RunManifest.from_json` raises one
:class:`ManifestError` for a malformed manifest or an unknown version.

Older ``run.json`` files (no ``format`` key; the campaign store only grows) are read by
:meth:`RunManifest.from_legacy`: the untyped dict the runner used to write (``started_at`` as
epoch seconds, the chaos schedule under ``spec.extra.schedule``) and the hand-written ones of
older tools (``started_at`` as an ISO string, a top-level ``schedule``, any key missing). What
they did not record stays null; their nemesis is ``scheduled`` when a schedule was stored,
otherwise ``unrecorded`` (not replayable).

Ground floor: this module imports nothing that touches the world (no ``faults``, no
``highwater``); the schedule is kept as the JSON of ``faults.schedule.Schedule.to_dict``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from highwater.core.errors import HighwaterError
from highwater.core.run_dir import RunDir

FORMAT = "highwater.run/1"
FORMAT_PREFIX = "highwater.run/"
#: the nemesis kinds: none, scripted steps, a seeded schedule, code (not data: not replayable),
#: or nothing recorded (a legacy manifest)
NEMESIS_KINDS = ("none", "scripted", "scheduled", "custom", "unrecorded")
REPLAYABLE = ("none", "scripted", "scheduled")


class ManifestError(HighwaterError, ValueError):
    """A run.json that is not a readable ``highwater.run/1`` manifest."""


def iso_utc(epoch_seconds: float) -> str:
    """``2026-01-31T12:00:00Z``: the manifest's (and the report's) time format."""
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_iso(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ManifestError(f"'{name}' must be an ISO 8601 time string or null, got {value!r}")
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ManifestError(f"'{name}' is not an ISO 8601 time: {value!r}") from None
    return value


def _obj(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ManifestError(f"'{name}' must be an object, got {type(value).__name__}")
    return dict(value)


def _str_map(value: Any, name: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in _obj(value, name).items()}


def _opt_str(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ManifestError(f"'{name}' must be a string or null, got {value!r}")
    return value


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ManifestError(f"'{name}' must be an integer, got {value!r}")
    return value


def _only(data: Mapping[str, Any], cls: type, where: str) -> None:
    unknown = set(data) - {f.name for f in fields(cls)}
    if unknown:
        raise ManifestError(f"unknown field(s) in {where}: {', '.join(sorted(unknown))}")


@dataclass(frozen=True)
class ClusterShape:
    """What cluster the run had: enough to start one like it (``highwater replay``)."""

    backend: str = "local"
    brokers: int = 3
    racks: int = 3
    controllers: int = 0  # 0: combined broker+controller nodes
    broker_config: dict[str, str] = field(default_factory=dict)  # overrides of the defaults
    disk: str = "plain"  # "lossy": the nodes' logs on lossyfs (disk faults); manifests before it: plain
    clock: str = "real"  # "faked": the nodes' clocks through libfaketime (clock faults)

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "brokers": self.brokers,
            "racks": self.racks,
            "controllers": self.controllers,
            "broker_config": dict(self.broker_config),
            "disk": self.disk,
            "clock": self.clock,
        }

    @classmethod
    def from_json(cls, data: Any) -> ClusterShape:
        d = _obj(data, "cluster")
        _only(d, cls, "cluster")
        return cls(
            backend=str(d.get("backend") or "local"),
            brokers=_int(d.get("brokers", 3), "cluster.brokers"),
            racks=_int(d.get("racks", 3), "cluster.racks"),
            controllers=_int(d.get("controllers", 0), "cluster.controllers"),
            broker_config=_str_map(d.get("broker_config") or {}, "cluster.broker_config"),
            disk=str(d.get("disk") or "plain"),
            clock=str(d.get("clock") or "real"),
        )


@dataclass(frozen=True)
class Racks:
    """Which rack each broker is in (by id, as a string) and each consumer reads from."""

    brokers: dict[str, str] = field(default_factory=dict)
    clients: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"brokers": dict(self.brokers), "clients": dict(self.clients)}

    @classmethod
    def from_json(cls, data: Any) -> Racks:
        d = _obj(data or {}, "racks")
        _only(d, cls, "racks")
        return cls(_str_map(d.get("brokers") or {}, "racks.brokers"), _str_map(d.get("clients") or {}, "racks.clients"))


@dataclass(frozen=True)
class ScriptedStep:
    """``highwater.nemesis.Step`` as data: calm, the fault (CLI syntax, with placeholders), held."""

    after: float
    fault: str
    duration: float
    during: bool = False  # started ``after`` s after the previous step's fault, while it is on

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"after": self.after, "fault": self.fault, "duration": self.duration}
        if self.during:  # left out otherwise: records from before it read the same
            out["during"] = True
        return out

    @classmethod
    def from_json(cls, data: Any) -> ScriptedStep:
        d = _obj(data, "nemesis.steps[]")
        try:
            during = d.get("during", False)
            if not isinstance(during, bool):
                raise ValueError(f"'during' must be true or false, got {during!r}")
            return cls(float(d["after"]), str(d["fault"]), float(d["duration"]), during)
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"malformed scripted step {d!r}: {exc!r}") from None


@dataclass(frozen=True)
class NemesisRecord:
    """What the nemesis did, as data. ``scripted``: ``steps``; ``scheduled``: ``schedule`` (the
    JSON of ``faults.schedule.Schedule``, format ``highwater.schedule/1``); ``custom``: code,
    named by ``name``, not replayable; ``none``: no faults; ``unrecorded``: a legacy manifest."""

    kind: str = "none"
    steps: tuple[ScriptedStep, ...] = ()
    schedule: dict[str, Any] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in NEMESIS_KINDS:
            raise ManifestError(f"unknown nemesis kind {self.kind!r} (known: {', '.join(NEMESIS_KINDS)})")
        if self.kind == "scheduled" and not isinstance(self.schedule, dict):
            raise ManifestError("a scheduled nemesis needs its 'schedule' object")

    @property
    def replayable(self) -> bool:
        return self.kind in REPLAYABLE

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "scripted":
            out["steps"] = [s.to_json() for s in self.steps]
        if self.schedule is not None:
            out["schedule"] = self.schedule
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_json(cls, data: Any) -> NemesisRecord:
        d = _obj(data if data is not None else {"kind": "none"}, "nemesis")
        _only(d, cls, "nemesis")
        steps = d.get("steps") or []
        if not isinstance(steps, list):
            raise ManifestError(f"'nemesis.steps' must be an array, got {type(steps).__name__}")
        schedule = d.get("schedule")
        if schedule is not None and not isinstance(schedule, dict):
            raise ManifestError(f"'nemesis.schedule' must be an object, got {type(schedule).__name__}")
        return cls(
            str(d.get("kind", "none")),
            tuple(ScriptedStep.from_json(s) for s in steps),
            schedule,
            _opt_str(d.get("name"), "nemesis.name"),
        )


@dataclass(frozen=True)
class RunStats:
    """What the workers did: per producer ``{"sent", "acked"}``, records read per consumer, the
    error of every worker that died (its repr), and the seconds each phase of the run took
    (``phases``: ``setup``, ``workload``, ``heal``, ``settle``, ``final_read``, ``checks``; what
    sweeps spend their time on, read by ``benchmarks/run_phases.py``)."""

    producers: dict[str, dict[str, int]] = field(default_factory=dict)
    consumers: dict[str, int] = field(default_factory=dict)
    worker_errors: dict[str, str] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "producers": {k: dict(v) for k, v in self.producers.items()},
            "consumers": dict(self.consumers),
            "worker_errors": dict(self.worker_errors),
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
        }

    @classmethod
    def from_json(cls, data: Any) -> RunStats:
        d = _obj(data, "stats")
        _only(d, cls, "stats")
        try:
            producers = {
                str(k): {str(a): int(b) for a, b in _obj(v, f"stats.producers.{k}").items()}
                for k, v in _obj(d.get("producers") or {}, "stats.producers").items()
            }
            consumers = {str(k): int(v) for k, v in _obj(d.get("consumers") or {}, "stats.consumers").items()}
            phases = {str(k): float(v) for k, v in _obj(d.get("phases") or {}, "stats.phases").items()}
        except (TypeError, ValueError) as exc:
            raise ManifestError(f"malformed stats: {exc}") from None
        return cls(producers, consumers, _str_map(d.get("worker_errors") or {}, "stats.worker_errors"), phases)


#: client rack -> broker id (a string) -> bytes the broker sent to that rack's clients
ClientBytes = dict[str, dict[str, int]]


def _client_bytes(data: Any) -> ClientBytes | None:
    if data is None:
        return None
    try:
        return {
            str(rack): {str(b): int(n) for b, n in _obj(per, f"client_bytes.{rack}").items()}
            for rack, per in _obj(data, "client_bytes").items()
        }
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"malformed client_bytes: {exc}") from None


def _valid(value: Any) -> bool | str | None:
    if value is None or isinstance(value, bool) or value in ("unknown", "not-applicable"):
        return value
    raise ManifestError(f"'valid' must be true, false, \"unknown\" or null, got {value!r}")


@dataclass(frozen=True)
class RunManifest:
    """One run's ``run.json``. ``spec`` is the run's ``highwater.run_spec.RunSpec`` as JSON
    (paths as strings); ``config`` is the history header's config (what the policy reads and
    the timed checks' bounds); ``client`` is the client's label (``kafka-python 2.2.3``) and
    ``spec["client"]`` its driver name."""

    run_id: str
    suite: str
    scenario: str
    campaign: str = "adhoc"
    kafka_version: str | None = None
    client: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    repro: str | None = None
    started_at: str | None = None  # ISO 8601 UTC
    ended_at: str | None = None
    python: str | None = None
    cluster: ClusterShape | None = None
    racks: Racks = field(default_factory=Racks)
    spec: dict[str, Any] = field(default_factory=dict)
    nemesis: NemesisRecord = field(default_factory=NemesisRecord)
    client_bytes: ClientBytes | None = None
    stats: RunStats | None = None
    valid: bool | str | None = None  # null until the checks ran
    #: the run's class against the known findings (``highwater.core.findings.Classification``
    #: as JSON: class, known, new, fixed); null until the checks ran, or from an older run
    findings: dict[str, Any] | None = None
    format: str = FORMAT
    #: read from a manifest older than ``highwater.run/1`` (never written)
    legacy: bool = field(default=False, compare=False)

    # -- views ----------------------------------------------------------------------------------
    @property
    def schedule(self) -> dict[str, Any] | None:
        """The seeded schedule's JSON, when the nemesis was a schedule."""
        return self.nemesis.schedule

    @property
    def client_name(self) -> str | None:
        """The client's driver name (``--client``), from the spec."""
        c = self.spec.get("client")
        return c if isinstance(c, str) else None

    # -- JSON -----------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "run_id": self.run_id,
            "suite": self.suite,
            "scenario": self.scenario,
            "campaign": self.campaign,
            "kafka_version": self.kafka_version,
            "client": self.client,
            "config": dict(self.config),
            "seed": self.seed,
            "repro": self.repro,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "python": self.python,
            "cluster": self.cluster.to_json() if self.cluster else None,
            "racks": self.racks.to_json(),
            "spec": dict(self.spec),
            "nemesis": self.nemesis.to_json(),
            "client_bytes": self.client_bytes,
            "stats": self.stats.to_json() if self.stats else None,
            "valid": self.valid,
            "findings": self.findings,
        }

    @classmethod
    def from_json(cls, data: Any) -> RunManifest:
        """A manifest from its JSON object; legacy (format-less) manifests are converted (see the
        module doc). One ``ManifestError`` for anything else that is wrong."""
        if not isinstance(data, Mapping):
            raise ManifestError(f"a run manifest must be a JSON object, got {type(data).__name__}")
        fmt = data.get("format")
        if fmt is None:
            return cls.from_legacy(data)
        if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
            raise ManifestError(f"not a highwater run manifest (format={fmt!r}, expected {FORMAT!r})")
        if fmt != FORMAT:
            raise ManifestError(f"unsupported run manifest version {fmt!r}; this reader reads {FORMAT!r}")
        unknown = set(data) - {f.name for f in fields(cls)} - {"legacy"}
        if unknown:
            raise ManifestError(f"unknown field(s) in a {FORMAT} manifest: {', '.join(sorted(unknown))}")
        missing = [k for k in ("run_id", "suite", "scenario") if not isinstance(data.get(k), str) or not data[k]]
        if missing:
            raise ManifestError(f"manifest lacks {', '.join(missing)} (non-empty strings)")
        seed = data.get("seed")
        if seed is not None:
            seed = _int(seed, "seed")
        return cls(
            run_id=data["run_id"],
            suite=data["suite"],
            scenario=data["scenario"],
            campaign=str(data.get("campaign") or "adhoc"),
            kafka_version=_opt_str(data.get("kafka_version"), "kafka_version"),
            client=_opt_str(data.get("client"), "client"),
            config=_obj(data.get("config") or {}, "config"),
            seed=seed,
            repro=_opt_str(data.get("repro"), "repro"),
            started_at=_check_iso(data.get("started_at"), "started_at"),
            ended_at=_check_iso(data.get("ended_at"), "ended_at"),
            python=_opt_str(data.get("python"), "python"),
            cluster=ClusterShape.from_json(data["cluster"]) if data.get("cluster") is not None else None,
            racks=Racks.from_json(data.get("racks")),
            spec=_obj(data.get("spec") or {}, "spec"),
            nemesis=NemesisRecord.from_json(data.get("nemesis")),
            client_bytes=_client_bytes(data.get("client_bytes")),
            stats=RunStats.from_json(data["stats"]) if data.get("stats") is not None else None,
            valid=_valid(data.get("valid")),
            findings=_obj(data["findings"], "findings") if data.get("findings") is not None else None,
            format=fmt,
        )

    @classmethod
    def from_legacy(cls, data: Mapping[str, Any], *, run_id: str | None = None) -> RunManifest:
        """A format-less ``run.json`` (see the module doc), leniently: a field of the wrong type
        is dropped, never guessed; missing names fall back to ``run_id`` / ``default``."""

        def s(key: str) -> str | None:
            v = data.get(key)
            return v if isinstance(v, str) and v else None

        raw_spec = data.get("spec")
        spec: dict[str, Any] = dict(raw_spec) if isinstance(raw_spec, Mapping) else {}
        raw_extra = spec.get("extra")
        extra: Mapping[str, Any] = raw_extra if isinstance(raw_extra, Mapping) else {}
        schedule = data.get("schedule") if isinstance(data.get("schedule"), Mapping) else extra.get("schedule")
        nemesis = (
            NemesisRecord("scheduled", schedule=dict(schedule))
            if isinstance(schedule, Mapping)
            else NemesisRecord("unrecorded")
        )
        started = data.get("started_at")
        started_at = (
            iso_utc(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else s("started_at")
        )
        ended = data.get("ended_at")
        ended_at = iso_utc(ended) if isinstance(ended, (int, float)) and not isinstance(ended, bool) else s("ended_at")
        seed = data.get("seed")

        def soft(build: Any, value: Any) -> Any:
            try:
                return build(value)
            except ManifestError:
                return None

        cluster = None
        if isinstance(data.get("cluster"), Mapping):
            c = {k: v for k, v in data["cluster"].items() if k in {f.name for f in fields(ClusterShape)}}
            cluster = soft(ClusterShape.from_json, c)
        valid = data.get("valid")
        return cls(
            run_id=s("run_id") or run_id or "unknown",
            suite=s("suite") or "default",
            scenario=s("scenario") or "default",
            campaign=s("campaign") or "adhoc",
            kafka_version=s("kafka_version"),
            client=s("client"),
            config=dict(data["config"]) if isinstance(data.get("config"), Mapping) else {},
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            repro=s("repro"),
            started_at=started_at,
            ended_at=ended_at,
            python=s("python"),
            cluster=cluster,
            racks=soft(Racks.from_json, data.get("racks")) or Racks(),
            spec=dict(spec),
            nemesis=nemesis,
            client_bytes=soft(_client_bytes, data.get("client_bytes")),
            stats=soft(RunStats.from_json, data.get("stats")) if isinstance(data.get("stats"), Mapping) else None,
            valid=valid if valid is None or isinstance(valid, bool) or valid == "unknown" else None,
            legacy=True,
        )

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, default=str)

    def write(self, path: Path) -> None:
        """Atomically: a reader sees the old manifest or the new one, never half of one."""
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        tmp.write_text(self.dumps(), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> RunManifest:
        """The manifest at ``path`` (a run.json or the run dir holding it); one ``ManifestError``
        naming the file when it is missing, not JSON, malformed or of an unknown version."""
        p = RunDir(path).run_json if path.is_dir() else path
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ManifestError(f"{p}: no run manifest there") from None
        except (OSError, ValueError) as exc:
            raise ManifestError(f"{p}: not readable as JSON ({exc})") from None
        try:
            if isinstance(data, Mapping) and data.get("format") is None:
                return cls.from_legacy(data, run_id=p.parent.name)
            return cls.from_json(data)
        except ManifestError as exc:
            raise ManifestError(f"{p}: {exc}") from None
