"""Class-data-sharing archives for the Java client worker: one per worker build, Java build
and role (producer, consumer), so a worker JVM maps the client's classes pre-parsed instead of
loading and verifying them at its first connection.

Each Java worker is a fresh JVM, and on two cores its first request pays for loading Kafka's
network, protocol and record classes: measured on Kafka 4.4.0, a consumer's first connection
took 150 ms to complete and its first records came 0.3-0.45 s after the first poll, against
~0.18 s with an archive (``benchmarks/client_throughput.py``).

Unlike the brokers' archive (``harness.class_archive``), which a training node makes before a
cluster starts, a worker's archive is made by *training on first use*: when a role has no
archive yet, one worker of that role runs with ``-XX:ArchiveClassesAtExit`` (a dynamic archive,
JDK 13+) and writes it when it exits after its close command (``System.exit``); the archive
holds exactly the classes a real worker of that role loaded. It is adopted only when that
worker did its role's work (``exercised``: records polled, a write acknowledged), its JVM exited
with status 0 and left a non-empty file; a worker that was only made and closed, was killed,
failed or wrote nothing leaves no archive, and a later worker trains again. One worker trains
at a time per role (a marker file holding the pid of the Python process that started the
trainer, taken with ``O_EXCL``; a marker whose process is gone, or older than 10 minutes, is
taken over).

Speed must never cost a run: a JVM that finds the archive does not match its class path maps
nothing and loads classes the usual way (``-Xshare:auto``); its warning goes to the worker's
log, never to the protocol's stdout (``JVM_LOG_FLAGS``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: the JVM's own messages (a class archive that does not match, ...) go to stderr, the worker's
#: log: its stdout carries the line protocol only
JVM_LOG_FLAGS = ["-Xlog:disable", "-Xlog:all=warning:stderr"]
#: dynamic archives (``-XX:ArchiveClassesAtExit``) came with JDK 13; an older Java gets none
MIN_JAVA = 13
#: a training marker older than this was left by a process that died before finishing
MARKER_STALE_S = 600.0
#: a half-written archive of a dead trainer is deleted after this long
TMP_STALE_S = 3600.0


def java_tag(executable: Path, major: int) -> str:
    """Names one Java installation: its major release and a digest of where its binary really
    is and when it was installed. A dynamic archive only maps into the JVM build that made it;
    after a JDK update the old archive would be refused on every start, so the new build gets
    an archive of its own instead."""
    real = Path(os.path.realpath(executable))
    try:
        stamp = f"{real}:{real.stat().st_mtime_ns}:{real.stat().st_size}"
    except OSError:
        stamp = str(real)
    return f"java{major}-{hashlib.sha256(stamp.encode()).hexdigest()[:8]}"


def archive_path(lib: Path, tag: str, role: str) -> Path:
    """Where the archive of ``role`` for the worker built in ``lib`` on the Java named ``tag``
    (``java_tag``) lives: beside ``lib``, so a rebuild of the worker (``ensure_worker``) can
    drop it."""
    return lib.parent / f"worker-{role}-{tag}.jsa"


@dataclass
class WorkerLaunch:
    """The archive flags of one worker JVM and, when it trains, where its archive is written."""

    flags: list[str]
    training: Path | None = None
    final: Path | None = None
    marker: Path | None = None
    worth_keeping: bool = False

    def exercised(self) -> None:
        """The worker did its role's real work (a consumer decoded fetched records, a producer
        had a write acknowledged), so it loaded the classes a worker of its role needs: only
        such a trainer's archive is adopted, not one of a worker that was made and closed."""
        self.worth_keeping = True

    def finish(self, returncode: int | None) -> None:
        """After the worker JVM is gone: adopt its archive when it trained and exited cleanly,
        else delete what it wrote. Never raises: a lost archive only costs speed."""
        if self.training is None or self.final is None:
            return
        final = self.final
        try:
            if returncode == 0 and self.worth_keeping and self.training.is_file() and self.training.stat().st_size > 0:
                os.replace(self.training, final)
                log.info("java worker class archive ready: %s", final)
            else:
                self.training.unlink(missing_ok=True)
                log.debug(
                    "java worker class archive not adopted (exit %s, exercised: %s)", returncode, self.worth_keeping
                )
        except OSError as exc:
            log.warning("java worker class archive %s: %s", final, exc)
        finally:
            if self.marker is not None:
                self.marker.unlink(missing_ok=True)
            self.training = self.marker = None  # finished once


def _holder_gone(marker: Path, now: float) -> bool:
    """Whether ``marker`` was left by a process that is gone (its pid no longer runs) or is
    older than ``MARKER_STALE_S`` (a pid that was reused)."""
    try:
        if now - marker.stat().st_mtime > MARKER_STALE_S:
            return True
        pid = int(marker.read_text().split()[0])
    except FileNotFoundError:
        return False
    except (ValueError, IndexError):
        return True  # half written by a process that died at once
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # runs, as another user
    return False


def _take_marker(marker: Path, now: float) -> bool:
    """Whether this process may train (it then holds ``marker``)."""
    if _holder_gone(marker, now):
        marker.unlink(missing_ok=True)  # left by a trainer that died
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    return True


def _sweep_stale(final: Path, now: float) -> None:
    for tmp in final.parent.glob(f".{final.name}.tmp-*"):
        try:
            if now - tmp.stat().st_mtime > TMP_STALE_S:
                tmp.unlink()
        except OSError as exc:
            log.debug("stale archive %s: %s", tmp, exc)


def drop_archives(lib: Path) -> None:
    """Forget the archives of the worker in ``lib`` (it is being rebuilt: they would not match)."""
    for path in lib.parent.glob("worker-*.jsa"):
        path.unlink(missing_ok=True)


def launch(lib: Path, java_major: int, tag: str, role: str, now: float | None = None) -> WorkerLaunch:
    """The flags for a new worker of ``role``: map the archive when there is one, else train
    one if no other worker of this role is training, else none (and none before JDK 13)."""
    if java_major < MIN_JAVA:
        return WorkerLaunch([])
    now = time.time() if now is None else now
    final = archive_path(lib, tag, role)
    _sweep_stale(final, now)
    if final.is_file():
        return WorkerLaunch([f"-XX:SharedArchiveFile={final}"])
    marker = final.with_name(f".{final.name}.training")
    if not _take_marker(marker, now):
        return WorkerLaunch([])
    training = final.with_name(f".{final.name}.tmp-{uuid.uuid4().hex[:8]}")
    return WorkerLaunch([f"-XX:ArchiveClassesAtExit={training}"], training, final, marker)
