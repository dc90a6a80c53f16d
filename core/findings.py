"""Known findings as data, and what they explain: one record per finding (docs/findings.md).

A finding is something Kafka or a client does wrong that highwater found. Its record says what
(``what``), on which component, where it applies (client names with their version ranges, a
Kafka release range: open-ended while unfixed) and where it shows (``shows``: scenarios as
``suite/scenario`` patterns, the checks it makes say no there, strict or not). The records live
in ``findings.toml`` beside this module (a project adds its own with ``--findings``); the suites'
xfail marks, the exact subtractions of HW-8 and HW-10/HW-15, the classes of every run and the
table of docs/findings.md all come from them.

A run's class (``classify``), from its checks' verdicts:

- ``violated``: some check said no that no finding applying to the run explains: a new
  violation, the only class that fails a report, a CI job or an exit code;
- ``known``: checks said no, and a finding that applies to the run's client, client version,
  Kafka release and scenario names each of them;
- ``fixed?``: nothing said no, but a strict finding applies to the run and names checks that
  judged it, and none of them said no: the behaviour changed (a strict xfail that passed);
- ``valid``, ``unknown``, ``not-applicable``: as the run's verdict, no finding involved.

The classification never changes a verdict: a check that said no still says no (in
``verdict.json``, the report and its counts); the class says whether anyone knew.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN, Valid
from highwater.core.errors import HighwaterError

#: the records shipped with highwater
BUNDLED = Path(__file__).with_name("findings.toml")

RunClass = Literal["valid", "known", "violated", "fixed?", "unknown", "not-applicable"]
#: every class, worst first (a report's class is the worst of its runs')
CLASSES: tuple[RunClass, ...] = ("violated", "fixed?", "unknown", "known", "valid", "not-applicable")
#: a ``shows`` entry whose checks are this explains whatever check said no there
ANY_CHECK = "*"


class FindingsError(HighwaterError):
    """A findings file or record that cannot be used: says which record and what is wrong."""


@dataclass(frozen=True)
class Shows:
    """Where a finding shows: in runs of these ``suite/scenario`` patterns (fnmatch), as these
    checks saying no. ``strict``: it shows in every such run (its absence is news: ``fixed?``)."""

    scenarios: tuple[str, ...]
    checks: tuple[str, ...]
    strict: bool

    def covers(self, scenario: str) -> bool:
        return any(fnmatch.fnmatchcase(scenario, p) for p in self.scenarios)

    def explains(self, check: str) -> bool:
        return ANY_CHECK in self.checks or check in self.checks


@dataclass(frozen=True)
class Finding:
    """One finding's record. ``clients``: client name -> the versions it applies to (a PEP 440
    specifier set, "" for every version); empty for a broker finding (every client). ``kafka``:
    the Kafka releases it applies to ("" for every release). ``reason``: the xfail's text."""

    id: str
    component: str
    what: str
    seen: str
    status: str
    repro: str
    reason: str
    clients: Mapping[str, str] = field(default_factory=dict)
    kafka: str = ""
    shows: tuple[Shows, ...] = ()

    def applies_to(self, client: str | None, client_version: str | None, kafka_version: str | None) -> bool:
        """Does the finding apply to a run of this client, client version and Kafka release? A
        version that cannot be read (or is missing) where a range is given does not apply: an
        unreadable run stays new rather than be explained by guess."""
        if self.clients:
            if client is None or client not in self.clients:
                return False
            if not _within(client_version, self.clients[client]):
                return False
        return _within(kafka_version, self.kafka)


def _within(version: str | None, spec: str) -> bool:
    if not spec:
        return True
    if not version:
        return False
    try:
        return Version(version.split("+", 1)[0]) in SpecifierSet(spec)
    except InvalidVersion:
        return False


@dataclass(frozen=True)
class RunIdentity:
    """What a finding's applicability reads of a run: ``scenario`` as ``suite/scenario``."""

    scenario: str
    client: str | None
    client_version: str | None
    kafka_version: str | None

    @classmethod
    def of(cls, suite: str, scenario: str, client_label: str | None, kafka_version: str | None) -> RunIdentity:
        """From a run's manifest fields: the client's label is ``name version`` (``kafka-python
        3.0.12``, ``java 4.4.0``)."""
        name, _, version = (client_label or "").partition(" ")
        return cls(f"{suite}/{scenario}", name or None, version or None, kafka_version)


@dataclass(frozen=True)
class Classification:
    """A run's class and why: ``known`` maps each check that said no and is explained to the
    findings that explain it; ``new`` lists the checks that said no unexplained; ``fixed`` the
    strict findings that applied and did not show."""

    run_class: RunClass
    known: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    new: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    #: finding id -> checks whose violations in this run a suite's exact judgement found beyond
    #: that finding (``beyond`` of ``classify``), recorded so every later classing keeps it
    beyond: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def findings(self) -> tuple[str, ...]:
        """The findings this run matched, in order of first mention."""
        return tuple(dict.fromkeys(f for ids in self.known.values() for f in ids))

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.run_class,
            "known": {c: list(ids) for c, ids in self.known.items()},
            "new": list(self.new),
            "fixed": list(self.fixed),
            "beyond": {f: list(checks) for f, checks in self.beyond.items()},
        }


def beyond_of(recorded: Mapping[str, Any] | None) -> dict[str, tuple[str, ...]]:
    """The ``beyond`` of a run's recorded classification (``Classification.to_json``), if any."""
    raw = (recorded or {}).get("beyond") or {}
    return {str(f): tuple(str(c) for c in checks) for f, checks in raw.items()} if isinstance(raw, dict) else {}


def classify(
    findings: Iterable[Finding],
    run: RunIdentity,
    verdicts: Mapping[str, Valid],
    beyond: Mapping[str, Iterable[str]] | None = None,
) -> Classification:
    """The run's class from its checks' verdicts (``check -> valid``, after policy: an allowed
    anomaly is valid) and the findings that apply to it (module docstring).

    ``beyond``: finding id -> checks whose violations a suite that tells a finding's anomalies
    exactly (HW-8's stalls, ``suites/hw8.py``; HW-10's losses, ``without_hw10``) found more than
    that finding explains in this run: that finding does not explain them here, whatever its
    record says (another finding still may)."""
    not_here = {f: set(cs) for f, cs in (beyond or {}).items()}
    applying = [
        f
        for f in findings
        if f.applies_to(run.client, run.client_version, run.kafka_version)
        and any(s.covers(run.scenario) for s in f.shows)
    ]
    failed = [c for c, v in verdicts.items() if v is False]
    known: dict[str, tuple[str, ...]] = {}
    new: list[str] = []
    for check in failed:
        ids = tuple(
            f.id
            for f in applying
            if any(s.covers(run.scenario) and s.explains(check) for s in f.shows)
            and check not in not_here.get(f.id, ())
        )
        if ids:
            known[check] = ids
        else:
            new.append(check)
    kept = {f: tuple(sorted(cs)) for f, cs in not_here.items() if cs}
    if new:
        return Classification("violated", known, tuple(new), beyond=kept)
    if known:
        return Classification("known", known, beyond=kept)
    fixed = tuple(
        f.id
        for f in applying
        if any(
            s.strict
            and s.covers(run.scenario)
            and ANY_CHECK not in s.checks
            and any(verdicts.get(c) is True for c in s.checks)
            for s in f.shows
        )
    )
    values = list(verdicts.values())
    if fixed:
        return Classification("fixed?", fixed=fixed, beyond=kept)
    if any(v == UNKNOWN for v in values):
        return Classification("unknown", beyond=kept)
    if values and all(v == NOT_APPLICABLE for v in values):
        return Classification("not-applicable", beyond=kept)
    return Classification("valid" if values else "unknown", beyond=kept)


def worst_class(classes: Iterable[str]) -> RunClass:
    """The worst of several runs' classes (``CLASSES`` order); no run at all is unknown."""
    seen = set(classes)
    for c in CLASSES:
        if c in seen:
            return c
    return "unknown"


# reading ---------------------------------------------------------------------------------------


def load(paths: Iterable[Path] = (), *, bundled: bool = True) -> tuple[Finding, ...]:
    """The bundled records, then each file of ``paths`` (a project's own findings), in order; a
    record whose id is already taken is refused. Raises ``FindingsError`` with one line."""
    files = [BUNDLED] if bundled else []
    files += [Path(p) for p in paths]
    out: dict[str, Finding] = {}
    for path in files:
        for finding in _read(path):
            if finding.id in out:
                raise FindingsError(f"{path}: finding {finding.id} is defined twice")
            out[finding.id] = finding
    return tuple(out.values())


#: extra findings files for every run and report of this environment (``os.pathsep``-separated):
#: a project's own findings, beside the bundled ones
ENV = "HIGHWATER_FINDINGS"


def configured(extra: Iterable[Path] = ()) -> tuple[Finding, ...]:
    """The bundled records, those of ``$HIGHWATER_FINDINGS``'s files, then ``extra``'s."""
    env = [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    return load([*env, *extra])


def _read(path: Path) -> list[Finding]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FindingsError(f"findings file {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FindingsError(f"findings file {path} is not TOML: {exc}") from None
    if set(data) - {"finding"}:  # a misspelt [[finding]] would otherwise load as no record at all
        raise FindingsError(
            f"findings file {path}: unknown table(s) {', '.join(sorted(set(data) - {'finding'}))} (only [[finding]])"
        )
    records = data.get("finding", [])
    if not isinstance(records, list):
        raise FindingsError(f"findings file {path}: 'finding' must be an array of tables ([[finding]])")
    return [_record(path, i, r) for i, r in enumerate(records, 1)]


def _record(path: Path, index: int, r: Any) -> Finding:
    where = f"{path}: finding #{index}"
    if not isinstance(r, dict):
        raise FindingsError(f"{where} is not a table")
    fid = r.get("id")
    if not isinstance(fid, str) or not fid:
        raise FindingsError(f"{where} has no id")
    where = f"{path}: finding {fid}"
    known = {"id", "component", "what", "seen", "status", "repro", "reason", "clients", "kafka", "shows"}
    extra = sorted(set(r) - known)
    if extra:
        raise FindingsError(f"{where}: unknown field(s) {', '.join(extra)} (known: {', '.join(sorted(known))})")

    def text(name: str, required: bool = True) -> str:
        value = r.get(name, "")
        if not isinstance(value, str) or (required and not value.strip()):
            raise FindingsError(f"{where}: '{name}' must be a non-empty string")
        return value

    clients = r.get("clients", {})
    if not isinstance(clients, dict) or not all(isinstance(v, str) for v in clients.values()):
        raise FindingsError(f"{where}: 'clients' must be a table of client name = \"version range\"")
    for spec in [*clients.values(), r.get("kafka", "")]:
        if not isinstance(spec, str):
            raise FindingsError(f"{where}: 'kafka' must be a version range such as \">=4.3.1\"")
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise FindingsError(f'{where}: {spec!r} is not a version range (e.g. ">=3.0.12")') from None
    shows = r.get("shows", [])
    if not isinstance(shows, list):
        raise FindingsError(f"{where}: 'shows' must be an array of tables ([[finding.shows]])")
    return Finding(
        id=fid,
        component=text("component"),
        what=text("what"),
        seen=text("seen"),
        status=text("status"),
        repro=text("repro", required=False),
        reason=text("reason"),
        clients=dict(clients),
        kafka=r.get("kafka", ""),
        shows=tuple(_shows(where, s) for s in shows),
    )


def _shows(where: str, s: Any) -> Shows:
    if not isinstance(s, dict) or set(s) - {"scenarios", "checks", "strict"}:
        raise FindingsError(f"{where}: each 'shows' has scenarios, checks and strict, nothing else")
    strict = s.get("strict", False)
    scenarios, checks = _names(where, s.get("scenarios"), "scenarios"), _names(where, s.get("checks"), "checks", True)
    if not isinstance(strict, bool):
        raise FindingsError(f"{where}: 'shows.strict' must be true or false")
    for pattern in scenarios:
        if "/" not in pattern:
            raise FindingsError(f"{where}: scenario {pattern!r} is not suite/scenario")
    return Shows(scenarios, checks, strict)


def _names(where: str, value: Any, name: str, empty: bool = False) -> tuple[str, ...]:
    """A list of names; ``checks`` may be empty: a finding its scenario's tests meet (an xfail)
    that no check's verdict shows (HW-6 and HW-12 break KIP-320's promise, told by the suite)."""
    if not isinstance(value, list) or not (value or empty) or not all(isinstance(x, str) and x for x in value):
        raise FindingsError(f"{where}: 'shows.{name}' must be a {'' if empty else 'non-empty '}list of names")
    return tuple(value)


def validate(findings: Iterable[Finding], checks: Collection[str], scenarios: Collection[str] | None = None) -> None:
    """Refuse (``FindingsError``, one line) a record that names a check not in ``checks`` or a
    scenario pattern of one of ``scenarios``' suites that matches none of them (not judged when
    None: the caller does not know the suites' scenarios; a pattern of another suite, a
    project's own, is not judged either)."""
    suites = {name.split("/", 1)[0] for name in scenarios or ()}
    for f in findings:
        for s in f.shows:
            for check in s.checks:
                if check != ANY_CHECK and check not in checks:
                    raise FindingsError(f"finding {f.id} names an unknown check {check!r}")
            if scenarios is not None:
                for pattern in s.scenarios:
                    if pattern.split("/", 1)[0] not in suites:
                        continue
                    if not any(
                        fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(pattern, name) for name in scenarios
                    ):
                        raise FindingsError(f"finding {f.id} names an unknown scenario {pattern!r}")


def find(findings: Iterable[Finding], fid: str) -> Finding:
    for f in findings:
        if f.id == fid:
            return f
    raise FindingsError(f"no finding {fid} among the records")


def markdown_table(findings: Iterable[Finding]) -> str:
    """docs/findings.md's table, from the records (a unit test holds the doc to it)."""
    lines = ["| id | component | what | versions seen | status | repro |", "|---|---|---|---|---|---|"]
    lines += [f"| {f.id} | {f.component} | {f.what} | {f.seen} | {f.status} | {f.repro} |" for f in findings]
    return "\n".join(lines)
