"""kafkajs under test: the Node.js worker (``clients/node/highwater_worker.js``).

Each kafkajs version lives in a tree of its own in the cache, ``<cache>/clients/kafkajs/
<version>/node_modules``, installed once with npm from the npm registry; the worker runs on
``node`` with ``NODE_PATH`` pointing at that tree, so several versions run side by side:

- the version pinned in ``clients/node/package.json`` (the default, ``--client kafkajs``) is
  installed with ``npm ci`` from the committed lock file (its integrity hash checked);
- any other version (``--client kafkajs==2.1.0``) gets a ``package.json`` naming exactly that
  version and ``npm install``; a version the registry does not have is one line
  (``UnknownClientError``) before any test starts, and leaves nothing in the cache.

kafkajs has no runtime dependencies, so a tree is one package. Installs are marked complete
only when npm succeeded (an interrupted one is redone), and concurrent installs wait on the
client's lock file. The worker ends at the end of its stdin and within half a second of its
parent's death, like every worker (``harness.clients.worker``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, to_stderr
from highwater.core.versions import leading_numbers as release
from highwater.harness.paths import home

from .base import UnknownClientError
from .worker import Launch, NeutralSettingsConfig, WorkerDriver, worker_log_path

NAME = "kafkajs"
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "node"
WORKER = PACKAGE / "highwater_worker.js"
_MARKER = ".highwater-complete"
_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(?:-[A-Za-z0-9.]+)?$")

#: the oldest kafkajs the worker supports: 2.0.0 fetches from each broker on its own
#: (``ConsumerGroup#fetch(nodeId)``, which the worker wraps to learn the serving broker)
OLDEST = (2, 0, 0)


def pinned_version() -> str:
    """The kafkajs version of the committed ``package.json`` (the default client)."""
    return str(json.loads((PACKAGE / "package.json").read_text())["dependencies"][NAME])


def find_node() -> tuple[str, str]:
    """``node`` and ``npm``, or one line saying how to get them."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise SetupError(
            "kafkajs needs Node.js (node and npm on PATH): install them (Debian: apt-get install nodejs npm; in a checkout `make install` does)"
        )
    return node, npm


def tree_dir(version: str) -> Path:
    return home() / "clients" / NAME / version


def _stamp(version: str) -> str:
    """What a complete tree of ``version`` was installed from (the pinned one: the lock file's
    digest, so a changed lock reinstalls it)."""
    if version != pinned_version():
        return f"{NAME}@{version}"
    digest = hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()[:16]
    return f"{NAME}@{version} lock {digest}"


def ensure_tree(version: str, progress: Progress = to_stderr) -> Path:
    """The ``node_modules`` of a tree holding kafkajs ``version`` (installed first if needed;
    idempotent)."""
    if not _VERSION.match(version):
        raise UnknownClientError(f"bad kafkajs version {version!r}")
    if release(version) < OLDEST:
        raise UnknownClientError(
            f"kafkajs {version} is too old: its worker needs {'.'.join(map(str, OLDEST))} or later"
        )
    root = tree_dir(version)
    marker, stamp = root / _MARKER, _stamp(version)
    if marker.is_file() and marker.read_text().strip() == stamp:
        return root / "node_modules"
    _, npm = find_node()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text().strip() == stamp:
            return root / "node_modules"
        progress(f"installing kafkajs {version} with npm into {root}")
        started = time.monotonic()
        shutil.rmtree(root, ignore_errors=True)
        try:
            root.mkdir(parents=True)
            _npm_install(npm, root, version)
            marker.write_text(f"{stamp}\n")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        progress(f"kafkajs {version} installed in {time.monotonic() - started:.0f} s")
    return root / "node_modules"


def _without_node_env() -> dict[str, str]:
    """This process's environment without ``NODE_ENV``: with ``test`` kafkajs loads other retry
    defaults, so neither npm nor a worker inherits it."""
    return {k: v for k, v in os.environ.items() if k != "NODE_ENV"}


def _npm_install(npm: str, root: Path, version: str) -> None:
    flags = ["--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    if version == pinned_version():
        shutil.copy(PACKAGE / "package.json", root / "package.json")
        shutil.copy(PACKAGE / "package-lock.json", root / "package-lock.json")
        cmd = [npm, "ci", *flags]
    else:
        manifest = {"name": "highwater-kafkajs", "private": True, "dependencies": {NAME: version}}
        (root / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        cmd = [npm, "install", *flags]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=600, env=_without_node_env())
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip()
        if "ETARGET" in text or "No matching version" in text or "E404" in text:
            raise UnknownClientError(f"kafkajs {version} is not on the npm registry")
        last = text.splitlines()[-1] if text else "(no output)"
        raise SetupError(f"cannot install kafkajs {version} with npm: {last}")


class NodeLauncher(NeutralSettingsConfig):
    """Starts the kafkajs worker on ``node`` with the tree ``modules`` on its module path."""

    client = NAME

    def __init__(self, node: str, modules: Path) -> None:
        self.node = node
        self.modules = modules

    def launch(self, role: str, client_id: str) -> Launch:
        log_path = worker_log_path(NAME, client_id)
        env = {**_without_node_env(), "NODE_PATH": str(self.modules)}
        argv = [self.node, str(WORKER), f"--highwater-client={client_id}"]
        return Launch(argv, log_path, env=env)


def local_tree(path: Path) -> tuple[Path, str]:
    """A tree whose kafkajs is the checkout at ``path`` (``--client kafkajs@PATH``), and the
    version to report: the checkout's own, marked ``+local.<hash of the path>``.

    The tree's ``kafkajs`` is a symbolic link to the checkout, not a copy: kafkajs has no runtime
    dependencies and no build step (its ``index.js`` loads ``src/``), so each run tests the code as
    it is now, with nothing to reinstall after an edit. Anything that is not a kafkajs checkout the
    worker can drive is one line (``UnknownClientError``) before any test starts."""
    path = path.expanduser().resolve()
    try:
        meta = json.loads((path / "package.json").read_text())
    except (OSError, ValueError) as exc:
        raise UnknownClientError(f"{path} is not a kafkajs checkout: no readable package.json ({exc})") from None
    if not isinstance(meta, dict) or meta.get("name") != NAME:
        name = meta.get("name") if isinstance(meta, dict) else None
        raise UnknownClientError(f"{path} holds the package {name!r}, not kafkajs")
    version = str(meta.get("version") or "0")
    if release(version) < OLDEST:
        raise UnknownClientError(
            f"the kafkajs at {path} is {version}: its worker needs {'.'.join(map(str, OLDEST))} or later"
        )
    main = str(meta.get("main") or "index.js")
    if not (path / main).exists():
        raise UnknownClientError(f"{path} is not a kafkajs checkout: its main file {main} is missing")
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    modules = home() / "clients" / NAME / "local" / digest / "node_modules"
    modules.mkdir(parents=True, exist_ok=True)
    link = modules / NAME
    if not (link.is_symlink() and link.resolve() == path):
        staged = modules / f".{NAME}.{os.getpid()}"
        staged.unlink(missing_ok=True)
        staged.symlink_to(path, target_is_directory=True)
        staged.replace(link)  # atomic: a concurrent run sees the old link or the new one
    return modules, f"{version}+local.{digest}"


def kafkajs_local_driver(path: Path) -> WorkerDriver:
    """The driver of the kafkajs checkout at ``path`` (``local_tree``)."""
    node, _ = find_node()
    modules, version = local_tree(path)
    return WorkerDriver(NAME, version, NodeLauncher(node, modules))


def kafkajs_driver(version: str | None, progress: Progress = to_stderr) -> WorkerDriver:
    """The driver of kafkajs ``version`` (None: the one pinned in ``clients/node/package.json``),
    its producers and consumers each a Node.js worker process."""
    node, _ = find_node()
    version = version or pinned_version()
    modules = ensure_tree(version, progress)
    return WorkerDriver(NAME, version, NodeLauncher(node, modules))
