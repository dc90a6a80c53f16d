"""KIP-848's group protocol as each client and Kafka release has it (harness.clients.groups), and
how the Java and librdkafka drivers ask for it."""

from __future__ import annotations

import pytest

from highwater.clients.python.confluent import consumer_config
from highwater.harness.clients import ConsumerSettings
from highwater.harness.clients.groups import group_configs, group_protocol_refusal
from highwater.harness.clients.java import consumer_properties


@pytest.mark.parametrize(
    ("client", "version", "kafka"),
    [
        ("java", "4.0.0", "4.0.0"),
        ("java", "4.4.0", "4.4.0"),
        ("confluent-kafka", "2.12.0", "4.1.1"),
        ("franz-go", "1.22.3", "4.4.0"),
    ],
)
def test_the_consumer_protocol_where_client_and_release_have_it(client: str, version: str, kafka: str) -> None:
    assert group_protocol_refusal(client, version, kafka, "consumer") is None
    assert group_protocol_refusal(client, version, kafka, "consumer", "range") is None


@pytest.mark.parametrize(
    ("client", "version", "kafka", "says"),
    [
        ("kafka-python", "3.0.12", "4.4.0", "kafka-python 3.0.12 has only the classic group protocol"),
        ("kafkajs", "2.2.4", "4.4.0", "kafkajs 2.2.4 has only the classic group protocol"),
        ("java", "3.9.1", "4.4.0", "java 3.9.1 has no generally available KIP-848 consumer protocol (since java 4.0)"),
        ("confluent-kafka", "2.11.1", "4.4.0", "since confluent-kafka 2.12"),
        ("franz-go", "1.21.3", "4.4.0", "since franz-go 1.22"),  # a hidden beta opt-in before
        (
            "java",
            "4.4.0",
            "3.9.1",
            "Kafka 3.9.1 has no generally available KIP-848 consumer protocol (since Kafka 4.0)",
        ),
    ],
)
def test_the_consumer_protocol_refused_in_one_line(client: str, version: str, kafka: str, says: str) -> None:
    why = group_protocol_refusal(client, version, kafka, "consumer")
    assert why is not None and says in why and "\n" not in why


def test_classic_everywhere_and_bad_names_refused() -> None:
    assert group_protocol_refusal("kafka-python", "3.0.12", "3.3.1", "classic") is None
    assert "unknown group protocol 'eager'" in str(group_protocol_refusal("java", "4.4.0", "4.4.0", "eager"))
    assert "needs group.protocol=consumer" in str(group_protocol_refusal("java", "4.4.0", "4.4.0", "classic", "range"))
    assert "one of uniform, range" in str(group_protocol_refusal("java", "4.4.0", "4.4.0", "consumer", "sticky"))


def test_the_group_s_session_timeout_and_a_heartbeat_within_it() -> None:
    assert group_configs(6000) == {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "2000"}
    assert group_configs(45000)["consumer.heartbeat.interval.ms"] == "3000"


def _settings(**kw: object) -> ConsumerSettings:
    return ConsumerSettings(bootstrap=["127.0.0.1:9092"], client_id="c", group_id="g", session_timeout_ms=6000, **kw)  # type: ignore[arg-type]


def test_java_and_librdkafka_ask_for_the_consumer_protocol_without_a_session_timeout() -> None:
    """Both clients refuse session.timeout.ms with group.protocol=consumer: the group has it."""
    java = consumer_properties(_settings(group_protocol="consumer", group_remote_assignor="range"))
    assert java["group.protocol"] == "consumer" and java["group.remote.assignor"] == "range"
    assert "session.timeout.ms" not in java
    rd = consumer_config(_settings(group_protocol="consumer"))
    assert rd["group.protocol"] == "consumer" and "session.timeout.ms" not in rd and "group.remote.assignor" not in rd


def test_classic_keeps_the_member_s_session_timeout() -> None:
    java = consumer_properties(_settings())
    assert java["session.timeout.ms"] == "6000" and "group.protocol" not in java
    rd = consumer_config(_settings())
    assert rd["session.timeout.ms"] == "6000" and "group.protocol" not in rd  # librdkafka takes every value as text


# transactions v1 and v2 (harness.clients.txnversion) --------------------------------------------


def test_transactions_v2_only_where_client_and_release_have_it() -> None:
    from highwater.harness.clients.txnversion import has_feature, transaction_version_refusal

    assert transaction_version_refusal("java", "4.4.0", "4.4.0", 2) is None
    assert transaction_version_refusal("franz-go", "1.22.3", "4.4.0", 2) is None
    for client, version in (
        ("java", "3.9.1"),
        ("confluent-kafka", "2.16.1"),
        ("kafka-python", "3.0.12"),
        ("franz-go", "1.18.1"),
    ):
        why = transaction_version_refusal(client, version, "4.4.0", 2)
        assert why is not None and f"{client} {version} speaks transactions v1 only" in why and "\n" not in why
    assert "Kafka 3.9.1 has no transactions v2" in str(transaction_version_refusal("java", "4.4.0", "3.9.1", 2))
    # v1 is what every client and release speaks; the feature to set exists from 4.0
    assert all(transaction_version_refusal(c, "1.0.0", "3.3.1", 1) is None for c in ("java", "kafkajs"))
    assert "unknown transaction.version 3" in str(transaction_version_refusal("java", "4.4.0", "4.4.0", 3))
    assert has_feature("4.0.0") and not has_feature("3.9.1")


def test_franz_go_is_built_with_the_consumer_protocol_from_1_22_and_the_share_consumer_from_1_21() -> None:
    from highwater.harness.clients.franz_go import SERVER_SIDE_BALANCER_TAG, SHARE_CONSUMER_TAG, build_tags

    both = ["-tags", f"{SERVER_SIDE_BALANCER_TAG},{SHARE_CONSUMER_TAG}"]
    assert build_tags("1.22.3") == build_tags("1.23.0") == both
    assert build_tags("1.21.0") == build_tags("1.21.5") == ["-tags", SHARE_CONSUMER_TAG]
    assert build_tags("1.20.7") == build_tags("1.19.0") == []
