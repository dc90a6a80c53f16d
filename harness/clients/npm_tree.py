"""Trees of npm packages in the cache, one per client and version, for the Node.js workers, and
how a Node.js worker starts on one (``NodeLauncher``).

A Node.js client under test lives in ``<cache>/clients/<client>/<version>/node_modules``,
installed once with npm from the npm registry; its worker runs on ``node`` with ``NODE_PATH``
pointing at that tree, so several versions run side by side:

- the version pinned in a committed ``package.json`` with its lock file (kafkajs's in
  ``clients/node``) is installed with ``npm ci`` (the lock's integrity hashes checked);
- any other version gets a ``package.json`` naming exactly that version and ``npm install``;
  a version the registry does not have is one line (``UnknownClientError``) before any test
  starts, and leaves nothing in the cache.

A package with a native build (``NpmClient.build``: @confluentinc/kafka-javascript compiles the
librdkafka it bundles) runs its install scripts with the environment it names; a package without
one is installed with ``--ignore-scripts``. Installs are marked complete only when npm succeeded
(an interrupted one is redone), and concurrent installs wait on the client's lock file.

Why not npm's own cache alone: it keeps tarballs, not installed trees, and one ``node_modules``
holds one version of a package; a tree per version is what lets a sweep or a bisect run
versions side by side.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, to_stderr
from highwater.core.versions import leading_numbers as release
from highwater.harness.paths import home

from .base import UnknownClientError
from .worker import Launch, NeutralSettingsConfig, worker_log_path

_MARKER = ".highwater-complete"
_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(?:-[A-Za-z0-9.]+)?$")


@dataclass(frozen=True)
class NpmClient:
    """A client under test that npm installs: highwater's ``name`` for it, its npm ``package``,
    the ``oldest`` version its worker supports, its ``pinned`` version (the default), the
    folder holding the committed ``package.json`` and ``package-lock.json`` of the pinned one
    (None: it is installed like any other version), and, for a native build, what gives the
    environment its install scripts run with (``build``, asked only when it installs, so that a
    tree built already needs none of the build's tools; None: no scripts run) and how long it
    may take."""

    name: str
    package: str
    oldest: tuple[int, ...]
    pinned: str
    locked: Path | None = None
    build: Callable[[], Mapping[str, str]] | None = None
    timeout_s: float = 600.0

    def tree_dir(self, version: str) -> Path:
        return home() / "clients" / self.name / version

    def stamp(self, version: str) -> str:
        """What a complete tree of ``version`` was installed from (the locked pinned one: the lock
        file's digest, so a changed lock reinstalls it)."""
        if version != self.pinned or self.locked is None:
            return f"{self.package}@{version}"
        digest = hashlib.sha256((self.locked / "package-lock.json").read_bytes()).hexdigest()[:16]
        return f"{self.package}@{version} lock {digest}"


def find_node(client: str) -> tuple[str, str]:
    """``node`` and ``npm``, or one line saying how to get them."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise SetupError(
            f"{client} needs Node.js (node and npm on PATH): install them (Debian: apt-get install nodejs npm; in a checkout `make install` does)"
        )
    return node, npm


def without_node_env() -> dict[str, str]:
    """This process's environment without ``NODE_ENV``: with ``test`` kafkajs loads other retry
    defaults, so neither npm nor a worker inherits it."""
    return {k: v for k, v in os.environ.items() if k != "NODE_ENV"}


def ensure_tree(client: NpmClient, version: str, progress: Progress = to_stderr) -> Path:
    """The ``node_modules`` of a tree holding ``client`` at ``version`` (installed first if
    needed; idempotent)."""
    if not _VERSION.match(version):
        raise UnknownClientError(f"bad {client.name} version {version!r}")
    if release(version) < client.oldest:
        raise UnknownClientError(
            f"{client.name} {version} is too old: its worker needs {'.'.join(map(str, client.oldest))} or later"
        )
    root = client.tree_dir(version)
    marker, stamp = root / _MARKER, client.stamp(version)
    if marker.is_file() and marker.read_text().strip() == stamp:
        return root / "node_modules"
    _, npm = find_node(client.name)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text().strip() == stamp:
            return root / "node_modules"
        how = " (a native build: minutes)" if client.build is not None else ""
        progress(f"installing {client.name} {version} with npm into {root}{how}")
        started = time.monotonic()
        shutil.rmtree(root, ignore_errors=True)
        try:
            root.mkdir(parents=True)
            _npm_install(client, npm, root, version)
            marker.write_text(f"{stamp}\n")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        progress(f"{client.name} {version} installed in {time.monotonic() - started:.0f} s")
    return root / "node_modules"


def _npm_install(client: NpmClient, npm: str, root: Path, version: str) -> None:
    flags = ["--no-audit", "--no-fund", "--loglevel=error"]
    if client.build is None:
        flags.insert(0, "--ignore-scripts")
    if version == client.pinned and client.locked is not None:
        shutil.copy(client.locked / "package.json", root / "package.json")
        shutil.copy(client.locked / "package-lock.json", root / "package-lock.json")
        cmd = [npm, "ci", *flags]
    else:
        manifest = {"name": f"highwater-{client.name}", "private": True, "dependencies": {client.package: version}}
        (root / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        cmd = [npm, "install", *flags]
    env = {**without_node_env(), **(client.build() if client.build is not None else {})}
    # its own session, so that a timeout ends the whole build (npm's node-gyp and make children
    # too), not npm alone while they go on writing into a tree the caller removes
    proc = subprocess.Popen(
        cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=client.timeout_s)
    except subprocess.TimeoutExpired:
        _end_group(proc)
        raise SetupError(
            f"cannot install {client.name} {version} with npm: not done within {client.timeout_s:.0f} s"
        ) from None
    except BaseException:  # Ctrl-C: the build ends with us
        _end_group(proc)
        raise
    done = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip()
        if "ETARGET" in text or "No matching version" in text or "E404" in text:
            raise UnknownClientError(f"{client.name} {version} is not on the npm registry")
        last = text.splitlines()[-1] if text else "(no output)"
        raise SetupError(f"cannot install {client.name} {version} with npm: {last}")


def _end_group(proc: subprocess.Popen[str]) -> None:
    """Kill the build's process group (npm and every child it started) and reap npm."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the whole group ended already
        pass
    proc.communicate()


class NodeLauncher(NeutralSettingsConfig):
    """Starts the worker program ``worker`` of the Node.js client ``client`` on ``node``, with
    the tree ``modules`` on its module path (``NODE_PATH``) and never ``NODE_ENV``."""

    def __init__(self, client: str, worker: Path, node: str, modules: Path) -> None:
        self.client = client
        self.worker = worker
        self.node = node
        self.modules = modules

    def launch(self, role: str, client_id: str) -> Launch:
        env = {**without_node_env(), "NODE_PATH": str(self.modules)}
        argv = [self.node, str(self.worker), f"--highwater-client={client_id}"]
        return Launch(argv, worker_log_path(self.client, client_id), env=env)
