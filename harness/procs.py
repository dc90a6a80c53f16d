"""Child processes that cannot outlive us, and proof of which leftover processes are ours.

Every process highwater starts is recorded (pid, kernel start time, a marker in its command line)
in the state directory of the cluster that owns it. That directory is guarded by an ``flock``
held by the owning process: the kernel releases it when the owner dies, however it dies. A later
run that can take the lock knows the owner is gone, and kills exactly the recorded processes
whose pid, start time and command line all still match (so a recycled pid is never touched).
Children started with ``die_with_parent`` also get ``PR_SET_PDEATHSIG=SIGKILL``, so a
``kill -9`` of a test process takes its brokers down at once.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def _set_pdeathsig(sig: int = signal.SIGKILL) -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, sig)


def proc_start_time(pid: int) -> int | None:
    """Kernel start time of ``pid`` in clock ticks since boot, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parens: split after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])  # field 22 overall


def proc_cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def is_zombie_or_gone(pid: int) -> bool:
    """True once the process has fully exited. A thread-group leader turns zombie as soon as
    *it* exits while its other threads (a JVM has dozens) are still tearing down and holding
    sockets open, so a zombie counts as gone only when no other thread is left."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    if stat[stat.rindex(")") + 2] not in "ZX":
        return False
    try:
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    start_time: int
    marker: str  # a string that must appear in the command line (the cluster directory)

    def still_ours(self) -> bool:
        return (
            proc_start_time(self.pid) == self.start_time
            and not is_zombie_or_gone(self.pid)
            and self.marker in proc_cmdline(self.pid)
        )


def spawn(
    argv: Sequence[str],
    *,
    log_path: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    die_with_parent: bool = True,
    death_signal: int = signal.SIGKILL,
    piped: bool = False,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stdout+stderr appended to ``log_path``, in its own session (so a
    Ctrl-C in the terminal reaches us, and our teardown stops it in order). With
    ``die_with_parent`` it gets ``death_signal`` when this process dies (SIGINT lets a child
    that owns processes of its own, such as ``highwater run``, stop them first). ``piped``: its
    stdin and stdout are pipes to us (a program that talks through them) and only its stderr
    goes to the log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out: IO[bytes] = open(log_path, "ab")
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
            stdout=subprocess.PIPE if piped else out,
            stderr=out if piped else subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
            preexec_fn=functools.partial(_set_pdeathsig, death_signal) if die_with_parent else None,
        )
    finally:
        out.close()


def signal_and_wait(pid: int, sig: int, timeout: float) -> bool:
    """Send ``sig`` and wait up to ``timeout`` seconds for the process to be gone."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_zombie_or_gone(pid):
            return True
        time.sleep(0.05)
    return is_zombie_or_gone(pid)


class OwnerLock:
    """An ``flock`` on a file, held for as long as this process lives (or until released)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def owner_pid(self) -> int | None:
        try:
            return int(self.path.read_text().strip() or 0) or None
        except (OSError, ValueError):
            return None


class ProcessRegistry:
    """The processes one cluster started, persisted as JSON next to its owner lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[ProcessRecord]:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("unreadable process registry %s: %s", self.path, exc)
            return []
        return [ProcessRecord(**r) for r in raw]

    def _save(self, records: list[ProcessRecord]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(r) for r in records], indent=1))
        os.replace(tmp, self.path)

    def add(self, name: str, pid: int, marker: str) -> ProcessRecord:
        start = proc_start_time(pid)
        rec = ProcessRecord(name=name, pid=pid, start_time=start if start is not None else -1, marker=marker)
        records = [r for r in self.load() if r.name != name]
        records.append(rec)
        self._save(records)
        return rec

    def kill_all(self, timeout: float = 10.0) -> list[ProcessRecord]:
        """SIGKILL every recorded process that is provably still ours; return those killed."""
        killed = []
        for rec in self.load():
            if rec.still_ours():
                signal_and_wait(rec.pid, signal.SIGKILL, timeout)
                killed.append(rec)
        return killed
