"""franz-go under test: the Go worker (``clients/go/franz/``), one build per franz-go version.

Each version is built once into the cache, ``<cache>/clients/franz-go/<version>/worker``: the
worker's module is copied into a build folder, made to require
``github.com/twmb/franz-go@v<version>`` (``go mod edit``, ``go mod tidy``: the Go module proxy
serves the library and its dependencies), and built with ``go build``. A build is marked complete
with the digest of the worker's sources, so a changed worker is built again; concurrent builds of
one version wait for each other; a version the module proxy does not have is one line
(``UnknownClientError``) and leaves nothing in the cache. Without a version the worker's
``go.mod`` names the default.

The worker takes the library-neutral settings as they are (``NeutralSettingsConfig``) and maps
them to franz-go's options (``main.go``): acks, idempotence (franz-go's default is on; off
disables it), retries, request and delivery timeouts, linger, requests in flight (without
idempotence), the rack (KIP-392's ``Rack``), ``fetch.max.wait.ms``, ``metadata.max.age.ms``, the
isolation level, the session timeout, the group protocol (KIP-848's ``consumer`` from 1.22:
``build_tags``). franz-go's consumer reports the serving broker only
through its hooks, and a truncation (KIP-320) only as ``ErrDataLoss`` after it reset the
position itself (an out-of-range reset the same way): the worker reports a ``truncation``
position change when the position moved to the divergence point the leader names, a ``reset``
otherwise (``main.go``'s ``lossReason``). Every failed send is ``info`` (the worker never claims a write provably did not happen).
The transactional producer is franz-go's own, with the consumer's offsets sent by the worker
(``main.go`` says why). Not yet: TLS/SASL (refused in one line).
"""

from __future__ import annotations

import fcntl
import hashlib
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

NAME = "franz-go"
MODULE = "github.com/twmb/franz-go"
SOURCE = Path(__file__).resolve().parents[2] / "clients" / "go" / "franz"
_VERSION = re.compile(r"^v?([0-9]+\.[0-9]+\.[0-9]+(?:-[A-Za-z0-9.]+)?)$")
#: the oldest franz-go the worker builds against: AddConsumePartitions (assign mode) came in 1.16
OLDEST = (1, 16, 0)
#: from this franz-go the worker is built with KIP-848's consumer protocol (``ServerSideBalancer``,
#: generally available in 1.22; before, a hidden beta opt-in, which highwater does not test)
SERVER_SIDE_BALANCER = (1, 22, 0)
SERVER_SIDE_BALANCER_TAG = "highwater_server_side_balancer"


def build_tags(version: str) -> list[str]:
    """The ``go build`` arguments that choose the worker's files for franz-go ``version``."""
    return ["-tags", SERVER_SIDE_BALANCER_TAG] if release(version) >= SERVER_SIDE_BALANCER else []


def pinned_version() -> str:
    """The franz-go version the worker's ``go.mod`` requires (the default client)."""
    try:
        text = (SOURCE / "go.mod").read_text()
    except OSError as exc:
        raise SetupError(
            f"franz-go's worker sources are missing ({SOURCE}: {exc.strerror}): reinstall highwater"
        ) from None
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(MODULE)}\s+v(\S+)", text, re.M)
    if not found:
        raise SetupError(f"{SOURCE / 'go.mod'} requires no {MODULE}")
    return found.group(1)


def find_go() -> str:
    """``go``, or one line saying how to get it."""
    go = shutil.which("go")
    if not go:
        raise SetupError("franz-go's worker needs the Go toolchain (go on PATH): install Go 1.22 or later")
    return go


def source_digest(source: Path = SOURCE) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in source.iterdir() if p.suffix in (".go", ".mod", ".sum")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def ensure_worker(version: str, progress: Progress = to_stderr) -> Path:
    """The worker binary built against franz-go ``version`` (built first if needed)."""
    matched = _VERSION.match(version)
    if not matched:
        raise UnknownClientError(f"bad franz-go version {version!r} (e.g. 1.22.3)")
    version = matched.group(1)
    if release(version) < OLDEST:
        raise UnknownClientError(
            f"franz-go {version} is too old: its worker needs {'.'.join(map(str, OLDEST))} or later"
        )
    root = home() / "clients" / NAME / version
    binary, marker, digest = root / "worker", root / ".complete", source_digest()

    def built() -> bool:
        return binary.is_file() and marker.is_file() and marker.read_text().strip() == digest

    if built():
        return binary
    go = find_go()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built():
            return binary
        progress(f"building the franz-go {version} worker with go (once) in {root}")
        started = time.monotonic()
        build = root / "build"
        shutil.rmtree(build, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copytree(SOURCE, build)
            _go(go, build, version, "mod", "edit", f"-require={MODULE}@v{version}")
            _go(go, build, version, "mod", "tidy")
            _go(go, build, version, "build", *build_tags(version), "-o", str(root / "worker.tmp"), ".")
            (root / "worker.tmp").replace(binary)
            marker.write_text(digest + "\n")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)  # a version that could not be built leaves nothing
            raise
        finally:
            shutil.rmtree(build, ignore_errors=True)
        progress(f"franz-go {version} worker built in {time.monotonic() - started:.0f} s")
    return binary


def _go(go: str, build: Path, version: str, *args: str) -> None:
    done = subprocess.run([go, *args], cwd=build, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip()
        unknown = (
            "unknown revision",
            "invalid version",
            f'"v{version}" invalid',
            "no matching versions",
            "not available",
        )
        if any(s in text for s in unknown):
            raise UnknownClientError(f"franz-go {version} is not on the Go module proxy")
        last = text.splitlines()[-1] if text else "(no output)"
        raise SetupError(f"go {args[0]} could not build the franz-go {version} worker: {last}")


class GoLauncher(NeutralSettingsConfig):
    """Starts a Go worker binary (it ignores its argument, which names the client in ``ps``)."""

    def __init__(self, client: str, binary: Path) -> None:
        self.client = client
        self.binary = binary

    def launch(self, role: str, client_id: str) -> Launch:
        log_path = worker_log_path(self.client, client_id)
        return Launch([str(self.binary), f"--highwater-client={client_id}"], log_path)


def franz_go_driver(version: str | None, progress: Progress = to_stderr) -> WorkerDriver:
    """The driver of franz-go ``version`` (None: the one the worker's ``go.mod`` requires)."""
    version = (version or pinned_version()).removeprefix("v")
    return WorkerDriver(NAME, version, GoLauncher(NAME, ensure_worker(version, progress)))
