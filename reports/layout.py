"""Finding runs under a results directory and reading their small files.

A run is a directory ``<results>/<campaign>/<run_id>/`` holding at least one of
``history.jsonl``, ``history.parquet``, ``verdict.json`` or ``run.json``. Everything here is
lenient on purpose: a report over a nightly store must not die because one run crashed
half-way (no verdict.json, a truncated history); such a run shows up as "unknown" with the
reason, never as passing.

``run.json`` is the run manifest, read through the type the runner writes it with
(``core.manifest.RunManifest``, format ``highwater.run/1``); older, format-less run.json files
are converted by ``RunManifest.from_legacy`` (epoch ``started_at`` becomes ISO, a schedule under
``spec.extra`` or at the top becomes the nemesis). A run.json that is malformed or of an unknown
version is a problem of the run (shown, never fatal). What the manifest lacks falls back to the
history header, then to a placeholder; a missing start time to the oldest run file's mtime.

``verdict.json`` is what ``highwater check --json`` prints: ``{"valid", "verdicts": [...]}``
(a bare list of verdicts is accepted too).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from highwater.core.history import HistoryError, read_history, to_parquet
from highwater.core.manifest import ManifestError, RunManifest, iso_utc
from highwater.core.run_dir import HISTORY_FILES, RUN_FILES, RunDir

log = logging.getLogger(__name__)


@dataclass
class RunInfo:
    """What the report knows about one run before Spark looks at its history."""

    key: int  # dense integer id used inside Spark (cheaper to shuffle than strings)
    campaign: str
    run_id: str
    path: Path
    suite: str = "default"
    scenario: str = "default"
    kafka_version: str = "?"
    client: str = "?"
    config: dict[str, Any] = field(default_factory=dict)
    seed: Any = None
    repro: str | None = None
    started_at: str | None = None
    header: dict[str, Any] = field(default_factory=dict)
    manifest: RunManifest | None = None  # None: no run.json, or an unreadable one (see problems)
    verdicts: list[dict[str, Any]] | None = None  # from verdict.json; None when absent
    parquet: Path | None = None  # the history as Parquet, once available
    problems: list[str] = field(default_factory=list)  # why parts of this run are unknown

    @property
    def label(self) -> str:
        return f"{self.campaign}/{self.run_id}"

    @property
    def combo(self) -> tuple[str, str, str, str]:
        """The matrix column this run belongs to."""
        return (f"{self.suite}/{self.scenario}", self.kafka_version, self.client, self.campaign)

    @property
    def racks(self) -> dict[str, dict[str, str]]:
        if self.manifest is not None and (self.manifest.racks.brokers or self.manifest.racks.clients):
            return self.manifest.racks.to_json()
        r = self.header.get("racks") or {}
        return r if isinstance(r, dict) else {}

    @property
    def schedule(self) -> dict[str, Any] | None:
        """The seeded fault schedule's JSON, when the run's nemesis was one."""
        return self.manifest.schedule if self.manifest is not None else None

    @property
    def nemesis(self) -> dict[str, Any] | None:
        """The nemesis as recorded (``NemesisRecord`` JSON: kind, steps or schedule)."""
        return self.manifest.nemesis.to_json() if self.manifest is not None else None

    @property
    def client_bytes(self) -> dict[str, dict[str, int]] | None:
        return self.manifest.client_bytes if self.manifest is not None else None

    def measures(self, name: str) -> dict[str, Any] | None:
        """The run's measures file ``name`` (``core.run_dir``'s ``GROUP_MEASURES``, ...) as a JSON
        object; None when the run has none, or an unreadable one (said in ``problems``)."""
        data = _read_json(self.path / name, self.problems)
        return data if isinstance(data, dict) else None


def find_run_dirs(results: Path) -> list[Path]:
    """Every directory under ``results`` that holds a run file, sorted for stable output."""
    if not results.is_dir():
        raise FileNotFoundError(f"results directory {results} does not exist")
    found: set[Path] = set()
    for name in RUN_FILES:
        for p in results.rglob(name):
            if "parquet-cache" not in p.parts:
                found.add(p.parent)
    return sorted(found)


def _read_json(path: Path, problems: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        problems.append(f"{path.name} unreadable: {e}")
        return None


def _campaign_of(results: Path, run_dir: Path) -> str:
    rel = run_dir.relative_to(results)
    return rel.parts[0] if len(rel.parts) >= 2 else results.name


def load_run(results: Path, run_dir: Path, key: int) -> RunInfo:
    """Read run.json, the history header and verdict.json of one run (never raises on bad data)."""
    problems: list[str] = []
    manifest: RunManifest | None = None
    files = RunDir(run_dir)
    if files.run_json.exists():
        try:
            manifest = RunManifest.read(files.run_json)
        except ManifestError as e:
            problems.append(f"run.json unreadable: {e}")
    m = manifest
    header: dict[str, Any] = {}
    for name in HISTORY_FILES:
        hp = run_dir / name
        if hp.exists():
            try:
                header = read_history(hp).header
                break
            except HistoryError as e:
                problems.append(f"{name}: {e}")
    vj = _read_json(files.verdict_json, problems)
    verdicts: list[dict[str, Any]] | None = None
    if isinstance(vj, dict) and isinstance(vj.get("verdicts"), list):
        verdicts = [v for v in vj["verdicts"] if isinstance(v, dict) and "check" in v]
    elif isinstance(vj, list):
        verdicts = [v for v in vj if isinstance(v, dict) and "check" in v]
    elif vj is not None:
        problems.append("verdict.json has no 'verdicts' list")
    config = (m.config if m is not None and m.config else None) or header.get("config") or {}
    info = RunInfo(
        key=key,
        campaign=str(_named(m, "campaign") or _campaign_of(results, run_dir)),
        run_id=str(_named(m, "run_id") or run_dir.name),
        path=run_dir,
        suite=str(_named(m, "suite") or header.get("suite") or "default"),
        scenario=str(_named(m, "scenario") or header.get("scenario") or "default"),
        kafka_version=str((m.kafka_version if m else None) or header.get("kafka_version") or "?"),
        client=str((m.client if m else None) or header.get("client") or "?"),
        config=dict(config),
        seed=m.seed if m is not None and m.seed is not None else header.get("seed"),
        repro=m.repro if m is not None else None,
        started_at=_started_at(m, run_dir),
        header=header,
        manifest=m,
        verdicts=verdicts,
        problems=problems,
    )
    if not header and not files.history.exists() and not files.history_parquet.exists():
        problems.append("no history file")
    return info


#: what ``RunManifest.from_legacy`` fills in for a name a legacy run.json lacks
_LEGACY_PLACEHOLDERS = {"campaign": "adhoc", "suite": "default", "scenario": "default"}


def _named(m: RunManifest | None, name: str) -> str | None:
    """A name field of the manifest; a legacy manifest's placeholder yields to the next source
    (the history header, the directory layout)."""
    if m is None:
        return None
    value = getattr(m, name)
    if m.legacy and value == _LEGACY_PLACEHOLDERS.get(name):
        return None
    return value if isinstance(value, str) and value else None


def _started_at(m: RunManifest | None, run_dir: Path) -> str:
    if m is not None and m.started_at:
        return m.started_at
    for name in RUN_FILES:  # the oldest run file is the best guess for when the run happened
        p = run_dir / name
        if p.exists():
            return iso_utc(p.stat().st_mtime)
    return "1970-01-01T00:00:00Z"


def load_runs(results: Path) -> list[RunInfo]:
    return [load_run(results, d, i) for i, d in enumerate(find_run_dirs(results))]


def ensure_parquet(runs: list[RunInfo], cache: Path) -> Iterator[RunInfo]:
    """Give every run with a history a Parquet file for Spark, converting JSON Lines once.

    A run's own ``history.parquet`` is used as is; otherwise ``history.jsonl`` is converted
    (leniently: a crash-truncated last line must not hide the rest) into ``cache``, and reused
    while it is newer than its source. Yields each run as it is ready, for progress output.
    """
    for r in runs:
        own = RunDir(r.path).history_parquet
        src = RunDir(r.path).history
        if own.exists():
            r.parquet = own
        elif src.exists():
            dst = cache / r.campaign / f"{r.run_id}.parquet"
            if not dst.exists() or dst.stat().st_mtime < src.stat().st_mtime:
                dst.parent.mkdir(parents=True, exist_ok=True)
                try:
                    errors = to_parquet(src, dst, lenient=True)
                except HistoryError as e:
                    r.problems.append(f"history.jsonl unreadable: {e}")
                    yield r
                    continue
                if errors:
                    r.problems.append(
                        f"history.jsonl: {len(errors)} unreadable line(s), "
                        f"first at line {errors[0].line}: {errors[0].message}"
                    )
            r.parquet = dst
        yield r
