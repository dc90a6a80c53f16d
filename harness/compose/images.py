"""Local container images for the compose backend, built without any image registry.

Where no registry is reachable (this machine, CI) nothing may pull an image, so the base is made
from Debian's packages with ``debootstrap`` (same mirror as the host's apt) and ``docker import``ed;
Kafka's jars (the cached Maven distribution) and Toxiproxy (the cached Go binary) go on top. Every
step is cached and idempotent: the rootfs tarball lives in ``~/.cache/highwater/images/``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, quiet
from highwater.harness.distribution import ensure_kafka
from highwater.harness.paths import home
from highwater.harness.toxiproxy import TOXIPROXY_VERSION, ensure_toxiproxy

SUITE = "bookworm"
BASE_PACKAGES = ("openjdk-17-jre-headless", "ca-certificates")
BASE_TAG = f"highwater/base:{SUITE}-jre17"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def images_dir() -> Path:
    return home() / "images"


def kafka_image(version: str) -> str:
    return f"highwater/kafka:{version}"


def toxiproxy_image() -> str:
    return f"highwater/toxiproxy:{TOXIPROXY_VERSION.lstrip('v')}"


def apt_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this machine's apt uses (the base must come from the same place)."""
    files = sorted(sources.glob("sources.list.d/*.sources")) + [sources / "sources.list"]
    for f in files:
        try:
            text = f.read_text()
        except OSError:
            continue
        for stanza in text.split("\n\n"):
            if re.search(rf"^Suites:.*\b{SUITE}\b", stanza, re.M) and "debian-security" not in stanza:
                m = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
                if m:
                    return m.group(1)
        for line in text.splitlines():
            m = re.match(rf"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+{SUITE}\s", line)
            if m and "security" not in m.group(1):
                return m.group(1)
    return DEFAULT_MIRROR


def docker_cli() -> str:
    exe = shutil.which("docker")
    if not exe:
        raise SetupError("docker not found: run `make system-packages` (installs Debian's docker.io)")
    res = subprocess.run([exe, "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True)
    if res.returncode != 0:
        raise SetupError("no Docker daemon answers: run `make system-packages` (starts dockerd) as root")
    return exe


def image_exists(tag: str) -> bool:
    res = subprocess.run([docker_cli(), "image", "inspect", tag], capture_output=True, text=True)
    return res.returncode == 0


#: the official images, preferred wherever the engine has them (pulled from a registry)
OFFICIAL_KAFKA = "apache/kafka"
OFFICIAL_TOXIPROXY = "ghcr.io/shopify/toxiproxy"


def kafka_candidates(version: str) -> tuple[str, str]:
    """The broker images for ``version``, in order of preference: official, then our local build."""
    return f"{OFFICIAL_KAFKA}:{version}", kafka_image(version)


def toxiproxy_candidates() -> tuple[str, str]:
    return f"{OFFICIAL_TOXIPROXY}:{TOXIPROXY_VERSION.lstrip('v')}", toxiproxy_image()


def choose_image(candidates: tuple[str, ...], exists: Callable[[str], bool]) -> str | None:
    """The first candidate the engine has, or None. Never pulls: where no registry is reachable
    (this machine, CI) a pull would only fail slowly, and tests send no traffic off the machine."""
    return next((tag for tag in candidates if exists(tag)), None)


def resolve_images(
    version: str, image: str | None = None, exists: Callable[[str], bool] | None = None
) -> tuple[str, str]:
    """The (broker, Toxiproxy) images a compose cluster runs: ``image`` if given, else the official
    image when present, else highwater's local build; a missing one is one line saying what to run."""
    has = exists or image_exists
    found = []
    for candidates in ((image,) if image else kafka_candidates(version), toxiproxy_candidates()):
        tag = choose_image(candidates, has)
        if tag is None:
            hint = (
                "pass an image the engine has"
                if image and candidates == (image,)
                else "run `highwater images pull` where a registry is reachable, or `highwater images build`"
            )
            raise SetupError(f"no image {' nor '.join(candidates)} in the engine: {hint}")
        found.append(tag)
    return found[0], found[1]


def render_images(version: str, exists: Callable[[str], bool]) -> tuple[str, str]:
    """Images for a rendered file someone else starts: what the engine here has, else the
    official tags (``docker compose up`` pulls them on a machine with a registry)."""
    kafka, proxy = kafka_candidates(version), toxiproxy_candidates()
    return choose_image(kafka, exists) or kafka[0], choose_image(proxy, exists) or proxy[0]


def pull_images(version: str, progress: Progress = quiet) -> list[str]:
    """``docker pull`` the official images (for users with a registry; nothing here runs it)."""
    tags = [kafka_candidates(version)[0], toxiproxy_candidates()[0]]
    for tag in tags:
        progress(f"pulling {tag}")
        _run([docker_cli(), "pull", tag], f"docker pull {tag}")
    return tags


def _run(cmd: list[str], what: str, **kw: object) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if res.returncode != 0:
        raise SetupError(f"{what} failed: {(res.stderr or res.stdout).strip()[-400:]}")


def base_rootfs(progress: Progress = quiet) -> Path:
    """The debootstrapped Debian rootfs with a JRE, as a cached tarball (built once)."""
    tarball = images_dir() / f"rootfs-{SUITE}-jre17.tar"
    if tarball.is_file():
        return tarball
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(debootstrap).exists():
        raise SetupError("debootstrap not found: run `make system-packages`")
    images_dir().mkdir(parents=True, exist_ok=True)
    mirror = apt_mirror()
    progress(f"debootstrap --variant=minbase {SUITE} with {', '.join(BASE_PACKAGES)} from {mirror} (minutes)")
    with tempfile.TemporaryDirectory(dir=images_dir()) as tmp:
        root = Path(tmp) / "rootfs"
        _run(
            [debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(root), mirror],
            "debootstrap",
            timeout=3600,
        )
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for f in (root / cache).glob("*"):
                if f.is_file():
                    f.unlink()
        partial = tarball.with_suffix(".tar.partial")
        _run(["tar", "-C", str(root), "-cf", str(partial), "."], "tar of the rootfs")
        partial.rename(tarball)
    progress(f"base rootfs cached: {tarball} ({tarball.stat().st_size // 2**20} MiB)")
    return tarball


def ensure_base(progress: Progress = quiet) -> str:
    if image_exists(BASE_TAG):
        return BASE_TAG
    tarball = base_rootfs(progress)
    progress(f"docker import {tarball.name} as {BASE_TAG}")
    with tarball.open("rb") as f:
        _run([docker_cli(), "import", "-", BASE_TAG], "docker import", stdin=f)
    return BASE_TAG


KAFKA_DOCKERFILE = """FROM {base}
COPY libs/ /opt/kafka/libs/
ENV KAFKA_CLASSPATH=/opt/kafka/libs/*
LABEL highwater.image=kafka highwater.kafka.version={version}
"""

TOXIPROXY_DOCKERFILE = """FROM {base}
COPY toxiproxy-server /usr/local/bin/toxiproxy-server
LABEL highwater.image=toxiproxy highwater.toxiproxy.version={version}
ENTRYPOINT ["/usr/local/bin/toxiproxy-server"]
"""


def _build(tag: str, dockerfile: str, context: dict[str, Path], progress: Progress) -> None:
    progress(f"docker build {tag}")
    with tempfile.TemporaryDirectory(dir=images_dir()) as tmp:
        ctx = Path(tmp)
        for name, src in context.items():
            if src.is_dir():
                shutil.copytree(src, ctx / name, symlinks=False)
            else:
                shutil.copy2(src, ctx / name)
        (ctx / "Dockerfile").write_text(dockerfile)
        _run([docker_cli(), "build", "-q", "-t", tag, str(ctx)], f"docker build {tag}", timeout=1800)


def build_images(kafka_version: str, progress: Progress = quiet, force: bool = False) -> list[str]:
    """Build (or find) ``highwater/kafka:<version>`` and ``highwater/toxiproxy:<version>``."""
    images_dir().mkdir(parents=True, exist_ok=True)
    docker_cli()
    built = []
    kafka_tag = kafka_image(kafka_version)
    if force or not image_exists(kafka_tag):
        dist = ensure_kafka(kafka_version, progress)
        base = ensure_base(progress)
        _build(kafka_tag, KAFKA_DOCKERFILE.format(base=base, version=kafka_version), {"libs": dist.libs}, progress)
    progress(f"{kafka_tag} ready")
    built.append(kafka_tag)
    proxy_tag = toxiproxy_image()
    if force or not image_exists(proxy_tag):
        binary = ensure_toxiproxy(progress)
        base = ensure_base(progress)
        dockerfile = TOXIPROXY_DOCKERFILE.format(base=base, version=TOXIPROXY_VERSION)
        _build(proxy_tag, dockerfile, {"toxiproxy-server": binary}, progress)
    progress(f"{proxy_tag} ready")
    built.append(proxy_tag)
    return built
