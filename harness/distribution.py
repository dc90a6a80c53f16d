"""Kafka broker distributions assembled from Maven Central, cached per version.

``org.apache.kafka:kafka_2.13:V`` with its runtime dependencies is the whole broker classpath
(``kafka.Kafka`` and ``kafka.tools.StorageTool`` live in it). Maven does the resolution; we add
``slf4j-simple`` matching the resolved ``slf4j-api`` so broker logs go to the node's log file, and
drop any other SLF4J binding so exactly one is on the classpath.
"""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, quiet
from highwater.core.versions import exact_release

from .paths import home

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
METADATA_URL = f"{MAVEN_CENTRAL}/org/apache/kafka/kafka_2.13/maven-metadata.xml"
MIN_VERSION = (3, 3, 1)  # first release with KRaft marked production-ready
FALLBACK_DEFAULT = "4.3.1"  # used only when Maven Central cannot be asked and nothing is cached
DEFAULT_TTL_S = 24 * 3600
OTHER_SLF4J_BINDINGS = ("slf4j-reload4j", "slf4j-log4j12", "log4j-slf4j-impl", "log4j-slf4j2-impl")


@dataclass(frozen=True)
class KafkaDistribution:
    version: str
    libs: Path

    @property
    def classpath(self) -> str:
        return ":".join(str(p) for p in sorted(self.libs.glob("*.jar")))


class UnknownKafkaVersion(SetupError):
    pass


def parse_version(text: str) -> tuple[int, int, int]:
    release = exact_release(text.strip())
    if release is None:
        raise UnknownKafkaVersion(f"bad Kafka version {text!r}: expected MAJOR.MINOR.PATCH, e.g. 4.1.0")
    return release


def check_supported(version: str) -> None:
    if parse_version(version) < MIN_VERSION:
        raise UnknownKafkaVersion(
            f"Kafka {version} is older than 3.3.1, the first release with production KRaft; "
            "highwater runs KRaft clusters only"
        )


def published_versions(timeout: float = 20.0) -> list[str]:
    """Stable ``kafka_2.13`` versions listed by Maven Central, oldest first."""
    try:
        with urllib.request.urlopen(METADATA_URL, timeout=timeout) as resp:
            xml = resp.read().decode()
    except (urllib.error.URLError, OSError) as exc:
        raise SetupError(f"cannot reach Maven Central ({METADATA_URL}): {exc}") from exc
    found = [v for v in re.findall(r"<version>([^<]+)</version>", xml) if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    return sorted(set(found), key=parse_version)


def kafka_root() -> Path:
    d = home() / "kafka"
    d.mkdir(parents=True, exist_ok=True)
    return d


def installed_versions() -> list[str]:
    return sorted((p.parent.name for p in kafka_root().glob("*/.complete")), key=parse_version)


class _DirLock:
    """Serialises setup of one cache entry between concurrent processes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> _DirLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "w")
        fcntl.flock(self._f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>highwater</groupId><artifactId>kafka-dist</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{version}</version></dependency>
  </dependencies>
</project>
"""


def _mvn(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    mvn = shutil.which("mvn")
    if not mvn:
        raise SetupError("Maven (mvn) not found on PATH: it assembles the Kafka classpath; install maven")
    return subprocess.run([mvn, "-B", "-q", *args], cwd=cwd, capture_output=True, text=True, timeout=1800)


def _missing_artifact(output: str) -> str | None:
    # Maven words it two ways: first time "Could not find artifact X", later (failure cached
    # in ~/.m2) "X was not found in ... during a previous attempt".
    m = re.search(r"Could not find artifact ([^\s]+)", output) or re.search(
        r"([\w.\-]+:[\w.\-]+:jar:[\w.\-]+) was not found", output
    )
    return m.group(1) if m else None


def check_published(version: str) -> None:
    """``version`` is a KRaft release Maven Central lists (nothing fetched). Unchecked when the
    list cannot be had: Maven then gives the verdict."""
    check_supported(version)
    try:
        published = published_versions()
    except SetupError:
        return
    if version not in published:
        newest = ", ".join(reversed(published[-5:]))
        raise UnknownKafkaVersion(f"Kafka {version} is not on Maven Central (newest: {newest})")


def ensure_kafka(version: str, progress: Progress = quiet) -> KafkaDistribution:
    """Return the cached distribution of ``version``, assembling it first if needed (idempotent)."""
    check_supported(version)
    root = kafka_root() / version
    libs = root / "libs"
    if (root / ".complete").exists():
        return KafkaDistribution(version, libs)
    with _DirLock(kafka_root() / f".{version}.lock"):
        if (root / ".complete").exists():
            return KafkaDistribution(version, libs)
        check_published(version)
        progress(f"assembling Kafka {version} from Maven Central into {root}")
        root.mkdir(parents=True, exist_ok=True)
        (root / "pom.xml").write_text(_POM.format(version=version))
        staging = root / "libs.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        res = _mvn(["dependency:copy-dependencies", f"-DoutputDirectory={staging}", "-DincludeScope=runtime"], root)
        if res.returncode != 0:
            out = res.stdout + res.stderr
            missing = _missing_artifact(out)
            if missing and f"kafka_2.13:jar:{version}" in missing:
                raise UnknownKafkaVersion(f"Kafka {version} is not on Maven Central")
            if missing:
                raise SetupError(f"Kafka {version} is incomplete on Maven Central: {missing} is missing")
            tail = " | ".join(line for line in out.splitlines() if "ERROR" in line)[:400]
            raise SetupError(f"Maven could not assemble Kafka {version}: {tail or out[-400:]}")
        for jar in staging.glob("*.jar"):
            if jar.name.startswith(OTHER_SLF4J_BINDINGS):
                jar.unlink()
        api = sorted(staging.glob("slf4j-api-*.jar"))
        if api:
            slf4j_version = api[-1].name[len("slf4j-api-") : -len(".jar")]
            res = _mvn(
                [
                    "dependency:copy",
                    f"-Dartifact=org.slf4j:slf4j-simple:{slf4j_version}",
                    f"-DoutputDirectory={staging}",
                ],
                root,
            )
            if res.returncode != 0:
                raise SetupError(f"Maven could not fetch slf4j-simple {slf4j_version}: {res.stdout[-300:]}")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        (root / ".complete").write_text(json.dumps({"version": version, "assembled_at": time.time()}))
        progress(f"Kafka {version}: {len(list(libs.glob('*.jar')))} jars")
        return KafkaDistribution(version, libs)


def default_version(progress: Progress = quiet) -> str:
    """The newest stable release that Maven Central serves *completely* (a release's artifacts
    appear one by one, so the newest listed version can still miss a module for a while).
    The answer is cached for a day; offline, the newest installed version is used."""
    cache = kafka_root() / "default.json"
    try:
        cached = json.loads(cache.read_text())
        if time.time() - cached["checked_at"] < DEFAULT_TTL_S:
            return str(cached["version"])
    except (OSError, ValueError, KeyError):
        pass
    try:
        candidates = [v for v in reversed(published_versions()) if parse_version(v) >= MIN_VERSION]
    except SetupError:
        installed = installed_versions()
        return installed[-1] if installed else FALLBACK_DEFAULT
    for version in candidates[:4]:
        try:
            ensure_kafka(version, progress)
        except UnknownKafkaVersion:
            raise
        except SetupError as exc:
            progress(f"skipping Kafka {version} as default: {exc}")
            continue
        cache.write_text(json.dumps({"version": version, "checked_at": time.time()}))
        return version
    raise SetupError(f"none of the newest Kafka releases {candidates[:4]} could be assembled")


def tiered_store_jar(version: str, progress: Progress = quiet) -> Path:
    """The jar of ``LocalTieredStorage`` for Kafka ``version`` (``harness.tiered``), fetched from
    Maven Central once into the release's cache; a one-line error when it cannot be."""
    from .tiered import TieredStorageError, store_artifact, tiered_refusal

    refused = tiered_refusal(version)
    if refused is not None:
        raise TieredStorageError(refused)
    artifact, name = store_artifact(version)
    root = kafka_root() / version
    jar = root / "tiered" / name
    if jar.exists():
        return jar
    root.mkdir(parents=True, exist_ok=True)
    with _DirLock(kafka_root() / f".{version}.tiered.lock"):
        if jar.exists():
            return jar
        progress(f"fetching Kafka {version}'s tiered storage test store ({artifact})")
        if not (root / "pom.xml").exists():
            (root / "pom.xml").write_text(_POM.format(version=version))
        res = _mvn(["dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={jar.parent}"], root)
        if res.returncode != 0 or not jar.exists():
            tail = " | ".join(line for line in (res.stdout + res.stderr).splitlines() if "ERROR" in line)[:300]
            raise TieredStorageError(f"Maven could not fetch {artifact} (LocalTieredStorage): {tail or 'no jar'}")
        return jar
