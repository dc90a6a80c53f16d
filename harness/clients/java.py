"""The Java client driver: Kafka's own ``kafka-clients``, run in a worker process of ours.

The worker (``clients/java/``: one Java file and its ``pom.xml``) is built with Maven against
``org.apache.kafka:kafka-clients:<version>`` (3.3.1 or later; without a version, the default
Kafka release's) into ``<cache>/clients/java/<version>/lib`` once, and built again only when
its sources change. Each producer and each consumer is one JVM speaking JSON lines on
stdin/stdout (the protocol is described in ``Worker.java``); its stderr (the client's own log,
through slf4j-simple) goes to ``<cache>/clients/java/logs/<client id>.log``.

The worker is a process of ours: the driver closes it on ``close()`` (SIGKILL after a bound)
and reaps it, an ``atexit`` hook kills any worker still open when Python exits, and the worker
halts on its own within half a second of its parent's death (its watchdog) or at the end of
its stdin, so a Ctrl-C or ``kill -9`` of the test process leaves nothing behind.

**Producer.** Every ``ProducerSettings`` maps one to one (``producer_properties``). Outcomes
(``classify_send_result``): ``ok`` with the offset; ``fail`` when ``send()`` failed on the
calling thread before the record was appended (metadata or buffer wait timed out, record too
large: nothing was sent), or for a broker's definite rejection on the only attempt
(``retries=0`` without idempotence); ``info`` otherwise (a delivery timeout, an error after
retries, a forced close: the write may have happened).

**Consumer.** Every ``ConsumerSettings`` maps one to one (``consumer_properties``). The worker
reports per record the leader epoch (``ConsumerRecord.leaderEpoch()``) and the serving replica:
KIP-392's ``preferred-read-replica`` metric of the partition at poll time (-1, no preferred
replica, is the leader from the consumer's metadata). Position changes the library makes on its
own are found by comparing positions around each poll: a group assignment (the rebalance
listener: ``rebalance``, offset unknown), where a ``seek_to_beginning`` landed (``reset``), a
move forward with no records (``reset``). A forward reset that returns records in the same poll
looks like a gap in the records (judged by the checks as a skip: visible, never hiding a loss).
The Java consumer runs with ``auto.offset.reset=none`` and the worker applies the policy asked
for, because with a policy Java seeks to a KIP-320 divergence point silently, indistinguishable
from an out-of-range reset: a ``LogTruncationException`` becomes a seek to the divergence point
reported as ``truncation`` (what Java itself does with a policy), any other
``InvalidOffsetException`` the policy reported as ``reset``; with ``auto.offset.reset=none``
the ``LogTruncationException`` is a ``TruncationSignal``.

**Transactions.** ``JavaDriver.transactional_producer`` is a producer with ``transactional.id``
(idempotence on: Java refuses a transactional id without it). Java's ``initTransactions``,
``commitTransaction``, ``abortTransaction`` and ``sendOffsetsToTransaction`` have no timeout
argument and block up to ``max.block.ms`` each; the worker runs them on a thread of their own
and answers by the deadline the driver gives (calling init, commit and abort again on Java's
``TimeoutException`` while time is left: Java documents them as safe to retry), so a call never
waits longer than its ``timeout_s``. A Java consumer's ``group_metadata`` is a ``GroupMetadata``
(``harness.clients.worker``) of the consumer's ``groupMetadata()``; the producer's worker rebuilds Java's
``ConsumerGroupMetadata`` from it (KIP-447: the coordinator fences a stale member by it).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from highwater.core.errors import SetupError
from highwater.core.progress import Progress, to_stderr
from highwater.core.versions import exact_release
from highwater.harness.paths import home
from highwater.harness.security import ClientSecurity

from . import java_archive
from .base import ConsumerSettings, ProducerSettings, UnknownClientError
from .share import ShareSettings, share_client_refusal
from .worker import Launch, WorkerDriver, worker_log_path

NAME = "java"
OLDEST = (3, 3, 1)  # the oldest Kafka release highwater runs (KRaft); the client is as old
SOURCE = Path(__file__).resolve().parents[2] / "clients" / "java"
MAIN_CLASS = "highwater.Worker"
SHARE_SOURCES = "Share*.java"  # built only against a client with share groups (harness.clients.share)
HEAP_MB = 256

log = logging.getLogger(__name__)


# --- settings -------------------------------------------------------------------------------


def _read_text(path: str) -> str:
    return Path(path).read_text()


def _jaas_quote(value: str) -> str:
    """A JAAS option value: Kafka's parser reads quoted strings with backslash escapes."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def security_properties(security: ClientSecurity, read: Callable[[str], str] = _read_text) -> dict[str, str]:
    """The Java client's properties for ``security`` (empty for plaintext). PEM files are used
    as PEM stores: the CA file as the truststore; a certificate with a separate key file is
    passed by content (``ssl.keystore.certificate.chain`` / ``ssl.keystore.key``, read with
    ``read``), a certificate file without one is a PEM keystore holding both. Java reads PKCS#8
    keys only (``BEGIN PRIVATE KEY`` / ``BEGIN ENCRYPTED PRIVATE KEY``)."""
    if security.protocol == "PLAINTEXT":
        return {}
    out = {"security.protocol": security.protocol}
    if security.uses_sasl:
        mechanism = str(security.sasl_mechanism)
        out["sasl.mechanism"] = mechanism
        out["sasl.jaas.config"] = (
            f"{_LOGIN_MODULES[mechanism]} required username={_jaas_quote(str(security.sasl_username))} "
            f"password={_jaas_quote(str(security.sasl_password))};"
        )
    if security.uses_ssl:
        out["ssl.endpoint.identification.algorithm"] = "https" if security.ssl_check_hostname else ""
        if security.ssl_cafile:
            out["ssl.truststore.type"] = "PEM"
            out["ssl.truststore.location"] = security.ssl_cafile
        if security.ssl_certfile:
            out["ssl.keystore.type"] = "PEM"
            if security.ssl_keyfile:
                out["ssl.keystore.certificate.chain"] = read(security.ssl_certfile)
                out["ssl.keystore.key"] = read(security.ssl_keyfile)
            else:
                out["ssl.keystore.location"] = security.ssl_certfile
        if security.ssl_password is not None:
            out["ssl.key.password"] = security.ssl_password
    return out


def producer_properties(settings: ProducerSettings, read: Callable[[str], str] = _read_text) -> dict[str, str]:
    """The Java producer's properties for ``settings`` (every one applied, none left to Java's
    defaults: idempotence is on by default since Kafka 3.0)."""
    return {
        "bootstrap.servers": ",".join(settings.bootstrap),
        "client.id": settings.client_id,
        "acks": "all" if str(settings.acks) == "all" else str(int(settings.acks)),
        # Java refuses a transactional.id without idempotence
        "enable.idempotence": "true" if settings.idempotence or settings.transactional_id else "false",
        "retries": str(int(settings.retries)),
        "request.timeout.ms": str(int(settings.request_timeout_ms)),
        "delivery.timeout.ms": str(int(settings.delivery_timeout_ms)),
        "linger.ms": str(int(settings.linger_ms)),
        "max.in.flight.requests.per.connection": str(int(settings.max_in_flight)),
        "max.block.ms": str(int(settings.max_block_ms)),
        "transaction.timeout.ms": str(int(settings.transaction_timeout_ms)),
        **({"transactional.id": settings.transactional_id} if settings.transactional_id else {}),
        **security_properties(settings.security, read),
    }


def consumer_properties(settings: ConsumerSettings, read: Callable[[str], str] = _read_text) -> dict[str, str]:
    """The Java consumer's properties for ``settings``. Without a group there is no
    ``group.id`` and no auto-commit (Java refuses auto-commit without a group)."""
    props = {
        "bootstrap.servers": ",".join(settings.bootstrap),
        "client.id": settings.client_id,
        "enable.auto.commit": "true" if settings.auto_commit and settings.group_id else "false",
        "auto.offset.reset": settings.auto_offset_reset,
        "max.poll.records": str(int(settings.max_poll_records)),
        "request.timeout.ms": str(int(settings.request_timeout_ms)),
        "metadata.max.age.ms": str(int(settings.metadata_max_age_ms)),
        "fetch.max.wait.ms": str(int(settings.fetch_max_wait_ms)),
        "isolation.level": settings.isolation_level,
        **security_properties(settings.security, read),
    }
    if settings.group_id:
        props["group.id"] = settings.group_id
    return props | settings.rack_and_group_properties()


def share_properties(settings: ShareSettings, read: Callable[[str], str] = _read_text) -> dict[str, str]:
    """The Java share consumer's properties (KIP-932): no offset reset, isolation level or
    session timeout here; in a share group those are the group's (``ShareGroupSettings``)."""
    return {
        "bootstrap.servers": ",".join(settings.bootstrap),
        "client.id": settings.client_id,
        "group.id": settings.group_id,
        "max.poll.records": str(int(settings.max_poll_records)),
        "request.timeout.ms": str(int(settings.request_timeout_ms)),
        "metadata.max.age.ms": str(int(settings.metadata_max_age_ms)),
        "share.acknowledgement.mode": "explicit",  # each record acknowledged with its own kind
        **security_properties(settings.security, read),
    }


# --- building the worker --------------------------------------------------------------------


def _release(version: str) -> tuple[int, ...]:
    release = exact_release(version)
    if release is None:
        raise UnknownClientError(f"bad Java client version {version!r}: expected MAJOR.MINOR.PATCH, e.g. 3.9.1")
    return release


def source_digest(source: Path = SOURCE) -> str:
    """A digest of the worker's sources: a build is reused only for the same sources."""
    h = hashlib.sha256()
    files = [source / "pom.xml", *sorted((source / "src").rglob("*.java"))]
    for f in files:
        h.update(str(f.relative_to(source)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def version_dir(version: str) -> Path:
    return home() / "clients" / NAME / version


def _missing_clients(output: str, version: str) -> bool:
    return f"kafka-clients:jar:{version}" in output and (
        "Could not find artifact" in output or "was not found" in output
    )


def ensure_worker(version: str, progress: Progress = to_stderr) -> Path:
    """The directory of the worker's jars for ``kafka-clients`` ``version``, built first if
    needed (idempotent; concurrent builds of one version wait for each other)."""
    if _release(version) < OLDEST:
        raise UnknownClientError(f"java {version} is too old: the driver needs kafka-clients 3.3.1 or later")
    if not (SOURCE / "pom.xml").is_file():
        raise SetupError(f"the Java worker's sources are missing ({SOURCE}): use highwater from its repository")
    root, digest = version_dir(version), source_digest()
    lib, marker = root / "lib", root / ".complete"

    def built() -> bool:
        return lib.is_dir() and marker.is_file() and marker.read_text().strip() == digest

    if built():
        return lib
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built():
            return lib
        mvn = shutil.which("mvn")
        if not mvn:
            raise SetupError("Maven (mvn) not found on PATH: it builds the Java client worker; install maven")
        progress(f"building the Java client worker against kafka-clients {version} with Maven (once) in {root}")
        started = time.monotonic()
        build, staging = root / "build", root / "lib.tmp"
        for d in (build, staging):
            shutil.rmtree(d, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        try:
            _maven_build(mvn, version, build, staging)
            shutil.rmtree(lib, ignore_errors=True)
            java_archive.drop_archives(lib)
            marker.unlink(missing_ok=True)
            staging.rename(lib)
            marker.write_text(digest + "\n")
        finally:
            for d in (build, staging):
                shutil.rmtree(d, ignore_errors=True)
            if not any(root.iterdir()):
                root.rmdir()  # a version that could not be built leaves nothing behind
        progress(
            f"Java client worker {version}: {len(list(lib.glob('*.jar')))} jars in {time.monotonic() - started:.0f} s"
        )
    return lib


def _maven_build(mvn: str, version: str, build: Path, staging: Path) -> None:
    """Build the worker from a copy of its sources in ``build``; its jar and every runtime
    dependency end up in ``staging``."""
    # the share roles use KafkaShareConsumer and the share group admin calls, which older clients lack: left out of
    # their builds (the worker then refuses the role in one line)
    older = share_client_refusal(NAME, version) is not None
    shutil.copytree(SOURCE, build, ignore=shutil.ignore_patterns("target", *([SHARE_SOURCES] if older else [])))
    args = [mvn, "-B", "-q", "-Dstyle.color=never", f"-Dkafka.version={version}", "package"]
    args += ["dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={staging}"]
    done = subprocess.run(args, cwd=build, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        out = done.stdout + done.stderr
        if _missing_clients(out, version):
            raise UnknownClientError(f"kafka-clients {version} is not on Maven Central")
        tail = " | ".join(line for line in out.splitlines() if "ERROR" in line)[:400]
        raise SetupError(f"Maven could not build the Java client worker for {version}: {tail or out[-400:]}")
    shutil.copy2(build / "target" / "highwater-java-worker.jar", staging)


def default_version() -> str:
    """The default Kafka release's client (``harness.distribution.default_version``)."""
    from highwater.harness.distribution import default_version as kafka_default

    return kafka_default(to_stderr)


# --- the launcher ---------------------------------------------------------------------------


class JavaLauncher:
    """Starts the Java worker of one ``kafka-clients`` version: one JVM per producer or
    consumer, mapping the class-data archive of its role (``java_archive``)."""

    def __init__(self, lib: Path) -> None:
        self.lib = lib

    def producer_config(self, settings: ProducerSettings) -> dict[str, Any]:
        return producer_properties(settings)

    def consumer_config(self, settings: ConsumerSettings) -> dict[str, Any]:
        return consumer_properties(settings)

    def share_config(self, settings: ShareSettings) -> dict[str, Any]:
        return share_properties(settings)

    def launch(self, role: str, client_id: str) -> Launch:
        from highwater.harness.java_runtime import find_java

        java = find_java()
        archive = java_archive.launch(self.lib, java.major, java_archive.java_tag(java.executable, java.major), role)
        log_path = worker_log_path(NAME, client_id)
        argv = [
            str(java.executable),
            f"-Xmx{HEAP_MB}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # a short-lived client: fast start beats peak speed
            *java_archive.JVM_LOG_FLAGS,
            *archive.flags,
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
            "-cp",
            f"{self.lib}/*",
            MAIN_CLASS,
            f"--highwater-client={client_id}",  # names the process in ps; the worker ignores it
        ]
        return Launch(argv, log_path, on_exit=archive.finish, on_exercised=archive.exercised)


class JavaDriver(WorkerDriver):
    """The Java client's driver: the generic worker driver over the Java worker of ``version``
    (built first if needed; without a version, the default Kafka release's)."""

    def __init__(self, version: str | None = None, progress: Progress = to_stderr) -> None:
        resolved = version if version is not None else default_version()
        super().__init__(NAME, resolved, JavaLauncher(ensure_worker(resolved, progress)))
