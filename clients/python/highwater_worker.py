"""The worker of a Python client under test: one producer or one consumer, driven over the
worker protocol (``docs/adding-a-client.md``) on stdin/stdout.

It runs in a process of its own, with the interpreter of the client version's virtual
environment (``harness.clients.python``), so the kafka-python the harness itself uses for its
observer and admin is never the one under test, and two versions of one client can run side by
side. The library's adaptation is the in-worker driver beside this file (``kafka_python.py``,
``confluent.py``: the worker side of ``clients/python/``): it is imported *here*, in the worker,
never in the harness process; this file only turns its calls and callbacks into protocol lines.

The first line names the role and carries ``{"client": <dist>, "settings": <ProducerSettings,
ConsumerSettings or ShareSettings as a dict>}`` (the ``share_consumer`` role: confluent-kafka's
share consumer, ``clients/python/confluent_share.py``); the reply is ``{"id": 0, "ok": true,
"version", "protocol"}``. Every later command is answered with ``{"id", "ok": true, ...}`` or
``{"id", "error": "Class: message"}``, but sends, which come as ``sends`` lines (``[id, topic, partition, value]`` each)
or, since protocol 3, ``batch`` lines (``{"topic", "first", "partitions", "values"}``: sends
``first``, ``first + 1``, ... as columns) and get no reply; their outcomes come in ``sends``
lines (``[id, outcome, offset, error]`` each) and, from a driver that states them as plain
entries (``send_stated``), acknowledged ones in ``oks`` lines (``[id, offset, ...]``;
``"compact_oks"`` in the ready reply); position changes as ``{"event": "position", ...}`` and
the partitions a group consumer gave up as ``{"event": "revoke", "topic", "partition",
"reason"}`` (protocol 2), each written as the library reports it, before the reply of the
command during which it did.

The worker ends at the end of its stdin, after ``close``, and within half a second of its
parent's death (a watchdog thread), so it never outlives the test process.
"""

from __future__ import annotations

import faulthandler
import itertools
import json
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# What the worker imports of ours is the worker side beside this file (``clients/python/``: the
# in-worker drivers) and the one module both sides share (``harness/client_common.py``: settings,
# outcome types, the line codec, the libraries' versions; no process management), both under the
# folder two levels up (a checkout's root, or the installed highwater package). A client
# version's virtual environment has no highwater installed, so they import as ``highwater.*``
# through a package object of that name whose path is that folder, and nothing else: putting the
# harness's own environment on the path would shadow the library version under test with its pin.
# Nothing here imports ``highwater.harness.clients`` (its package holds the process management:
# ``harness.procs``, the ``atexit`` reaper), which tests/unit/test_layers.py holds the worker to.
FLOORS = Path(__file__).resolve().parents[2]
if "highwater" not in sys.modules:
    _highwater = types.ModuleType("highwater")
    _highwater.__path__ = [str(FLOORS)]
    sys.modules["highwater"] = _highwater

from highwater.core.errors import error_text  # noqa: E402
from highwater.harness.client_common import (  # noqa: E402 - after the path above
    PROTOCOL,
    ConsumerSettings,
    GroupMetadata,
    PositionChange,
    ProducerSettings,
    Revocation,
    SendOutcome,
    ShareSettings,
    TopicPartition,
    TruncationSignal,
    encode_line,
    parts_of,
)
from highwater.harness.gcpasses import set_streaming  # noqa: E402
from highwater.harness.security import ClientSecurity  # noqa: E402

# The protocol gets a descriptor of its own and descriptor 1 becomes the log's (stderr), so a
# library or a C extension printing to stdout writes to the worker's log, never into the protocol
_OUT = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
os.dup2(2, 1)
_OUT_LOCK = threading.Lock()
_UNFLUSHED = threading.Event()  # send outcomes are queued for the flusher thread
#: send outcomes for the next outcome lines, in the order they came: ``(id, offset)`` for an
#: acknowledged send (a driver's ``send_stated``), ``[id, outcome, offset, error]`` for any
#: other. Appended without a lock (one ``append`` is atomic); taken with ``_take_outcomes``.
_OUTCOMES: list[Any] = []


def _take_outcomes() -> list[Any]:
    """The queued outcomes, removed from the queue (under ``_OUT_LOCK``): a copy of the first
    ``n`` and a delete of them, each atomic, so an append meanwhile stays for the next line."""
    n = len(_OUTCOMES)
    taken = _OUTCOMES[:n]
    del _OUTCOMES[:n]
    return taken


def outcome_lines(outcomes: list[Any]) -> bytes:
    """Outcome lines for ``outcomes`` (as ``_OUTCOMES`` holds them), in their order: a run of
    acknowledged sends as one ``{"oks": [id, offset, id, offset, ...]}`` line, a run of others as
    one ``{"sends": [[id, outcome, offset, error], ...]}`` line."""
    if list not in map(type, outcomes):  # acknowledgements only (nearly always): one line
        return encode_line({"oks": list(itertools.chain.from_iterable(outcomes))})
    lines = []
    for kind, run in itertools.groupby(outcomes, type):
        if kind is tuple:
            lines.append(encode_line({"oks": list(itertools.chain.from_iterable(run))}))
        else:
            lines.append(encode_line({"sends": list(run)}))
    return b"".join(lines)


def _write_outcomes() -> None:
    """The queued send outcomes as outcome lines into the buffer (under ``_OUT_LOCK``)."""
    if _OUTCOMES:
        _OUT.write(outcome_lines(_take_outcomes()))


def write_outcomes() -> None:
    """Write the queued outcomes now (the thread that served them, right after)."""
    if _OUTCOMES:
        with _OUT_LOCK:
            try:
                _write_outcomes()
                _OUT.flush()
            except OSError as exc:  # the harness closed our output: it is gone or killing us
                print(f"highwater worker: output closed ({exc})", file=sys.stderr, flush=True)


def emit(line: dict[str, Any]) -> None:
    """One protocol line (a reply or an event: someone waits for it), written at once, after
    the send outcomes queued before it (a flush's outcomes come before its reply)."""
    data = encode_line(line)
    with _OUT_LOCK:
        _write_outcomes()
        _OUT.write(data)
        _OUT.flush()


def emit_outcome(sid: int, outcome: str, offset: int | None, error: str | None) -> None:
    """Queue a send outcome for ``flush_outcomes``: the outcomes of one produce response go out
    as one line and one write to the pipe, not a line and a write each."""
    _OUTCOMES.append([sid, outcome, offset, error])
    if not _UNFLUSHED.is_set():
        _UNFLUSHED.set()


def flush_outcomes() -> None:
    """The flusher thread: writes the queued outcomes as soon as it runs (at once when the
    library's thread is idle, within the interpreter's switch interval when it is busy)."""
    while True:
        _UNFLUSHED.wait()
        with _OUT_LOCK:
            _UNFLUSHED.clear()
            try:
                _write_outcomes()
                _OUT.flush()
            except OSError as exc:  # the harness closed our output: it is gone or killing us
                print(f"highwater worker: output closed ({exc})", file=sys.stderr, flush=True)
                return


def watch_parent() -> None:
    """Exit at once when the parent is gone (re-parented): a ``kill -9`` of the test process."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                print(f"highwater worker: parent {parent} is gone, exiting", file=sys.stderr, flush=True)
                os._exit(3)

    threading.Thread(target=watch, name="highwater-watchdog", daemon=True).start()


# --- the library ----------------------------------------------------------------------------


def make_driver(client: str) -> Any:
    """The in-process driver of the library this environment has (one version: this venv's)."""
    if client == "kafka-python":
        from highwater.clients.python.kafka_python import KafkaPythonDriver

        return KafkaPythonDriver()
    if client == "confluent-kafka":
        from highwater.clients.python.confluent import ConfluentKafkaDriver

        return ConfluentKafkaDriver()
    raise ValueError(f"no Python worker for client {client!r}")


def group_metadata_line(client: str, metadata: Any, settings: ConsumerSettings) -> dict[str, Any]:
    """A library's group metadata as the protocol carries it between workers."""
    if client == "confluent-kafka":  # librdkafka's serialized form: opaque, carried as hex
        return GroupMetadata(str(settings.group_id), -1, "", opaque=bytes(metadata).hex()).to_line()
    return GroupMetadata(
        metadata.group_id, metadata.generation_id, metadata.member_id, metadata.group_instance_id
    ).to_line()


def group_metadata_of(client: str, line: dict[str, Any]) -> Any:
    """The library's group metadata from a ``group_metadata_line``."""
    if client == "confluent-kafka":
        return bytes.fromhex(str(line["opaque"]))
    from kafka.structs import ConsumerGroupMetadata

    return ConsumerGroupMetadata(
        line["group_id"], int(line["generation_id"]), line["member_id"], line.get("group_instance_id")
    )


def settings_of(role: str, raw: dict[str, Any]) -> ProducerSettings | ConsumerSettings | ShareSettings:
    fields = {**raw, "bootstrap": tuple(raw["bootstrap"]), "security": ClientSecurity(**raw["security"])}
    if role == "share_consumer":
        return ShareSettings(**fields)
    return ProducerSettings(**fields) if role == "producer" else ConsumerSettings(**fields)


def _tp(cmd: dict[str, Any]) -> TopicPartition:
    return TopicPartition(str(cmd["topic"]), int(cmd["partition"]))


def _offsets(cmd: dict[str, Any]) -> dict[TopicPartition, int]:
    return {_tp(o): int(o["offset"]) for o in cmd["offsets"]}


# --- the roles ------------------------------------------------------------------------------


class Producer:
    def __init__(self, client: str, driver: Any, settings: ProducerSettings) -> None:
        self.client = client
        self.producer = (
            driver.transactional_producer(settings) if settings.transactional_id else driver.producer(settings)
        )
        # a driver that states outcomes as plain entries (``send_stated``) takes a batch at once
        self.stated = hasattr(self.producer, "send_stated")
        if self.stated:
            self.producer.state_outcomes(_OUTCOMES, write_outcomes)

    def batch(self, topic: str, first: int, partitions: list[int], values: list[str]) -> None:
        """A ``batch`` line (protocol 3): sends ``first``, ``first + 1``, ... to ``topic``."""
        self.sends(zip(itertools.count(first), itertools.repeat(topic), partitions, values))

    def sends(self, sends: Iterable[Sequence[Any]]) -> None:
        """A ``sends`` line: ``[id, topic, partition, value]`` each."""
        if self.stated:
            try:
                self.producer.send_stated(sends)
            finally:
                write_outcomes()  # the reports this thread served
            return
        for sid, topic, partition, value in sends:
            self.send(sid, topic, partition, value)

    def send(self, sid: int, topic: str, partition: int, value: str) -> None:
        def outcome(o: SendOutcome) -> None:
            error = None if o.error is None else o.error if isinstance(o.error, str) else error_text(o.error)
            emit_outcome(sid, o.outcome.value, o.offset, error)

        try:
            self.producer.send(topic, partition, value, outcome)
        except Exception as exc:  # noqa: BLE001 - a send that raised has an unknown outcome
            emit_outcome(sid, "info", None, error_text(exc))

    def handle(self, op: str, cmd: dict[str, Any]) -> dict[str, Any]:
        timeout_s = int(cmd.get("timeout_ms", 0)) / 1000
        p = self.producer
        if op == "flush":
            p.flush(timeout_s)
        elif op == "close":
            p.close(timeout_s)
        elif op == "init_transactions":
            p.init_transactions(timeout_s)
        elif op == "begin_transaction":
            p.begin_transaction()
        elif op == "commit_transaction":
            p.commit_transaction(timeout_s)
        elif op == "abort_transaction":
            p.abort_transaction(timeout_s)
        elif op == "send_offsets":
            p.send_offsets_to_transaction(_offsets(cmd), group_metadata_of(self.client, cmd["group"]), timeout_s)
        else:
            raise ValueError(f"unknown producer op {op!r}")
        return {}


class Consumer:
    def __init__(self, client: str, driver: Any, settings: ConsumerSettings) -> None:
        self.client = client
        self.settings = settings
        self.consumer = driver.consumer(settings, self)
        # a driver that builds the reply's columns itself (poll_parts) skips a record object per
        # record; any other is regrouped from its records (parts_of)
        self.poll_parts = getattr(self.consumer, "poll_parts", None)

    def on_position_change(self, change: PositionChange) -> None:
        emit({"event": "position", **change.to_event_value()})

    def on_revocation(self, revocation: Revocation) -> None:
        emit({"event": "revoke", **revocation.to_event_value()})

    def handle(self, op: str, cmd: dict[str, Any]) -> dict[str, Any]:
        c = self.consumer
        if op == "poll":
            poll_parts = self.poll_parts
            polled = poll_parts(int(cmd["timeout_ms"])) if poll_parts else c.poll(int(cmd["timeout_ms"]))
            if isinstance(polled, TruncationSignal):
                divergent = [
                    {"topic": tp.topic, "partition": tp.partition, "offset": o} for tp, o in polled.divergent.items()
                ]
                error = polled.error if isinstance(polled.error, str) else error_text(polled.error)
                return {"truncation": divergent, "error": error}
            return {"parts": polled if poll_parts else parts_of(polled)}
        if op == "assign":
            c.assign([_tp(p) for p in cmd["partitions"]])
        elif op == "subscribe":
            c.subscribe(list(cmd["topics"]))
        elif op == "seek":
            c.seek(_tp(cmd), int(cmd["offset"]))
        elif op == "seek_to_beginning":
            c.seek_to_beginning(_tp(cmd))
        elif op == "commit":
            c.commit(_offsets(cmd) if "offsets" in cmd else None)
        elif op == "group_metadata":
            return group_metadata_line(self.client, c.group_metadata(), self.settings)
        elif op == "close":
            c.close()
        else:
            raise ValueError(f"unknown consumer op {op!r}")
        return {}


class ShareConsumer:
    """The ``share_consumer`` role (docs/adding-a-client.md, "Share groups"): confluent-kafka's
    share consumer; each acknowledgement outcome an ``acked`` event, written as the library's
    commit callback reports it, before the reply of the command that ran the callback."""

    def __init__(self, client: str, settings: ShareSettings) -> None:
        if client != "confluent-kafka":
            raise ValueError(f"{client} has no share consumer (KIP-932)")
        import confluent_kafka

        from highwater.clients.python.confluent_share import ConfluentShareMember

        self.member = ConfluentShareMember(confluent_kafka, settings, self.acked)

    @staticmethod
    def acked(topic: str, partition: int, offsets: list[int], error: str | None) -> None:
        emit({"event": "acked", "topic": topic, "partition": partition, "offsets": offsets, "error": error})

    def handle(self, op: str, cmd: dict[str, Any]) -> dict[str, Any]:
        m = self.member
        if op == "poll":
            return {"parts": m.poll(int(cmd["timeout_ms"]))}
        if op == "subscribe":
            m.subscribe([str(t) for t in cmd["topics"]])
        elif op == "acknowledge":
            m.acknowledge(cmd["acks"])
        elif op == "commit":
            m.commit(int(cmd.get("timeout_ms", 30_000)))
        elif op == "close":
            m.close()
        else:
            raise ValueError(f"unknown share consumer op {op!r}")
        return {}


def role_of(role: str, client: str, driver: Any, settings: Any) -> Producer | Consumer | ShareConsumer:
    """The role the first line names, for ``client``'s ``driver``."""
    if role == "producer":
        return Producer(client, driver, settings)
    if role == "consumer":
        return Consumer(client, driver, settings)
    if role == "share_consumer":
        return ShareConsumer(client, settings)
    raise ValueError(f"the {client} worker has no role {role!r}")


def main() -> int:
    set_streaming()  # fewer collector passes: each send's callback lives until its outcome
    watch_parent()
    # a client that stopped moving: the harness asks for every thread's stack (into the log,
    # which the run's results copy) and the worker goes on (WorkerProcess.dump_stacks)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    threading.Thread(target=flush_outcomes, name="highwater-flush", daemon=True).start()
    # a buffer as large as the pipe the harness widens: a burst of sends is read in a few reads
    stdin = open(sys.stdin.fileno(), "rb", buffering=1 << 20, closefd=False)
    first = json.loads(stdin.readline() or b"{}")
    role, config = first.get("role"), first.get("config") or {}
    try:
        client = str(config["client"])
        driver = make_driver(client)
        settings = settings_of(str(role), config["settings"])
        worker = role_of(str(role), client, driver, settings)
    except Exception as exc:  # noqa: BLE001 - a refused configuration is the first reply
        emit({"id": 0, "error": error_text(exc)})
        return 1
    emit(
        {
            "id": 0,
            "ok": True,
            "version": str(driver.version),
            "protocol": PROTOCOL,
            "batches": True,
            "compact_oks": True,
        }
    )
    for raw in stdin:
        cmd = json.loads(raw.decode())  # str, not bytes: json.loads skips guessing the encoding
        op = cmd.get("op")
        if op == "batch":  # protocol 3: {"topic", "first", "partitions", "values"}
            worker.batch(cmd["topic"], int(cmd["first"]), cmd["partitions"], cmd["values"])  # type: ignore[union-attr]
            continue
        if op == "sends":  # a batch: [id, topic, partition, value] each
            worker.sends(cmd["sends"])  # type: ignore[union-attr]
            continue
        if op == "send":
            worker.send(cmd["id"], cmd["topic"], int(cmd["partition"]), cmd["value"])  # type: ignore[union-attr]
            continue
        try:
            reply = {"id": cmd["id"], "ok": True, **worker.handle(op, cmd)}
        except Exception as exc:  # noqa: BLE001 - every failure is the command's reply
            reply = {"id": cmd["id"], "error": error_text(exc)}
        emit(reply)
        if op == "close":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
