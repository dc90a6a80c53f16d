"""Which clients have a share consumer, and how an acknowledgement's outcome is read from what
each library says (the Java client names exceptions, librdkafka error codes)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from highwater.clients.python.confluent import error_text
from highwater.clients.python.confluent_share import share_config
from highwater.harness.clients.share import AckOutcome, ShareSettings, share_client_refusal, share_refusal
from highwater.harness.security import PLAINTEXT


@pytest.mark.parametrize(
    ("client", "version"),
    [
        ("java", "4.2.0"),
        ("java", "4.4.0"),
        ("confluent-kafka", "2.15.1"),
        ("confluent-kafka", "2.16.1"),
        ("franz-go", "1.21.0"),
        ("franz-go", "1.22.3"),
    ],
)
def test_clients_with_a_share_consumer_are_taken(client: str, version: str) -> None:
    assert share_client_refusal(client, version) is None
    assert share_refusal(client, version, "4.4.0") is None


@pytest.mark.parametrize(
    ("client", "version", "said"),
    [
        ("java", "4.1.2", "since java 4.2"),
        ("confluent-kafka", "2.14.2", "since confluent-kafka 2.15"),
        ("kafka-python", "3.0.12", "share groups run on: java, confluent-kafka, franz-go"),
        ("kafkajs", "2.2.4", "has no share consumer"),
        ("sarama", "1.61.1", "sarama 1.61.1 has no share consumer"),
        ("franz-go", "1.20.7", "since franz-go 1.21"),
    ],
)
def test_clients_without_one_are_refused_in_one_line(client: str, version: str, said: str) -> None:
    refused = share_client_refusal(client, version)
    assert refused is not None and said in refused and "\n" not in refused


def test_an_old_kafka_is_refused_for_a_client_that_has_one() -> None:
    refused = share_refusal("confluent-kafka", "2.16.1", "4.1.1")
    assert refused is not None and "Kafka 4.1.1" in refused


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (None, "ok"),
        ("InvalidRecordStateException: The record state is invalid.", "fail"),
        ("NotLeaderOrFollowerException: not the leader", "fail"),
        ("KafkaError: INVALID_RECORD_STATE: Broker: Invalid record state", "fail"),
        ("KafkaError: NOT_LEADER_OR_FOLLOWER: Broker: Not leader for partition", "fail"),
        # franz-go's kerr errors, as the Go worker writes them
        ("Error: INVALID_RECORD_STATE: The record state is invalid.", "fail"),
        ("Error: NOT_LEADER_FOR_PARTITION: This server is not the leader for that topic-partition.", "fail"),
        ("Error: UNKNOWN_SERVER_ERROR: The server experienced an unexpected error", "info"),
        # the Go worker's own: franz-go's results disagreed, or it reported none
        ("AckOutcomeUnknown: franz-go reported these acknowledgements in 2 parts that disagree", "info"),
        # a lost connection: the acknowledgement may or may not have been applied
        ("KafkaError: _TRANSPORT: Local: Broker transport failure", "info"),
        ("UnknownServerException: The server experienced an unexpected error", "info"),
        ("TimeoutException: commit timed out", "info"),
    ],
)
def test_an_acknowledgement_fails_only_when_surely_not_applied(error: str | None, outcome: str) -> None:
    assert AckOutcome("t", 0, (1, 2), error).outcome == outcome


@dataclass
class _KafkaError:
    """What confluent-kafka's KafkaError answers (pure: no library needed)."""

    code: str
    text: str

    def name(self) -> str:
        return self.code

    def str(self) -> str:
        return self.text


def test_librdkafka_errors_are_named_by_their_code() -> None:
    text = error_text(_KafkaError("INVALID_RECORD_STATE", "Broker: Invalid record state"))
    assert text == "KafkaError: INVALID_RECORD_STATE: Broker: Invalid record state"
    assert AckOutcome("t", 0, (1,), text).outcome == "fail"


def test_the_share_consumer_acknowledges_explicitly_with_the_settings_asked() -> None:
    conf = share_config(ShareSettings(("127.0.0.1:9092", "127.0.0.2:9092"), "m-0", "g", max_poll_records=7))
    assert conf["bootstrap.servers"] == "127.0.0.1:9092,127.0.0.2:9092"
    assert conf["share.acknowledgement.mode"] == "explicit"
    assert (conf["group.id"], conf["client.id"], conf["max.poll.records"]) == ("g", "m-0", 7)
    # the group's settings are the group's: a member sets none of them
    assert not {"auto.offset.reset", "session.timeout.ms", "isolation.level"} & conf.keys()
    assert PLAINTEXT.as_librdkafka().items() <= conf.items()
