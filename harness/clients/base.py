"""The client-driver protocol: what a Kafka client library must give the workloads.

A *driver* adapts one client library (kafka-python, librdkafka, the Java client)
to three small protocols, and answers in the typed events below. Everything a client library
does not decide -- pacing, unique values, recording the history, counting sends and reads,
reacting to a truncation -- is written once in the workload workers (``harness.workload``), not
per client. Everything it does decide -- how a send's failure is classified, which broker served
a fetch, when the library moved a position on its own -- is the driver's job, and every quirk
and private patch of a library stays inside its driver module.

- ``ClientDriver``: the library's ``name`` and ``version`` (the history header's ``client`` is
  ``"<name> <version>"``) and factories for a producer and a consumer.
- ``ProducerDriver``: ``send`` (the outcome arrives once, classified ``ok`` with the acknowledged
  offset, ``fail`` only when the write provably did not happen, ``info`` when unknown),
  ``flush``, ``close``.
- ``ConsumerDriver``: ``assign`` or ``subscribe``, ``seek`` / ``seek_to_beginning``, ``poll``
  (records with offset, value, leader epoch and the serving replica where known, or a
  ``TruncationSignal``), ``commit``, ``close``. Position changes the *library* makes on its own
  (a group assignment, an ``auto.offset.reset``, a KIP-320 seek to the divergence point) go to
  the ``ConsumerListener`` as they happen, so their time in the history is when they happened.
  Changes the workload asks for (``assign`` + ``seek``) are recorded by the workload. So do the
  partitions a group consumer gives up, revoked or lost (``Revocation``), to a listener that
  takes them (``RevocationListener``, ``report_revocation``).

Errors carried by events are the library's own exception (recorded as ``"Class: message"``) or
a string already in that form (a driver talking to another process).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any, NamedTuple, Protocol, runtime_checkable

from highwater.core.errors import HighwaterError
from highwater.harness.security import PLAINTEXT, ClientSecurity

#: the client a run uses unless told otherwise
DEFAULT_CLIENT = "kafka-python"


class UnknownClientError(HighwaterError):
    """A client name that no driver is registered for."""


class ClientGone(HighwaterError):
    """The process of a client under test is gone (killed by a fault, crashed): nothing more
    can be sent through it (``harness.clients.worker.WorkerGone``)."""


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class Outcome(str, Enum):
    """How an operation ended, in the history's terms."""

    OK = "ok"  # it definitely happened
    FAIL = "fail"  # it definitely did not happen
    INFO = "info"  # unknown: it may have happened


class SendOutcome(NamedTuple):
    """The outcome of one send. ``offset`` is set for ``OK`` (the offset the broker acknowledged);
    ``error`` for ``FAIL`` and ``INFO``. A named tuple, not a frozen dataclass: one is made per
    record written (in the worker and again in the harness), and a frozen dataclass took 1.3 us
    to make, a tuple 0.3 us."""

    outcome: Outcome
    offset: int | None = None
    error: BaseException | str | None = None

    @classmethod
    def ok(cls, offset: int) -> SendOutcome:
        return _new_tuple(cls, (Outcome.OK, int(offset), None))

    @classmethod
    def fail(cls, error: BaseException | str) -> SendOutcome:
        return _new_tuple(cls, (Outcome.FAIL, None, error))

    @classmethod
    def info(cls, error: BaseException | str) -> SendOutcome:
        return _new_tuple(cls, (Outcome.INFO, None, error))


_new_tuple = tuple.__new__  # a named tuple's fields in one call, without its __new__'s keywords


class PolledRecord(NamedTuple):
    """One record a poll returned. ``leader_epoch`` is None when the batch carries none;
    ``replica`` is the broker that served the fetch the record came from, None when the driver
    cannot tell. A named tuple rather than a frozen dataclass: one is made per record read, and
    a tuple is made about five times faster (it is immutable all the same)."""

    topic: str
    partition: int
    offset: int
    value: str | None
    leader_epoch: int | None = None
    replica: int | None = None

    def to_event_value(self) -> dict[str, Any]:
        """The record as a ``poll`` event lists it."""
        return {  # not ``_asdict()``: the history's field order and names are fixed here
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "value": self.value,
            "leader_epoch": self.leader_epoch,
            "replica": self.replica,
        }


class PositionReason(str, Enum):
    """Why a consumer's position changed (the ``reason`` of ``assign``/``seek`` events)."""

    ASSIGN = "assign"  # the workload assigned the partition and chose where to start
    REBALANCE = "rebalance"  # a group rebalance assigned it (the position is not known yet)
    RESET = "reset"  # the library applied auto.offset.reset
    TRUNCATION = "truncation"  # moved to a divergence point (KIP-320), by the library or by us
    REWIND = "rewind"  # the workload moved back to re-read (after its copy transaction aborted)


@dataclass(frozen=True, slots=True)
class PositionChange:
    """A consumer's position in one partition changed. ``offset`` None means "a new position,
    not known yet" (the checks restart their skip judgement there) or, for a truncation seek
    with no divergence point, the log start."""

    topic: str
    partition: int
    offset: int | None
    reason: PositionReason

    @property
    def f(self) -> str:
        """The history's ``f``: ``assign`` for an assignment, ``seek`` for every other move."""
        return "assign" if self.reason in (PositionReason.ASSIGN, PositionReason.REBALANCE) else "seek"

    def to_event_value(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset, "reason": self.reason.value}


class RevocationReason(str, Enum):
    """How a consumer gave a group partition up (the ``reason`` of ``revoke`` events)."""

    REVOKED = "revoked"  # the library's revocation callback: given up knowingly (a rebalance, a close)
    LOST = "lost"  # the library's lost callback: no longer the member's, maybe already another's
    # kafkajs, which names no partition when it gives them up: its group-level REBALANCING event
    # (the worker lists the partitions of the member's last join, all of which an eager member
    # gives up), or a join with no REBALANCING before it (the partitions of the previous join
    # that it no longer has: its member id was unknown to the coordinator, or it restarted)
    REBALANCING = "rebalancing"
    REJOIN = "rejoin"


@dataclass(frozen=True, slots=True)
class Revocation:
    """A group consumer gave up one partition, as its library reported it (a rebalance
    listener's revoked or lost callback). Recorded as a ``revoke`` event when it happens."""

    topic: str
    partition: int
    reason: RevocationReason

    f = "revoke"  # the history's ``f`` (a class attribute, not a field)

    def to_event_value(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "reason": self.reason.value}


@dataclass(frozen=True, slots=True)
class TruncationSignal:
    """KIP-320: the library found the log truncated below its position and left the move to
    us (Java's ``LogTruncationException``, kafka-python's ``LogTruncationError``). ``divergent``
    maps each partition to its first divergent offset, None when the library knows none."""

    divergent: Mapping[TopicPartition, int | None]
    error: BaseException | str


@dataclass(frozen=True)
class ProducerSettings:
    """What a workload asks of a producer, in Kafka's terms (each driver maps them)."""

    bootstrap: Sequence[str]
    client_id: str
    acks: str | int = "all"  # "all", 1 or 0
    idempotence: bool = False
    retries: int = 3
    request_timeout_ms: int = 5000
    delivery_timeout_ms: int = 20000
    linger_ms: int = 2
    max_in_flight: int = 1
    max_block_ms: int = 5000  # how long a send may wait for metadata or buffer space
    security: ClientSecurity = PLAINTEXT  # TLS/SASL, as the cluster asks (harness.security)
    transactional_id: str | None = None  # KIP-98: a transactional producer (idempotence implied)
    # the coordinator aborts a transaction open this long; librdkafka wants it >= delivery_timeout_ms
    transaction_timeout_ms: int = 20000


@dataclass(frozen=True)
class ConsumerSettings:
    """What a workload asks of a consumer, in Kafka's terms (each driver maps them)."""

    bootstrap: Sequence[str]
    client_id: str
    client_rack: str | None = None  # KIP-392: fetch from this rack's replica
    group_id: str | None = None
    auto_commit: bool = False
    auto_offset_reset: str = "earliest"
    max_poll_records: int = 500
    request_timeout_ms: int = 10000
    metadata_max_age_ms: int = 5000  # bounds how long a consumer may keep fetching from a stale replica
    fetch_max_wait_ms: int = 500  # how long a broker may hold a fetch with no data
    security: ClientSecurity = PLAINTEXT  # TLS/SASL, as the cluster asks (harness.security)
    isolation_level: str = "read_uncommitted"  # or "read_committed" (KIP-98)
    # a group member silent this long is evicted (None: the library's default, 45 s for Java and
    # librdkafka, 10 s for kafka-python); a group scenario that freezes a member sets it
    session_timeout_ms: int | None = None
    # KIP-848: "classic" (JoinGroup/SyncGroup, the members' assignor) or "consumer" (the group
    # coordinator assigns, ConsumerGroupHeartbeat); with "consumer" the session timeout and the
    # heartbeat interval are the group's (a group config the runner sets), not the client's
    group_protocol: str = "classic"
    group_remote_assignor: str | None = None  # "consumer" only: "uniform" or "range" (None: the broker's first)
    # The checks' time bounds are derived from these defaults (RunSpec.header_config), so a
    # driver must apply every one of them, not its library's own defaults.


class ProducerDriver(Protocol):
    def send(self, topic: str, partition: int, value: str, on_outcome: Callable[[SendOutcome], None]) -> None:
        """Start one send of ``value`` (no key) to ``topic``/``partition``. ``on_outcome`` is
        called once, from any thread, possibly before ``send`` returns. If ``send`` raises
        instead, the outcome is unknown (the workload records ``info``) and ``on_outcome`` is
        never called."""
        ...

    def flush(self, timeout_s: float) -> None:
        """Wait until every started send has its outcome (or the timeout passed)."""
        ...

    def close(self, timeout_s: float) -> None: ...


class BatchOutcomes(Protocol):
    """Where the outcomes of a batch of sends go (``send_batch``): each send of the batch, by
    its index in it, is answered exactly once, by ``acked`` or by ``ended``, from any thread,
    possibly before ``send_batch`` returns. No object per send is made on the way: a worker's
    acknowledgements reach ``acked`` as the lists they came in."""

    def acked(self, indexes: Sequence[int], offsets: Sequence[int]) -> None:
        """The sends at ``indexes`` were acknowledged at ``offsets`` (``ok``), in order."""
        ...

    def ended(self, index: int, outcome: SendOutcome) -> None:
        """The send at ``index`` ended otherwise: ``fail`` or ``info`` (an acknowledgement
        always goes to ``acked``)."""
        ...


@runtime_checkable
class BatchProducer(Protocol):
    """A ``ProducerDriver`` that takes a batch of sends to one topic at once (the worker
    producers do): its outcomes as ``BatchOutcomes`` say, with ``send``'s semantics otherwise."""

    def send_batch(self, topic: str, partitions: Sequence[int], values: Sequence[str], outcomes: BatchOutcomes) -> None:
        """Start a send of each value to its partition. Every send gets its outcome, even when
        this raises (``WorkerGone``: the worker is gone, and the sends it may not have taken
        ended ``info``): the caller records nothing for them itself."""
        ...


def _one_outcome(outcomes: BatchOutcomes, index: int, outcome: SendOutcome) -> None:
    if outcome.outcome is Outcome.OK:
        outcomes.acked((index,), (outcome.offset,))  # type: ignore[arg-type]
    else:
        outcomes.ended(index, outcome)


def send_batch(
    producer: ProducerDriver, topic: str, partitions: Sequence[int], values: Sequence[str], outcomes: BatchOutcomes
) -> None:
    """``producer.send_batch`` when it has one, else one ``send`` each with the same contract:
    every send gets its outcome; a send that raised ends ``info`` with its error, and so do the
    ones after it when the error is the worker's end, which is raised after them."""
    if len(partitions) != len(values):
        raise ValueError(f"a batch of {len(values)} values with {len(partitions)} partitions")
    if isinstance(producer, BatchProducer):
        producer.send_batch(topic, partitions, values, outcomes)
        return
    gone: ClientGone | None = None
    for index, (partition, value) in enumerate(zip(partitions, values)):
        if gone is not None:
            outcomes.ended(index, SendOutcome.info(gone))
            continue
        try:
            producer.send(topic, partition, value, partial(_one_outcome, outcomes, index))
        except Exception as exc:  # noqa: BLE001 - a send that raised has an unknown outcome
            outcomes.ended(index, SendOutcome.info(exc))
            if isinstance(exc, ClientGone):
                gone = exc
    if gone is not None:
        raise gone


class ConsumerListener(Protocol):
    def on_position_change(self, change: PositionChange) -> None:
        """Called by the driver, as it happens, for every position change the library makes
        on its own: group assignments (``REBALANCE``), resets (``RESET``), seeks to a
        divergence point it handled itself (``TRUNCATION``)."""
        ...


@runtime_checkable
class RevocationListener(Protocol):
    """A ``ConsumerListener`` that also takes the partitions a group consumer gave up. Optional:
    drivers hand revocations over through ``report_revocation``, which skips a listener without
    ``on_revocation``."""

    def on_revocation(self, revocation: Revocation) -> None:
        """Called by the driver, as it happens, for each partition the library reported revoked
        or lost (subscribe mode)."""
        ...


def report_revocation(listener: object, revocation: Revocation) -> None:
    """Give ``revocation`` to ``listener`` if it takes revocations (``RevocationListener``)."""
    on_revocation = getattr(listener, "on_revocation", None)
    if on_revocation is not None:
        on_revocation(revocation)


class ConsumerDriver(Protocol):
    def assign(self, partitions: Sequence[TopicPartition]) -> None: ...

    def subscribe(self, topics: Sequence[str]) -> None:
        """Join the group of ``ConsumerSettings.group_id``; assignments reach the listener."""
        ...

    def seek(self, tp: TopicPartition, offset: int) -> None: ...

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        """Move to the log start. A library that resolves it lazily reports the offset it
        landed on as a ``RESET`` change (kafka-python does)."""
        ...

    def poll(self, timeout_ms: int) -> Sequence[PolledRecord] | TruncationSignal:
        """The records one poll returned (possibly none), or the truncation the library
        detected and left to us. Raises on any other failure (the workload records ``info``)."""
        ...

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit synchronously for the group (group only): ``offsets`` (the next offset to read
        per partition, Kafka's convention), or with none the positions of the records polled so
        far. Raises when the commit failed or its outcome is unknown."""
        ...

    def group_metadata(self) -> object:
        """The consumer's group metadata (group id, generation, member id) for
        ``TransactionalProducerDriver.send_offsets_to_transaction`` of the same client: opaque,
        since each library has its own form (subscribe mode only; KIP-447 fences a zombie member
        by it)."""
        ...

    def close(self) -> None: ...


class TransactionalProducerDriver(ProducerDriver, Protocol):
    """A producer with ``ProducerSettings.transactional_id`` (KIP-98). Each call raises when it
    did not succeed; the workload decides what a raise proves (``harness.workload.transactions``)."""

    def init_transactions(self, timeout_s: float) -> None: ...

    def begin_transaction(self) -> None: ...

    def commit_transaction(self, timeout_s: float) -> None: ...

    def abort_transaction(self, timeout_s: float) -> None: ...

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int], group_metadata: object, timeout_s: float
    ) -> None:
        """Add the group's offsets (the next offset to read per partition) to the open
        transaction (an exactly-once copy: they commit or abort with its writes).
        ``group_metadata`` is ``ConsumerDriver.group_metadata()`` of the same client."""
        ...


@runtime_checkable
class TransactionalClient(Protocol):
    """A client driver that can make transactional producers."""

    def transactional_producer(self, settings: ProducerSettings) -> TransactionalProducerDriver: ...


class ClientDriver(Protocol):
    """One Kafka client library."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def producer(self, settings: ProducerSettings) -> ProducerDriver: ...

    def consumer(self, settings: ConsumerSettings, listener: ConsumerListener) -> ConsumerDriver: ...


def client_label(driver: ClientDriver) -> str:
    """The client as histories and manifests name it: ``"<name> <version>"``."""
    return f"{driver.name} {driver.version}"


class FetchSources:
    """Which broker answered the fetches of each partition, by fetch offset: a record's source
    is the broker of the fetch at the greatest fetch offset <= the record's offset. Looked up once
    per polled record, so the fetch offsets are kept sorted (bisect) between two changes."""

    KEEP = 64  # fetch offsets kept per partition before old ones are forgotten

    def __init__(self) -> None:
        self._by_tp: dict[Any, dict[int, int]] = {}
        self._sorted: dict[Any, list[int]] = {}  # tp -> its fetch offsets, sorted; dropped on change

    def _changed(self, tp: Any) -> dict[int, int]:
        """``tp``'s fetch offsets, about to change (the sorted copy is made again when needed)."""
        self._sorted.pop(tp, None)
        return self._by_tp.setdefault(tp, {})

    def _starts(self, tp: Any, by_offset: dict[int, int]) -> list[int]:
        """``tp``'s fetch offsets, sorted (made once after each change)."""
        starts = self._sorted.get(tp)
        if starts is None:
            starts = self._sorted[tp] = sorted(by_offset)
        return starts

    def note(self, tp: Any, fetch_offset: int, node_id: int) -> None:
        self._changed(tp)[int(fetch_offset)] = int(node_id)

    def source_of(self, tp: Any, offset: int) -> int | None:
        by_offset = self._by_tp.get(tp)
        if not by_offset:
            return None
        starts = self._starts(tp, by_offset)
        i = bisect.bisect_right(starts, offset)
        return by_offset[starts[i - 1]] if i else None

    def sources_of(self, tp: Any, offsets: Sequence[int]) -> list[int | None]:
        """``source_of`` for each of ``offsets`` (one partition's records of a poll, which
        ascend): one bisect for the first, then a walk over the fetch offsets, instead of one
        bisect per record. An offset below its predecessor (never seen; a seek back within one
        batch would make it) is looked up afresh."""
        by_offset = self._by_tp.get(tp)
        if not by_offset or not offsets:
            return [None] * len(offsets)
        starts = self._starts(tp, by_offset)
        i = bisect.bisect_right(starts, offsets[0])  # starts[i] is the next fetch offset above
        source = by_offset[starts[i - 1]] if i else None
        low = starts[i - 1] if i else None  # the fetch offset ``source`` came from
        bound = starts[i] if i < len(starts) else None
        out: list[int | None] = []
        for offset in offsets:
            if (bound is not None and offset >= bound) or (low is not None and offset < low):
                i = bisect.bisect_right(starts, offset)
                source = by_offset[starts[i - 1]] if i else None
                low = starts[i - 1] if i else None
                bound = starts[i] if i < len(starts) else None
            out.append(source)
        return out

    def forget_below(self, tp: Any, offset: int) -> None:
        """Drop fetch offsets below ``offset`` except the one that still covers it."""
        by_offset = self._by_tp.get(tp)
        if by_offset and len(by_offset) > self.KEEP:
            by_offset = self._changed(tp)
            keep = max((o for o in by_offset if o <= offset), default=None)
            for o in [o for o in by_offset if o < offset and o != keep]:
                by_offset.pop(o, None)
