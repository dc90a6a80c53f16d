"""The hunts under a report's results: each campaign's ``hunt.json`` (``highwater hunt``, format
``highwater.hunt/1``, written by ``highwater.hunt``) read into typed rows, one per shrunk failure,
with its original and shrunk fault schedules side by side for the HTML report's Hunts section.

A hunt.json sits in a campaign directory, beside the campaign's run directories; the report may
be given a results root (campaigns below it) or one campaign, so both are looked in, and the
parent of every run directory too. Reading is lenient as the rest of the report is: a hunt.json
that is unreadable, of another format or of an unexpected shape is skipped with a note (shown in
the section), and so is one malformed run entry of an otherwise good hunt; the report never dies
of a hunt, which only adds to what the runs already say.

Plain Python, not Spark: one small JSON file per hunt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

HUNT_FILE = "hunt.json"
HUNT_FORMAT = "highwater.hunt/1"


class Malformed(ValueError):
    """A hunt.json (or one of its run entries) is not of the shape ``highwater.hunt`` writes."""


@dataclass(frozen=True)
class HuntFault:
    """One scheduled fault of a candidate: when it starts (seconds after the nemesis started),
    how long it lasts, its kind and target, and the fault in ``highwater fault`` syntax."""

    id: int | None
    at_s: float
    duration_s: float
    kind: str
    target: str
    cli: str


@dataclass(frozen=True)
class ScheduleSide:
    """One side of a shrink (``shrink.Candidate``): its faults, producers and rate."""

    faults: tuple[HuntFault, ...]
    producers: int | None
    rate: float | None
    described: str


@dataclass(frozen=True)
class SecondClient:
    """The shrunk schedule played once on another client: whose promise the failure is."""

    client: str
    new: tuple[str, ...]  # the checks that said no there, unexplained
    run_dir: str
    same: bool  # the shrunk check failed there too (the broker's?)


@dataclass(frozen=True)
class ShrunkFailure:
    """One hunted run with a new violation that was shrunk: the draw, the check kept failing,
    how often the shrunk schedule failed it, and both schedules."""

    campaign: str
    seed: int | None
    release: str
    client: str
    workload: str
    run_dir: str
    new: tuple[str, ...]  # every check the hunted run failed unexplained
    check: str
    reproduced: bool
    failed: int | None  # of the final trial; None when the original never failed again
    tries: int | None
    original_tries: int  # the original's trial (what "not reproduced in N tries" counts)
    shrink_runs: int
    budget_spent: bool
    scenario: str | None  # the scenario file ``highwater replay`` takes (None: not reproduced)
    second: SecondClient | None
    original: ScheduleSide
    shrunk: ScheduleSide


@dataclass(frozen=True)
class Hunt:
    """One campaign's hunt: how many runs it played, their classes, the runs with a new
    violation, and those of them that were shrunk."""

    campaign: str
    path: Path
    runs: int
    classes: dict[str, int]
    new_found: int  # runs with a violation no known finding explains
    shrunk: tuple[ShrunkFailure, ...]
    line: str  # what ``highwater hunt`` printed at its end

    @property
    def summary(self) -> str:
        counts = ", ".join(f"{n} {c}" for c, n in sorted(self.classes.items())) or "no run"
        return f"{self.runs} run(s) ({counts}); {self.new_found} with a new violation, {len(self.shrunk)} shrunk"


@dataclass
class Hunts:
    """Every hunt found, and a note per hunt.json (or run entry) skipped and why."""

    hunts: list[Hunt] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """Whether there is anything to show (a skipped hunt.json is shown as its note)."""
        return bool(self.hunts or self.notes)


def find_hunt_files(results: Path, run_dirs: Iterable[Path] = ()) -> list[Path]:
    """The hunt.json files of ``results`` (a campaign itself, or a root holding campaigns) and
    of the run directories' parents under it, once each, sorted."""
    if not results.is_dir():
        return []
    root = results.resolve()
    places = [results, *(p for p in results.iterdir() if p.is_dir())]
    for d in run_dirs:
        parent = d.parent
        if parent.resolve().is_relative_to(root):  # nothing outside the report's results
            places.append(parent)
    found: dict[Path, Path] = {}
    for p in places:
        f = p / HUNT_FILE
        if f.is_file():
            found.setdefault(f.resolve(), f)
    return sorted(found.values())


def load_hunts(results: Path, run_dirs: Iterable[Path] = ()) -> Hunts:
    """Every hunt of ``results`` read (``find_hunt_files``); never raises on bad data."""
    out = Hunts()
    for path in find_hunt_files(results, run_dirs):
        try:
            out.hunts.append(read_hunt(path, out.notes))
        except Malformed as e:
            out.notes.append(f"{path}: skipped, {e}")
    return out


def read_hunt(path: Path, notes: list[str]) -> Hunt:
    """One hunt.json; a run entry of the wrong shape is left out with a note in ``notes``.
    Raises ``Malformed`` when the file as a whole cannot be read as a hunt."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise Malformed(f"unreadable: {e}") from e
    if not isinstance(data, dict):
        raise Malformed("not a JSON object")
    if data.get("format") != HUNT_FORMAT:
        raise Malformed(f"format {data.get('format')!r}, not {HUNT_FORMAT!r}")
    campaign = path.parent.name
    entries = _list(data, "runs")
    classes: dict[str, int] = {}
    new_found = 0
    shrunk: list[ShrunkFailure] = []
    for i, entry in enumerate(entries):
        try:
            run = _obj(entry, f"runs[{i}]")
            cls = _str(run, "class")
            new = tuple(_strs(run, "new"))
            row = _shrunk(campaign, run, new) if run.get("shrunk") is not None else None
        except Malformed as e:
            notes.append(f"{path}: run {i + 1} left out, {e}")
            continue
        classes[cls] = classes.get(cls, 0) + 1
        new_found += bool(new)
        if row is not None:
            shrunk.append(row)
    line = data.get("line")
    return Hunt(
        campaign=campaign,
        path=path,
        runs=sum(classes.values()),
        classes=classes,
        new_found=new_found,
        shrunk=tuple(shrunk),
        line=line if isinstance(line, str) else "",
    )


def _shrunk(campaign: str, run: Mapping[str, Any], new: tuple[str, ...]) -> ShrunkFailure:
    draw = _obj(run.get("draw"), "draw")
    summary = _obj(run.get("shrunk"), "shrunk")
    result = _obj(summary.get("result"), "shrunk.result")
    check = _str(result, "check")
    final = result.get("final_trial")
    final_trial = _obj(final, "final_trial") if final is not None else None
    original_trial = _obj(result.get("original_trial"), "original_trial")
    second = summary.get("second_client")
    scenario = summary.get("scenario")
    seed = draw.get("seed")
    return ShrunkFailure(
        campaign=campaign,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        release=str(draw.get("release") or "?"),
        client=str(draw.get("client") or "?"),
        workload=str(draw.get("workload") or "?"),
        run_dir=str(run.get("run_dir") or ""),
        new=new,
        check=check,
        reproduced=result.get("reproduced") is True,
        failed=_int(final_trial, "failed") if final_trial is not None else None,
        tries=_int(final_trial, "tries") if final_trial is not None else None,
        original_tries=_int(original_trial, "tries"),
        shrink_runs=_int(result, "runs"),
        budget_spent=result.get("budget_spent") is True,
        scenario=scenario if isinstance(scenario, str) and scenario else None,
        second=_second(second, check) if second is not None else None,
        original=_schedule(result.get("original"), "original"),
        shrunk=_schedule(result.get("shrunk"), "shrunk"),
    )


def _second(value: Any, check: str) -> SecondClient:
    s = _obj(value, "second_client")
    new = tuple(_strs(s, "new"))
    return SecondClient(client=_str(s, "client"), new=new, run_dir=str(s.get("run_dir") or ""), same=check in new)


def _schedule(value: Any, where: str) -> ScheduleSide:
    c = _obj(value, where)
    faults = tuple(_fault(f, f"{where}.faults[{i}]") for i, f in enumerate(_list(c, "faults")))
    producers, rate, described = c.get("producers"), c.get("rate"), c.get("described")
    return ScheduleSide(
        faults=faults,
        producers=producers if isinstance(producers, int) and not isinstance(producers, bool) else None,
        rate=float(rate) if _is_num(rate) else None,
        described=described if isinstance(described, str) else "",
    )


def _fault(value: Any, where: str) -> HuntFault:
    """A ``ScheduledFault.to_dict()``: its kind and target from the fault spec (the CLI text is
    kept as written, for copying)."""
    f = _obj(value, where)
    spec = f.get("fault")
    spec = spec if isinstance(spec, dict) else {}
    cli = str(f.get("cli") or "")
    kind = str(spec.get("kind") or cli.split(" ", 1)[0] or "?")
    target = str(spec.get("target") or "")
    if spec.get("peer"):
        target += f" \u2194 {spec['peer']}"
    fid = f.get("id")
    return HuntFault(
        id=fid if isinstance(fid, int) and not isinstance(fid, bool) else None,
        at_s=_num(f, "start", where),
        duration_s=_num(f, "duration", where),
        kind=kind,
        target=target,
        cli=cli,
    )


# typed reads that say what is wrong -----------------------------------------------------------


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Malformed(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(d: Mapping[str, Any], key: str) -> list[Any]:
    v = d.get(key)
    if not isinstance(v, list):
        raise Malformed(f"{key!r}: expected a list, got {type(v).__name__}")
    return v


def _str(d: Mapping[str, Any], key: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise Malformed(f"{key!r}: expected a string, got {type(v).__name__}")
    return v


def _strs(d: Mapping[str, Any], key: str) -> list[str]:
    v = _list(d, key)
    if not all(isinstance(x, str) for x in v):
        raise Malformed(f"{key!r}: expected a list of strings")
    return v


def _is_num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int(d: Mapping[str, Any], key: str) -> int:
    v = d.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise Malformed(f"{key!r}: expected an integer, got {type(v).__name__}")
    return v


def _num(d: Mapping[str, Any], key: str, where: str) -> float:
    v = d.get(key)
    if not _is_num(v):
        raise Malformed(f"{where}.{key}: expected a number, got {type(v).__name__}")
    return float(v)
