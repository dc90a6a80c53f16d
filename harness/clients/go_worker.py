"""Building a Go worker (``clients/go/<folder>/``) against one version of its library, once per
version, in the cache: ``<cache>/clients/<name>/<version>/worker``.

Every Go worker is a module of its own beside ``clients/go/protocol/``, the worker protocol's
library-neutral side, which its ``go.mod`` reaches with ``replace highwater/protocol =>
../protocol``. A build copies both folders into a build folder, makes the worker require
``<module>@v<version>`` (``go mod edit``, ``go mod tidy``: the Go module proxy serves the library
and its dependencies) and runs ``go build``. A build is marked complete with the digest of both
folders' sources, so a changed worker is built again; concurrent builds of one version wait for
each other; a version the module proxy does not have is one line (``UnknownClientError``) and
leaves nothing in the cache. Without a version the worker's ``go.mod`` names the default.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, to_stderr
from highwater.core.versions import leading_numbers as release
from highwater.harness.paths import home

from .base import UnknownClientError
from .worker import Launch, NeutralShareConfig, WorkerDriver, worker_log_path

#: where the Go workers' sources are (shipped in the wheel beside the package)
GO_SOURCES = Path(__file__).resolve().parents[2] / "clients" / "go"
#: the folder of the worker protocol's library-neutral side, shared by every Go worker
PROTOCOL = "protocol"
_VERSION = re.compile(r"^v?([0-9]+\.[0-9]+\.[0-9]+(?:-[A-Za-z0-9.]+)?)$")


def _no_tags(version: str) -> list[str]:
    return []


@dataclass(frozen=True)
class GoWorker:
    """A Go worker: the client's ``name`` (as ``--client`` spells it), the library's ``module``
    path, the worker's ``folder`` under ``clients/go``, the ``oldest`` library version it builds
    against (and why, for the refusal), and the ``go build`` arguments for a version (``tags``)."""

    name: str
    module: str
    folder: str
    oldest: tuple[int, ...]
    oldest_because: str
    tags: Callable[[str], list[str]] = field(default=_no_tags)

    @property
    def source(self) -> Path:
        return GO_SOURCES / self.folder

    def pinned_version(self) -> str:
        """The library version the worker's ``go.mod`` requires (the default client)."""
        try:
            text = (self.source / "go.mod").read_text()
        except OSError as exc:
            raise SetupError(
                f"{self.name}'s worker sources are missing ({self.source}: {exc.strerror}): reinstall highwater"
            ) from None
        found = re.search(rf"^\s*(?:require\s+)?{re.escape(self.module)}\s+v(\S+)", text, re.M)
        if not found:
            raise SetupError(f"{self.source / 'go.mod'} requires no {self.module}")
        return found.group(1)

    def source_digest(self) -> str:
        """The digest of the worker's and the protocol's sources (what a complete build was built from)."""
        digest = hashlib.sha256()
        for folder in (self.folder, PROTOCOL):
            for path in sorted(p for p in (GO_SOURCES / folder).iterdir() if p.suffix in (".go", ".mod", ".sum")):
                digest.update(f"{folder}/{path.name}".encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()[:16]

    def build_digest(self, version: str) -> str:
        """What a build of ``version`` is built from: the sources and the build tags the version
        takes (a tag that now applies to a version, as a new role's does, rebuilds it)."""
        tags = " ".join(self.tags(version))
        return hashlib.sha256(f"{self.source_digest()}\0{tags}".encode()).hexdigest()[:16]


#: the Go module proxy asked for a module's versions when $GOPROXY names none over HTTP(S)
DEFAULT_PROXY = "https://proxy.golang.org"


def module_proxy() -> str:
    """The first HTTP(S) proxy of ``$GOPROXY`` (a comma- or pipe-separated list, as ``go`` reads
    it), else the public one."""
    for entry in re.split(r"[,|]", os.environ.get("GOPROXY", "")):
        if entry.startswith(("https://", "http://")):
            return entry.rstrip("/")
    return DEFAULT_PROXY


def escaped_module(module: str) -> str:
    """A module path as the proxy protocol spells it: each capital letter as ``!`` and its
    lower case (``github.com/IBM/sarama`` -> ``github.com/!i!b!m/sarama``)."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), module)


def stable_versions(listing: str) -> list[str]:
    """The stable ``X.Y.Z`` versions in a proxy's ``@v/list`` answer (one ``vX.Y.Z`` a line),
    without their ``v``, oldest first; pre-releases and pseudo-versions are left out."""
    found = {m.group(1) for line in listing.split() if (m := re.fullmatch(r"v(\d+\.\d+\.\d+)", line))}
    return sorted(found, key=release)


def published_versions(worker: GoWorker, also: Iterable[str] = ()) -> list[str]:
    """The library's stable versions the Go module proxy lists, oldest first, and those of
    ``also`` it serves though its list leaves them out: a proxy's ``@v/list`` names the versions
    it was asked for, not every tag (proxy.golang.org lists franz-go 1.20.2 and 1.20.5, not
    1.20.3 and 1.20.4, which it serves), so a version named explicitly is asked for by its
    ``.info``. One line (``SetupError``) when the proxy cannot be asked."""
    base = f"{module_proxy()}/{escaped_module(worker.module)}/@v"
    try:
        with urllib.request.urlopen(f"{base}/list", timeout=20) as resp:
            listed = stable_versions(resp.read().decode())
    except (urllib.error.URLError, OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot list {worker.name} versions on the Go module proxy ({base}/list): {exc}") from exc
    served = [v for v in {v.removeprefix("v") for v in also} - set(listed) if _serves(f"{base}/v{v}.info")]
    return sorted({*listed, *served}, key=release)


def _serves(info_url: str) -> bool:
    """Whether the proxy answers a version's ``.info`` (404 or 410: it has no such version)."""
    try:
        with urllib.request.urlopen(info_url, timeout=20):
            return True
    except urllib.error.HTTPError:
        return False
    except (urllib.error.URLError, OSError) as exc:
        raise SetupError(f"cannot ask the Go module proxy for {info_url}: {exc}") from exc


def find_go(who: str = "the Go workers") -> str:
    """``go``, or one line saying how to get it."""
    go = shutil.which("go")
    if not go:
        raise SetupError(f"{who} need the Go toolchain (go on PATH): install Go 1.22 or later")
    return go


def exact_version(worker: GoWorker, version: str) -> str:
    """``version`` without its ``v``, refused in one line when malformed or older than the
    worker supports."""
    matched = _VERSION.match(version)
    if not matched:
        raise UnknownClientError(f"bad {worker.name} version {version!r} (e.g. {worker.pinned_version()})")
    version = matched.group(1)
    if release(version) < worker.oldest:
        oldest = ".".join(map(str, worker.oldest))
        raise UnknownClientError(
            f"{worker.name} {version} is too old: its worker needs {oldest} or later ({worker.oldest_because})"
        )
    return version


def ensure_worker(worker: GoWorker, version: str, progress: Progress = to_stderr) -> Path:
    """The worker binary built against ``version`` of the library (built first if needed)."""
    version = exact_version(worker, version)
    root = home() / "clients" / worker.name / version
    binary, marker, digest = root / "worker", root / ".complete", worker.build_digest(version)

    def built() -> bool:
        return binary.is_file() and marker.is_file() and marker.read_text().strip() == digest

    if built():
        return binary
    go = find_go(f"{worker.name}'s worker")
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built():
            return binary
        progress(f"building the {worker.name} {version} worker with go (once) in {root}")
        started = time.monotonic()
        build = root / "build"
        shutil.rmtree(build, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        here = build / worker.folder
        try:
            shutil.copytree(worker.source, here)
            shutil.copytree(GO_SOURCES / PROTOCOL, build / PROTOCOL)
            build_module(go, worker, version, here, root / "worker.tmp", *worker.tags(version))
            (root / "worker.tmp").replace(binary)
            marker.write_text(digest + "\n")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)  # a version that could not be built leaves nothing
            raise
        finally:
            shutil.rmtree(build, ignore_errors=True)
        progress(f"{worker.name} {version} worker built in {time.monotonic() - started:.0f} s")
    return binary


def build_module(
    go: str, worker: GoWorker, version: str, here: Path, out: Path, *build_args: str, what: str = "worker"
) -> None:
    """Builds the Go module copied to ``here`` (its ``go.mod`` is changed) against ``version`` of
    ``worker``'s library into ``out``: ``go mod edit -require=<module>@v<version>``, ``go mod
    tidy``, ``go build <build_args>``; ``what`` names the program in a failure's one line (a
    worker, or ``benchmarks/client_throughput.py``'s bare program of the library)."""
    _go(go, here, worker, version, what, "mod", "edit", f"-require={worker.module}@v{version}")
    _go(go, here, worker, version, what, "mod", "tidy")
    _go(go, here, worker, version, what, "build", *build_args, "-o", str(out), ".")


def _go(go: str, build: Path, worker: GoWorker, version: str, what: str, *args: str) -> None:
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
            raise UnknownClientError(f"{worker.name} {version} is not on the Go module proxy")
        last = text.splitlines()[-1] if text else "(no output)"
        raise SetupError(f"go {args[0]} could not build the {worker.name} {version} {what}: {last}")


class GoLauncher(NeutralShareConfig):
    """Starts a Go worker binary (it ignores its argument, which names the client in ``ps``)."""

    def __init__(self, client: str, binary: Path) -> None:
        self.client = client
        self.binary = binary

    def launch(self, role: str, client_id: str) -> Launch:
        log_path = worker_log_path(self.client, client_id)
        return Launch([str(self.binary), f"--highwater-client={client_id}"], log_path)


def go_driver(worker: GoWorker, version: str | None, progress: Progress = to_stderr) -> WorkerDriver:
    """The driver of ``worker``'s library at ``version`` (None: the one its ``go.mod`` requires),
    its worker built first if needed."""
    version = (version or worker.pinned_version()).removeprefix("v")
    return WorkerDriver(worker.name, version, GoLauncher(worker.name, ensure_worker(worker, version, progress)))
