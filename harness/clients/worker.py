"""The one worker protocol: every client under test runs in a worker process of its own.

A *worker* is a small program kept in this repository (``clients/<kind>/``) that drives one
client library and speaks JSON lines on stdin/stdout; its stderr (the library's log) goes to a
log file. The harness side is generic: ``WorkerDriver`` makes ``WorkerProducer`` /
``WorkerConsumer`` objects that satisfy the driver protocols of ``harness.clients.base`` for
*any* worker, given a ``WorkerLauncher`` that knows how to start one (the JVM command line of
the Java worker, the virtual environment of a Python client's version) and how to write a
client's settings into the first line. Everything specific to a library lives in its worker.

The messages are described in ``docs/adding-a-client.md`` (version ``PROTOCOL``); the pure
parts (``encode_line``, ``parse_line``, ``records_of``, ``parts_of``, ``truncation_of``, ``position_of``,
``revocation_of``, ``classify_send_result``) are unit-tested, and ``tests/integration/test_workload.py``
runs the driver contract on every worker.

Workers are processes of ours: each is in a registry (``live_workers``) while it runs, which the
client faults use (``kill``, ``freeze``, ``thaw``: SIGKILL, SIGSTOP, SIGCONT); an ``atexit`` hook
kills and reaps any worker still open when Python exits; and every worker ends itself at the end
of its stdin and within half a second of its parent's death, so neither Ctrl-C nor a ``kill -9``
of the test process leaves one behind. A worker that dies while in use (a fault, a crash) makes
every later request raise ``WorkerGone`` at once, and a producer's sends still without an
outcome end ``info`` right then: nothing waits for a process that is gone.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import fcntl
import itertools
import json
import logging
import operator
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from highwater.harness.client_common import (
    ConsumerListener,
    ConsumerSettings,
    GroupMetadata,
    Outcome,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    Revocation,
    RevocationReason,
    SendOutcome,
    ShareSettings,
    TopicPartition,
    TruncationSignal,
    WorkerError,
    _new_tuple,  # a named tuple's fields in one call, in C (``SendOutcome.ok``, ``records_of``)
    _opt_int,
    encode_line,
    records_of,
    report_revocation,
)
from highwater.harness.clients.clocks import worker_env
from highwater.harness.paths import home

from .base import BatchOutcomes, ClientGone, client_label

#: the versions a worker's ready line may name (the newest: ``PROTOCOL``, in ``harness.client_common``).
#: A worker of version 1 (no revocations) or 2 (sends as ``sends`` lines) is still accepted.
PROTOCOLS = frozenset({1, 2, 3})
#: the first version that takes ``batch`` lines
BATCH_LINES = 3
#: sends per ``batch`` line: small enough that a worker starts producing a large batch while
#: the rest is encoded and written, large enough that a line's own cost is nothing per send
BATCH_LINE_SENDS = 1000

log = logging.getLogger(__name__)


class WorkerGone(WorkerError, ClientGone):
    """The worker process exited (killed by a fault, crashed, or closed)."""


# --- lines ----------------------------------------------------------------------------------

#: broker errors (the exception's simple name, as a worker reports it in ``error_class``) that
#: prove the broker did not append: each is returned before the write is applied
DEFINITE_REJECTIONS = frozenset(
    {
        "RecordTooLargeException",
        "RecordBatchTooLargeException",
        "InvalidTopicException",
        "TopicAuthorizationException",
        "InvalidRequiredAcksException",
    }
)


_NONES = itertools.repeat(None)


def stated_outcome(outcome: str, offset: int | None, error: str | None) -> SendOutcome:
    """The outcome a worker stated (``ok`` with its offset, ``fail``, ``info``). Compared as
    strings, not looked up as ``Outcome``: this runs once per record written."""
    if outcome == "ok":
        return SendOutcome.ok(int(offset))  # type: ignore[arg-type]
    if outcome not in ("fail", "info"):
        raise WorkerError(f"a send outcome {outcome!r}: expected ok, fail or info")
    text = str(error or "unknown error")
    return SendOutcome.fail(text) if outcome == "fail" else SendOutcome.info(text)


def classify_send_result(line: Mapping[str, Any], single_attempt: bool) -> SendOutcome:
    """A worker's send outcome line. A worker that classifies its library's errors itself
    states ``outcome`` (``ok`` / ``fail`` / ``info``); otherwise: ``ok`` with its offset;
    ``fail`` when the send failed before it was handed to the library's network layer
    (``sync``: nothing was sent), or for a definite rejection when there was one attempt only
    (an earlier attempt may have been written); ``info`` for everything else."""
    stated = line.get("outcome")
    if stated is not None:
        return stated_outcome(stated, line.get("offset"), line.get("error"))
    error = str(line.get("error") or "unknown error")
    if line.get("offset") is not None:
        return SendOutcome.ok(int(line["offset"]))
    if line.get("sync") is True:
        return SendOutcome.fail(error)
    simple = str(line.get("error_class") or "").rsplit(".", 1)[-1]
    if single_attempt and simple in DEFINITE_REJECTIONS:
        return SendOutcome.fail(error)
    return SendOutcome.info(error)


#: the encoder of a ``sends`` line: UTF-8 as it is (no ``\\uXXXX`` for non-ASCII characters), so
#: a value's text is copied rather than scanned for escapes; measured about a third less time
#: per send than ``encode_line``. JSON text is UTF-8, which every worker reads.
_SENDS_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def encode_sends(sends: list[list[Any]]) -> bytes:
    """A ``sends`` line (``[id, topic, partition, value]`` each), as ``encode_line`` writes it
    but for the escapes: a value with a lone surrogate, which UTF-8 cannot carry, is escaped."""
    try:
        return (_SENDS_ENCODER.encode({"op": "sends", "sends": sends}) + "\n").encode()
    except UnicodeEncodeError:
        return encode_line({"op": "sends", "sends": sends})


_encode_str = json.encoder.encode_basestring_ascii  # a JSON string, as ``json.dumps`` writes it


def encode_send_lines(sends: Sequence[Sequence[Any]]) -> bytes:
    """``send`` lines (a worker without batches: Java's), ``[id, topic, partition, value]``
    each, byte for byte as ``encode_line`` writes them but without a ``json.dumps`` call per
    send: measured 3.6 us a send with it, 0.9 us formatted."""
    return "".join(
        f'{{"id":{int(sid)},"op":"send","topic":{_encode_str(topic)},"partition":{int(partition)},'
        f'"value":{_encode_str(value)}}}\n'
        for sid, topic, partition, value in sends
    ).encode()


def encode_batch(topic: str, first: int, partitions: Sequence[int], values: Sequence[str]) -> bytes:
    """A ``batch`` line (protocol 3): sends ``first``, ``first + 1``, ... to ``topic``, their
    partitions and values as two lists. Measured against a ``sends`` line of the same sends:
    a quarter less time to encode, a sixth of the time to decode (no list per send)."""
    line = {"op": "batch", "topic": topic, "first": first, "partitions": partitions, "values": values}
    try:
        return (_SENDS_ENCODER.encode(line) + "\n").encode()
    except UnicodeEncodeError:
        return encode_line(line)


def parse_line(text: str) -> dict[str, Any] | None:
    """One line of a worker's stdout as a JSON object; None for anything else (logged)."""
    text = text.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        log.warning("worker: not a protocol line: %.200s", text)
        return None
    if not isinstance(value, dict):
        log.warning("worker: not a protocol object: %.200s", text)
        return None
    return value


def truncation_of(reply: Mapping[str, Any]) -> TruncationSignal | None:
    """A poll reply's truncation signal (KIP-320, left to us), if it carries one."""
    divergent = reply.get("truncation")
    if divergent is None:
        return None
    return TruncationSignal(
        {TopicPartition(str(d["topic"]), int(d["partition"])): _opt_int(d.get("offset")) for d in divergent},
        str(reply.get("error") or "LogTruncation"),
    )


def position_of(event: Mapping[str, Any]) -> PositionChange:
    """A worker's ``position`` event."""
    return PositionChange(
        str(event["topic"]), int(event["partition"]), _opt_int(event.get("offset")), PositionReason(event["reason"])
    )


def revocation_of(event: Mapping[str, Any]) -> Revocation:
    """A worker's ``revoke`` event (protocol 2)."""
    return Revocation(str(event["topic"]), int(event["partition"]), RevocationReason(event["reason"]))


def offsets_line(offsets: Mapping[TopicPartition, int]) -> list[dict[str, Any]]:
    """Offsets per partition as ``commit`` and ``send_offsets`` list them."""
    return [{"topic": tp.topic, "partition": tp.partition, "offset": int(o)} for tp, o in offsets.items()]


# --- starting a worker ----------------------------------------------------------------------


def _nothing(*_: Any) -> None:
    return None


def worker_log_path(client: str, client_id: str) -> Path:
    """Where a worker of ``client`` with ``client_id`` appends its log: one file per client id in
    the cache (``<cache>/clients/<client>/logs/<client id>.log``, the id made a safe file name)."""
    return home() / "clients" / client / "logs" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', client_id)}.log"


@dataclass
class Launch:
    """How to start one worker process: its command line and environment, where its stderr
    goes, and hooks the launcher wants called (the Java worker's class-data archive keeps track
    of a worker that exercised the client, and of how it exited)."""

    argv: list[str]
    log_path: Path
    env: Mapping[str, str] | None = None
    on_exit: Callable[[int | None], None] = _nothing
    on_exercised: Callable[[], None] = _nothing
    # the signal on which the worker writes every thread's stack to its log and goes on (the
    # Python worker's faulthandler); None where no signal does that harmlessly (a JVM's SIGQUIT
    # dump goes to the protocol's stdout, Node's SIGUSR1 opens its inspector)
    stacks_signal: int | None = None


@dataclass(frozen=True)
class WorkerLog:
    """The part of a log file one worker wrote: launchers append every worker of a client id to
    one file in the cache, so a run's share of it starts at ``start``."""

    path: Path
    start: int


_LOGS: list[WorkerLog] = []  # every worker this process started, in order (appends are atomic)


def worker_logs_mark() -> int:
    """A mark to pass to ``copy_worker_logs``: the workers started from now on are the run's."""
    return len(_LOGS)


def copy_worker_logs(mark: int, dest: Path) -> list[Path]:
    """Copy what each worker started since ``mark`` wrote to its log into ``dest``, one file per
    worker (a client id started again, as after a restart fault, gets ``.2``, ``.3``...): the
    run's results then hold the client libraries' own account of it. A log that cannot be read
    is named in a line of its own file rather than failing the run that asked."""
    copied: list[Path] = []
    seen: dict[str, int] = {}
    logs = _LOGS[mark:]
    for i, log in enumerate(logs):
        n = seen[log.path.stem] = seen.get(log.path.stem, 0) + 1
        target = dest / (f"{log.path.stem}.log" if n == 1 else f"{log.path.stem}.{n}.log")
        # a worker's part ends where the next worker of its client id (its restart) begins
        end = next((later.start for later in logs[i + 1 :] if later.path == log.path), None)
        dest.mkdir(parents=True, exist_ok=True)
        try:
            with open(log.path, "rb") as src, open(target, "wb") as out:
                src.seek(log.start)
                out.write(src.read() if end is None else src.read(max(0, end - log.start)))
        except OSError as e:
            target.write_text(f"highwater: could not copy {log.path} from byte {log.start}: {e}\n")
        copied.append(target)
    return copied


class WorkerLauncher(Protocol):
    """What differs between workers, on the harness side: how to start one and how a client's
    settings are written in its first line."""

    def launch(self, role: str, client_id: str) -> Launch: ...

    def producer_config(self, settings: ProducerSettings) -> dict[str, Any]: ...

    def consumer_config(self, settings: ConsumerSettings) -> dict[str, Any]: ...


class NeutralSettingsConfig:
    """The first line's ``config`` of a worker that takes the library-neutral settings as they
    are, ``{"client": <name>, "settings": <ProducerSettings or ConsumerSettings as a dict>}`` (the
    Python and Node.js workers): ``client`` names the library."""

    client: str

    def _config(self, settings: ProducerSettings | ConsumerSettings) -> dict[str, Any]:
        return {"client": self.client, "settings": dataclasses.asdict(settings)}

    def producer_config(self, settings: ProducerSettings) -> dict[str, Any]:
        return self._config(settings)

    def consumer_config(self, settings: ConsumerSettings) -> dict[str, Any]:
        return self._config(settings)


class NeutralShareConfig(NeutralSettingsConfig):
    """``NeutralSettingsConfig`` for a worker that also has the ``share_consumer`` role
    (``share.ShareLauncher``: the Python worker's for confluent-kafka, franz-go's): its first line
    is the ``ShareSettings`` as they are. A library of the worker without a share consumer refuses
    the role in one line; the harness refuses the run before that (``share.share_client_refusal``)."""

    def share_config(self, settings: ShareSettings) -> dict[str, Any]:
        return {"client": self.client, "settings": dataclasses.asdict(settings)}


@dataclass(frozen=True)
class WorkerInfo:
    """Who a worker is, for client faults: its client id, role, and for a consumer its rack and
    group."""

    client_id: str
    role: str  # producer, consumer
    client: str  # the client label, "<name> <version>"
    rack: str | None = None
    group_id: str | None = None
    group_protocol: str | None = None  # a group member's (classic, consumer)


@dataclass(frozen=True)
class Relaunch:
    """What a restarted worker runs differently (``client_restart --version/--group-protocol``):
    another version of the same client, another group protocol; None: as before."""

    version: str | None = None
    group_protocol: str | None = None


# --- the worker process ---------------------------------------------------------------------

_LIVE: set[WorkerProcess] = set()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _kill_leftovers() -> None:
    """Workers never closed (an interrupted test): killed and reaped before Python exits."""
    for worker in live_workers():
        worker.kill()


def live_workers() -> list[WorkerProcess]:
    """Every worker process of ours still running (or frozen), oldest first."""
    with _LIVE_LOCK:
        return sorted(_LIVE, key=lambda w: w.started)


_RESTARTS: set[str] = set()  # client ids whose owner should start a new worker (a healed kill)
_RELAUNCH: dict[str, Relaunch] = {}  # what the new worker runs differently, by client id


def request_restart(client_id: str, relaunch: Relaunch | None = None) -> None:
    """Ask the owner of ``client_id``'s dead worker to start it again (a client fault's heal),
    on what ``relaunch`` says if given (its owner reads it once: :func:`take_relaunch`)."""
    with _LIVE_LOCK:
        _RESTARTS.add(client_id)
        if relaunch is not None:
            _RELAUNCH[client_id] = relaunch
        else:
            _RELAUNCH.pop(client_id, None)


def take_relaunch(client_id: str) -> Relaunch:
    """What the restart of ``client_id`` asked for (once; an empty ``Relaunch`` when nothing)."""
    with _LIVE_LOCK:
        return _RELAUNCH.pop(client_id, Relaunch())


def restart_asked(client_id: str) -> bool:
    """Whether a restart of ``client_id`` is asked for and not yet taken (``take_restart``)."""
    with _LIVE_LOCK:
        return client_id in _RESTARTS


def take_restart(client_id: str) -> bool:
    """True once if a restart of ``client_id`` was asked for (its owner then starts a new worker)."""
    with _LIVE_LOCK:
        if client_id in _RESTARTS:
            _RESTARTS.discard(client_id)
            return True
        return False


#: the capacity asked for the pipe to a worker's stdin (Linux's default is 64 KiB; its
#: unprivileged maximum, ``/proc/sys/fs/pipe-max-size``, 1 MiB). Measured: a burst of sends
#: written through a 64 KiB pipe made the harness and the worker wait for each other in turn,
#: each wake-up a scheduling delay on a machine busy with brokers (confluent-kafka, 200,000
#: sends, medians of 4: 68,000/s with 64 KiB, 81,000/s with 1 MiB).
PIPE_BYTES = 1 << 20


def _widen(pipe: IO[bytes] | None) -> None:
    """Ask for a pipe of ``PIPE_BYTES`` (Linux); keep what it has where that is refused."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if pipe is None or set_size is None:
        return
    try:
        fcntl.fcntl(pipe.fileno(), set_size, PIPE_BYTES)
    except OSError as exc:  # over the system's maximum, or not a pipe
        log.debug("worker pipe size unchanged: %s", exc)


class _Columns(NamedTuple):
    """A batch of sends queued for a worker: ids ``first``, ``first + 1``, ... to ``topic``."""

    first: int
    topic: str
    partitions: list[int]
    values: list[str]


class WorkerProcess:
    """One worker: writes commands, reads its lines on a thread. Send outcomes go to ``on_send``
    on the reader thread (a batch of them to ``on_sends`` when given, an ``oks`` line's to
    ``on_oks``); replies and events wait in a queue for ``request``; ``on_exit`` is called once
    on the reader thread when the process's stdout ends (it exited)."""

    REPLY_MARGIN_S = 30.0  # how much longer than the command's own bound a reply may take

    def __init__(
        self,
        launch: Launch,
        info: WorkerInfo,
        config: Mapping[str, Any],
        on_send: Callable[[dict[str, Any]], None],
        on_exit: Callable[[str], None] = _nothing,
        on_sends: Callable[[list[list[Any]]], None] | None = None,
        on_oks: Callable[[list[int]], None] | None = None,
    ) -> None:
        self.info = info
        self.launch = launch
        self.log_path = launch.log_path
        self.started = time.monotonic()
        self.frozen = False
        self.killed_by: str | None = None  # set by a client fault: why the worker died
        launch.log_path.parent.mkdir(parents=True, exist_ok=True)
        err: IO[bytes] = open(launch.log_path, "ab")
        _LOGS.append(WorkerLog(launch.log_path, err.tell()))
        try:
            self.proc = subprocess.Popen(
                launch.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=worker_env(info.client_id, launch.env),  # faked wall clock, when a run asks
                start_new_session=True,  # a terminal's Ctrl-C reaches us, and we close it in order
                close_fds=True,
            )
        except BaseException:
            launch.on_exit(None)
            raise
        finally:
            err.close()
        with _LIVE_LOCK:
            _LIVE.add(self)
        _widen(self.proc.stdin)  # a burst of sends; the other way, lines are small (``oks``) or waited for
        self.on_send = on_send
        self.on_sends = on_sends
        self.on_oks = on_oks
        self.on_exit = on_exit
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()  # the queue of sends
        self._pipe_lock = threading.Lock()  # the worker's stdin: one writer at a time, in order
        self._unflushed = threading.Event()  # sends are queued for the flusher (``send``)
        self._flusher: threading.Thread | None = None
        self._batches = False  # the worker takes ``sends`` lines (its ready reply says so)
        self.protocol = 1  # until the ready reply says
        # what to write next, in order: one send ``[id, topic, partition, value]`` (a list) or a
        # batch of them (``_Columns``); encoded by the thread that writes them (``_write_queued``)
        self._queued: list[Any] = []
        self._gone = False  # its output ended: it exited
        self._finished = False
        self._reader = threading.Thread(target=self._read, name=f"{info.client_id}-worker", daemon=True)
        self._reader.start()
        self._request_lock = threading.Lock()  # one command at a time: replies are matched in order
        try:
            ready = self._write_and_wait(0, {"role": info.role, "config": dict(config)}, 120.0, None)
        except BaseException:
            self.kill()  # a refused configuration: the worker is exiting; reap it
            raise
        protocol = int(ready.get("protocol", 1))
        if protocol not in PROTOCOLS:
            self.kill()
            speaks = " or ".join(map(str, sorted(PROTOCOLS)))
            raise WorkerError(f"the worker speaks protocol {protocol}, the harness {speaks}; its log: {self.log_path}")
        self.protocol = protocol
        self.version = str(ready.get("version", ""))
        self._batches = ready.get("batches") is True

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in self.proc.stdout:
                line = parse_line(raw.decode(errors="replace"))
                if line is None:
                    continue
                if "send" in line:
                    self.on_send(line)
                elif "oks" in line:  # acknowledged sends: [id, offset, id, offset, ...]
                    oks = line["oks"]
                    if self.on_oks is not None:
                        self.on_oks(oks)
                    else:
                        for sid, offset in zip(oks[0::2], oks[1::2]):
                            self.on_send({"send": sid, "outcome": "ok", "offset": offset, "error": None})
                elif "sends" in line:  # a batch of outcomes: [id, outcome, offset, error] each
                    if self.on_sends is not None:
                        self.on_sends(line["sends"])
                    else:
                        for sid, outcome, offset, error in line["sends"]:
                            self.on_send({"send": sid, "outcome": outcome, "offset": offset, "error": error})
                else:
                    self._replies.put(line)
        except (OSError, ValueError) as exc:  # the pipe closed under us by kill()
            log.debug("worker %s: stdout: %s", self.pid, exc)
        self._gone = True  # before on_exit: a send queued after this raises, one before gets `info`
        self._replies.put({"eof": True})
        self.on_exit(self.exit_reason())

    def exit_reason(self) -> str:
        """Why the worker is gone, as the history says it: the fault that killed it, or its exit."""
        if self.killed_by:
            return self.killed_by
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return f"the worker closed its output but did not exit; its log: {self.log_path}"
        how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return f"the {self.info.client} worker {how}; its log: {self.log_path}"

    def write(self, line: Mapping[str, Any]) -> None:
        """One command, after the sends queued before it; raises ``WorkerGone`` when the worker
        is gone."""
        assert self.proc.stdin is not None
        data = encode_line(line)
        with self._pipe_lock:
            try:
                self._write_queued()
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise WorkerGone(f"{self.exit_reason()} ({exc})") from exc

    def send(self, sid: int, topic: str, partition: int, value: str) -> None:
        """Queue one send (nobody waits for a reply to it); the flusher thread writes what a
        burst of sends queued at once, as one ``sends`` line when the worker takes them
        (``batches`` in its ready reply), else as ``send`` lines in one write to the pipe.
        Measured: a line and a flush per send were most of a fast producer's time. Raises
        ``WorkerGone`` once the worker is known to be gone (its output ended)."""
        self._queue([sid, topic, partition, value])

    def send_batch(self, first: int, topic: str, partitions: list[int], values: list[str]) -> None:
        """Queue sends ``first``, ``first + 1``, ... to ``topic`` as ``send`` does, written by
        the flusher thread as ``batch`` lines to a worker of protocol 3 or later (else as one
        send each): the caller encodes nothing and never waits for the pipe."""
        self._queue(_Columns(first, topic, partitions, values))

    def _queue(self, item: Any) -> None:
        with self._write_lock:
            self._queued.append(item)
            if not self._unflushed.is_set():
                self._start_flusher()
                self._unflushed.set()
        if self._gone:  # checked after queueing: a send queued before the end gets its outcome
            raise WorkerGone(self.exit_reason())

    def _write_queued(self) -> None:
        """Write the queued sends into the pipe (under ``_pipe_lock``), in the order they were
        queued. They are taken from the queue under ``_write_lock`` and encoded and written
        outside it: a sender queues more meanwhile instead of waiting for a pipe the worker has
        not drained yet."""
        assert self.proc.stdin is not None
        with self._write_lock:
            queued, self._queued = self._queued, []
        for kind, run in itertools.groupby(queued, type):
            if kind is _Columns:
                for columns in run:
                    self._write_columns(columns)
            else:
                self._write_sends(list(run))

    def _write_sends(self, sends: list[list[Any]]) -> None:
        """Sends as one ``sends`` line when the worker takes them, else as ``send`` lines."""
        assert self.proc.stdin is not None
        if self._batches:
            self.proc.stdin.write(encode_sends(sends))
            return
        self.proc.stdin.write(encode_send_lines(sends))

    def _write_columns(self, columns: _Columns) -> None:
        """A batch as ``batch`` lines of ``BATCH_LINE_SENDS`` sends each (to an older worker: as
        many sends at a time, as ``_write_sends`` writes them), each part flushed at once so the
        worker starts on it while the next is encoded: a large batch in one piece would keep
        the worker waiting until all of it was encoded."""
        assert self.proc.stdin is not None
        first, topic, partitions, values = columns
        step = BATCH_LINE_SENDS
        for at in range(0, len(values), step):
            part_partitions, part_values = partitions[at : at + step], values[at : at + step]
            if self.protocol >= BATCH_LINES:
                self.proc.stdin.write(encode_batch(topic, first + at, part_partitions, part_values))
            else:
                sids = range(first + at, first + at + len(part_values))
                self._write_sends([[sid, topic, p, v] for sid, p, v in zip(sids, part_partitions, part_values)])
            self.proc.stdin.flush()

    def _start_flusher(self) -> None:
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_loop, name=f"{self.info.client_id}-flush", daemon=True)
            self._flusher.start()

    def _flush_loop(self) -> None:
        """Write the queued sends as soon as this thread runs: at once when the sender waits,
        within the interpreter's switch interval while it keeps sending (then many at once)."""
        assert self.proc.stdin is not None
        while True:
            self._unflushed.wait()
            if self._finished:
                return
            with self._pipe_lock:
                self._unflushed.clear()
                try:
                    self._write_queued()
                    self.proc.stdin.flush()
                except (BrokenPipeError, ValueError, OSError) as exc:  # gone: its sends end `info`
                    log.debug("worker %s: writing sends: %s", self.pid, exc)
                    return

    def request(
        self,
        op: str,
        timeout_s: float,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        margin_s: float = REPLY_MARGIN_S,
        **fields: Any,
    ) -> dict[str, Any]:
        """Send a command and wait up to ``timeout_s + margin_s`` for its reply (a frozen worker
        adds the time it stays frozen); events seen meanwhile go to ``on_event`` in the order
        the worker wrote them."""
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
                got = self._replies.get(timeout=max(left, 0.05))
            except queue.Empty:
                if self.frozen:  # a client fault holds it: the reply comes after the thaw
                    deadline = time.monotonic() + timeout_s
                    continue
                if left > 0:
                    continue
                raise WorkerError(
                    f"the {self.info.client} worker did not answer {line.get('op', 'start')} within "
                    f"{timeout_s:.0f} s; its log: {self.log_path}"
                ) from None
            if got.get("eof"):
                self._replies.put(got)  # every later request sees it too
                raise WorkerGone(self.exit_reason())
            if "event" in got:
                if on_event is not None:
                    on_event(got)
                continue
            if got.get("id") != cid:
                continue  # the late reply of a request that timed out
            if "error" in got and "truncation" not in got:
                raise WorkerError(str(got["error"]))
            return got

    # --- faults and teardown

    def _signal(self, sig: signal.Signals) -> bool:
        if self.proc.poll() is not None:
            return False
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def dump_stacks(self) -> bool:
        """Ask the worker to write its threads' stacks to its log (``Launch.stacks_signal``), for
        a client that stopped moving; False if it cannot or is gone."""
        sig = self.launch.stacks_signal
        return sig is not None and not self.frozen and self._signal(signal.Signals(sig))

    def freeze(self) -> bool:
        """SIGSTOP (a long GC pause, as the brokers and the group see it); False if gone."""
        self.frozen = self._signal(signal.SIGSTOP)
        return self.frozen

    def thaw(self) -> bool:
        """SIGCONT after ``freeze``; False if gone."""
        self.frozen = False
        return self._signal(signal.SIGCONT)

    def crash(self, reason: str) -> bool:
        """SIGKILL now, from a fault; the owner learns it from the next request (``WorkerGone``
        with ``reason``) and still closes it. False if it was already gone."""
        self.killed_by = reason
        self.frozen = False
        return self._signal(signal.SIGKILL)

    def stop(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the worker to exit (after its close command), then kill
        it; reaped either way."""
        if self.frozen:
            self.thaw()
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("worker %s did not exit within %.0f s: killing it", self.proc.pid, timeout_s)
        self.kill()

    def kill(self) -> None:
        """SIGKILL (if still running) and reap."""
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                log.debug("worker %s already gone", self.proc.pid)
            self.proc.wait()
        if not self._finished:
            self._finished = True
            self.launch.on_exit(self.proc.returncode)
        self._unflushed.set()  # the flusher sees _finished and ends
        self._reader.join(timeout=5)
        if self._flusher is not None:
            self._flusher.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError as exc:  # a broken pipe on close: the process is gone anyway
                    log.debug("closing a pipe of worker %s: %s", self.proc.pid, exc)
        with _LIVE_LOCK:
            _LIVE.discard(self)


# --- the generic driver ---------------------------------------------------------------------


@dataclass
class WorkerDriver:
    """A client driver whose producers and consumers are worker processes started by
    ``launcher``. ``name`` and ``version`` are the client's (the history's ``client``)."""

    name: str
    version: str
    launcher: WorkerLauncher

    def producer(self, settings: ProducerSettings) -> WorkerProducer:
        return WorkerProducer(self, settings)

    def consumer(self, settings: ConsumerSettings, listener: ConsumerListener) -> WorkerConsumer:
        return WorkerConsumer(self, settings, listener)

    def transactional_producer(self, settings: ProducerSettings) -> WorkerTransactionalProducer:
        if not settings.transactional_id:
            raise WorkerError("a transactional producer needs ProducerSettings.transactional_id")
        return WorkerTransactionalProducer(self, settings)


class _Batch:
    """The sends of one ``send_batch`` still without an outcome share this entry in
    ``WorkerProducer._pending``: send ``first + i`` is the batch's ``i``-th."""

    __slots__ = ("first", "outcomes")

    def __init__(self, first: int, outcomes: BatchOutcomes) -> None:
        self.first = first
        self.outcomes = outcomes


def _answer(waiting: Callable[[SendOutcome], None] | _Batch, sid: int, outcome: SendOutcome) -> None:
    """Give one send's outcome to whoever waits for it: a ``send``'s callback or its batch."""
    if type(waiting) is _Batch:
        if outcome.outcome is Outcome.OK:
            waiting.outcomes.acked((sid - waiting.first,), (outcome.offset,))  # type: ignore[arg-type]
        else:
            waiting.outcomes.ended(sid - waiting.first, outcome)
    else:
        waiting(outcome)  # type: ignore[operator]


class WorkerProducer:
    def __init__(self, driver: WorkerDriver, settings: ProducerSettings) -> None:
        self.settings = settings
        self._single_attempt = settings.retries == 0 and not settings.idempotence
        # each send still without an outcome: its ``send``'s callback, or its ``send_batch``'s batch
        self._pending: dict[int, Callable[[SendOutcome], None] | _Batch] = {}
        self._lock = threading.Lock()
        self._next_id = 1  # the next send's id (under ``_lock``: a batch takes a block of them)
        self._closed = False
        launch = driver.launcher.launch("producer", settings.client_id)
        info = WorkerInfo(settings.client_id, "producer", client_label(driver))
        config = driver.launcher.producer_config(settings)
        self._worker = WorkerProcess(launch, info, config, self._outcome, self._exited, self._outcomes, self._oks)

    @property
    def process(self) -> WorkerProcess:
        return self._worker

    def _outcome(self, line: dict[str, Any]) -> None:
        sid = int(line["send"])
        with self._lock:
            waiting = self._pending.pop(sid, None)
        if waiting is not None:
            outcome = classify_send_result(line, self._single_attempt)
            if outcome.outcome is Outcome.OK:
                self._worker.launch.on_exercised()  # a write went all the way
            _answer(waiting, sid, outcome)

    def _outcomes(self, batch: list[list[Any]]) -> None:
        """A batch of stated outcomes, ``[id, outcome, offset, error]`` each, in order (the
        Node.js worker's acknowledgements too): consecutive acknowledgements of one
        ``send_batch`` reach its ``acked`` in one call."""
        with self._lock:
            answered = [
                (self._pending.pop(int(sid), None), int(sid), o, offset, error) for sid, o, offset, error in batch
            ]
        written = False
        for waiting, run in itertools.groupby(answered, operator.itemgetter(0)):
            if waiting is None:
                continue  # answered already (``info`` at the worker's end): one answer only
            indexes: list[int] = []
            offsets: list[int] = []
            for _, sid, o, offset, error in run:
                written = written or o == "ok"
                if type(waiting) is not _Batch:
                    waiting(stated_outcome(o, offset, error))
                elif o == "ok" and offset is not None:
                    indexes.append(sid - waiting.first)
                    offsets.append(int(offset))
                else:
                    if indexes:  # in the order they came
                        waiting.outcomes.acked(indexes, offsets)
                        indexes, offsets = [], []
                    _answer(waiting, sid, stated_outcome(o, offset, error))
            if indexes:
                waiting.outcomes.acked(indexes, offsets)
        if written:
            self._worker.launch.on_exercised()  # a write went all the way

    def _oks(self, oks: list[int]) -> None:
        """Acknowledged sends, ``[id, offset, id, offset, ...]``, in order. Their waiters are
        looked up, and their outcomes made, in ``map``s: this runs once per record written.
        A line whose sends are all of one batch (the common case) is one ``acked`` call."""
        ids, offsets = oks[0::2], oks[1::2]
        with self._lock:
            waiting = list(map(self._pending.pop, ids, itertools.repeat(None)))
        if not waiting:
            return
        head = waiting[0]
        if type(head) is _Batch and waiting.count(head) == len(waiting):
            head.outcomes.acked(list(map(operator.sub, ids, itertools.repeat(head.first))), offsets)
        elif _Batch not in map(type, waiting) and None not in waiting:
            outcomes = map(
                _new_tuple, itertools.repeat(SendOutcome), zip(itertools.repeat(Outcome.OK), offsets, _NONES)
            )
            collections.deque(map(operator.call, waiting, outcomes), 0)  # type: ignore[arg-type]
        else:  # a mix (several batches, single sends, some answered already by the worker's end)
            self._mixed_oks(waiting, ids, offsets)
        self._worker.launch.on_exercised()  # a write went all the way

    @staticmethod
    def _mixed_oks(waiting: list[Any], ids: list[int], offsets: list[int]) -> None:
        """``_oks`` of a line that spans waiters: consecutive sends of one batch are one
        ``acked`` call, the others answered one by one."""
        for key, run in itertools.groupby(zip(waiting, ids, offsets), operator.itemgetter(0)):
            if key is None:
                continue  # answered already (``info`` at the worker's end): one answer only
            if type(key) is _Batch:
                got = list(run)
                key.outcomes.acked([sid - key.first for _, sid, _ in got], [offset for _, _, offset in got])
            else:
                for on_outcome, _, offset in run:
                    on_outcome(SendOutcome.ok(offset))

    def _exited(self, reason: str) -> None:
        """The worker is gone: every send still without an outcome may have been written."""
        self._end_pending(f"WorkerGone: {reason}")

    def _end_pending(self, error: str) -> None:
        with self._lock:
            left, self._pending = self._pending, {}
        for sid, waiting in sorted(left.items()):
            _answer(waiting, sid, SendOutcome.info(error))

    def _take_ids(self, n: int) -> int:
        """The first of ``n`` new send ids (under ``_lock``)."""
        first = self._next_id
        self._next_id += n
        return first

    def send(self, topic: str, partition: int, value: str, on_outcome: Callable[[SendOutcome], None]) -> None:
        with self._lock:
            sid = self._take_ids(1)
            self._pending[sid] = on_outcome
        try:
            self._worker.send(sid, topic, partition, value)
        except WorkerError:
            with self._lock:
                waiting = self._pending.pop(sid, None)
            if waiting is None:
                return  # the worker's end answered it meanwhile (``info``): one answer only
            raise  # raising means no outcome callback

    def send_batch(self, topic: str, partitions: Sequence[int], values: Sequence[str], outcomes: BatchOutcomes) -> None:
        """Many sends to one topic (``base.BatchProducer``): ids taken as one block, one entry
        of ``_pending`` shared by all, written as ``batch`` lines (protocol 3) by the flusher,
        and their acknowledgements handed on as the lists they came in. Raises
        ``WorkerGone`` when the worker is gone, after every send of the batch still waiting
        ended ``info``."""
        partitions, values = list(partitions), list(values)  # as they are now; json writes lists
        n = len(values)
        if len(partitions) != n:
            raise ValueError(f"a batch of {n} values with {len(partitions)} partitions")
        if not n:
            return
        with self._lock:
            first = self._take_ids(n)
            batch = _Batch(first, outcomes)
            self._pending.update(zip(range(first, first + n), itertools.repeat(batch)))
        try:
            self._worker.send_batch(first, topic, partitions, values)
        except WorkerError as exc:
            with self._lock:
                left = [sid for sid in range(first, first + n) if self._pending.pop(sid, None) is not None]
            for sid in left:  # the ones the worker's end did not answer meanwhile: one answer only
                outcomes.ended(sid - first, SendOutcome.info(exc))
            raise

    def flush(self, timeout_s: float) -> None:
        """The wait for the flush's reply has our bound; outcomes come before the reply."""
        try:
            self._worker.request("flush", max(timeout_s, 0.0), None, margin_s=0.0, timeout_ms=int(timeout_s * 1000))
        except WorkerError as exc:
            log.info("%s: flush: %s", self.settings.client_id, exc)

    def close(self, timeout_s: float) -> None:
        """Close within ``timeout_s`` (the library aborts what is left, with outcomes), stop the
        worker; sends still without an outcome then end ``info``."""
        if self._closed:
            return
        self._closed = True
        try:
            self._worker.request("close", timeout_s, None, timeout_ms=int(timeout_s * 1000))
        except WorkerError as exc:
            log.warning("%s: close: %s", self.settings.client_id, exc)
        finally:
            self._worker.stop(10.0)
            self._end_pending("WorkerGone: the worker exited before the outcome")


class WorkerTransactionalProducer(WorkerProducer):
    """Transactions over a worker. Each call raises ``WorkerError`` (the library's error,
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
        if not isinstance(group_metadata, GroupMetadata):
            raise TypeError(f"send_offsets needs a worker consumer's group_metadata(), not {group_metadata!r}")
        self._txn("send_offsets", timeout_s, offsets=offsets_line(offsets), group=group_metadata.to_line())


class WorkerConsumer:
    def __init__(self, driver: WorkerDriver, settings: ConsumerSettings, listener: ConsumerListener) -> None:
        self.settings = settings
        self.listener = listener
        self._closed = False
        launch = driver.launcher.launch("consumer", settings.client_id)
        info = WorkerInfo(
            settings.client_id,
            "consumer",
            client_label(driver),
            settings.client_rack,
            settings.group_id,
            settings.group_protocol if settings.group_id else None,
        )
        config = driver.launcher.consumer_config(settings)
        self._worker = WorkerProcess(launch, info, config, self._no_send)
        # a command may block in the library for a request (a commit, a metadata lookup)
        self._bound_s = settings.request_timeout_ms / 1000

    @property
    def process(self) -> WorkerProcess:
        return self._worker

    @staticmethod
    def _no_send(line: dict[str, Any]) -> None:
        log.warning("a consumer worker sent a send outcome: %s", line)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "position":
            self.listener.on_position_change(position_of(event))
        elif kind == "revoke":  # rebalance-barrier reads them; a malformed one is logged, not raised
            try:
                revocation = revocation_of(event)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("%s: a revoke event the harness cannot read (%s): %s", self.settings.client_id, exc, event)
                return
            report_revocation(self.listener, revocation)

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
            self._worker.launch.on_exercised()  # records fetched and decoded
        return records

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        # a synchronous commit may wait up to the library's API timeout (Java: 60 s)
        if offsets is None:
            self._call("commit", 60.0)
            return
        self._call("commit", 60.0, offsets=offsets_line(offsets))

    def group_metadata(self) -> GroupMetadata:
        """The consumer's group metadata as of its last join."""
        return GroupMetadata.of_reply(self._call("group_metadata", self._bound_s))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._call("close", 10.0)
        except WorkerError as exc:
            log.warning("%s: close: %s", self.settings.client_id, exc)
        finally:
            self._worker.stop(10.0)
