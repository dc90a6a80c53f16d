"""The cells of a sweep spread over machines (``highwater sweep --master URL``), pure.

A cell is one Kafka release x one client x one suite (a test module, or a node id as given), run
as a ``highwater run`` child of its own wherever a Spark task slot takes it, into the sweep's
one campaign (``highwater.spark_sweep`` runs them). Here: which cells a sweep has, what a cell's
child runs, whether an attempt is tried again, how the driver says a cell is done, and which
master URLs are taken (refused in one line before anything starts).

Tried again or not is the exit code's one meaning (``highwater.exit_codes``): a harness error
(4; also a child killed by a signal, a code of no one's) left no verdict, so the cell is run
again, up to ``MAX_ATTEMPTS``; a verdict (0 valid, 1 violations, 3 unknown) never is, nor a
usage error (2: the same command would be refused again) or an interruption (130).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .exit_codes import Exit, of_child
from .sweep import ReleaseStatus, SweepError, clock

#: attempts per cell: the first, and one more after a harness error
MAX_ATTEMPTS = 2
#: for tests only: cells (comma-separated, each a cell's key, release, client spec or suite) whose
#: first attempt is refused with the harness-error code, through the real child (an unknown
#: backend), so a retry is provoked cheaply and deterministically
REFUSE_FIRST_ENV = "HIGHWATER_SWEEP_REFUSE_FIRST"
#: the backend a refused attempt asks for: ``highwater run`` refuses it in one line, exit 4
REFUSED_BACKEND = "refused-first-attempt"
#: where each cell's child output goes, inside the campaign (one log per cell, every attempt)
CELL_LOGS = "cells"


@dataclass(frozen=True)
class Cell:
    """One Kafka release, one client spec, one suite (a test file or node id); for a sweep over
    upgrade paths, the release the cluster starts on and is rolled from to ``kafka``."""

    kafka: str
    client: str
    test: str
    #: the test knob (``REFUSE_FIRST_ENV``): the first attempt is refused, a harness error
    refuse_first: bool = False
    upgrade_from: str | None = None

    @property
    def key(self) -> str:
        """``4.4.0 java suite``, or for a path ``3.9.1->4.4.0 java suite`` (a path sweep's own name)."""
        release = self.kafka if self.upgrade_from is None else f"{self.upgrade_from}->{self.kafka}"
        return f"{release} {self.client} {self.test}"

    @property
    def releases(self) -> tuple[str, ...]:
        """Every release the cell runs a node on (each set up on the executor first)."""
        return (self.kafka,) if self.upgrade_from is None else (self.upgrade_from, self.kafka)

    def slug(self) -> str:
        """A file name for the cell's log: its key with anything unsafe as ``_``."""
        return re.sub(r"[^A-Za-z0-9.=+-]+", "_", self.key).strip("_")[:180]

    def argv(self, python: str, settings: CellSettings, attempt: int) -> list[str]:
        """The command of one attempt of this cell (``run_argv``)."""
        return run_argv(python, self, settings, attempt)

    @property
    def max_attempts(self) -> int:
        return MAX_ATTEMPTS


@dataclass(frozen=True)
class CellSettings:
    """What every cell of one sweep shares."""

    campaign: str
    results: str  # absolute: the executors' working directories are Spark's, not ours
    profile: str = "ci"
    backend: str = "local"
    seed: int | None = None
    #: the driver's working directory, used by a child where it exists (relative suite paths)
    cwd: str | None = None

    def campaign_dir(self) -> Path:
        return Path(self.results) / self.campaign


@dataclass(frozen=True)
class CellResult:
    """What a cell's task returns to the driver."""

    key: str
    code: int  # ``highwater run``'s exit code of the last attempt (``Exit``), 4 if none ran
    seconds: float
    attempts: int
    host: str = ""
    log: str = ""
    reason: str = ""  # why there is no verdict, when the task itself failed


def expand_tests(tests: Sequence[str], locate: Callable[[str], str]) -> list[str]:
    """The suites of a sweep, one per cell: a directory becomes its ``test_*.py`` modules (sorted,
    named under the directory as given, so an installed package's ``suites/...`` still resolves on
    every machine); a file or a node id stays as it is. ``locate`` maps a name to a local path."""
    out: list[str] = []
    for test in tests:
        path = Path(locate(test.split("::", 1)[0]))
        if "::" not in test and path.is_dir():
            base = test.rstrip("/")
            out += [f"{base}/{p.relative_to(path).as_posix()}" for p in sorted(path.rglob("test_*.py"))]
        else:
            out.append(test)
    return list(dict.fromkeys(out))


def plan_cells(
    versions: Iterable[str],
    kafka_of: Callable[[str], Sequence[str]],
    clients_of: Callable[[str], str],
    tests: Sequence[str],
    refuse_first: Iterable[str] = (),
    upgrade_from_of: Callable[[str], str | None] = lambda _version: None,
) -> list[Cell]:
    """Every cell of a sweep, version by version: each Kafka release the version runs on x each
    client spec (``--client A,B`` is two cells) x each suite; ``upgrade_from_of`` names the
    release a version's clusters start on (a path sweep's ``A`` of ``A->B``)."""
    refused = set(refuse_first)
    cells = []
    for version in versions:
        for kafka in kafka_of(version):
            for client in (c.strip() for c in clients_of(version).split(",") if c.strip()):
                for test in tests:
                    cell = Cell(kafka, client, test, upgrade_from=upgrade_from_of(version))
                    refuse = bool(refused & {kafka, client, test, cell.key})
                    cells.append(replace(cell, refuse_first=refuse))
    return list(dict.fromkeys(cells))


def refused_cells(environ: dict[str, str]) -> list[str]:
    """The test knob's entries (``REFUSE_FIRST_ENV``), none when it is not set."""
    return [t.strip() for t in environ.get(REFUSE_FIRST_ENV, "").split(",") if t.strip()]


def run_argv(python: str, cell: Cell, settings: CellSettings, attempt: int) -> list[str]:
    """The command of one attempt: what a local sweep of this cell would run, as ``highwater
    run`` (so its exit code is ours, not pytest's), into the sweep's campaign."""
    backend = REFUSED_BACKEND if cell.refuse_first and attempt == 1 else settings.backend
    argv = [python, "-m", "highwater.cli", "run", cell.test, "--campaign", settings.campaign]
    argv += ["--results", settings.results, "--profile", settings.profile, "--backend", backend]
    argv += ["--client", cell.client, "--kafka-version", cell.kafka, "--progress", "plain"]
    if cell.upgrade_from is not None:
        argv += ["--upgrade-from", cell.upgrade_from]
    if settings.seed is not None:
        argv += ["--seed", str(settings.seed)]
    return argv


def setup_argv(python: str, kafka: str) -> list[str]:
    """``highwater setup`` of the cell's release on the executor's machine (idempotent: what the
    cache has is kept, under its file locks)."""
    return [python, "-m", "highwater.cli", "setup", "--kafka-version", kafka]


def retried(code: int, attempt: int, max_attempts: int = MAX_ATTEMPTS) -> bool:
    """Whether attempt number ``attempt`` (from 1), ended with ``code``, is followed by another:
    only a harness error is, never a verdict."""
    return attempt < max_attempts and of_child(code) is Exit.HARNESS


def status_of(code: int) -> ReleaseStatus | None:
    """A cell's outcome in the sweep state; None for an interrupted one (left pending, so the
    same command runs it again)."""
    exit_code = of_child(code)
    if exit_code is Exit.INTERRUPTED:
        return None
    return {
        Exit.OK: ReleaseStatus.PASSED,
        Exit.VIOLATIONS: ReleaseStatus.FAILED,
        Exit.UNKNOWN: ReleaseStatus.UNKNOWN,
    }.get(exit_code, ReleaseStatus.ERROR)


_SAID = {
    Exit.OK: "valid",
    Exit.VIOLATIONS: "violations",
    Exit.UNKNOWN: "unknown",
    Exit.USAGE: "refused (usage error)",
    Exit.HARNESS: "harness error, no verdict",
    Exit.INTERRUPTED: "interrupted",
}


def done_line(result: CellResult, done: int, total: int, elapsed: float) -> str:
    """The driver's line when a cell is done."""
    attempts = f"{result.attempts} attempt{'s' if result.attempts != 1 else ''}"
    where = f" on {result.host}" if result.host else ""
    why = f" ({result.reason})" if result.reason else ""
    log = f"; log {result.log}" if result.log and of_child(result.code) not in (Exit.OK,) else ""
    return (
        f"cell {done} of {total} done: {result.key}: {_SAID[of_child(result.code)]}{why} in "
        f"{clock(result.seconds)}, {attempts}{where}; elapsed {clock(elapsed)}{log}"
    )


@dataclass(frozen=True)
class Master:
    """A Spark master URL we take: ``local[...]`` (this machine's task slots) or a standalone
    master, ``spark://HOST:PORT`` (several, comma-separated, for a master with standbys)."""

    url: str
    addresses: tuple[tuple[str, int], ...] = ()

    @property
    def local(self) -> bool:
        return not self.addresses

    @property
    def loopback(self) -> bool:
        """Everything on this machine: the driver may bind to loopback only."""
        return self.local or all(h in ("127.0.0.1", "localhost") or h.startswith("127.") for h, _ in self.addresses)


_LOCAL = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?")
_HOST_PORT = re.compile(r"(?P<host>[A-Za-z0-9.-]+):(?P<port>\d{1,5})")


def parse_master(text: str) -> Master:
    """``--master``: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]`` or ``spark://HOST:PORT``
    (comma-separated for standbys); anything else in one line."""
    url = text.strip()
    if _LOCAL.fullmatch(url):
        return Master(url)
    if url.startswith("spark://"):
        addresses = []
        for part in url[len("spark://") :].split(","):
            m = _HOST_PORT.fullmatch(part.strip())
            if m is None or not 0 < int(m.group("port")) < 65536:
                break
            addresses.append((m.group("host"), int(m.group("port"))))
        else:
            if addresses:
                return Master(url, tuple(addresses))
    raise SweepError(f"--master {text!r}: expected local[N], local[*] or spark://HOST:PORT (a standalone Spark master)")


Connect = Callable[[tuple[str, int], float], None]  # raises OSError when nothing answers


def _connect(address: tuple[str, int], timeout: float) -> None:
    socket.create_connection(address, timeout=timeout).close()


def check_reachable(master: Master, connect: Connect = _connect, timeout: float = 3.0) -> None:
    """Refuse, in one line, a standalone master none of whose addresses accepts a connection."""
    problems = []
    for address in master.addresses:
        try:
            connect(address, timeout)
            return
        except OSError as exc:
            problems.append(f"{address[0]}:{address[1]}: {exc.strerror or exc}")
    if problems:
        raise SweepError(f"Spark master {master.url} is unreachable ({'; '.join(problems)}); start it or fix --master")


def check_results(results: str) -> None:
    """The results store must be a path every machine sees (a shared file system): the runs
    write their files there themselves."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", results):
        raise SweepError(
            f"--results {results!r}: with --master the results store is a path every machine mounts "
            "(a shared file system); object stores are not written to directly"
        )


def checked_master(url: str | None, results: str) -> Master | None:
    """``--master``, checked before anything starts: parsed, the results store a path every
    machine sees, a standalone master answering; None without one. One line for each refusal."""
    if url is None:
        return None
    master = parse_master(url)
    check_results(results)
    check_reachable(master)
    return master
