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
waits longer than its ``timeout_s``. ``JavaConsumer.group_metadata`` is a ``JavaGroupMetadata``
of the consumer's ``groupMetadata()``; the producer's worker rebuilds Java's
``ConsumerGroupMetadata`` from it (KIP-447: the coordinator fences a stale member by it).
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import itertools
import json
import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from harness.errors import HighwaterError, SetupError
from harness.paths import home
from harness.security import ClientSecurity

from . import java_archive
from .base import (
    ConsumerListener,
    ConsumerSettings,
    Outcome,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
    UnknownClientError,
)

NAME = "java"
OLDEST = (3, 3, 1)  # the oldest Kafka release highwater runs (KRaft); the client is as old
SOURCE = Path(__file__).resolve().parents[2] / "clients" / "java"
MAIN_CLASS = "highwater.Worker"
HEAP_MB = 256

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


class JavaClientError(HighwaterError):
    """The worker refused a command or is gone; the message is the Java error or says where
    its log is."""


def _to_stderr(line: str) -> None:
    print(f"highwater: {line}", file=sys.stderr, flush=True)


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
    if settings.client_rack:
        props["client.rack"] = settings.client_rack
    return props


# --- outcomes and lines ---------------------------------------------------------------------

#: broker errors (the Java exception's simple name) that prove the broker did not append: each
#: is returned before the write is applied
DEFINITE_REJECTIONS = frozenset(
    {
        "RecordTooLargeException",
        "RecordBatchTooLargeException",
        "InvalidTopicException",
        "TopicAuthorizationException",
        "InvalidRequiredAcksException",
    }
)


def classify_send_result(line: Mapping[str, Any], single_attempt: bool) -> SendOutcome:
    """A worker's send outcome line: ``ok`` with its offset; ``fail`` when ``send()`` failed on
    the calling thread (``sync``: nothing was appended, so nothing was sent), or for a definite
    rejection when there was one attempt only (an earlier attempt may have been written);
    ``info`` for everything else."""
    if line.get("offset") is not None:
        return SendOutcome.ok(int(line["offset"]))
    error = str(line.get("error") or "unknown error")
    if line.get("sync") is True:
        return SendOutcome.fail(error)
    simple = str(line.get("error_class") or "").rsplit(".", 1)[-1]
    if single_attempt and simple in DEFINITE_REJECTIONS:
        return SendOutcome.fail(error)
    return SendOutcome.info(error)


def parse_line(text: str) -> dict[str, Any] | None:
    """One line of the worker's stdout as a JSON object; None for anything else (logged)."""
    text = text.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        log.warning("java worker: not a protocol line: %.200s", text)
        return None
    if not isinstance(value, dict):
        log.warning("java worker: not a protocol object: %.200s", text)
        return None
    return value


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _runs(flat: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """A run-length list ``[value, count, value, count, ...]`` as its values and counts."""
    if len(flat) % 2:
        raise JavaClientError(f"a malformed run-length list in a poll reply: {len(flat)} items")
    return list(flat[0::2]), [int(n) for n in flat[1::2]]


def records_of(reply: Mapping[str, Any]) -> list[PolledRecord]:
    """The records of a poll reply. The worker answers one entry per partition with records:
    ``{"topic", "partition", "replica", "offsets": [first, count, ...], "values": [...],
    "epochs": [epoch or null, count, ...]}``; offsets and leader epochs come as runs (of
    consecutive offsets, of one epoch), one value a record. Raises ``JavaClientError`` when the
    runs do not cover the values exactly."""
    out: list[PolledRecord] = []
    for part in reply.get("parts") or ():
        topic, partition, replica = str(part["topic"]), int(part["partition"]), _opt_int(part.get("replica"))
        values = part["values"]
        firsts, lengths = _runs(part["offsets"])
        epochs, counts = _runs(part["epochs"])
        if sum(lengths) != len(values) or sum(counts) != len(values):
            raise JavaClientError(
                f"a malformed poll reply for {topic}-{partition}: {len(values)} values, offsets for "
                f"{sum(lengths)}, epochs for {sum(counts)}"
            )
        firsts = [int(f) for f in firsts]
        offsets = itertools.chain.from_iterable(range(f, f + n) for f, n in zip(firsts, lengths))
        leader_epochs = itertools.chain.from_iterable(map(itertools.repeat, map(_opt_int, epochs), counts))
        out.extend(
            map(
                PolledRecord,
                itertools.repeat(topic),
                itertools.repeat(partition),
                offsets,
                values,
                leader_epochs,
                itertools.repeat(replica),
            )
        )
    return out


def truncation_of(reply: Mapping[str, Any]) -> TruncationSignal | None:
    """A poll reply's ``LogTruncationException``, if it carries one."""
    divergent = reply.get("truncation")
    if divergent is None:
        return None
    return TruncationSignal(
        {TopicPartition(str(d["topic"]), int(d["partition"])): _opt_int(d.get("offset")) for d in divergent},
        str(reply.get("error") or "LogTruncationException"),
    )


@dataclass(frozen=True, slots=True)
class JavaGroupMetadata:
    """A Java consumer's ``groupMetadata()``: what ``sendOffsetsToTransaction`` needs of it
    (``ConsumerGroupMetadata(groupId, generationId, memberId, Optional.ofNullable(groupInstanceId))``)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None

    @classmethod
    def of_reply(cls, reply: Mapping[str, Any]) -> JavaGroupMetadata:
        instance = reply.get("group_instance_id")
        return cls(
            str(reply["group_id"]),
            int(reply["generation_id"]),
            str(reply["member_id"]),
            None if instance is None else str(instance),
        )

    def to_line(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "generation_id": self.generation_id,
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
        }


def offsets_line(offsets: Mapping[TopicPartition, int]) -> list[dict[str, Any]]:
    """Offsets per partition as the worker's ``commit`` and ``send_offsets`` list them."""
    return [{"topic": tp.topic, "partition": tp.partition, "offset": int(o)} for tp, o in offsets.items()]


def position_of(event: Mapping[str, Any]) -> PositionChange:
    """A worker's ``position`` event."""
    return PositionChange(
        str(event["topic"]), int(event["partition"]), _opt_int(event.get("offset")), PositionReason(event["reason"])
    )


# --- building the worker --------------------------------------------------------------------


def _release(version: str) -> tuple[int, ...]:
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    if m is None:
        raise UnknownClientError(f"bad Java client version {version!r}: expected MAJOR.MINOR.PATCH, e.g. 3.9.1")
    return tuple(int(g) for g in m.groups())


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


def ensure_worker(version: str, progress: Progress = _to_stderr) -> Path:
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
    shutil.copytree(SOURCE, build, ignore=shutil.ignore_patterns("target"))
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
    from harness.distribution import default_version as kafka_default

    return kafka_default(_to_stderr)


# --- the worker process ---------------------------------------------------------------------

_LIVE: set[WorkerProcess] = set()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _kill_leftovers() -> None:
    """Workers never closed (an interrupted test): killed and reaped before Python exits."""
    with _LIVE_LOCK:
        left = list(_LIVE)
    for worker in left:
        worker.kill()


class WorkerProcess:
    """One JVM of the worker: writes commands, reads its lines on a thread. Send outcomes go to
    ``on_send`` (on the reader thread); replies and events wait in a queue for ``request``."""

    REPLY_MARGIN_S = 30.0  # how much longer than the command's own bound a reply may take

    def __init__(
        self, lib: Path, role: str, config: Mapping[str, str], client_id: str, on_send: Callable[[dict[str, Any]], None]
    ) -> None:
        from harness.java import find_java

        java = find_java()
        self.archive = java_archive.launch(lib, java.major, java_archive.java_tag(java.executable, java.major), role)
        logs = home() / "clients" / NAME / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', client_id)}.log"
        argv = [
            str(java.executable),
            f"-Xmx{HEAP_MB}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # a short-lived client: fast start beats peak speed
            *java_archive.JVM_LOG_FLAGS,
            *self.archive.flags,
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
            "-cp",
            f"{lib}/*",
            MAIN_CLASS,
            f"--highwater-client={client_id}",  # names the process in ps; the worker ignores it
        ]
        err: IO[bytes] = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,  # a terminal's Ctrl-C reaches us, and we close it in order
                close_fds=True,
            )
        except BaseException:
            self.archive.finish(None)
            raise
        finally:
            err.close()
        with _LIVE_LOCK:
            _LIVE.add(self)
        self.on_send = on_send
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"{client_id}-java", daemon=True)
        self._reader.start()
        self._request_lock = threading.Lock()  # one command at a time: replies are matched in order
        try:
            ready = self._write_and_wait(0, {"role": role, "config": dict(config)}, 120.0, None)
        except BaseException:
            self.kill()  # a refused configuration: the worker is exiting; reap it
            raise
        self.version = str(ready.get("version", ""))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = parse_line(raw.decode(errors="replace"))
            if line is None:
                continue
            if "send" in line:
                self.on_send(line)
            else:
                self._replies.put(line)
        self._replies.put({"eof": True})

    def write(self, line: Mapping[str, Any]) -> None:
        """One command; raises ``JavaClientError`` when the worker is gone."""
        assert self.proc.stdin is not None
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        with self._write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise JavaClientError(f"the Java worker is gone ({exc}); its log: {self.log_path}") from exc

    def request(
        self,
        op: str,
        timeout_s: float,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        margin_s: float = REPLY_MARGIN_S,
        **fields: Any,
    ) -> dict[str, Any]:
        """Send a command and wait up to ``timeout_s + margin_s`` for its reply; events seen
        meanwhile go to ``on_event`` in the order the worker wrote them."""
        with self._request_lock:
            cid = next(self._ids)
            return self._write_and_wait(cid, {"id": cid, "op": op, **fields}, timeout_s + margin_s, on_event)

    def _write_and_wait(
        self, cid: int, line: Mapping[str, Any], timeout_s: float, on_event: Callable[[dict[str, Any]], None] | None
    ) -> dict[str, Any]:
        self.write(line)
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                got = self._replies.get(timeout=max(left, 0.0)) if left > 0 else self._replies.get_nowait()
            except queue.Empty:
                raise JavaClientError(
                    f"the Java worker did not answer {line.get('op', 'start')} within {timeout_s:.0f} s; "
                    f"its log: {self.log_path}"
                ) from None
            if got.get("eof"):
                self._replies.put(got)  # every later request sees it too
                raise JavaClientError(f"the Java worker exited; its log: {self.log_path}")
            if "event" in got:
                if on_event is not None:
                    on_event(got)
                continue
            if got.get("id") != cid:
                continue  # the late reply of a request that timed out
            if "error" in got and "truncation" not in got:
                raise JavaClientError(str(got["error"]))
            return got

    def stop(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the worker to exit (after its close command), then kill
        it; reaped either way."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("java worker %s did not exit within %.0f s: killing it", self.proc.pid, timeout_s)
        self.kill()

    def kill(self) -> None:
        """SIGKILL (if still running) and reap."""
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                log.debug("java worker %s already gone", self.proc.pid)
            self.proc.wait()
        self.archive.finish(self.proc.returncode)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError as exc:  # a broken pipe on close: the process is gone anyway
                    log.debug("closing a pipe of java worker %s: %s", self.proc.pid, exc)
        self._reader.join(timeout=5)
        with _LIVE_LOCK:
            _LIVE.discard(self)


# --- the driver -----------------------------------------------------------------------------


class JavaDriver:
    name = NAME

    def __init__(self, version: str | None = None, progress: Progress = _to_stderr) -> None:
        self.version: str = version if version is not None else default_version()
        self.lib = ensure_worker(self.version, progress)

    def producer(self, settings: ProducerSettings) -> JavaProducer:
        return JavaProducer(self.lib, settings)

    def consumer(self, settings: ConsumerSettings, listener: ConsumerListener) -> JavaConsumer:
        return JavaConsumer(self.lib, settings, listener)

    def transactional_producer(self, settings: ProducerSettings) -> JavaTransactionalProducer:
        if not settings.transactional_id:
            raise JavaClientError("a transactional producer needs ProducerSettings.transactional_id")
        return JavaTransactionalProducer(self.lib, settings)


class JavaProducer:
    def __init__(self, lib: Path, settings: ProducerSettings) -> None:
        self.settings = settings
        self._single_attempt = settings.retries == 0 and not settings.idempotence
        self._pending: dict[int, Callable[[SendOutcome], None]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._closed = False
        self._worker = WorkerProcess(lib, "producer", producer_properties(settings), settings.client_id, self._outcome)

    def _outcome(self, line: dict[str, Any]) -> None:
        with self._lock:
            on_outcome = self._pending.pop(int(line["send"]), None)
        if on_outcome is not None:
            outcome = classify_send_result(line, self._single_attempt)
            if outcome.outcome is Outcome.OK:
                self._worker.archive.exercised()  # a write went all the way: a worker worth copying
            on_outcome(outcome)

    def send(self, topic: str, partition: int, value: str, on_outcome: Callable[[SendOutcome], None]) -> None:
        sid = next(self._ids)
        with self._lock:
            self._pending[sid] = on_outcome
        try:
            self._worker.write({"id": sid, "op": "send", "topic": topic, "partition": partition, "value": value})
        except JavaClientError:
            with self._lock:
                self._pending.pop(sid, None)  # raising means no outcome callback
            raise

    def flush(self, timeout_s: float) -> None:
        """Java's ``flush()`` has no bound: the wait for its reply has ours. Outcomes come
        before the reply (Java runs the callbacks before a flush returns)."""
        try:
            self._worker.request("flush", max(timeout_s, 0.0), None, margin_s=0.0)
        except JavaClientError as exc:
            log.info("%s: flush: %s", self.settings.client_id, exc)

    def close(self, timeout_s: float) -> None:
        """Close within ``timeout_s`` (Java aborts what is left, with outcomes), stop the
        worker; sends still without an outcome then end ``info``."""
        if self._closed:
            return
        self._closed = True
        try:
            self._worker.request("close", timeout_s, None, timeout_ms=int(timeout_s * 1000))
        except JavaClientError as exc:
            log.warning("%s: close: %s", self.settings.client_id, exc)
        finally:
            self._worker.stop(10.0)
            with self._lock:
                left, self._pending = self._pending, {}
            for on_outcome in left.values():
                on_outcome(SendOutcome.info("JavaClientError: the worker exited before the outcome"))


class JavaTransactionalProducer(JavaProducer):
    """Java's transactions over the worker. Each call raises ``JavaClientError`` (Java's error,
    ``"Class: message"``) when it did not succeed, including when it did not complete within
    ``timeout_s`` (the worker answers by then; the reply wait adds ``REPLY_MARGIN_S`` for the
    pipe only)."""

    REPLY_MARGIN_S = 5.0

    def _txn(self, op: str, timeout_s: float, **fields: Any) -> None:
        timeout_s = max(timeout_s, 0.0)
        self._worker.request(
            op, timeout_s, None, margin_s=self.REPLY_MARGIN_S, timeout_ms=int(timeout_s * 1000), **fields
        )

    def init_transactions(self, timeout_s: float) -> None:
        self._txn("init_transactions", timeout_s)

    def begin_transaction(self) -> None:
        self._worker.request("begin_transaction", 0.0, None, margin_s=self.REPLY_MARGIN_S)

    def commit_transaction(self, timeout_s: float) -> None:
        self._txn("commit_transaction", timeout_s)

    def abort_transaction(self, timeout_s: float) -> None:
        self._txn("abort_transaction", timeout_s)

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int], group_metadata: object, timeout_s: float
    ) -> None:
        if not isinstance(group_metadata, JavaGroupMetadata):
            raise TypeError(f"the Java producer needs a Java consumer's group_metadata(), not {group_metadata!r}")
        self._txn("send_offsets", timeout_s, offsets=offsets_line(offsets), group=group_metadata.to_line())


class JavaConsumer:
    def __init__(self, lib: Path, settings: ConsumerSettings, listener: ConsumerListener) -> None:
        self.settings = settings
        self.listener = listener
        self._closed = False
        self._worker = WorkerProcess(lib, "consumer", consumer_properties(settings), settings.client_id, self._no_send)
        # a command may block in Java for a request (a commit, a metadata lookup) before replying
        self._bound_s = settings.request_timeout_ms / 1000

    @staticmethod
    def _no_send(line: dict[str, Any]) -> None:
        log.warning("java consumer worker sent a send outcome: %s", line)

    def _event(self, event: dict[str, Any]) -> None:
        if event.get("event") == "position":
            self.listener.on_position_change(position_of(event))

    def _call(self, op: str, bound_s: float, **fields: Any) -> dict[str, Any]:
        return self._worker.request(op, bound_s, self._event, **fields)

    @staticmethod
    def _tp(tp: TopicPartition) -> dict[str, Any]:
        return {"topic": tp.topic, "partition": tp.partition}

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._call("assign", self._bound_s, partitions=[self._tp(tp) for tp in partitions])

    def subscribe(self, topics: Sequence[str]) -> None:
        self._call("subscribe", self._bound_s, topics=list(topics))

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._call("seek", self._bound_s, offset=int(offset), **self._tp(tp))

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        self._call("seek_to_beginning", self._bound_s, **self._tp(tp))

    def poll(self, timeout_ms: int) -> list[PolledRecord] | TruncationSignal:
        reply = self._call("poll", timeout_ms / 1000 + self._bound_s, timeout_ms=int(timeout_ms))
        signal_ = truncation_of(reply)
        if signal_ is not None:
            return signal_
        records = records_of(reply)
        if records:
            self._worker.archive.exercised()  # records fetched and decoded: a worker worth copying
        return records

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        # commitSync waits up to Java's default.api.timeout.ms (60 s)
        if offsets is None:
            self._call("commit", 60.0)
            return
        self._call("commit", 60.0, offsets=offsets_line(offsets))

    def group_metadata(self) -> JavaGroupMetadata:
        """The consumer's ``groupMetadata()`` as of its last join (Java raises
        ``InvalidGroupIdException`` without a group)."""
        return JavaGroupMetadata.of_reply(self._call("group_metadata", self._bound_s))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._call("close", 10.0)
        except JavaClientError as exc:
            log.warning("%s: close: %s", self.settings.client_id, exc)
        finally:
            self._worker.stop(10.0)
