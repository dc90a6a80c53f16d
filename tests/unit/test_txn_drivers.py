"""The drivers' transactional surface without a cluster: every driver's consumer and
transactional producer has the protocol's methods, and the Java driver's pure parts (its
transactional properties, the group metadata it carries between two workers, the offsets it
lists) are right. On a real cluster: tests/integration/test_transactional_drivers.py."""

from __future__ import annotations

import inspect

import pytest

from highwater.clients.python.confluent import ConfluentConsumer, ConfluentKafkaDriver, ConfluentTransactionalProducer
from highwater.clients.python.kafka_python import (
    KafkaPythonConsumer,
    KafkaPythonDriver,
    KafkaPythonTransactionalProducer,
)
from highwater.harness.clients import (
    ConsumerDriver,
    ProducerSettings,
    TopicPartition,
    TransactionalProducerDriver,
)
from highwater.harness.clients.java import JavaDriver, producer_properties
from highwater.harness.clients.worker import (
    GroupMetadata,
    WorkerConsumer,
    WorkerDriver,
    WorkerError,
    WorkerTransactionalProducer,
    offsets_line,
)

CONSUMERS = [KafkaPythonConsumer, ConfluentConsumer, WorkerConsumer]
TXN_PRODUCERS = [KafkaPythonTransactionalProducer, ConfluentTransactionalProducer, WorkerTransactionalProducer]


def _methods(protocol: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(getattr(protocol, name))
        for name in dir(protocol)
        if not name.startswith("_") and callable(getattr(protocol, name))
    }


@pytest.mark.parametrize("impl", CONSUMERS, ids=lambda c: c.__name__)
def test_every_consumer_has_the_protocols_methods(impl: type) -> None:
    for name, signature in _methods(ConsumerDriver).items():
        assert hasattr(impl, name), f"{impl.__name__} lacks {name}"
        assert list(inspect.signature(getattr(impl, name)).parameters) == list(signature.parameters), name


@pytest.mark.parametrize("impl", TXN_PRODUCERS, ids=lambda c: c.__name__)
def test_every_transactional_producer_has_the_protocols_methods(impl: type) -> None:
    for name, signature in _methods(TransactionalProducerDriver).items():
        assert hasattr(impl, name), f"{impl.__name__} lacks {name}"
        assert list(inspect.signature(getattr(impl, name)).parameters) == list(signature.parameters), name


@pytest.mark.parametrize(
    "driver", [KafkaPythonDriver, ConfluentKafkaDriver, WorkerDriver, JavaDriver], ids=lambda c: c.__name__
)
def test_every_driver_makes_transactional_producers(driver: type) -> None:
    assert callable(getattr(driver, "transactional_producer", None))


def test_a_java_transactional_producer_is_idempotent_with_its_id() -> None:
    plain = ProducerSettings(["b:1"], "p")
    assert producer_properties(plain)["enable.idempotence"] == "false"
    assert "transactional.id" not in producer_properties(plain)
    txn = ProducerSettings(["b:1"], "p", transactional_id="t-1", transaction_timeout_ms=7000)
    props = producer_properties(txn)
    # Java refuses a transactional.id without idempotence (ConfigException)
    assert (props["transactional.id"], props["enable.idempotence"], props["transaction.timeout.ms"]) == (
        "t-1",
        "true",
        "7000",
    )


def test_opaque_group_metadata_travels_between_the_workers() -> None:
    """librdkafka's group metadata is its own serialized form: carried as hex, unchanged."""
    reply = {"group_id": "g", "generation_id": -1, "member_id": "", "opaque": "00ff10"}
    metadata = GroupMetadata.of_reply(reply)
    assert metadata.opaque == "00ff10" and GroupMetadata.of_reply(metadata.to_line()) == metadata
    assert "opaque" not in GroupMetadata("g", 1, "m").to_line()


def test_java_group_metadata_travels_between_the_workers() -> None:
    reply = {"id": 4, "ok": True, "group_id": "g", "generation_id": 3, "member_id": "m-1", "group_instance_id": None}
    metadata = GroupMetadata.of_reply(reply)
    assert metadata == GroupMetadata("g", 3, "m-1", None)
    assert metadata.to_line() == {"group_id": "g", "generation_id": 3, "member_id": "m-1", "group_instance_id": None}
    static = GroupMetadata.of_reply({**reply, "group_instance_id": "i-1"})
    assert static.group_instance_id == "i-1" and GroupMetadata.of_reply(static.to_line()) == static
    with pytest.raises(AttributeError):  # frozen
        metadata.generation_id = 4  # type: ignore[misc]


def test_java_offsets_are_listed_per_partition() -> None:
    assert offsets_line({TopicPartition("a", 0): 5, TopicPartition("a", 2): 9}) == [
        {"topic": "a", "partition": 0, "offset": 5},
        {"topic": "a", "partition": 2, "offset": 9},
    ]


def test_java_offsets_need_a_java_consumers_group_metadata() -> None:
    producer = object.__new__(WorkerTransactionalProducer)  # no worker: refused before any command
    with pytest.raises(TypeError, match="worker consumer's group_metadata"):
        producer.send_offsets_to_transaction({TopicPartition("a", 0): 1}, "a-group-id", 5.0)


def test_a_java_transactional_producer_needs_an_id() -> None:
    driver = object.__new__(JavaDriver)  # no build: refused before a worker starts
    with pytest.raises(WorkerError, match="transactional_id"):
        driver.transactional_producer(ProducerSettings(["b:1"], "p"))
