"""The Java client driver's pure parts: settings maps, outcome classification, the line
protocol, versions and the build's source digest (no JVM, no cluster)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from highwater.harness.clients import (
    CLIENTS,
    ClientSpec,
    ConsumerSettings,
    Outcome,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    TopicPartition,
    UnknownClientError,
    parse_client_spec,
)
from highwater.harness.clients.java import (
    consumer_properties,
    ensure_worker,
    producer_properties,
    security_properties,
    source_digest,
)
from highwater.harness.clients.worker import (
    WorkerError,
    classify_send_result,
    parse_line,
    position_of,
    records_of,
    truncation_of,
)
from highwater.harness.security import ClientSecurity

FILES = {"/c/cert.pem": "CERT", "/c/key.pem": "KEY"}


def test_java_is_registered_with_versions_like_the_others() -> None:
    assert "java" in CLIENTS
    assert parse_client_spec("java:3.9.1") == ClientSpec("java", "3.9.1")
    assert str(parse_client_spec("java==3.9.1")) == "java==3.9.1"


def test_old_or_malformed_versions_are_one_line_before_any_build() -> None:
    with pytest.raises(UnknownClientError, match="3.3.1 or later"):
        ensure_worker("3.2.3")
    with pytest.raises(UnknownClientError, match="bad Java client version"):
        ensure_worker("latest")


def test_producer_settings_map_one_to_one() -> None:
    s = ProducerSettings(["b1:9092", "b2:9092"], "p-1")
    assert producer_properties(s) == {
        "bootstrap.servers": "b1:9092,b2:9092",
        "client.id": "p-1",
        "acks": "all",
        "enable.idempotence": "false",  # Java's default is true since 3.0: always said
        "retries": "3",
        "request.timeout.ms": "5000",
        "delivery.timeout.ms": "20000",
        "linger.ms": "2",
        "max.in.flight.requests.per.connection": "1",
        "max.block.ms": "5000",
        "transaction.timeout.ms": "20000",
    }
    assert producer_properties(dataclasses.replace(s, acks=1, idempotence=True))["acks"] == "1"
    assert producer_properties(dataclasses.replace(s, acks="1"))["acks"] == "1"


@pytest.mark.parametrize("settings_type", [ProducerSettings, ConsumerSettings])
def test_every_setting_reaches_the_properties(settings_type: type) -> None:
    """Changing any one setting changes the properties: none is left to Java's defaults."""
    props = producer_properties if settings_type is ProducerSettings else consumer_properties
    base = settings_type(["b:1"], "c", **({"group_id": "g"} if settings_type is ConsumerSettings else {}))
    changed = {
        "bootstrap": ["x:2"],
        "client_id": "d",
        "acks": 1,
        "idempotence": True,
        "retries": 0,
        "request_timeout_ms": 1234,
        "delivery_timeout_ms": 4321,
        "linger_ms": 7,
        "max_in_flight": 5,
        "max_block_ms": 99,
        "client_rack": "rack-a",
        "group_id": "h",
        "auto_commit": True,
        "auto_offset_reset": "none",
        "max_poll_records": 17,
        "metadata_max_age_ms": 333,
        "fetch_max_wait_ms": 44,
        "security": ClientSecurity("SASL_PLAINTEXT", "PLAIN", "u", "p"),
        "transactional_id": "t-1",
        "transaction_timeout_ms": 5555,
        "isolation_level": "read_committed",
        "session_timeout_ms": 6000,
        "group_protocol": "consumer",
        "group_remote_assignor": "range",
    }
    # settings that mean something only beside another (the assignor: with the consumer protocol)
    beside = {"group_remote_assignor": {"group_protocol": "consumer"}}
    # franz-go's alone: a run on any other client that sets it is refused before it starts
    # (harness.clients.franz_go.recheck_refusal)
    not_java = {"preferred_replica_recheck_ms"}
    for field in dataclasses.fields(settings_type):
        if field.name in not_java:
            continue
        assert field.name in changed, f"a new setting {field.name}: map it and add it here"
        before = dataclasses.replace(base, **beside.get(field.name, {}))
        other = dataclasses.replace(before, **{field.name: changed[field.name]})
        assert props(other) != props(before), field.name


def test_consumer_settings_map_one_to_one() -> None:
    s = ConsumerSettings(["b:9092"], "c-1", client_rack="rack-b", group_id="g", auto_commit=True)
    assert consumer_properties(s) == {
        "bootstrap.servers": "b:9092",
        "client.id": "c-1",
        "client.rack": "rack-b",
        "group.id": "g",
        "enable.auto.commit": "true",
        "auto.offset.reset": "earliest",
        "max.poll.records": "500",
        "request.timeout.ms": "10000",
        "metadata.max.age.ms": "5000",
        "fetch.max.wait.ms": "500",
        "isolation.level": "read_uncommitted",
    }
    # no group: no group.id, and Java refuses auto-commit without one
    plain = consumer_properties(ConsumerSettings(["b:9092"], "c-2", auto_commit=True))
    assert "group.id" not in plain and "client.rack" not in plain and plain["enable.auto.commit"] == "false"


def test_security_maps_to_java_properties() -> None:
    assert security_properties(ClientSecurity()) == {}
    scram = ClientSecurity("SASL_SSL", "SCRAM-SHA-512", "alice", 'pa"ss\\word', ssl_cafile="/c/ca.pem")
    assert security_properties(scram, FILES.__getitem__) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
        'password="pa\\"ss\\\\word";',
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/c/ca.pem",
    }
    plain = security_properties(ClientSecurity("SASL_PLAINTEXT", "PLAIN", "bob", "secret"))
    assert plain["sasl.jaas.config"].startswith("org.apache.kafka.common.security.plain.PlainLoginModule required")
    assert "ssl.truststore.type" not in plain
    mtls = ClientSecurity(
        "SSL", ssl_certfile="/c/cert.pem", ssl_keyfile="/c/key.pem", ssl_password="kp", ssl_check_hostname=False
    )
    assert security_properties(mtls, FILES.__getitem__) == {
        "security.protocol": "SSL",
        "ssl.endpoint.identification.algorithm": "",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": "CERT",
        "ssl.keystore.key": "KEY",
        "ssl.key.password": "kp",
    }
    combined = security_properties(ClientSecurity("SSL", ssl_certfile="/c/both.pem"), FILES.__getitem__)
    assert combined["ssl.keystore.location"] == "/c/both.pem" and "ssl.keystore.key" not in combined


def test_send_outcomes_are_classified_conservatively() -> None:
    assert classify_send_result({"send": 1, "offset": 41}, False).offset == 41
    timeout = {"send": 2, "error": "TimeoutException: Topic t not present in metadata after 500 ms."}
    # failed inside send() on the caller's thread: never appended, never sent
    assert classify_send_result({**timeout, "sync": True}, False).outcome is Outcome.FAIL
    # the same exception from the I/O thread (a delivery timeout): it may have been written
    assert classify_send_result({**timeout, "sync": False}, True).outcome is Outcome.INFO
    too_large = {
        "send": 3,
        "error": "RecordTooLargeException: too large",
        "error_class": "org.apache.kafka.common.errors.RecordTooLargeException",
        "sync": False,
    }
    assert classify_send_result(too_large, single_attempt=True).outcome is Outcome.FAIL
    # with retries an earlier attempt may have been written before the rejection
    assert classify_send_result(too_large, single_attempt=False).outcome is Outcome.INFO
    disconnected = {"send": 4, "error": "NetworkException: gone", "error_class": "x.NetworkException"}
    info = classify_send_result(disconnected, True)
    assert info.outcome is Outcome.INFO and info.error == "NetworkException: gone"


def test_protocol_lines_are_parsed_or_skipped() -> None:
    assert parse_line('{"id": 3, "ok": true}\n') == {"id": 3, "ok": True}
    assert parse_line("SLF4J: a stray line") is None
    assert parse_line("[1, 2]") is None
    assert parse_line("   ") is None


def test_poll_replies_become_records_or_a_truncation_signal() -> None:
    reply = {
        "id": 5,
        "ok": True,
        "parts": [
            {
                "topic": "t",
                "partition": 0,
                "replica": 3,
                "offsets": [7, 2, 10, 3],  # runs: 7-8, 10-12 (a gap: a control record, a compaction)
                "values": ["v-7", None, "v-10", "v-11", "v-12"],
                "epochs": [2, 2, 3, 1, None, 2],
            },
            {"topic": "u", "partition": 2, "replica": None, "offsets": [0, 1], "values": ["a"], "epochs": [None, 1]},
        ],
    }
    assert records_of(reply) == [
        PolledRecord("t", 0, 7, "v-7", 2, 3),
        PolledRecord("t", 0, 8, None, 2, 3),
        PolledRecord("t", 0, 10, "v-10", 3, 3),
        PolledRecord("t", 0, 11, "v-11", None, 3),
        PolledRecord("t", 0, 12, "v-12", None, 3),
        PolledRecord("u", 2, 0, "a", None, None),
    ]
    assert truncation_of(reply) is None
    assert records_of({"id": 5, "ok": True, "parts": []}) == []
    truncated = {
        "id": 6,
        "ok": True,
        "truncation": [{"topic": "t", "partition": 0, "offset": 5}, {"topic": "t", "partition": 1, "offset": None}],
        "error": "LogTruncationException: Detected truncated partitions",
    }
    signal = truncation_of(truncated)
    assert signal is not None and signal.error.startswith("LogTruncationException")
    assert dict(signal.divergent) == {TopicPartition("t", 0): 5, TopicPartition("t", 1): None}
    assert records_of(truncated) == []


@pytest.mark.parametrize(
    "part",
    [
        {"offsets": [0, 3], "values": ["a", "b"], "epochs": [1, 2]},  # offsets for 3, 2 values
        {"offsets": [0, 2], "values": ["a", "b"], "epochs": [1, 1]},  # epochs for 1
        {"offsets": [0, 2, 5], "values": ["a", "b"], "epochs": [1, 2]},  # not pairs
    ],
)
def test_malformed_poll_replies_are_errors_not_misattributed_records(part: dict[str, Any]) -> None:
    with pytest.raises(WorkerError, match="malformed"):
        records_of({"id": 1, "ok": True, "parts": [{"topic": "t", "partition": 0, "replica": 1, **part}]})


def test_position_events() -> None:
    event = {"event": "position", "topic": "t", "partition": 1, "offset": None, "reason": "rebalance"}
    assert position_of(event) == PositionChange("t", 1, None, PositionReason.REBALANCE)
    moved = position_of({**event, "offset": 12, "reason": "truncation"})
    assert (moved.offset, moved.f) == (12, "seek")


def test_the_build_is_keyed_by_the_worker_sources(tmp_path: Path) -> None:
    src = tmp_path / "src" / "main" / "java" / "highwater"
    src.mkdir(parents=True)
    (tmp_path / "pom.xml").write_text("<project/>")
    (src / "Worker.java").write_text("class Worker {}")
    before = source_digest(tmp_path)
    assert source_digest(tmp_path) == before
    (src / "Worker.java").write_text("class Worker { }")
    assert source_digest(tmp_path) != before
