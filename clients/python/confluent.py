"""The confluent-kafka (librdkafka) driver. Every import and quirk of confluent-kafka lives here.

It runs inside the Python client worker (``clients/python/highwater_worker.py``), on the
interpreter of the version under test; the library is imported when the driver is made.

**Producer.** Settings map one to one (``acks``, ``enable.idempotence``, ``retries``,
``request.timeout.ms``, ``delivery.timeout.ms`` = ``message.timeout.ms``, ``linger.ms``,
``max.in.flight.requests.per.connection``; ``socket.timeout.ms`` = the request timeout, as
Java's applies to every request). librdkafka never blocks in ``produce()``: it queues a record
for a partition whose metadata is not known yet (bounded by ``delivery.timeout.ms``) and raises
``BufferError`` at once when its queue is full. ``max_block_ms`` is honoured as Java's
``max.block.ms`` is for buffer space: ``send`` serves delivery reports and retries the
``produce()`` until the queue has room or ``max_block_ms`` passed, then the send ``fail``s
(nothing was queued). Delivery reports arrive through ``poll()``; a thread of the driver polls
so ``on_outcome`` is called promptly.

Outcomes: ``ok`` with the offset; ``fail`` when ``produce()`` raised (nothing was queued), or
for a broker's definite rejection (or a purge from the queue at close) when there was only one
attempt (``retries=0``, no idempotence); ``info`` for everything else. librdkafka knows per
message whether it was *possibly persisted* (``rd_kafka_message_status``), but confluent-kafka
does not expose it, so a ``_MSG_TIMED_OUT`` or an error after retries stays ``info``.

**Consumer.** ``client.rack``, ``group.id``, ``enable.auto.commit``, ``auto.offset.reset``
(Kafka's ``none`` is librdkafka's ``error``), ``fetch.wait.max.ms``, ``socket.timeout.ms`` = the
request timeout, ``topic.metadata.refresh.interval.ms`` = ``metadata.max.age.ms``, and
``max.poll.records`` as ``consume(num_messages=...)``. librdkafka needs a ``group.id`` even to
``assign``: without one the driver uses a throwaway id, never commits it and never auto-commits.
``assign`` + ``seek`` before the first poll become one ``assign`` with the offsets (librdkafka
cannot seek a partition whose fetcher has not started), after the topics' metadata is fetched
(without it librdkafka looks the start offsets up only 500 ms later, at its retry timer).

What librdkafka does on its own is visible only in its logs, so the consumer turns on the
``fetch`` and ``topic`` debug contexts and reads its log lines, which confluent-kafka serves
from the consumer's queue inside ``consume()``, in order with the records:

- *serving replica*: every Fetch request is logged as ``<host:port>/<node id>: Fetch topic T [p]
  at offset N`` by the thread of the broker it goes to; a record's ``replica`` is the broker of
  the last fetch at the greatest fetch offset <= its offset (the client's view, like the
  kafka-python driver's), None before any fetch was seen. Statistics (``stats_cb``) name the
  broker a partition is delegated to, but only once a second, too coarse to attribute records.
- *resets*: a position librdkafka looked up itself (``Offset BEGINNING request for T [p]
  returned offset N``, or ``offset reset ... to cached BEGINNING offset offset N``) is a
  ``RESET`` to N once librdkafka's fetcher takes it up: ``auto.offset.reset`` after an
  out-of-range error, a missing committed offset, and where ``seek_to_beginning`` landed
  (librdkafka resolves it lazily, as kafka-python does). A looked-up offset only becomes the
  partition's *next fetch start*; the fetcher restarts there only when its version barrier moved
  or that start differs from the one it last started at (``rd_kafka_toppar_fetch_decide``), and
  a lookup nothing asked for happens: the offset-query retry timer that an outdated ListOffsets
  reply arms (e.g. after KIP-848's incremental revoke paused and resumed the partitions during
  their first lookup) survives the next reply and fires ~500 ms later in the active state; its
  reply is logged as a lookup but the fetcher goes on where it was. So the lookup is held until
  the line that says where the fetcher goes: ``Partition T [p] start fetching at offset M`` (the
  same step, when the partition turns active) or ``Topic T [p]: fetch decide: updating to
  version V (was W) at offset M`` (the broker thread, when it was already active, before its
  next Fetch): a ``RESET`` when M is the looked-up offset, nothing otherwise; a fetch at another
  offset twice in a row, a seek, a fetch start or stop drop it too. Those lines (and the ones
  that explain a lookup: offset replies, the offset-query timer, fetch-state changes) go to the
  worker's log at INFO.
- *KIP-320*: with a reset policy librdkafka (KIP-320 since 2.1.0) validates its position after a leader
  change and, when the log diverged below it, seeks to the divergence point itself, silently for
  the application; the only trace is its ``Seek T [p] to offset N (leader epoch E)`` line, with
  E >= 0 (the driver's own seeks carry no epoch). That move is reported as a ``TRUNCATION``
  change to N. With ``auto.offset.reset=error`` librdkafka instead raises
  ``_AUTO_OFFSET_RESET`` with "Partition log truncation detected ... broker end offset is N":
  that is returned as a ``TruncationSignal`` with N as the divergence point.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from itertools import repeat
from types import ModuleType
from typing import Any

from highwater.core.errors import HighwaterError
from highwater.core.errors import error_text as exception_text
from highwater.harness.client_common import (
    ConsumerListener,
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    Revocation,
    RevocationReason,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
    import_library,
    report_revocation,
)
from highwater.harness.client_common import FetchSources as BaseFetchSources

DIST = "confluent-kafka"

log = logging.getLogger(__name__)

#: broker error codes (names as confluent-kafka's ``KafkaError`` has them) that prove the broker
#: did not append: each is returned before the write is applied
DEFINITE_REJECTIONS = frozenset(
    {
        "MSG_SIZE_TOO_LARGE",
        "RECORD_LIST_TOO_LARGE",
        "INVALID_MSG_SIZE",
        "TOPIC_EXCEPTION",
        "TOPIC_AUTHORIZATION_FAILED",
        "INVALID_REQUIRED_ACKS",
        "_PURGE_QUEUE",  # purged from librdkafka's queue (at close): this attempt was never sent
    }
)


def classify_delivery_error(error_name: str, single_attempt: bool, error: Any) -> SendOutcome:
    """A delivery report with an error: ``fail`` only for a definite rejection when there was
    one attempt only (an earlier attempt may have been written), else ``info``."""
    if single_attempt and error_name in DEFINITE_REJECTIONS:
        return SendOutcome.fail(error)
    return SendOutcome.info(error)


def error_text(error: Any) -> str:
    """A ``KafkaError`` in the history's ``"Class: message"`` form, with its code's name."""
    try:
        return f"KafkaError: {error.name()}: {error.str()}"
    except AttributeError:
        return f"{type(error).__name__}: {error}"


def _nothing(*_: Any) -> None:
    return None


def _stated_failure(out: list[Any], sid: int, outcome: SendOutcome) -> None:
    """A ``send_stated`` record that was not queued (``fail``), as ``state_outcomes`` lists it."""
    error = outcome.error
    text = error if isinstance(error, str) else exception_text(error) if error is not None else "unknown error"
    out.append([sid, outcome.outcome.value, None, text])


def library_version(ck: ModuleType) -> str:
    """confluent-kafka's version: ``version()`` is a ``(str, int)`` tuple up to 2.x releases
    and a plain string in later ones; ``__version__`` where it exists."""
    v = getattr(ck, "__version__", None) or ck.version()
    return str(v[0] if isinstance(v, tuple) else v)


class ConfluentKafkaDriver:
    name = DIST

    def __init__(self) -> None:
        """The library of this environment (its version floor is ``harness.clients.python.OLDEST``)."""
        self.ck: ModuleType = import_library("confluent_kafka", DIST)
        self.version: str = library_version(self.ck)

    @property
    def librdkafka_version(self) -> str:
        return str(self.ck.libversion()[0])

    def producer(self, settings: ProducerSettings) -> ConfluentProducer:
        return ConfluentProducer(self.ck, settings)

    def consumer(self, settings: ConsumerSettings, listener: ConsumerListener) -> ConfluentConsumer:
        return ConfluentConsumer(self.ck, settings, listener)

    def transactional_producer(self, settings: ProducerSettings) -> ConfluentTransactionalProducer:
        return ConfluentTransactionalProducer(self.ck, settings)


def producer_config(settings: ProducerSettings) -> dict[str, Any]:
    """librdkafka's configuration for ``settings``."""
    txn: dict[str, Any] = {}
    if settings.transactional_id:
        txn = {
            "transactional.id": settings.transactional_id,
            "transaction.timeout.ms": int(settings.transaction_timeout_ms),
        }
    return {
        "bootstrap.servers": ",".join(settings.bootstrap),
        "client.id": settings.client_id,
        "acks": "all" if str(settings.acks) == "all" else int(settings.acks),
        "enable.idempotence": bool(settings.idempotence or settings.transactional_id),
        "retries": int(settings.retries),
        "request.timeout.ms": int(settings.request_timeout_ms),
        "socket.timeout.ms": int(settings.request_timeout_ms),
        "delivery.timeout.ms": int(settings.delivery_timeout_ms),
        "linger.ms": int(settings.linger_ms),
        "max.in.flight.requests.per.connection": int(settings.max_in_flight),
        **settings.security.as_librdkafka(),
        **txn,
    }


class ConfluentProducer:
    POLL_S = 0.1  # how long the delivery thread waits for reports in one poll

    def __init__(self, ck: ModuleType, settings: ProducerSettings) -> None:
        self.ck = ck
        self.settings = settings
        self._single_attempt = settings.retries == 0 and not settings.idempotence
        self._producer = ck.Producer(producer_config(settings))
        self._stop = threading.Event()
        self._idle = threading.Event()  # set: the delivery thread serves reports (``send_stated``)
        self._idle.set()
        self._stated: list[Any] = []  # where ``send_stated`` outcomes go (``state_outcomes``)
        self._served: Callable[[], None] = _nothing
        self._report: Callable[[int, Any, Any], None] = _nothing
        self._poller = threading.Thread(target=self._poll_loop, name=f"{settings.client_id}-dr", daemon=True)
        self._poller.start()

    def _poll_loop(self) -> None:
        """Serve delivery reports until closed (while ``send_stated`` is not serving them
        itself); ``_served`` after a poll that served some. ``poll`` raises a fatal error (e.g.
        librdkafka's ``INVALID_TXN_STATE`` on EndTxn, seen at a transactional producer's close
        after its coordinator was cut off) once; the thread goes on, so the reports of every
        queued send still arrive (each with its error) and the producer's later calls fail with
        it."""
        last = None
        idle, stop = self._idle, self._stop
        while not stop.is_set():
            try:
                if idle.wait(self.POLL_S) and self._producer.poll(self.POLL_S):
                    self._served()
            except self.ck.KafkaException as exc:
                text = error_text(exc.args[0]) if exc.args else str(exc)
                if text != last:
                    log.warning("%s: %s", self.settings.client_id, text)
                last = text
                stop.wait(self.POLL_S)  # a poll that raises at once must not spin

    def send(self, topic: str, partition: int, value: str, on_outcome: Callable[[SendOutcome], None]) -> None:
        single = self._single_attempt

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                on_outcome(SendOutcome.ok(int(msg.offset())))
            else:
                on_outcome(classify_delivery_error(err.name(), single, error_text(err)))

        self._produce(topic, partition, value, delivered, on_outcome)

    # --- the worker's path: outcomes as plain entries, no SendOutcome, no callback of the caller

    def state_outcomes(self, out: list[Any], served: Callable[[], None]) -> None:
        """Where the outcomes of ``send_stated`` go, in the order they come: ``(id, offset)``
        for an acknowledged send, ``[id, outcome, None, error]`` (``error`` a string) for any
        other; appended by the thread that serves the reports (the delivery thread, or the
        caller inside ``send_stated``, ``flush``, ``close``). ``served`` is called by the
        delivery thread after a poll that served reports."""
        append, single = out.append, self._single_attempt

        def report(sid: int, err: Any, msg: Any) -> None:  # a ``send_stated`` record's delivery report
            if err is None:
                append((sid, msg.offset()))
            else:
                o = classify_delivery_error(err.name(), single, error_text(err))
                append([sid, o.outcome.value, None, o.error])

        self._stated, self._served, self._report = out, served, report

    def send_stated(self, sends: Iterable[Sequence[Any]]) -> None:
        """``send`` for many, ``[id, topic, partition, value]`` each, with the outcomes stated
        as ``state_outcomes`` says. One bound callback per record (a ``partial``), and the
        reports that are ready when the sends are queued are served here, in the caller's
        thread, like a bare application's ``poll(0)``; the delivery thread waits meanwhile.
        Measured: a report served by the delivery thread while this thread produced made the
        two threads take the interpreter lock in turn for every record; ``produce()`` with its
        arguments by position took ~1.3 us a record, by keyword ~1.9 us."""
        produce, report, stated = self._producer.produce, self._report, self._stated
        self._idle.clear()
        try:
            for sid, topic, partition, value in sends:
                on_delivery = partial(report, sid)
                try:  # positional (topic, value, key, partition, callback): no keywords to match
                    produce(topic, value.encode(), None, partition, on_delivery)
                except BufferError:  # a full queue: wait for room as ``send`` does
                    self._produce(topic, partition, value, on_delivery, partial(_stated_failure, stated, sid))
                except self.ck.KafkaException as exc:  # refused before queueing: nothing was sent
                    _stated_failure(stated, sid, SendOutcome.fail(error_text(exc.args[0]) if exc.args else exc))
                except Exception as exc:  # noqa: BLE001 - as the worker says any send that raised: unknown
                    stated.append([sid, "info", None, exception_text(exc)])
            self._producer.poll(0)
        finally:
            self._idle.set()

    def _produce(
        self,
        topic: str,
        partition: int,
        value: str,
        delivered: Callable[[Any, Any], None],
        on_outcome: Callable[[SendOutcome], None],
    ) -> None:
        """``produce()``, waiting up to ``max_block_ms`` for room in a full queue (serving
        reports meanwhile, and handing stated outcomes on at once); ``on_outcome`` hears the
        failure of a record that was not queued."""
        deadline = None  # set at the first full queue: most sends never need one
        while True:
            try:
                self._producer.produce(topic, value.encode(), partition=partition, on_delivery=delivered)
                return
            except BufferError as exc:  # queue full: wait for room like Java's max.block.ms
                if deadline is None:
                    deadline = time.monotonic() + self.settings.max_block_ms / 1000
                elif time.monotonic() >= deadline:
                    on_outcome(SendOutcome.fail(exc))  # nothing was queued
                    return
                if self._producer.poll(0.05):  # serve reports (frees room) while waiting
                    self._served()
            except self.ck.KafkaException as exc:  # refused before queueing: nothing was sent
                on_outcome(SendOutcome.fail(error_text(exc.args[0]) if exc.args else exc))
                return

    def flush(self, timeout_s: float) -> None:
        self._producer.flush(timeout_s)

    def close(self, timeout_s: float) -> None:
        """Flush within ``timeout_s``, then purge what is left so every send still gets its
        outcome (``_PURGE_QUEUE`` / ``_PURGE_INFLIGHT``), and stop the delivery thread."""
        try:
            self._producer.flush(max(timeout_s, 0.0))
            self._producer.purge()
            self._producer.flush(1.0)  # deliver the purge reports (nothing can be in flight now)
        finally:
            self._stop.set()
            self._idle.set()
            self._poller.join(timeout=5)


class ConfluentTransactionalProducer(ConfluentProducer):
    """librdkafka's transactions; each call raises ``KafkaException`` when it did not succeed
    (its ``KafkaError`` says whether the transaction must be aborted or the producer is fenced)."""

    def init_transactions(self, timeout_s: float) -> None:
        self._producer.init_transactions(timeout_s)

    def begin_transaction(self) -> None:
        self._producer.begin_transaction()

    def commit_transaction(self, timeout_s: float) -> None:
        self._producer.commit_transaction(timeout_s)

    def abort_transaction(self, timeout_s: float) -> None:
        self._producer.abort_transaction(timeout_s)

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int], group_metadata: object, timeout_s: float
    ) -> None:
        """``group_metadata`` is the consumer's ``consumer_group_metadata()`` (opaque)."""
        positions = [self.ck.TopicPartition(tp.topic, tp.partition, int(o)) for tp, o in offsets.items()]
        self._producer.send_offsets_to_transaction(positions, group_metadata, timeout_s)


# --- consumer -------------------------------------------------------------------------------

_FETCH = re.compile(r"/(?P<node>\d+): Fetch topic (?P<topic>\S+) \[(?P<p>\d+)\] at offset (?P<off>\d+)")
_LOOKED_UP = re.compile(r"Offset \S+ request for (?P<topic>\S+) \[(?P<p>\d+)\] returned offset \S+ \((?P<off>-?\d+)\)")
_CACHED_RESET = re.compile(
    r"(?P<topic>\S+) \[(?P<p>\d+)\]: offset reset \(at .*\) to cached BEGINNING offset offset (?P<off>\d+)"
)
#: ``rd_kafka_toppar_set_fetch_state`` on turning active: the offset its next fetch uses
_START_FETCHING = re.compile(r"Partition (?P<topic>\S+) \[(?P<p>\d+)\] start fetching at offset (?P<off>\S+) \(")
#: ``rd_kafka_toppar_fetch_decide``: the fetcher (re)starts at its next fetch start
_FETCH_DECIDE = re.compile(
    r"Topic (?P<topic>\S+) \[(?P<p>\d+)\]: fetch decide: updating to version \d+ \(was -?\d+\) at offset (?P<off>\S+) \("
)
#: ``rd_kafka_toppar_fetch_start`` / ``_fetch_stop``: a new version barrier, any lookup before is moot
_START_STOP = re.compile(r"(?:Start|Stopping) fetch for (?P<topic>\S+) \[(?P<p>\d+)\] in state")
_SEEK = re.compile(
    r"Seek (?P<topic>\S+) \[(?P<p>\d+)\] to offset (?P<off>\S+) \(leader epoch (?P<epoch>-?\d+)\) in state"
)
_TRUNCATED = re.compile(r"log truncation detected at .*: broker end offset is (?P<off>-?\d+)")
#: the lines about a partition's position, kept in the worker's log at INFO (rare: a few per
#: lookup, seek or rebalance; never the per-Fetch ones)
_EVIDENCE = (
    "request for ",
    "offset reset (at ",
    "start fetching at ",
    "fetch decide: ",
    "Seek ",
    "fetch for ",
    "Offset reply",
    "offset query",
    "changed fetch state",
)


class FetchSources(BaseFetchSources):
    """``base.FetchSources`` where a fetch at offset N also forgets the fetches noted above N:
    they belong to a position the consumer has left (a seek back, a reset, a truncation)."""

    def note(self, tp: Any, fetch_offset: int, node_id: int) -> None:
        by_offset = self._changed(tp)
        for o in [o for o in by_offset if o > fetch_offset]:
            del by_offset[o]
        by_offset[int(fetch_offset)] = int(node_id)


class LibrdkafkaLog:
    """The consumer's log sink (confluent-kafka's ``logger``: anything with ``log(level, msg,
    *args)``): turns librdkafka's lines into fetch sources and position changes.

    A reset is reported when librdkafka's fetcher takes the looked-up offset up, not when the
    lookup is logged (the module docstring's *resets*): ``_unapplied`` holds each partition's
    looked-up offset until then, with the number of fetches seen at another offset since."""

    def __init__(self, listener: ConsumerListener, sources: FetchSources) -> None:
        self.listener = listener
        self.sources = sources
        self._unapplied: dict[TopicPartition, tuple[int, int]] = {}

    def log(self, level: int, msg: str, *args: Any) -> None:
        line = str(args[-1]) if args else str(msg)
        warned = level >= logging.WARNING
        if warned:  # librdkafka's own warnings (e.g. an offset reset and why)
            log.warning("librdkafka %s: %s", args[0] if args else "", line)
        self.line(line, warned=warned)

    def line(self, line: str, warned: bool = False) -> None:
        if "Fetch topic " in line:  # the frequent one: every Fetch request, per partition
            m = _FETCH.search(line)
            if m:
                tp = TopicPartition(m["topic"], int(m["p"]))
                self.sources.note(tp, int(m["off"]), int(m["node"]))
                if tp in self._unapplied:
                    self._fetching(tp, int(m["off"]))
            return
        if not any(marker in line for marker in _EVIDENCE):
            return
        if not warned:
            log.info("librdkafka: %s", line)
        if "request for " in line:
            m = _LOOKED_UP.search(line)
            if m and int(m["off"]) >= 0:
                self._looked_up(TopicPartition(m["topic"], int(m["p"])), int(m["off"]))
        elif "to cached BEGINNING" in line:
            m = _CACHED_RESET.search(line)
            if m:
                self._looked_up(TopicPartition(m["topic"], int(m["p"])), int(m["off"]))
        elif "start fetching at " in line:
            m = _START_FETCHING.search(line)
            if m:
                self._starts_at(TopicPartition(m["topic"], int(m["p"])), m["off"])
        elif "fetch decide: " in line:
            m = _FETCH_DECIDE.search(line)
            if m:
                self._starts_at(TopicPartition(m["topic"], int(m["p"])), m["off"])
        elif "Seek " in line:
            m = _SEEK.search(line)
            if m:
                tp = TopicPartition(m["topic"], int(m["p"]))
                self._forget(tp, "a seek")
                # our own seeks carry no leader epoch; librdkafka's KIP-320 seek does
                if m["off"].isdigit() and int(m["epoch"]) >= 0:
                    self._moved(tp, int(m["off"]), PositionReason.TRUNCATION)
        elif "fetch for " in line:
            m = _START_STOP.search(line)
            if m:
                self._forget(TopicPartition(m["topic"], int(m["p"])), "a fetch start or stop")

    def _looked_up(self, tp: TopicPartition, offset: int) -> None:
        self._unapplied[tp] = (offset, 0)

    def _starts_at(self, tp: TopicPartition, start: str) -> None:
        """The fetcher's next fetch of ``tp`` is at ``start`` (librdkafka's offset text)."""
        pending = self._unapplied.pop(tp, None)
        if pending is None:
            return
        if start == str(pending[0]):
            self._moved(tp, pending[0], PositionReason.RESET)
        else:
            log.info(
                "%s [%d]: looked-up offset %d not taken up (the fetcher goes on at %s): no reset",
                tp.topic,
                tp.partition,
                pending[0],
                start,
            )

    def _fetching(self, tp: TopicPartition, offset: int) -> None:
        """A Fetch of ``tp`` at ``offset`` while a lookup is unapplied. The broker thread decides
        (and logs a restart) before each Fetch it builds, so a Fetch at another offset means the
        lookup was not taken up, except once: when the lookup landed between that decision and
        the Fetch it preceded."""
        looked_up, others = self._unapplied[tp]
        if offset == looked_up:
            del self._unapplied[tp]
            self._moved(tp, looked_up, PositionReason.RESET)
        elif others:
            del self._unapplied[tp]
            log.info(
                "%s [%d]: looked-up offset %d not taken up (fetching at %d): no reset",
                tp.topic,
                tp.partition,
                looked_up,
                offset,
            )
        else:
            self._unapplied[tp] = (looked_up, 1)

    def _forget(self, tp: TopicPartition, what: str) -> None:
        pending = self._unapplied.pop(tp, None)
        if pending is not None:
            log.info(
                "%s [%d]: looked-up offset %d superseded by %s: no reset", tp.topic, tp.partition, pending[0], what
            )

    def _moved(self, tp: TopicPartition, offset: int, reason: PositionReason) -> None:
        log.info("%s [%d]: position change to %d (%s)", tp.topic, tp.partition, offset, reason.value)
        self.listener.on_position_change(PositionChange(tp.topic, tp.partition, offset, reason))


def _first_or_merged(
    have: TruncationSignal | Exception | None, found: TruncationSignal | Exception | None
) -> TruncationSignal | Exception | None:
    """Several problems in one batch: truncation signals merge (one per partition), else the
    first one stands."""
    if isinstance(have, TruncationSignal) and isinstance(found, TruncationSignal):
        return TruncationSignal({**have.divergent, **found.divergent}, have.error)
    return have if have is not None else found


def _log_at_info() -> None:
    """Let this module's INFO lines reach the worker's log. The worker configures no logging
    (its stderr is its log, where Python's last-resort handler writes warnings only), so the
    module's logger gets a stderr handler at INFO; a process that configured logging (a test
    run) keeps its own."""
    if log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()  # sys.stderr, the worker's log
    handler.setFormatter(logging.Formatter("%(created).3f %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def consumer_config(settings: ConsumerSettings) -> dict[str, Any]:
    """librdkafka's configuration for ``settings`` (without the logger)."""
    conf: dict[str, Any] = {
        "bootstrap.servers": ",".join(settings.bootstrap),
        "client.id": settings.client_id,
        # librdkafka needs a group even to assign: a throwaway one, never committed
        "group.id": settings.group_id or f"highwater-assign-{uuid.uuid4().hex}",
        "enable.auto.commit": bool(settings.auto_commit and settings.group_id),
        "auto.offset.reset": "error" if settings.auto_offset_reset == "none" else settings.auto_offset_reset,
        "fetch.wait.max.ms": int(settings.fetch_max_wait_ms),
        "socket.timeout.ms": int(settings.request_timeout_ms),
        "topic.metadata.refresh.interval.ms": int(settings.metadata_max_age_ms),
        "enable.partition.eof": False,
        "isolation.level": settings.isolation_level,
        "debug": "fetch,topic",  # the lines LibrdkafkaLog reads
        **settings.security.as_librdkafka(),
        **settings.rack_and_group_properties(),
    }
    return conf


class ConfluentConsumer:
    def __init__(self, ck: ModuleType, settings: ConsumerSettings, listener: ConsumerListener) -> None:
        self.ck = ck
        self.settings = settings
        self.listener = listener
        self.sources = FetchSources()
        _log_at_info()
        self.log = LibrdkafkaLog(listener, self.sources)
        self._consumer = ck.Consumer({**consumer_config(settings), "logger": self.log})
        self._pending: dict[TopicPartition, int] | None = None  # assigned, not yet started
        self._deferred: TruncationSignal | Exception | None = None  # for the next poll
        self._closed = False

    def _ctp(self, tp: TopicPartition, offset: int | None = None) -> Any:
        if offset is None:
            return self.ck.TopicPartition(tp.topic, tp.partition)
        return self.ck.TopicPartition(tp.topic, tp.partition, offset)

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        # started at the first poll, with the offsets seeks chose by then (else the committed
        # offset or auto.offset.reset)
        self._pending = {tp: self.ck.OFFSET_STORED for tp in partitions}

    def _start_assignment(self, deadline: float) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._prime_metadata(sorted({tp.topic for tp in pending}), deadline)
            self._consumer.assign([self._ctp(tp, o) for tp, o in pending.items()])

    def _prime_metadata(self, topics: list[str], deadline: float) -> None:
        """Learn the leaders of ``topics`` before ``assign``. A partition assigned while its
        leader is unknown starts its offset lookup (BEGINNING, END, a committed offset) only when
        librdkafka's offset-query retry timer fires, 500 ms later, even though the metadata
        answer comes within milliseconds; with the leaders cached the lookup is sent at once.
        Bounded by the poll's deadline (``time.monotonic()``): on a timeout (a cut-off cluster)
        the assignment starts anyway and librdkafka's own retry takes over, as without it."""
        for topic in topics:
            try:
                self._consumer.list_topics(topic, timeout=max(deadline - time.monotonic(), 0.001))
            except self.ck.KafkaException as exc:
                log.debug("%s: metadata of %s not primed: %s", self.settings.client_id, topic, exc)

    def subscribe(self, topics: Sequence[str]) -> None:
        listener = self.listener

        def on_assign(consumer: Any, partitions: list[Any]) -> None:
            for p in partitions:
                listener.on_position_change(PositionChange(p.topic, p.partition, None, PositionReason.REBALANCE))

        def gave_up(reason: RevocationReason) -> Callable[[Any, list[Any]], None]:
            def on_revocation(consumer: Any, partitions: list[Any]) -> None:
                for p in partitions:
                    report_revocation(listener, Revocation(p.topic, p.partition, reason))

            return on_revocation

        # confluent-kafka still (un)assigns after these callbacks when they do not (eager: all
        # partitions at each rebalance; cooperative and KIP-848's protocol: the ones that move);
        # on_lost is librdkafka's revoke with rd_kafka_assignment_lost() true (session expired,
        # fenced, max.poll.interval.ms passed)
        self._consumer.subscribe(
            list(topics),
            on_assign=on_assign,
            on_revoke=gave_up(RevocationReason.REVOKED),
            on_lost=gave_up(RevocationReason.LOST),
        )

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if self._pending is not None and tp in self._pending:
            self._pending[tp] = offset
            return
        try:
            self._consumer.seek(self._ctp(tp, offset))
        except self.ck.KafkaException as exc:
            if not exc.args or exc.args[0].code() != self.ck.KafkaError._STATE:
                raise
            # librdkafka stopped fetching the partition (auto.offset.reset=error after a
            # truncation or a lost position) and cannot seek it: start it again at the offset
            self._consumer.incremental_unassign([self._ctp(tp)])
            self._consumer.incremental_assign([self._ctp(tp, offset)])

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.seek(tp, self.ck.OFFSET_BEGINNING)

    def poll(self, timeout_ms: int) -> list[PolledRecord] | TruncationSignal:
        """The records of one ``consume()``. A truncation signal or an error that came after
        records in the same batch is given by the next poll, so no consumed record goes
        unrecorded. librdkafka's local, informational errors (a broker disconnected, all brokers
        down, ...) are not failures of the poll: it recovers on its own."""
        if self._deferred is not None:
            deferred, self._deferred = self._deferred, None
            if isinstance(deferred, TruncationSignal):
                return deferred
            raise deferred
        deadline = time.monotonic() + timeout_ms / 1000
        self._start_assignment(deadline)
        remaining = max(deadline - time.monotonic(), 0.0)
        messages = self._consumer.consume(num_messages=self.settings.max_poll_records, timeout=remaining)
        # consecutive messages of one partition form a run, kept as columns: a run's sources
        # come from one walk (``sources_of``) and its records are made in one ``map``
        runs: list[tuple[TopicPartition, list[int], list[str | None], list[int | None]]] = []
        key: tuple[str, int] | None = None
        offsets: list[int] = []
        values: list[str | None] = []
        epochs: list[int | None] = []
        outcome: TruncationSignal | Exception | None = None
        for msg in messages:
            err = msg.error()
            if err is not None:
                found = self._truncation(msg, err)
                if found is None and not self._informational(err):
                    found = self.ck.KafkaException(err)
                outcome = _first_or_merged(outcome, found)
                continue
            here = (msg.topic(), msg.partition())
            if here != key:
                key = here
                offsets, values, epochs = [], [], []
                runs.append((TopicPartition(*key), offsets, values, epochs))
            value = msg.value()
            epoch = msg.leader_epoch()
            offsets.append(msg.offset())
            values.append(value.decode() if isinstance(value, bytes) else value)
            epochs.append(epoch if epoch is not None and epoch >= 0 else None)
        records: list[PolledRecord] = []
        for tp, offsets, values, epochs in runs:
            sources = self.sources.sources_of(tp, offsets)
            records.extend(map(PolledRecord, repeat(tp.topic), repeat(tp.partition), offsets, values, epochs, sources))
            self.sources.forget_below(tp, offsets[-1])
        if outcome is not None:
            if records:
                self._deferred = outcome  # after the records, as it happened
            elif isinstance(outcome, TruncationSignal):
                return outcome
            else:
                raise outcome
        return records

    def _informational(self, err: Any) -> bool:
        """A local error librdkafka reports and recovers from by itself (negative codes), as
        opposed to a fatal one or a lost position (``_AUTO_OFFSET_RESET`` with no policy)."""
        return bool(err.code() < 0 and not err.fatal() and err.code() != self.ck.KafkaError._AUTO_OFFSET_RESET)

    def _truncation(self, msg: Any, err: Any) -> TruncationSignal | None:
        """``auto.offset.reset=error``: librdkafka found the log truncated below the position and
        left the move to us."""
        if err.code() != self.ck.KafkaError._AUTO_OFFSET_RESET:
            return None
        m = _TRUNCATED.search(err.str())
        if m is None:
            return None
        offset = int(m["off"])
        tp = TopicPartition(msg.topic(), msg.partition())
        return TruncationSignal({tp: offset if offset >= 0 else None}, error_text(err))

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Synchronous commit of ``offsets`` or of the consumed positions; nothing to do without
        a group of the workload's (the throwaway group of an ``assign`` is never committed)."""
        if not self.settings.group_id:
            return
        try:
            if offsets is None:
                self._consumer.commit(asynchronous=False)
            else:
                self._consumer.commit(offsets=[self._ctp(tp, o) for tp, o in offsets.items()], asynchronous=False)
        except self.ck.KafkaException as exc:
            if exc.args and exc.args[0].code() == self.ck.KafkaError._NO_OFFSET:
                return  # nothing consumed since the last commit
            raise

    def group_metadata(self) -> object:
        """librdkafka's opaque group metadata (``consumer_group_metadata()``) for the
        transactional producer; a consumer without a group of the workload's has none."""
        if not self.settings.group_id:
            raise HighwaterError("group metadata needs a consumer with a group_id (subscribe mode)")
        return self._consumer.consumer_group_metadata()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._consumer.close()
