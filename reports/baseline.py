"""What changed since a baseline: a report's ``summary.json`` against an earlier one's.

``highwater report --baseline PATH`` reads an earlier summary (``load``: a ``summary.json`` of
format ``highwater.report-summary/1`` or ``/2``, or a directory holding one as ``summary.json``
or ``report/summary.json``) before it builds anything, then compares it with the summary it
built (``compare``, a pure function of the two summary dicts). The comparison is by *cell*: a
suite/scenario × Kafka release × client, whose class is the worst of its runs' classes
(``core.findings.worst_class``). A ``/1`` summary has no classes: a run's class comes from its
``valid`` alone (``reports.aggregate.run_class_of``: valid, violated, unknown, not-applicable)
and it knew no findings.

Cells are paired by their client *label* (``name version``, as the matrix has it) first. When
a client's version changed between the two reports, the labels differ: a cell then is paired by
the client's *name* (the label's first word, as ``core.findings.RunIdentity`` reads it) with
the one cell of that name, scenario and release left unpaired on each side; when more than one
is left on either side, which is which cannot be told and they stay unpaired (``added`` and
``gone``). Each entry says how it was paired (``matched_by``: ``label`` or ``client name``) and
names both labels (``client`` now, ``baseline_client`` then). The Kafka release is never
matched loosely: another release is another cell.

What it finds (``Comparison``, written into ``summary.json`` as ``baseline``):

- ``new_violations``: cells whose class is ``violated`` now and was not in the baseline (any
  other class, or no such cell), with the checks no finding explains and the violated runs;
- ``stopped_showing``: finding ids known in the baseline (its ``findings.known``) and not now,
  with how many runs they explained then, in how many cells, and how many of those cells were
  run again (none: the finding was not looked for, rather than not seen);
- ``newly_shown``: finding ids known now and not in the baseline, with how many runs now;
- ``moved``: the cells whose class changed (``change`` ``moved``), and those in one report only
  (``added``: only now; ``gone``: only in the baseline), with ``from`` and ``to``.

The comparison informs; it never changes the report's class or exit code.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from highwater.core.errors import HighwaterError
from highwater.core.findings import worst_class
from highwater.reports.aggregate import run_class_of, run_findings_of
from highwater.reports.releases import release_key

#: every summary's ``format`` starts so; the version follows
FORMAT_PREFIX = "highwater.report-summary/"
#: the summary versions a baseline may have (``reports.summary.FORMAT``'s among them)
READS = ("1", "2")
#: where a directory given as the baseline keeps its summary: a report's, then a results tree's
SUMMARY_PLACES = ("summary.json", "report/summary.json")
#: how many cells and verdicts the printed lines name before counting the rest
SHOWN = 5

MatchedBy = Literal["label", "client name"]
Change = Literal["moved", "added", "gone"]


class BaselineError(HighwaterError):
    """A baseline that cannot be read as a report summary: one line, what and where."""


# reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """A baseline summary as read: ``path`` is the ``summary.json`` it came from."""

    path: Path
    summary: Mapping[str, Any]


def locate(path: Path) -> Path:
    """The ``summary.json`` that ``path`` names: itself, or in a directory ``SUMMARY_PLACES``'
    first. A directory without one (a results tree never reported) is refused: the baseline is
    an earlier report, and building one here would not be earlier."""
    if not path.exists():
        raise BaselineError(f"baseline {path} does not exist")
    if not path.is_dir():
        return path
    for place in SUMMARY_PLACES:
        if (path / place).is_file():
            return path / place
    raise BaselineError(
        f"baseline {path} is a directory without a report summary ({' or '.join(SUMMARY_PLACES)}): "
        f"give an earlier report's summary.json, or report that tree first (highwater report {path})"
    )


def load(path: Path) -> Baseline:
    """Read and check the baseline ``path`` names (``locate``); ``BaselineError`` in one line
    when it is missing, not JSON or not a report summary of a format this code reads."""
    file = locate(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"baseline {file} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise BaselineError(f"baseline {file} is not JSON (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {file} is not JSON: {exc}") from None
    return Baseline(file, checked(data, str(file)))


def checked(data: Any, where: str) -> Mapping[str, Any]:
    """``data`` when it is a report summary this code reads (``format`` ``FORMAT_PREFIX`` +
    one of ``READS``, ``runs`` a list of objects), else ``BaselineError``."""
    fmt = data.get("format") if isinstance(data, dict) else None
    if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
        raise BaselineError(f'baseline {where} is not a highwater report summary (no "format": "{FORMAT_PREFIX}N")')
    version = fmt.removeprefix(FORMAT_PREFIX)
    if version not in READS:
        raise BaselineError(
            f"baseline {where} is a report summary of format {fmt}, which this highwater does not "
            f"read (it reads {', '.join(FORMAT_PREFIX + v for v in READS)})"
        )
    runs = data.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise BaselineError(f"baseline {where}: 'runs' is not a list of runs")
    return data


# cells -----------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class CellKey:
    """A suite/scenario × Kafka release × client label."""

    suite: str
    scenario: str
    kafka_version: str
    client: str

    @property
    def client_name(self) -> str:
        return self.client.partition(" ")[0]

    def sort_key(self) -> tuple[Any, ...]:
        return (self.suite, self.scenario, release_key(self.kafka_version), self.kafka_version, self.client)


@dataclass(frozen=True)
class Cell:
    """A cell's class (the worst of its runs'), its runs, the checks that said no unexplained
    (in violated runs) and the findings its runs showed."""

    key: CellKey
    run_class: str
    runs: tuple[str, ...]
    violated_runs: tuple[str, ...]
    new_checks: tuple[str, ...]
    known: tuple[str, ...]


def _text(v: Any) -> str:
    return "" if v is None else str(v)


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _findings(r: Mapping[str, Any]) -> Mapping[str, Any]:
    """A run's findings (``Classification.to_json``); none for a /1 run or a malformed entry."""
    found = run_findings_of(dict(r))
    return found if isinstance(found, Mapping) else {}


def _known_ids(r: Mapping[str, Any]) -> list[str]:
    """The findings that explained some check of the run, in order of first mention."""
    known = _findings(r).get("known")
    ids = [str(f) for fs in known.values() for f in _list(fs)] if isinstance(known, Mapping) else []
    return list(dict.fromkeys(ids))


def cells(summary: Mapping[str, Any]) -> dict[CellKey, Cell]:
    """The summary's runs grouped into cells. A run without ``class`` (format /1) is classed by
    its ``valid``; without ``findings`` it showed none, and its unexplained checks are its
    ``failed_checks``."""
    grouped: dict[CellKey, list[Mapping[str, Any]]] = defaultdict(list)
    for r in summary.get("runs") or []:
        if isinstance(r, Mapping):
            key = CellKey(
                _text(r.get("suite")), _text(r.get("scenario")), _text(r.get("kafka_version")), _text(r.get("client"))
            )
            grouped[key].append(r)
    out = {}
    for key, runs in grouped.items():
        classes = [run_class_of(dict(r)) for r in runs]
        violated = [r for r, c in zip(runs, classes) if c == "violated"]
        new: dict[str, None] = {}
        known: dict[str, None] = {}
        for r in runs:
            known.update(dict.fromkeys(_known_ids(r)))
        for r in violated:
            checks = _findings(r).get("new") if isinstance(r.get("findings"), Mapping) else r.get("failed_checks")
            new.update(dict.fromkeys(str(c) for c in _list(checks)))
        out[key] = Cell(
            key,
            worst_class(classes),
            tuple(_text(r.get("run")) for r in runs),
            tuple(_text(r.get("run")) for r in violated),
            tuple(new),
            tuple(known),
        )
    return out


@dataclass(frozen=True)
class Pair:
    """A cell now and its counterpart in the baseline; one of them is None for a cell only one
    report has."""

    now: Cell | None
    then: Cell | None
    matched_by: MatchedBy | None = None

    @property
    def key(self) -> CellKey:
        cell = self.now or self.then
        assert cell is not None
        return cell.key


def pair(then: Mapping[CellKey, Cell], now: Mapping[CellKey, Cell]) -> list[Pair]:
    """Every cell of either report with its counterpart: same label first, then the one cell
    left of the same client name on each side (module docstring); in cell order."""
    out = [Pair(now[k], then[k], "label") for k in now if k in then]
    left_now: dict[tuple[str, str, str, str], list[CellKey]] = defaultdict(list)
    left_then: dict[tuple[str, str, str, str], list[CellKey]] = defaultdict(list)
    for k in now:
        if k not in then:
            left_now[(k.suite, k.scenario, k.kafka_version, k.client_name)].append(k)
    for k in then:
        if k not in now:
            left_then[(k.suite, k.scenario, k.kafka_version, k.client_name)].append(k)
    for g in left_now.keys() | left_then.keys():
        ns, ts = left_now.get(g, []), left_then.get(g, [])
        if len(ns) == 1 and len(ts) == 1:
            out.append(Pair(now[ns[0]], then[ts[0]], "client name"))
        else:
            out += [Pair(now[k], None) for k in ns] + [Pair(None, then[k]) for k in ts]
    return sorted(out, key=lambda p: p.key.sort_key())


# what changed ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellChange:
    """A cell that changed: ``client`` is its label now (None: gone), ``baseline_client`` then
    (None: added); ``from`` / ``to`` its class then and now (None where it is absent)."""

    suite: str
    scenario: str
    kafka_version: str
    client: str | None
    baseline_client: str | None
    matched_by: MatchedBy | None
    change: Change
    was: str | None
    now: str | None

    @classmethod
    def of(cls, p: Pair) -> CellChange:
        k = p.key
        change: Change = "added" if p.then is None else "gone" if p.now is None else "moved"
        return cls(
            k.suite,
            k.scenario,
            k.kafka_version,
            p.now.key.client if p.now else None,
            p.then.key.client if p.then else None,
            p.matched_by,
            change,
            p.then.run_class if p.then else None,
            p.now.run_class if p.now else None,
        )

    def where(self) -> str:
        """``chaos/kill, Kafka 4.3.1, kp 2.0 (was kp 1.0)``."""
        client = self.client or self.baseline_client or "?"
        if self.client and self.baseline_client and self.client != self.baseline_client:
            client += f" (was {self.baseline_client})"
        return f"{self.suite}/{self.scenario}, Kafka {self.kafka_version}, {client}"

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "scenario": self.scenario,
            "kafka_version": self.kafka_version,
            "client": self.client,
            "baseline_client": self.baseline_client,
            "matched_by": self.matched_by,
            "change": self.change,
            "from": self.was,
            "to": self.now,
        }


@dataclass(frozen=True)
class NewViolation:
    """A cell violated now and not in the baseline (``cell.was``: its class then, None when the
    baseline did not run it), with the checks that said no unexplained and the violated runs."""

    cell: CellChange
    checks: tuple[str, ...]
    runs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        c = self.cell.to_json()
        return {
            **{k: c[k] for k in ("suite", "scenario", "kafka_version", "client", "baseline_client", "matched_by")},
            "was": self.cell.was,
            "checks": list(self.checks),
            "runs": list(self.runs),
        }


@dataclass(frozen=True)
class FindingChange:
    """A finding that stopped showing (``runs``: the runs it explained in the baseline, in
    ``cells`` cells, ``cells_run_now`` of them run again) or was newly shown (``runs`` now, in
    ``cells`` cells)."""

    id: str
    runs: int
    cells: int
    cells_run_now: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "runs": self.runs, "cells": self.cells}
        if self.cells_run_now is not None:
            out["cells_run_now"] = self.cells_run_now
        return out


@dataclass(frozen=True)
class Comparison:
    """What changed since the baseline (module docstring). ``path``, ``generated_at`` and
    ``format`` are the baseline's."""

    path: str
    generated_at: str | None
    format: str
    new_violations: tuple[NewViolation, ...] = ()
    stopped_showing: tuple[FindingChange, ...] = ()
    newly_shown: tuple[FindingChange, ...] = ()
    moved: tuple[CellChange, ...] = ()

    def count(self, change: Change) -> int:
        return sum(m.change == change for m in self.moved)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "generated_at": self.generated_at,
            "format": self.format,
            "new_violations": [v.to_json() for v in self.new_violations],
            "stopped_showing": [f.to_json() for f in self.stopped_showing],
            "newly_shown": [f.to_json() for f in self.newly_shown],
            "moved": [m.to_json() for m in self.moved],
        }

    def lines(self) -> list[str]:
        """What the CLI prints: the ``since`` line, then the findings newly shown and the
        verdicts that moved (the first ``SHOWN`` of each, then how many more)."""
        nv = self.new_violations
        head = f"{len(nv)} new violation(s) ({_some([v.cell.where() for v in nv])})" if nv else "no new violation"
        stopped = (
            f"findings that stopped showing: {_some([_stopped(f) for f in self.stopped_showing])}"
            if self.stopped_showing
            else "no finding stopped showing"
        )
        moved = f"{self.count('moved')} verdict(s) moved"
        extra = [f"{n} cell(s) {c}" for c in ("added", "gone") if (n := self.count(c))]
        out = [f"since {self.path}: {head}, {stopped}; {', '.join([moved, *extra])}"]
        if self.newly_shown:
            out.append(f"findings newly shown since the baseline: {_some([f.id for f in self.newly_shown])}")
        changed = [m for m in self.moved if m.change == "moved"]
        out += [f"  {m.where()}: {m.was} -> {m.now}" for m in changed[:SHOWN]]
        if len(changed) > SHOWN:
            out.append(f"  ... and {len(changed) - SHOWN} more (summary.json: baseline.moved)")
        return out


def _some(items: list[str]) -> str:
    shown = "; ".join(items[:SHOWN]) if any(", " in i for i in items) else ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _stopped(f: FindingChange) -> str:
    return f.id + (" (not run now)" if f.cells and not f.cells_run_now else "")


def new_violations(pairs: Iterable[Pair]) -> tuple[NewViolation, ...]:
    """The cells violated now that were not violated (or not run) in the baseline."""
    return tuple(
        NewViolation(CellChange.of(p), p.now.new_checks, p.now.violated_runs)
        for p in pairs
        if p.now is not None and p.now.run_class == "violated" and (p.then is None or p.then.run_class != "violated")
    )


def moved(pairs: Iterable[Pair]) -> tuple[CellChange, ...]:
    """The cells whose class changed, and those only one report has."""
    return tuple(
        CellChange.of(p) for p in pairs if p.now is None or p.then is None or p.now.run_class != p.then.run_class
    )


def known_findings(summary: Mapping[str, Any]) -> dict[str, int]:
    """Finding id -> runs it explained: the summary's ``findings.known``, else counted from its
    runs (a /1 summary knew none)."""
    top = summary.get("findings")
    known = top.get("known") if isinstance(top, Mapping) else None
    if isinstance(known, Mapping):
        return {str(k): int(v) if isinstance(v, int) else 0 for k, v in known.items()}
    n: dict[str, int] = defaultdict(int)
    for r in summary.get("runs") or []:
        if isinstance(r, Mapping):
            for f in _known_ids(r):
                n[f] += 1
    return dict(n)


def finding_changes(
    then: Mapping[str, Any], now: Mapping[str, Any], pairs: Iterable[Pair]
) -> tuple[tuple[FindingChange, ...], tuple[FindingChange, ...]]:
    """The findings that stopped showing and those newly shown (in id order as the summaries
    list them)."""
    before, after = known_findings(then), known_findings(now)
    ps = list(pairs)
    stopped = []
    for fid, runs in before.items():
        if fid in after:
            continue
        where = [p for p in ps if p.then is not None and fid in p.then.known]
        stopped.append(FindingChange(fid, runs, len(where), sum(p.now is not None for p in where)))
    newly = [
        FindingChange(fid, runs, sum(p.now is not None and fid in p.now.known for p in ps))
        for fid, runs in after.items()
        if fid not in before
    ]
    return tuple(stopped), tuple(newly)


def compare(then: Mapping[str, Any], now: Mapping[str, Any], path: str = "") -> Comparison:
    """What changed from the summary ``then`` (the baseline, read from ``path``) to ``now``."""
    pairs = pair(cells(then), cells(now))
    stopped, newly = finding_changes(then, now, pairs)
    return Comparison(
        path=path,
        generated_at=then.get("generated_at"),
        format=str(then.get("format")),
        new_violations=new_violations(pairs),
        stopped_showing=stopped,
        newly_shown=newly,
        moved=moved(pairs),
    )
