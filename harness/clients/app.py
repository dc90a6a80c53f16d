"""Your program as the consumers of a run: a client driver whose consumer is a process of the
user's (``highwater.scenarios.App``, docs/writing-scenarios.md).

highwater starts ``App.argv`` in place of each of its consumers (one per rack), with the cluster
in environment variables (``APP_ENV``: the bootstrap servers through that rack's proxies,
``client.rack``, the topic, its partitions and where to start), while highwater's own producers
write unique values. The program consumes with its own client and writes what it consumed to its
stdout, one JSON object per record::

    {"topic": "t", "partition": 0, "offset": 17, "value": "producer-1-8"}

(optionally ``"leader_epoch"`` and ``"replica"``, the broker that served it, where the client
says). Each such line becomes a record of a ``poll`` event of that consumer in the run's
history, as highwater's own consumers record theirs (``harness.workload.consumer``), so every
check that judges consumers judges the program. A line ``{"position": "reset", "topic",
"partition", "offset"}`` records a position change it made on its own (``PositionReason``);
any other line is kept in its log. The program's stderr and those other lines go to
``<run>/logs/app/``. The driver is a client only while its run lasts (``registered``).
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from highwater.core.errors import HighwaterError
from highwater.harness.clients import (
    CLIENTS,
    ClientDriver,
    ConsumerListener,
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerDriver,
    ProducerSettings,
    TopicPartition,
    TransactionalClient,
    TransactionalProducerDriver,
    TruncationSignal,
    WorkerGone,
    client_label,
)
from highwater.harness.procs import signal_and_wait, spawn

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class AppError(HighwaterError):
    """An app that cannot run (its name, argv or version), or that did something highwater
    cannot record (a malformed output line, a seek asked of it once it runs: recorded as a
    failed poll of its consumer)."""


@dataclass(frozen=True)
class App:
    """Your program, run in place of highwater's consumers (one per rack; the module docstring
    says what it is given and what it writes). ``name`` and ``version`` name it as a client in
    the history, the manifest and the reports (``<name> <version>``; a findings record of yours
    names it in ``clients``). ``producers``: the client of highwater's producers (None: the
    run's client). ``env`` is added to the environment it starts with."""

    name: str
    argv: tuple[str, ...]
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    version: str = "0"
    producers: str | None = None
    #: seconds between SIGTERM and SIGKILL when its consumer closes
    stop_timeout: float = 10.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(self.argv))
        object.__setattr__(self, "env", dict(self.env))
        if not _NAME.match(self.name) or not self.name[0].isalpha() or self.name in CLIENTS:
            raise AppError(
                f"app name {self.name!r}: a letter, then letters, digits, '.', '_' and '-', and none of highwater's clients "
                f"({', '.join(CLIENTS)})"
            )
        if not self.argv or not all(isinstance(a, str) and a for a in self.argv):
            raise AppError(f"app {self.name}: argv must be a non-empty tuple of strings")
        if not self.version or " " in self.version:
            raise AppError(f"app {self.name}: version must be one word")


#: the environment an app starts with (besides its own and ``App.env``)
APP_ENV = {
    "HIGHWATER_BOOTSTRAP_SERVERS": "host:port,... of the cluster through this rack's proxies",
    "HIGHWATER_CLIENT_ID": "the consumer it stands for (consumer-0, consumer-1, ...: the history's process)",
    "HIGHWATER_CLIENT_RACK": "its rack: set it as client.rack (KIP-392: fetch from the rack's replica)",
    "HIGHWATER_TOPIC": "the topic to read",
    "HIGHWATER_PARTITIONS": "the partitions to read, comma-separated (every partition of the topic)",
    "HIGHWATER_START_OFFSETS": 'where to start, as JSON {"<partition>": offset} (0 at first)',
    "HIGHWATER_GROUP_ID": "a consumer group of its own, if it wants one (no other member reads it)",
    "HIGHWATER_ISOLATION_LEVEL": "read_uncommitted or read_committed",
    "HIGHWATER_FETCH_MAX_WAIT_MS": "fetch.max.wait.ms the timed checks' bounds assume",
    "HIGHWATER_METADATA_MAX_AGE_MS": "metadata.max.age.ms the timed checks' bounds assume",
    "HIGHWATER_REQUEST_TIMEOUT_MS": "request.timeout.ms the timed checks' bounds assume",
    "HIGHWATER_MAX_POLL_RECORDS": "max.poll.records",
}


def app_env(settings: ConsumerSettings, starts: Mapping[TopicPartition, int]) -> dict[str, str]:
    """The ``HIGHWATER_*`` variables of an app standing for the consumer of ``settings``, which
    starts each partition at ``starts``."""
    topics = {tp.topic for tp in starts}
    if len(topics) != 1:
        raise AppError(f"an app reads one topic, not {sorted(topics)}")
    return {
        "HIGHWATER_BOOTSTRAP_SERVERS": ",".join(settings.bootstrap),
        "HIGHWATER_CLIENT_ID": settings.client_id,
        "HIGHWATER_CLIENT_RACK": settings.client_rack or "",
        "HIGHWATER_TOPIC": topics.pop(),
        "HIGHWATER_PARTITIONS": ",".join(str(tp.partition) for tp in starts),
        "HIGHWATER_START_OFFSETS": json.dumps({str(tp.partition): o for tp, o in starts.items()}),
        "HIGHWATER_GROUP_ID": f"{next(iter(starts)).topic}-{settings.client_id}",
        "HIGHWATER_ISOLATION_LEVEL": settings.isolation_level,
        "HIGHWATER_FETCH_MAX_WAIT_MS": str(settings.fetch_max_wait_ms),
        "HIGHWATER_METADATA_MAX_AGE_MS": str(settings.metadata_max_age_ms),
        "HIGHWATER_REQUEST_TIMEOUT_MS": str(settings.request_timeout_ms),
        "HIGHWATER_MAX_POLL_RECORDS": str(settings.max_poll_records),
    }


def _int(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise AppError(f"{key!r} must be an integer, not {value!r}")
    return value


def _int_or_none(obj: Mapping[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else _int(obj, key)


def parse_app_line(line: str) -> PolledRecord | PositionChange | None:
    """One line of an app's stdout: a record it consumed, a position change it made, or None for
    any line that is not a JSON object (its own output, kept in its log). ``AppError`` for a JSON
    object that is neither."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    topic = obj.get("topic")
    if not isinstance(topic, str) or not topic:
        raise AppError(f"'topic' must be a topic name, in {text[:200]}")
    try:
        if "position" in obj:
            reason = PositionReason(obj["position"])
            return PositionChange(topic, _int(obj, "partition"), _int_or_none(obj, "offset"), reason)
        value = obj.get("value")
        if value is not None and not isinstance(value, str):
            raise AppError(f"'value' must be a string (the record's value, decoded) or null, not {value!r}")
        return PolledRecord(
            topic,
            _int(obj, "partition"),
            _int(obj, "offset"),
            value,
            _int_or_none(obj, "leader_epoch"),
            _int_or_none(obj, "replica"),
        )
    except AppError as exc:
        raise AppError(f"{exc} in {text[:200]}") from None
    except ValueError:
        raise AppError(
            f"'position' must be one of {', '.join(r.value for r in PositionReason)}, in {text[:200]}"
        ) from None


@dataclass(frozen=True)
class _Exited:
    """The app's stdout ended: it exited with ``code``."""

    code: int | None


_Item = PolledRecord | PositionChange | AppError | _Exited


class AppConsumer:
    """A ``ConsumerDriver`` whose consumer is the app: started at the first poll with the
    partitions assigned and the offsets sought, its stdout read on a thread; ``poll`` returns
    the records it wrote since, in its order (position changes go to the listener between them)."""

    def __init__(self, app: App, settings: ConsumerSettings, listener: ConsumerListener, logs: Path) -> None:
        self.app = app
        self.settings = settings
        self.listener = listener
        self.logs = logs
        self._starts: dict[TopicPartition, int] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._items: queue.Queue[_Item] = queue.Queue()
        self._held: _Item | None = None  # taken from the queue, not returned yet
        self._reader: threading.Thread | None = None

    # the workload's moves: only before the app starts
    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._before_start("assign")
        self._starts = {tp: 0 for tp in partitions}

    def subscribe(self, topics: Sequence[str]) -> None:
        raise AppError("an app reads every partition itself (assign mode)")

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._before_start("seek")
        self._starts[tp] = offset

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        raise AppError("an app moves on its own: it reports its moves as position lines")

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        raise AppError("an app commits on its own")

    def group_metadata(self) -> object:
        raise AppError("an app has no group metadata to give")

    def _before_start(self, what: str) -> None:
        if self._proc is not None:
            raise AppError(f"{what} asked of {self.app.name} once it runs: it moves on its own")

    def _start(self) -> None:
        if not self._starts:
            raise AppError(f"{self.app.name} was started with no partition assigned")
        name = self.settings.client_id
        env = {**os.environ, **self.app.env, **app_env(self.settings, self._starts)}
        # its stdin is closed when its consumer closes (a program may end at EOF); it gets
        # SIGKILL when the thread that started it ends (spawn's death signal), however the run ends
        self._proc = spawn(self.app.argv, log_path=self.logs / f"{name}.log", cwd=self.app.cwd, env=env, piped=True)
        self._reader = threading.Thread(target=self._read, name=f"{name}-app", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        other: IO[str] | None = None
        try:
            for raw in proc.stdout:
                line = raw.decode("utf-8", errors="replace")
                try:
                    item = parse_app_line(line)
                except AppError as exc:
                    self._items.put(exc)
                    continue
                if item is not None:
                    self._items.put(item)
                    continue
                if other is None:
                    other = open(self.logs / f"{self.settings.client_id}.stdout.log", "a", encoding="utf-8")
                other.write(line)
                other.flush()
        finally:
            if other is not None:
                other.close()
            self._items.put(_Exited(proc.wait()))

    def _next(self, timeout: float) -> _Item | None:
        if self._held is not None:
            item, self._held = self._held, None
            return item
        try:
            return self._items.get(timeout=timeout) if timeout > 0 else self._items.get_nowait()
        except queue.Empty:
            return None

    def poll(self, timeout_ms: int) -> Sequence[PolledRecord] | TruncationSignal:
        """The records the app wrote since the last poll (up to ``max_poll_records``), waiting
        up to ``timeout_ms`` for the first; a position change it wrote before any of them goes to
        the listener first. ``WorkerGone`` once it exited and everything it wrote was returned."""
        if self._proc is None:
            self._start()
        deadline = time.monotonic() + timeout_ms / 1000
        records: list[PolledRecord] = []
        while len(records) < self.settings.max_poll_records:
            item = self._next(0 if records else deadline - time.monotonic())
            if item is None:
                break
            if isinstance(item, PolledRecord):
                records.append(item)
                continue
            if records:  # the records before it are one poll; it comes next
                self._held = item
                break
            if isinstance(item, PositionChange):
                self.listener.on_position_change(item)
            elif isinstance(item, AppError):
                raise item
            else:
                self._held = item  # every later poll says so too
                raise WorkerGone(
                    f"{self.app.name} ({self.settings.client_id}) exited with {item.code}; "
                    f"its log: {self.logs / (self.settings.client_id + '.log')}"
                )
        return records

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass  # it is gone already
        if not signal_and_wait(proc.pid, signal.SIGTERM, self.app.stop_timeout):
            signal_and_wait(proc.pid, signal.SIGKILL, 5.0)
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass  # reaped by the reader's wait, or by the atexit of subprocess
        if self._reader is not None:
            self._reader.join(5.0)


class AppDriver:
    """The client of a run with an app: its consumers are the app (``AppConsumer``), its
    producers those of ``producers`` (highwater's own client)."""

    def __init__(self, app: App, producers: ClientDriver, logs: Path) -> None:
        self.app = app
        self.producers = producers
        self.logs = logs

    @property
    def name(self) -> str:
        return self.app.name

    @property
    def version(self) -> str:
        return self.app.version

    def producer(self, settings: ProducerSettings) -> ProducerDriver:
        return self.producers.producer(settings)

    def transactional_producer(self, settings: ProducerSettings) -> TransactionalProducerDriver:
        if not isinstance(self.producers, TransactionalClient):
            raise AppError(f"{client_label(self.producers)} has no transactional producer")
        return self.producers.transactional_producer(settings)

    def consumer(self, settings: ConsumerSettings, listener: ConsumerListener) -> AppConsumer:
        return AppConsumer(self.app, settings, listener, self.logs)
