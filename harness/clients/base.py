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

The settings and the types a driver answers in (``SendOutcome``, ``PolledRecord``, ...) live in
``harness.client_common``, the one module a client's worker process shares with the harness.

Errors carried by events are the library's own exception (recorded as ``"Class: message"``) or
a string already in that form (a driver talking to another process).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Protocol, runtime_checkable

from highwater.core.errors import HighwaterError
from highwater.harness.client_common import (
    ConsumerListener,
    ConsumerSettings,
    Outcome,
    PolledRecord,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
)

#: the client a run uses unless told otherwise
DEFAULT_CLIENT = "kafka-python"


class UnknownClientError(HighwaterError):
    """A client name that no driver is registered for."""


class ClientGone(HighwaterError):
    """The process of a client under test is gone (killed by a fault, crashed): nothing more
    can be sent through it (``harness.clients.worker.WorkerGone``)."""

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
