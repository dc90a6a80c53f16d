"""Client security: one typed value, each library's spelling derived from it, and a cluster of
ours that asks for it on its client listeners (SASL_PLAINTEXT with PLAIN)."""

from __future__ import annotations

import confluent_kafka as ck
import pytest

from highwater.clients.python.confluent import ConfluentProducer, consumer_config, producer_config
from highwater.harness.clients import ConsumerSettings, ProducerSettings
from highwater.harness.config import ClusterSpec, SpecError, render_properties
from highwater.harness.security import PLAINTEXT, ClientSecurity, SecurityError
from highwater.harness.topology import Ports, Topology

NOWHERE = ["127.0.0.1:1"]
SASL = ClientSecurity("SASL_PLAINTEXT", "PLAIN", "highwater", "s3cret")
SASL_SSL = ClientSecurity(
    "SASL_SSL", "SCRAM-SHA-512", "hw", "pw", ssl_cafile="/ca.pem", ssl_password="kp", ssl_check_hostname=False
)


def _topology() -> Topology:
    return Topology.build(brokers=3, racks=3, controllers=0, slot=0, ports=Ports(9092, 9093, (9094, 9095, 9096), 9200))


def test_plaintext_adds_nothing_so_library_defaults_stand() -> None:
    assert PLAINTEXT.as_kafka_python() == {} and PLAINTEXT.as_librdkafka() == {}
    assert producer_config(ProducerSettings(NOWHERE, "p")).get("security.protocol") is None


def test_each_library_gets_its_own_spelling() -> None:
    assert SASL.as_kafka_python() == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "highwater",
        "sasl_plain_password": "s3cret",
    }
    assert SASL.as_librdkafka() == {
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "highwater",
        "sasl.password": "s3cret",
    }
    kp = SASL_SSL.as_kafka_python()
    assert kp["ssl_cafile"] == "/ca.pem" and kp["ssl_check_hostname"] is False and "ssl_certfile" not in kp
    rd = SASL_SSL.as_librdkafka()
    assert rd["ssl.ca.location"] == "/ca.pem" and rd["ssl.key.password"] == "kp"
    assert rd["ssl.endpoint.identification.algorithm"] == "none" and "ssl.certificate.location" not in rd
    assert "s3cret" not in SASL.describe() and SASL.describe() == "SASL_PLAINTEXT PLAIN as highwater"


def test_the_drivers_settings_carry_it_and_librdkafka_accepts_it() -> None:
    assert producer_config(ProducerSettings(NOWHERE, "p", security=SASL))["sasl.username"] == "highwater"
    conf = consumer_config(ConsumerSettings(NOWHERE, "c", security=SASL_SSL))
    assert conf["security.protocol"] == "sasl_ssl" and conf["sasl.mechanism"] == "SCRAM-SHA-512"
    # librdkafka refuses unknown properties and bad values when a client is made
    producer = ConfluentProducer(ck, ProducerSettings(NOWHERE, "p", security=SASL))
    producer.close(0)


def test_the_cluster_file_spelling_is_read_and_checked() -> None:
    sec = ClientSecurity.from_kafka_python(
        {
            "security_protocol": "sasl_plaintext",
            "sasl_mechanism": "plain",
            "sasl_plain_username": "u",
            "sasl_plain_password": "p",
        }
    )
    assert sec == ClientSecurity("SASL_PLAINTEXT", "PLAIN", "u", "p")
    assert ClientSecurity.from_kafka_python({}) == PLAINTEXT
    for table, key in [
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "sasl_mechanism"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"}, "sasl_plain_username"),
        ({"ssl_check_hostname": "yes"}, "ssl_check_hostname"),
        ({"ssl_cafile": ""}, "ssl_cafile"),
        ({"sasl_kerberos_service_name": "kafka"}, "sasl_kerberos_service_name"),
    ]:
        with pytest.raises(SecurityError) as exc:
            ClientSecurity.from_kafka_python(table)
        assert exc.value.key == key, table


def test_a_cluster_of_ours_asks_for_sasl_on_client_listeners_only() -> None:
    t = _topology()
    node = t.node("kafka-1")
    props = render_properties(ClusterSpec(client_security=SASL), t, node, "/d")
    protocols = dict(entry.split(":") for entry in props["listener.security.protocol.map"].split(","))
    assert protocols.pop("REPLICATION") == "PLAINTEXT" and protocols.pop("CONTROLLER") == "PLAINTEXT"
    assert protocols and set(protocols.values()) == {"SASL_PLAINTEXT"}  # every client rack's listener
    assert props["sasl.enabled.mechanisms"] == "PLAIN"
    for name in protocols:
        jaas = props[f"listener.name.{name.lower()}.plain.sasl.jaas.config"]
        assert 'user_highwater="s3cret"' in jaas and jaas.endswith(";")
    plain = render_properties(ClusterSpec(), t, node, "/d")
    assert "sasl.enabled.mechanisms" not in plain and "SASL" not in plain["listener.security.protocol.map"]


def test_a_cluster_of_ours_refuses_what_it_cannot_offer() -> None:
    t = _topology()
    node = t.node("kafka-1")
    with pytest.raises(SpecError, match="PLAINTEXT or SASL_PLAINTEXT with PLAIN"):
        render_properties(ClusterSpec(client_security=SASL_SSL), t, node, "/d")
    quoted = ClientSecurity("SASL_PLAINTEXT", "PLAIN", "u", 'p"; x')
    with pytest.raises(SpecError, match="plain words"):
        render_properties(ClusterSpec(client_security=quoted), t, node, "/d")
