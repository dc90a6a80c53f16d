"""A node's disk under a fault layer: lossyfs (``faults/lossyfs``, a loopback FUSE filesystem of
ours built on go-fuse) between a broker and its log directories, so a test can lose what was
not fsynced (a power failure), fail writes as a full disk does and slow writes and fsyncs down.

Why go-fuse: it is the maintained pure-Go FUSE library (no cgo, no libfuse to install), its
loopback node does all the I/O, and as root it mounts with mount(2) itself (no fusermount);
the layer only watches writes, fsyncs, truncations, creations and renames. Built from its
sources in this repository with ``go build`` (the Go module proxy serves go-fuse), once per
version of the sources, into the cache (``ensure_lossyfs``).

A ``LossyDisk`` is a service in the ducktape sense: ``start`` (mount ``source`` at
``mountpoint`` and wait until its control answers), ``stop`` (SIGTERM: it unmounts; a mount
left behind is detached), and its controls (``drop_unsynced``, ``set_full``, ``set_slow``,
``status``) go through the control port written next to the mount, so another process
(``highwater fault``) can drive a cluster's disks too (``LossyDisk.attach``). A lossyfs process
unmounts and exits within half a second of its parent's death, and ``unmount_ours_under``
detaches whatever a killed run left (the reaper and every teardown call it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from highwater.core.errors import HighwaterError, SetupError
from highwater.harness.paths import home
from highwater.harness.procs import ProcessRegistry, signal_and_wait, spawn
from highwater.harness.waiting import wait_until

log = logging.getLogger(__name__)

SOURCE = Path(__file__).resolve().parents[1] / "faults" / "lossyfs"
#: the filesystem type lossyfs mounts show in /proc/self/mountinfo
FSTYPE = "fuse.lossyfs"
CONTROL_FILE = "lossyfs.port"
START_TIMEOUT_S = 20.0


class DiskError(HighwaterError):
    """The disk layer could not be built, mounted or driven (one line)."""


def source_digest(source: Path = SOURCE) -> str:
    h = hashlib.sha256()
    for f in sorted([*source.glob("*.go"), source / "go.mod", source / "go.sum"]):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def ensure_lossyfs(progress: Any = log.info) -> Path:
    """The lossyfs binary for these sources, built with Go first if needed (idempotent)."""
    digest = source_digest()
    root = home() / "lossyfs" / digest
    binary = root / "lossyfs"
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        raise SetupError("Go (go) not found on PATH: it builds lossyfs, the disk fault layer; install golang")
    root.mkdir(parents=True, exist_ok=True)
    progress(f"building lossyfs (the disk fault layer) with Go, once, into {root}")
    tmp = root / f"lossyfs.{os.getpid()}.tmp"
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
    done = subprocess.run(
        [go, "build", "-o", str(tmp), "."], cwd=SOURCE, env=env, capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise SetupError(f"go build of lossyfs failed: {(done.stderr or done.stdout).strip()[-400:]}")
    os.replace(tmp, binary)
    return binary


def lossyfs_mounts(mountinfo: str) -> list[Path]:
    """The lossyfs mount points in the text of a /proc/<pid>/mountinfo (octal escapes decoded)."""
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, fstype = left.split(), right.split()[:1]
        if len(fields) > 4 and fstype == [FSTYPE]:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            found.append(Path(point))
    return found


def mounts_under(directory: Path) -> list[Path]:
    """Every lossyfs mount point at or under ``directory`` (from /proc/self/mountinfo)."""
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return []
    top = directory.resolve()
    return [p for p in lossyfs_mounts(text) if p == top or top in p.parents]


def unmount(point: Path) -> None:
    """Detach a mount (lazily: a process still holding a file cannot keep it mounted)."""
    done = subprocess.run(["umount", "-l", str(point)], capture_output=True, text=True, timeout=30)
    if done.returncode != 0 and point in mounts_under(point):
        raise DiskError(f"cannot unmount {point}: {done.stderr.strip()}")


def unmount_ours_under(directory: Path) -> list[Path]:
    """Detach every lossyfs mount under ``directory`` (a killed run's leftovers); the ones done."""
    points = mounts_under(directory)
    for p in sorted(points, key=lambda p: len(p.parts), reverse=True):
        unmount(p)
        log.warning("unmounted a disk layer left behind: %s", p)
    return points


@dataclass
class LossyDisk:
    """One node's disk layer: ``source`` (the real directory) served at ``mountpoint``."""

    source: Path
    mountpoint: Path
    control_file: Path
    proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def attach(cls, node_dir: Path, data_dir: Path) -> LossyDisk:
        """The disk of a node started by another process (its control file is in ``node_dir``)."""
        return cls(node_dir / "disk", data_dir, node_dir / CONTROL_FILE)

    def start(self, binary: Path, registry: ProcessRegistry, name: str, log_path: Path) -> LossyDisk:
        self.source.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.control_file.unlink(missing_ok=True)
        argv = [str(binary), "-source", str(self.source), "-mount", str(self.mountpoint)]
        argv += ["-control-file", str(self.control_file)]
        # not killed with its parent (a SIGKILL would leave the mount dead): it watches its
        # parent itself, and unmounts before it exits
        self.proc = spawn(argv, log_path=log_path, die_with_parent=False)
        registry.add(name, self.proc.pid, str(self.mountpoint))

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise DiskError(
                    f"lossyfs exited with {self.proc.returncode} mounting {self.mountpoint} (log: {log_path})"
                )
            return self.control_file.is_file() and self.mountpoint in mounts_under(self.mountpoint)

        wait_until(ready, START_TIMEOUT_S, lambda: f"lossyfs mounts {self.mountpoint} (log: {log_path})")
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Unmount: SIGTERM (it unmounts and exits), then detach whatever is left."""
        if self.proc is not None and self.proc.poll() is None:
            signal_and_wait(self.proc.pid, signal.SIGTERM, timeout)
            if self.proc.poll() is None:
                signal_and_wait(self.proc.pid, signal.SIGKILL, timeout)
        if self.mountpoint in mounts_under(self.mountpoint):
            unmount(self.mountpoint)
        self.proc = None

    # -- controls (any process) -------------------------------------------------------------
    def _call(self, method: str, path: str) -> dict[str, Any]:
        try:
            port = int(self.control_file.read_text().strip())
        except (OSError, ValueError) as exc:
            raise DiskError(f"no disk layer at {self.mountpoint} ({self.control_file}: {exc})") from None
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                answer: dict[str, Any] = json.loads(resp.read())
                return answer
        except OSError as exc:
            raise DiskError(f"the disk layer of {self.mountpoint} did not answer {path}: {exc}") from None

    def drop_unsynced(self) -> dict[str, int]:
        """Lose what was not made durable (the node must be dead): counts of files removed and
        truncated and bytes lost."""
        return {k: int(v) for k, v in self._call("POST", "/drop-unsynced").items()}

    def set_full(self, on: bool) -> None:
        self._call("POST", f"/full?on={int(on)}")

    def set_slow(self, write_ms: int, fsync_ms: int) -> None:
        self._call("POST", f"/slow?write_ms={int(write_ms)}&fsync_ms={int(fsync_ms)}")

    def set_failing(self, on: bool) -> None:
        """Every open, read, write and fsync fails with EIO while on (a failing disk)."""
        self._call("POST", f"/fail?on={int(on)}")

    def status(self) -> dict[str, Any]:
        return self._call("GET", "/status")
