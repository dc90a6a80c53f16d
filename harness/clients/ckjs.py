"""@confluentinc/kafka-javascript under test (``--client ckjs``): Confluent's Node.js client,
librdkafka behind a kafkajs-compatible API, the way a service moving off kafkajs runs it. Its
worker is ``clients/node/ckjs_worker.js``; it speaks the one worker protocol and drives the
library through its ``KafkaJS`` API only, with librdkafka's own settings (``client.rack``) beside.

The package is a native addon: on install it first asks GitHub for a prebuilt binary (this
machine reaches no such host), then builds the librdkafka it bundles, whose default build
downloads the sources of its own dependencies. So each version's tree (``harness.clients.
npm_tree``) is built from source here, linked dynamically against the system's OpenSSL, SASL,
zlib and zstd (``CKJS_LINKING=dynamic``: librdkafka's configure then finds them instead of
fetching them; Debian's libssl-dev, libsasl2-dev, zlib1g-dev and libzstd-dev, which ``make
install`` installs), against the headers of the Node.js that runs it (``npm_config_nodedir``:
node-gyp would download them otherwise). A build takes about three minutes on two cores, once per
version. Debian's own librdkafka (2.0.2) is not used: the package bundles the librdkafka it was
released with (2.15.1 in 1.10.1), and that is the one its users run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, to_stderr

from . import npm_tree
from .npm_tree import NodeLauncher, NpmClient
from .worker import WorkerDriver

NAME = "ckjs"
PACKAGE_NAME = "@confluentinc/kafka-javascript"
ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "clients" / "node" / "ckjs_worker.js"
#: the default version (``--client ckjs``)
PINNED = "1.10.1"
#: the oldest version the worker supports: 1.0.0 is the first with the KafkaJS API as released
OLDEST = (1, 0, 0)


def node_headers() -> str:
    """Where the running Node.js's headers are (``<prefix>/include/node``): its prefix, for
    node-gyp's ``nodedir``; one line when they are missing."""
    node, _ = npm_tree.find_node(NAME)
    prefix = Path(shutil.which(node) or node).resolve().parent.parent
    if not (prefix / "include" / "node" / "node.h").is_file():
        raise SetupError(
            f"ckjs is built from source and needs the headers of the Node.js at {prefix} "
            f"({prefix}/include/node/node.h; Debian: apt-get install libnode-dev)"
        )
    return str(prefix)


def build_env() -> dict[str, str]:
    """How npm builds the package from source (module doc): asked when a version is installed,
    so that a tree built already runs without the Node.js headers."""
    return {
        "CKJS_LINKING": "dynamic",
        "npm_config_build_from_source": "true",
        "npm_config_nodedir": node_headers(),
    }


def client() -> NpmClient:
    """The package as an npm client built from source (module doc)."""
    return NpmClient(NAME, PACKAGE_NAME, OLDEST, PINNED, build=build_env, timeout_s=1800.0)


def ensure_tree(version: str, progress: Progress = to_stderr) -> Path:
    """The ``node_modules`` of a tree holding ckjs ``version`` (built first if needed)."""
    return npm_tree.ensure_tree(client(), version, progress)


def ckjs_driver(version: str | None, progress: Progress = to_stderr) -> WorkerDriver:
    """The driver of @confluentinc/kafka-javascript ``version`` (None: ``PINNED``), its
    producers and consumers each a Node.js worker process."""
    node, _ = npm_tree.find_node(NAME)
    version = version or PINNED
    return WorkerDriver(NAME, version, NodeLauncher(NAME, WORKER, node, ensure_tree(version, progress)))
