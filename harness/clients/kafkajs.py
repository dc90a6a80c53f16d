"""kafkajs under test: the Node.js worker (``clients/node/highwater_worker.js``).

Each kafkajs version lives in a tree of its own in the cache (``harness.clients.npm_tree``): the
version pinned in ``clients/node/package.json`` (the default, ``--client kafkajs``) from the
committed lock file, any other (``--client kafkajs==2.1.0``) from the npm registry. kafkajs has
no runtime dependencies and no build, so a tree is one package, installed without scripts. The
worker ends at the end of its stdin and within half a second of its parent's death, like every
worker (``harness.clients.worker``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from highwater.core.progress import Progress, to_stderr
from highwater.core.versions import leading_numbers as release
from highwater.harness.paths import home

from . import npm_tree
from .base import UnknownClientError
from .npm_tree import NodeLauncher, NpmClient
from .worker import WorkerDriver

NAME = "kafkajs"
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "node"
WORKER = PACKAGE / "highwater_worker.js"

#: the oldest kafkajs the worker supports: 2.0.0 fetches from each broker on its own
#: (``ConsumerGroup#fetch(nodeId)``, which the worker wraps to learn the serving broker)
OLDEST = (2, 0, 0)


def pinned_version() -> str:
    """The kafkajs version of the committed ``package.json`` (the default client)."""
    return str(json.loads((PACKAGE / "package.json").read_text())["dependencies"][NAME])


def client() -> NpmClient:
    """kafkajs as an npm client: its pinned version from the committed lock file."""
    return NpmClient(NAME, NAME, OLDEST, pinned_version(), locked=PACKAGE)


def find_node() -> tuple[str, str]:
    """``node`` and ``npm``, or one line saying how to get them."""
    return npm_tree.find_node(NAME)


def _stamp(version: str) -> str:
    return client().stamp(version)


def ensure_tree(version: str, progress: Progress = to_stderr) -> Path:
    """The ``node_modules`` of a tree holding kafkajs ``version`` (installed first if needed;
    idempotent)."""
    return npm_tree.ensure_tree(client(), version, progress)


def launcher(node: str, modules: Path) -> NodeLauncher:
    """How the kafkajs worker starts on ``node`` with the tree ``modules``."""
    return NodeLauncher(NAME, WORKER, node, modules)


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
    return WorkerDriver(NAME, version, launcher(node, modules))


def kafkajs_driver(version: str | None, progress: Progress = to_stderr) -> WorkerDriver:
    """The driver of kafkajs ``version`` (None: the one pinned in ``clients/node/package.json``),
    its producers and consumers each a Node.js worker process."""
    node, _ = find_node()
    version = version or pinned_version()
    modules = ensure_tree(version, progress)
    return WorkerDriver(NAME, version, launcher(node, modules))
