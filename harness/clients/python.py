"""Python clients under test (kafka-python, confluent-kafka), each in a worker process.

A Python client runs in ``clients/python/highwater_worker.py``, started with the interpreter of
the client version asked for, so the kafka-python the harness itself uses (observer, admin, raw
protocol requests) is never the one under test and several versions run side by side:

- without a version, or with the version installed with highwater (``pyproject.toml``), the
  worker runs on the harness's own interpreter (a process of its own all the same);
- any other version gets a virtual environment of its own in the cache,
  ``<cache>/clients/<dist>/<version>/venv``, made once (``python -m venv --without-pip``, then
  the harness's pip installs ``<dist>==<version>`` into it), marked complete only when pip
  succeeded; concurrent makers of one version wait on a lock. A version PyPI does not have is
  one line (``UnknownClientError``), before any test starts;
- a local build (``kafka-python@/path/to/checkout`` or ``@/path/to/dist.whl``) gets a virtual
  environment per path, ``<cache>/clients/<dist>/local/<hash of the path>/venv``, installed
  again whenever the source tree or wheel changed, so a run always tests the code as it is now;
  its version is what the build reports, marked ``+local.<hash>``.

This module is the harness side (launching the worker); the worker side, each library's
in-worker adaptation, is ``clients/python/`` (``kafka_python.py``, ``confluent.py``,
``confluent_share.py``), imported only inside the worker. The worker finds those and the
harness's pure modules (the driver protocol) beside its own file, a checkout or the installed
package alike; nothing else of the harness's environment.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, to_stderr
from highwater.core.versions import leading_numbers as _release
from highwater.harness.client_common import installed_version
from highwater.harness.paths import home

from .base import UnknownClientError
from .worker import Launch, NeutralShareConfig, WorkerDriver, worker_log_path

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "clients" / "python" / "highwater_worker.py"
_MARKER = ".highwater-complete"  # written last: a venv without it is an interrupted install
_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+!-]*$")

#: the oldest release of each Python client its driver supports (older ones are refused in one
#: line, here and by sweeps and bisects): confluent-kafka's per-record leader epochs and KIP-320
#: came with 2.1.0 (librdkafka 2.1.0); kafka-python's truncation detection (KIP-320) with 3.0.0,
#: and with it the Fetcher internals the driver hooks to see position resets and epoch
#: validations (tried on Kafka 4.4.0: 2.0.2 and 2.1.0 lack ``_reset_offset_if_needed``, 2.2.0
#: and 2.3.0 ``_handle_offset_for_leader_epoch_response``; 3.0.0 reads records with epochs)
OLDEST: dict[str, tuple[int, ...]] = {"confluent-kafka": (2, 1, 0), "kafka-python": (3, 0, 0)}


def check_floor(dist: str, version: str, what: str) -> None:
    """Refuse (one line naming ``what``) a version of ``dist`` older than its driver supports."""
    oldest = OLDEST.get(dist)
    if oldest is not None and _release(version) < oldest:
        raise UnknownClientError(f"{what} is too old: its driver needs {'.'.join(map(str, oldest))} or later")


def venv_dir(dist: str, version: str) -> Path:
    return home() / "clients" / dist / version / "venv"


def ensure_venv(dist: str, version: str, progress: Progress = to_stderr) -> Path:
    """The interpreter of a virtual environment holding ``dist==version`` (made first if
    needed; idempotent; one line if PyPI has no such version)."""
    return _ensure(dist, venv_dir(dist, version), f"{dist}=={version}", f"{dist}=={version}", progress)


def _ensure(dist: str, root: Path, requirement: str, stamp: str, progress: Progress) -> Path:
    """The interpreter of the virtual environment ``root`` with ``requirement`` installed by
    pip, made first unless its marker already says ``stamp`` (an interrupted or outdated one is
    made again). Concurrent makers wait on the client's one lock file (``<cache>/clients/<dist>/
    .install.lock``, kept: a lock file inside ``root``'s directory would outlive a refused
    version there)."""
    python = root / "bin" / "python"
    marker = root / _MARKER
    if marker.is_file() and marker.read_text().strip() == stamp:
        return python
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(home() / "clients" / dist / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text().strip() == stamp:
            return python
        progress(f"installing {requirement} into its own virtual environment: {root}")
        started = time.monotonic()
        shutil.rmtree(root, ignore_errors=True)  # an interrupted install, or an outdated build
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True, timeout=120
            )
            pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-input"]
            done = subprocess.run([*pip, requirement], capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                lines = done.stderr.strip().splitlines() or ["(no output)"]
                if any("No matching distribution" in line for line in lines):
                    raise UnknownClientError(
                        f"{requirement.replace('==', ' ')} is not on PyPI "
                        f"(or not for Python {sys.version_info[0]}.{sys.version_info[1]})"
                    )
                raise SetupError(f"cannot install {requirement}: {lines[-1]}")
            marker.write_text(f"{stamp}\n")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            if not any(root.parent.iterdir()):
                root.parent.rmdir()  # a version that could not be installed leaves nothing behind
            raise
        progress(f"{requirement} installed in {time.monotonic() - started:.0f} s")
    return python


# --- local builds ---------------------------------------------------------------------------

#: what a source tree's fingerprint leaves out: version control, caches and build output, which
#: change without the client changing (and would make every run reinstall it)
_NOT_SOURCE = frozenset({".git", ".hg", "__pycache__", "build", "dist", ".tox", ".nox", ".venv", ".eggs"})


def source_fingerprint(path: Path) -> str:
    """What a local build is, for knowing when to reinstall it: a wheel's content hash, or for
    a source tree the hash of every file's relative path, size and modification time (not the
    files' bytes: a checkout of thousands of files is walked in milliseconds)."""
    digest = hashlib.sha256()
    if path.is_file():
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    for parent, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_SOURCE and not d.endswith(".egg-info"))
        for name in sorted(files):
            st = os.stat(os.path.join(parent, name))
            digest.update(
                f"{os.path.relpath(os.path.join(parent, name), path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode()
            )
    return digest.hexdigest()


def local_build(dist: str, path: Path, progress: Progress = to_stderr) -> tuple[Path, str]:
    """The interpreter of a virtual environment holding the local build of ``dist`` at ``path``
    (a source tree pip can build, or a wheel), and the version it reports with a
    ``+local.<key>`` mark (``<key>``: the path's hash, so two checkouts of one version are told
    apart). Installed again whenever the build changed (``source_fingerprint``)."""
    if not path.exists():
        raise UnknownClientError(f"{dist} local build {path}: no such file or directory")
    if path.is_file() and path.suffix != ".whl":
        raise UnknownClientError(f"{dist} local build {path}: neither a source tree nor a wheel (.whl)")
    key = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    root = home() / "clients" / dist / "local" / key / "venv"
    python = _ensure(dist, root, str(path), source_fingerprint(path), progress)
    found = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if found.returncode != 0:
        raise UnknownClientError(f"{path} installs no {dist} (pip installed something else)")
    version = found.stdout.strip()
    check_floor(dist, version, f"{dist} {version} at {path}")
    return python, f"{version}{'.' if '+' in version else '+'}local.{key}"


class PythonLauncher(NeutralShareConfig):
    """Starts ``clients/python/highwater_worker.py`` on ``python`` for the client ``dist``."""

    def __init__(self, dist: str, python: Path) -> None:
        self.dist = self.client = dist
        self.python = python

    def launch(self, role: str, client_id: str) -> Launch:
        log_path = worker_log_path(self.dist, client_id)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the worker finds ours itself
        env |= {"PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1"}
        argv = [str(self.python), str(WORKER), f"--highwater-client={client_id}"]
        return Launch(argv, log_path, env=env, stacks_signal=signal.SIGUSR1)  # the worker's faulthandler


def local_driver(dist: str, path: Path, progress: Progress = to_stderr) -> WorkerDriver:
    """The driver of a local build of Python client ``dist`` (``local_build``)."""
    python, version = local_build(dist, path, progress)
    return WorkerDriver(dist, version, PythonLauncher(dist, python))


def python_driver(dist: str, version: str | None, progress: Progress = to_stderr) -> WorkerDriver:
    """The driver of Python client ``dist`` at ``version`` (None: the one installed with
    highwater), its producers and consumers each a worker process."""
    installed = installed_version(dist)
    if version is not None and not _VERSION.match(version):
        raise UnknownClientError(f"bad {dist} version {version!r}")
    if version is not None:
        check_floor(dist, version, f"{dist} {version}")
    if version is None or version == installed:
        if installed is None:
            raise SetupError(
                f"{dist} is not installed with highwater (pip install highwater again, or `make install` in a checkout)"
            )
        return WorkerDriver(dist, installed, PythonLauncher(dist, Path(sys.executable)))
    return WorkerDriver(dist, version, PythonLauncher(dist, ensure_venv(dist, version, progress)))
