"""A node's wall clock under our control: libfaketime (Debian's ``libfaketime``) preloaded into the
node's JVM reads the clock's offset from a file in the node's directory, so a test can jump a
broker's clock forward or back and let it drift, while the machine's clock stays right.

How (``ClusterSpec(clock="faked")``, local backend): every node JVM starts with
``LD_PRELOAD=libfaketime.so.1`` and ``FAKETIME_TIMESTAMP_FILE=<node dir>/clock.rc``, a file that
holds one relative offset in seconds (``+0.000000``, ``+3600.000000``, ``-0.250000``: libfaketime
reads it with ``atof``, so a fraction takes a ``.`` in the C locale, which ``LC_NUMERIC=C`` asks
for). With ``FAKETIME_CACHE_DURATION=0`` libfaketime reads the file again on the first time call
after the real clock's whole second has changed (``fake_clock_gettime``: ``now - last_fetch >
cache_duration``), so a new offset reaches ``System.currentTimeMillis()`` within about a second,
at one file read per second, not per call (``FAKETIME_NO_CACHE=1`` reads it on every call, too slow
for a broker). Only the wall clock moves: ``FAKETIME_DONT_FAKE_MONOTONIC=1`` leaves
``System.nanoTime()`` and the timed waits alone (``FAKETIME_FORCE_MONOTONIC_FIX=0``: with the fix,
parked threads spin).

A drift is not libfaketime's ``x`` speed factor (it hangs a JVM): a small stepper process of ours
(``python -m highwater.harness.clock drift``) rewrites the offset once a second, ``rate`` ms per second of
real time. It is a process, not a thread, so it lasts as long as the fault does, also when
``highwater fault apply`` exits and leaves the fault in place; it stops when healed (SIGTERM),
when the cluster's owner dies (it checks at every step) or its node's directory is gone, and the
cluster's teardown and the reaper kill it as a recorded process. Its record sits next to the
clock file, so any process can stop it (``NodeClock.stop_drift``).

libfaketime also keeps a semaphore and a shared-memory object per process in ``/dev/shm``, which
it removes at exit; a SIGKILLed JVM leaves them, so ``remove_shm`` removes a dead pid's.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import signal
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from highwater.core.errors import HighwaterError

from .procs import ProcessRecord, ProcessRegistry, is_zombie_or_gone, proc_start_time, signal_and_wait, spawn

CLOCK_FILE = "clock.rc"
DRIFT_RECORD = "clock-drift.json"
DRIFT_LOG = "clock-drift.log"
#: the drift stepper's period: libfaketime reads the offset file at most once per real second
#: (``FAKETIME_CACHE_DURATION=0``), so a finer step would never be seen by the JVM
STEP_S = 1.0
SHM_DIR = Path("/dev/shm")


class ClockError(HighwaterError):
    """A faked clock could not be set up or driven (one line)."""


def _lib_patterns() -> tuple[str, ...]:
    arch = sysconfig.get_config_var("MULTIARCH") or "*"  # this machine's multiarch triple first
    return (
        f"/usr/lib/{arch}/faketime/libfaketime.so.1",
        "/usr/lib/*/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
        "/usr/local/lib/faketime/libfaketime.so.1",
    )


def find_libfaketime(patterns: Sequence[str] | None = None) -> Path:
    """The libfaketime preload library (Debian's ``libfaketime``), or one line saying how to get it."""
    for pattern in patterns if patterns is not None else _lib_patterns():
        hits = sorted(glob.glob(pattern))
        if hits:
            return Path(hits[0])
    raise ClockError(
        "libfaketime not found (/usr/lib/<arch>/faketime/libfaketime.so.1): clock='faked' preloads it "
        "into the node JVMs; install it with 'apt-get install libfaketime' (or 'make')"
    )


def faked_env(clock_file: Path, library: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a node JVM whose wall clock reads ``clock_file`` (module docstring)."""
    env = dict(os.environ if base is None else base)
    preload = env.get("LD_PRELOAD")
    env.update(
        {
            "LD_PRELOAD": f"{library}:{preload}" if preload else str(library),
            "FAKETIME_TIMESTAMP_FILE": str(clock_file),
            "FAKETIME_CACHE_DURATION": "0",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_FORCE_MONOTONIC_FIX": "0",
            "LC_NUMERIC": "C",  # the offset's fraction is read with atof: a '.' in the C locale
        }
    )
    return env


def format_offset(seconds: float) -> str:
    """The clock file's line for an offset in seconds: signed, microseconds, no unit suffix."""
    if not math.isfinite(seconds):
        raise ClockError(f"a clock offset must be a finite number of seconds, got {seconds}")
    return f"{seconds + 0.0:+.6f}\n"  # + 0.0: -0.0 is written +0.000000


def parse_offset(text: str) -> float:
    """The offset in a clock file (its first line libfaketime would read: not a comment)."""
    for line in text.splitlines():
        if len(line) > 1 and line[0] not in " #;":
            try:
                return float(line.strip())
            except ValueError:
                break
    raise ClockError(f"not a clock offset in seconds: {text.strip()[:40]!r}")


def remove_shm(pid: int, shm_dir: Path = SHM_DIR) -> list[Path]:
    """Remove what libfaketime kept in ``/dev/shm`` for ``pid`` if the process is gone (a clean exit
    removes it itself; a SIGKILL leaves it); the paths removed."""
    if not is_zombie_or_gone(pid):
        return []
    removed = []
    for name in (f"faketime_shm_{pid}", f"sem.faketime_sem_{pid}"):
        path = shm_dir / name
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            continue
    return removed


@dataclass(frozen=True)
class Drift:
    """A clock that gains ``rate_ms`` ms per second of real time from ``base`` seconds on."""

    base: float
    rate_ms: float

    def offset_after(self, elapsed_s: float) -> float:
        return self.base + self.rate_ms / 1000.0 * elapsed_s


def write_offset(clock_file: Path, seconds: float) -> None:
    """Replace the clock file at once (a reader never sees half a line)."""
    tmp = clock_file.with_name(f"{clock_file.name}.{os.getpid()}.tmp")
    tmp.write_text(format_offset(seconds))
    os.replace(tmp, clock_file)


def run_drift(
    clock_file: Path,
    drift: Drift,
    keep_going: Callable[[], bool],
    *,
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    step: float = STEP_S,
) -> int:
    """Step the clock file along ``drift`` every ``step`` seconds of ``now`` until ``keep_going``
    says no; the number of steps written. Elapsed time is this process's monotonic time, which no
    faked clock touches; steps keep to the grid from the start, so a slow write adds no lag."""
    started = now()
    steps = 0
    while keep_going():
        write_offset(clock_file, drift.offset_after(now() - started))
        steps += 1
        sleep(step - (now() - started) % step)
    return steps


def _owner_alive(owner_pid: int | None, node_dir: Path) -> Callable[[], bool]:
    def alive() -> bool:
        return node_dir.is_dir() and (owner_pid is None or not is_zombie_or_gone(owner_pid))

    return alive


class NodeClock:
    """One node's faked wall clock: the offset file its JVM reads through libfaketime, and the drift
    stepper that moves it. Its state is in files in the node's directory, so any process can drive
    it (``highwater fault`` on a cluster that ``highwater cluster up`` keeps). ``owner_pid``: the
    process that owns the cluster; a drift stops by itself when it is gone."""

    def __init__(
        self, node_dir: Path, name: str, registry: ProcessRegistry | None = None, owner_pid: int | None = None
    ) -> None:
        self.node_dir = node_dir
        self.name = name
        self.file = node_dir / CLOCK_FILE
        self._registry = registry
        self._owner_pid = owner_pid

    @property
    def enabled(self) -> bool:
        """The node was started with a faked clock (its clock file exists)."""
        return self.file.is_file()

    def create(self) -> NodeClock:
        """The clock file at +0, before the node's JVM starts (it must exist when it reads it)."""
        self.node_dir.mkdir(parents=True, exist_ok=True)
        write_offset(self.file, 0.0)
        return self

    def offset(self) -> float:
        """The offset the file holds, in seconds (the JVM follows it within a second)."""
        try:
            return parse_offset(self.file.read_text())
        except OSError as exc:
            raise ClockError(f"{self.name} has no faked clock ({self.file}: {exc.strerror})") from None

    def set_offset(self, seconds: float) -> None:
        if not self.enabled:
            raise ClockError(f"{self.name} has no faked clock: start the cluster with ClusterSpec(clock='faked')")
        write_offset(self.file, seconds)

    # -- drift --------------------------------------------------------------------------------
    def _record(self) -> ProcessRecord | None:
        try:
            return ProcessRecord(**json.loads((self.node_dir / DRIFT_RECORD).read_text()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            raise ClockError(f"unreadable drift record of {self.name}: {exc}") from None

    def drifting(self) -> bool:
        record = self._record()
        return record is not None and record.still_ours()

    def start_drift(self, rate_ms: float) -> None:
        """Let the clock gain ``rate_ms`` ms per second (negative: lose) from its offset now on."""
        if self.drifting():
            raise ClockError(f"{self.name}'s clock is already drifting")
        base = self.offset()
        argv = [sys.executable, "-m", "highwater.harness.clock", "drift", "--file", str(self.file)]
        argv += ["--base", repr(base), "--rate", repr(float(rate_ms))]
        if self._owner_pid is not None:
            argv += ["--owner-pid", str(self._owner_pid)]
        # not tied to its parent: the parent may be a nemesis thread or a 'fault apply' that exits
        # while the fault stays; it watches the cluster's owner instead (module docstring)
        proc = spawn(argv, log_path=self.node_dir / DRIFT_LOG, die_with_parent=False)
        start = proc_start_time(proc.pid)
        record = ProcessRecord(f"clock-drift-{self.name}", proc.pid, -1 if start is None else start, str(self.file))
        (self.node_dir / DRIFT_RECORD).write_text(json.dumps(asdict(record)))
        if self._registry is not None:
            self._registry.add(record.name, proc.pid, record.marker)

    def stop_drift(self, timeout: float = 10.0) -> None:
        """Stop the stepper (if any) and wait until it is gone: nothing writes the file after this."""
        record = self._record()
        if record is not None and record.still_ours():
            if not signal_and_wait(record.pid, signal.SIGTERM, timeout):
                signal_and_wait(record.pid, signal.SIGKILL, timeout)
        (self.node_dir / DRIFT_RECORD).unlink(missing_ok=True)

    def reset(self) -> None:
        """Healed: no drift, offset +0."""
        self.stop_drift()
        self.set_offset(0.0)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m highwater.harness.clock drift --file F --base S --rate MS [--owner-pid P]``: the stepper."""
    parser = argparse.ArgumentParser(prog="python -m highwater.harness.clock")
    sub = parser.add_subparsers(dest="command", required=True)
    drift = sub.add_parser("drift", help="step a clock file's offset once a second")
    drift.add_argument("--file", type=Path, required=True)
    drift.add_argument("--base", type=float, required=True, help="seconds: the offset when the drift began")
    drift.add_argument("--rate", type=float, required=True, help="ms gained per second (negative: lost)")
    drift.add_argument("--owner-pid", type=int, default=None, help="stop when this process is gone")
    args = parser.parse_args(argv)
    # SIGTERM (a heal) ends the loop between two steps' atomic writes: nothing half-written
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        steps = run_drift(args.file, Drift(args.base, args.rate), _owner_alive(args.owner_pid, args.file.parent))
    except OSError:
        if args.file.parent.is_dir():
            raise
        return 0  # the node's directory went away between the check and the write: the cluster is gone
    print(f"drift of {args.file} stopped after {steps} steps: its cluster is gone", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
