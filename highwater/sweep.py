"""Sweeps: the chosen suites on every Kafka release in a range, into one campaign.

``highwater sweep --kafka-versions 3.3.1..newest`` lists the stable releases Maven Central
serves in the range (patch releases included), assembles each (a release that cannot be
assembled is skipped with one line: its artifacts are incomplete), and runs the suites on it in
a child pytest (``highwater.pytest_runs``), all into one campaign, so one report shows every
release side by side.

``highwater sweep --over client --client NAME --versions A,B`` (or ``--from A --to B``) does the
same across versions of a client library (PyPI's for the Python clients, Kafka's releases of
``kafka-clients`` for Java) against one Kafka release: each version is installed (skipped with
one line when it cannot be) and is one column of the report (client ``"<name> <version>"``).

A sweep is many hours of runs, so it is resumable: its state (``sweep.json`` in the campaign
directory) records each release's outcome as soon as it is known, and a sweep started again
with the same ``--campaign`` runs only the releases not yet recorded. A release interrupted
half-way is run again whole (its finished runs stay in the campaign; the report counts every
run it finds).

``highwater sweep --master URL`` runs the same sweep as cells (release x client x suite) on a
Spark cluster's task slots instead, into the same campaign (``highwater.spread``,
``highwater.spark_sweep``, ``highwater.sweep_cells``), with a state of its own per cell.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path

from highwater.core.errors import HighwaterError
from highwater.harness.distribution import MIN_VERSION, parse_version

STATE_FORMAT = "highwater.sweep/1"
STATE_FILE = "sweep.json"


class SweepError(HighwaterError, ValueError):
    """A bad range, an unreadable state file, or a state file of a different sweep."""


def parse_range(text: str) -> tuple[str, str | None]:
    """``LOW..HIGH`` (``HIGH`` may be ``newest``; returned as None), or one version ``V``
    (``V..V``). Versions are ``MAJOR.MINOR.PATCH``."""
    low, sep, high = text.strip().partition("..")
    low, high = low.strip(), high.strip()
    if not sep:
        high = low
    try:
        parse_version(low)
        if high != "newest":
            parse_version(high)
    except HighwaterError:
        raise SweepError(
            f"bad release range {text!r}: expected LOW..HIGH, e.g. 3.3.1..newest or 3.3.1..3.9.1"
        ) from None
    if high != "newest" and parse_version(high) < parse_version(low):
        raise SweepError(f"bad release range {text!r}: {high} is older than {low}")
    return low, (None if high == "newest" else high)


def releases_in_range(published: Sequence[str], low: str, high: str | None) -> list[str]:
    """The published releases from ``low`` to ``high`` (None: the newest), oldest first, and
    never older than the first KRaft production release (3.3.1)."""
    lo = max(parse_version(low), MIN_VERSION)
    hi = parse_version(high) if high is not None else None
    chosen = [v for v in published if parse_version(v) >= lo and (hi is None or parse_version(v) <= hi)]
    if not chosen:
        raise SweepError(f"no published release in {low}..{high or 'newest'}")
    return sorted(set(chosen), key=parse_version)


def version_key(text: str, what: str = "Kafka") -> tuple[int, int, int]:
    """``MAJOR.MINOR.PATCH`` as a sortable tuple; one line for anything else."""
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", text.strip())
    if not m:
        raise SweepError(f"bad {what} version {text!r}: expected MAJOR.MINOR.PATCH, e.g. 3.0.12")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def parse_version_list(text: str, what: str = "Kafka") -> list[str]:
    """``--versions A,B,C``: the versions as given, each ``MAJOR.MINOR.PATCH``."""
    versions = [v.strip() for v in text.split(",") if v.strip()]
    if not versions:
        raise SweepError(f"no version in --versions {text!r}")
    for v in versions:
        version_key(v, what)
    return versions


def select_versions(
    published: Sequence[str],
    listed: Sequence[str] | None = None,
    low: str | None = None,
    high: str | None = None,
    *,
    floor: tuple[int, ...] = (0,),
    what: str = "Kafka",
    why: str = "the oldest supported",
) -> list[str]:
    """The versions a sweep runs, oldest first: either ``listed`` (each must be published and no
    older than ``floor``), or the published versions from ``low`` to ``high`` (either may be
    None: from ``floor``, to the newest; ``high`` may be ``newest``), never older than ``floor``.
    ``published`` is the stable versions the registry lists (Maven Central, PyPI)."""
    if listed is not None and (low is not None or high is not None):
        raise SweepError("give the versions once: --versions A,B,... or a range --from A [--to B]")
    if listed is not None:
        for v in listed:
            key = version_key(v, what)
            if v not in published:
                newest = ", ".join(reversed(list(published)[-5:]))
                raise SweepError(f"{what} {v} is not a published version (newest: {newest})")
            if key < floor:
                raise SweepError(f"{what} {v} is older than {_dotted(floor)}, {why}")
        return sorted(set(listed), key=version_key)
    if low is None and high is None:
        raise SweepError("say which versions to sweep: --versions A,B,... or a range --from A [--to B]")
    lo = version_key(low, what) if low is not None else floor
    hi = version_key(high, what) if high is not None and high != "newest" else None
    if hi is not None and hi < lo:
        raise SweepError(f"bad {what} range {low}..{high}: {high} is older than {low}")
    start = max(lo, floor)
    chosen = [v for v in published if version_key(v, what) >= start and (hi is None or version_key(v, what) <= hi)]
    if not chosen:
        raise SweepError(
            f"no published {what} version in {low or _dotted(floor)}..{high or 'newest'} "
            f"(from {_dotted(floor)} on, {why})"
        )
    return sorted(set(chosen), key=lambda v: version_key(v, what))


def selection_text(listed: Sequence[str] | None, low: str | None, high: str | None) -> str:
    """How the versions were asked for, as a sweep's plan records it."""
    if listed is not None:
        return ",".join(listed)
    return f"{low or ''}..{high or 'newest'}"


def newest_patches(releases: Sequence[str]) -> list[str]:
    """The newest patch release of each minor line, oldest line first (a quicker sweep that
    still crosses every minor release)."""
    newest: dict[tuple[int, int], str] = {}
    for v in sorted(releases, key=parse_version):
        major, minor, _ = parse_version(v)
        newest[(major, minor)] = v
    return list(newest.values())


#: how a cell of a sweep over upgrade paths names its path: ``3.9.1->4.4.0``
PATH_ARROW = "->"


def upgrade_paths(releases: Sequence[str], to: str | None = None) -> list[str]:
    """Every upgrade path between the newest patches of the minor lines among ``releases``, from
    each line to each newer one (``to``: only the paths ending there, which must be one of them),
    oldest start first, as ``FROM->TO``; paths Kafka does not take (``faults.release.path_refusal``)
    are left out."""
    from highwater.faults.release import path_refusal

    lines = newest_patches(releases)
    if to is not None and to not in lines:
        raise SweepError(f"--upgrade-to {to} is not the newest patch of its line in {lines[0]}..{lines[-1]}")
    ends = [to] if to is not None else lines
    paths = [f"{a}{PATH_ARROW}{b}" for b in ends for a in lines if path_refusal(a, b) is None]
    if not paths:
        raise SweepError(f"no upgrade path among {', '.join(lines)}: give a range of two minor lines or more")
    return sorted(paths, key=lambda p: (parse_version(p.split(PATH_ARROW)[0]), parse_version(p.split(PATH_ARROW)[1])))


def path_ends(path: str) -> tuple[str, str]:
    """``3.9.1->4.4.0`` -> ``("3.9.1", "4.4.0")``."""
    start, _, to = path.partition(PATH_ARROW)
    return start, to


def newest(versions: Sequence[str], n: int | None) -> list[str]:
    """The ``n`` newest of ``versions``, oldest first (all of them when ``n`` is None): a
    nightly's "the newest few versions of each client", whatever was released since."""
    ordered = sorted(versions, key=parse_version)
    return ordered if n is None else ordered[-n:]


class ReleaseStatus(str, Enum):
    PASSED = "passed"  # every test passed (or failed only as an expected finding)
    FAILED = "failed"  # some test failed: the report says which promise
    SKIPPED = "skipped"  # the release could not be assembled; nothing ran
    ERROR = "error"  # pytest could not run the suites (usage or internal error)
    UNKNOWN = "unknown"  # a cell of a spread sweep judged unknown (``highwater.sweep_cells``)


@dataclass(frozen=True)
class ReleaseOutcome:
    release: str
    status: ReleaseStatus
    exit_code: int | None
    seconds: float
    reason: str = ""
    attempts: int = 1  # a cell of a spread sweep is tried again after a harness error


def status_of_exit(code: int) -> ReleaseStatus:
    """pytest's exit code as a release outcome; an interrupted run (2) is not recorded at all
    (the caller stops, and a resumed sweep runs that release again)."""
    return {0: ReleaseStatus.PASSED, 1: ReleaseStatus.FAILED}.get(code, ReleaseStatus.ERROR)


@dataclass
class SweepState:
    """What a sweep has done so far; ``plan`` identifies the sweep (a resumed sweep must ask
    for the same releases, suites, clients and profile)."""

    plan: dict[str, object]
    releases: list[str]
    outcomes: dict[str, ReleaseOutcome] = field(default_factory=dict)

    def pending(self) -> list[str]:
        return [r for r in self.releases if r not in self.outcomes]

    def to_json(self) -> dict[str, object]:
        return {
            "format": STATE_FORMAT,
            "plan": self.plan,
            "releases": self.releases,
            "outcomes": {r: {**asdict(o), "status": o.status.value} for r, o in self.outcomes.items()},
        }

    @classmethod
    def from_json(cls, data: object, source: Path) -> SweepState:
        try:
            assert isinstance(data, dict) and data.get("format") == STATE_FORMAT
            outcomes = {
                r: ReleaseOutcome(
                    release=str(o["release"]),
                    status=ReleaseStatus(o["status"]),
                    exit_code=o["exit_code"],
                    seconds=float(o["seconds"]),
                    reason=str(o.get("reason", "")),
                    attempts=int(o.get("attempts", 1)),
                )
                for r, o in data["outcomes"].items()
            }
            return cls(dict(data["plan"]), [str(r) for r in data["releases"]], outcomes)
        except (AssertionError, KeyError, TypeError, ValueError, AttributeError):
            raise SweepError(f"{source}: not a {STATE_FORMAT} sweep state file") from None

    def save(self, path: Path) -> None:
        """Written whole to a temporary file and renamed: a kill never leaves half a state."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2))
        os.replace(tmp, path)


def load_or_start(path: Path, plan: dict[str, object], releases: list[str]) -> SweepState:
    """The state of the sweep in ``path``, or a new one. A state for a different plan is refused
    (one line) rather than mixed into this campaign."""
    if not path.exists():
        return SweepState(plan, releases)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SweepError(f"{path}: unreadable sweep state ({exc})") from None
    state = SweepState.from_json(data, path)
    if state.plan != plan:
        raise SweepError(
            f"{path} belongs to another sweep (plan {state.plan}); use another --campaign to start a new one"
        )
    return state


def recorded_plan(path: Path) -> dict[str, object] | None:
    """The plan of the sweep state in ``path``, None if there is none or it cannot be read (then
    ``load_or_start`` says why)."""
    try:
        data = json.loads(path.read_text())
        plan = data["plan"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(plan) if isinstance(plan, dict) else None


def eta_seconds(durations: Sequence[float], remaining: int) -> float | None:
    """Remaining time from the median duration of the releases done so far (None before any)."""
    return statistics.median(durations) * remaining if durations else None


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


Prepare = Callable[[str], None]  # assembles a release; raises HighwaterError when it cannot
RunRelease = Callable[[str], int]  # runs the suites on a release; pytest's exit code


def run_sweep(
    state: SweepState,
    state_path: Path,
    prepare: Prepare,
    run_release: RunRelease,
    say: Callable[[str], None],
    now: Callable[[], float] = time.monotonic,
    what: str = "release",
) -> SweepState:
    """Run every pending release, recording each outcome as soon as it is known. Stops (and
    returns) at an interrupted child run (exit code 2), leaving that release pending. ``what``
    names a version in the progress lines (``release``; a client's name in a client sweep)."""
    started = now()
    total = len(state.releases)
    for release in state.pending():
        index = state.releases.index(release) + 1
        done = [o.seconds for o in state.outcomes.values() if o.status is not ReleaseStatus.SKIPPED]
        say(
            f"{what} {index} of {total} ({release}): elapsed {clock(now() - started)}, "
            f"ETA {clock(eta_seconds(done, len(state.pending())))}"
        )
        t0 = now()
        try:
            prepare(release)
        except HighwaterError as exc:
            say(f"{what} {release} skipped: {exc}")
            state.outcomes[release] = ReleaseOutcome(release, ReleaseStatus.SKIPPED, None, now() - t0, str(exc))
            state.save(state_path)
            continue
        code = run_release(release)
        if code == 2:
            say(f"{what} {release} interrupted; run the same command again to resume")
            return state
        outcome = ReleaseOutcome(release, status_of_exit(code), code, now() - t0)
        state.outcomes[release] = outcome
        state.save(state_path)
        say(f"{what} {release}: {outcome.status.value} in {clock(outcome.seconds)}")
    return state


def summary_lines(state: SweepState) -> list[str]:
    """One line per release, in release order, then the totals."""
    lines = []
    for r in state.releases:
        o = state.outcomes.get(r)
        lines.append(
            f"  {r:>8}  {o.status.value if o else 'pending':8}  {clock(o.seconds) if o else ''}  {o.reason if o else ''}".rstrip()
        )
    counts = {s: sum(1 for o in state.outcomes.values() if o.status is s) for s in ReleaseStatus}
    lines.append(", ".join([*(f"{n} {s.value}" for s, n in counts.items() if n), f"{len(state.pending())} pending"]))
    return lines
