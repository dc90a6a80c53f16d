"""The external backend's cluster file: parsing, one-line refusals, capabilities by class, and the
Topology it maps onto. Nothing here contacts a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from highwater.faults.capability import CapabilityError, check_capabilities
from highwater.faults.spec import FaultKind
from highwater.harness.backend import LinkControl, ProcessControl
from highwater.harness.backends import get_backend
from highwater.harness.config import NO_RACK, ClusterSpec
from highwater.harness.external import (
    ENV_KEEP_TOPICS,
    ClusterFileError,
    ExternalCluster,
    ExternalClusterError,
    ExternalFull,
    ExternalLinks,
    ExternalProcs,
    backend_class,
    build_topology,
    check_shape,
    connect,
    load_cluster_file,
    with_command_line,
)
from highwater.harness.topology import Link, Listener

FULL = """
[cluster]
name = "staging"
kafka_version = "3.9.0"
topic_prefix = "hw-"

[bootstrap]
default = ["k.example:9092"]
rack-a = ["a.example:9092"]
rack-b = "b.example:9092"

[[brokers]]
id = 1
rack = "rack-a"
host = "kafka-0.kafka"

[[brokers]]
id = 2
rack = "rack-b"

[security]
security_protocol = "SASL_SSL"
sasl_mechanism = "scram-sha-512"
sasl_plain_username = "highwater"
sasl_plain_password = "secret"
ssl_cafile = "/etc/ca.pem"
ssl_check_hostname = false

[toxiproxy]
api = "http://127.0.0.1:8474"
[toxiproxy.proxies]
"replication:kafka-1->kafka-2" = "r12"
"client:clients@rack-a->kafka-1" = "ca1"

[commands]
kill = "kubectl delete pod {host} --grace-period=0 --force"
start = "echo {id}"
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "cluster.toml"
    p.write_text(text)
    return p


def test_full_file_parses(tmp_path: Path) -> None:
    cf = load_cluster_file(write(tmp_path, FULL))
    assert cf.name == "staging" and cf.topic_prefix == "hw-" and cf.delete_topics
    assert cf.bootstrap["rack-b"] == ("b.example:9092",)
    assert [(b.node_id, b.rack, b.host) for b in cf.brokers] == [
        (1, "rack-a", "kafka-0.kafka"),
        (2, "rack-b", "kafka-2"),
    ]
    sec = cf.security
    assert (sec.protocol, sec.sasl_mechanism, sec.sasl_username) == ("SASL_SSL", "SCRAM-SHA-512", "highwater")
    assert sec.ssl_cafile == "/etc/ca.pem" and sec.ssl_check_hostname is False
    assert cf.proxies[Link("kafka-1", "kafka-2", Listener.REPLICATION)] == "r12"
    assert cf.proxies[Link("clients@rack-a", "kafka-1", Listener.CLIENT)] == "ca1"
    assert set(cf.commands) == {"kill", "start"}


def test_topology_maps_onto_kafka_names_and_racks(tmp_path: Path) -> None:
    cf = load_cluster_file(write(tmp_path, FULL))
    topo = build_topology(cf, cf.brokers)
    assert [n.name for n in topo.brokers] == ["kafka-1", "kafka-2"]
    assert topo.racks == ("rack-a", "rack-b")
    assert topo.client_racks == (NO_RACK, "rack-a", "rack-b")
    assert topo.node(2).rack == "rack-b"


def test_capabilities_follow_the_file(tmp_path: Path) -> None:
    cf = load_cluster_file(write(tmp_path, FULL))
    assert backend_class(cf) is ExternalFull
    bare = FULL.split("[toxiproxy]")[0]
    cf_bare = load_cluster_file(write(tmp_path, bare))
    assert backend_class(cf_bare) is ExternalCluster
    c = ExternalCluster(cf_bare, ClusterSpec())
    assert not isinstance(c, LinkControl) and not isinstance(c, ProcessControl)
    full = ExternalFull(cf, ClusterSpec())
    assert isinstance(full, LinkControl) and isinstance(full, ProcessControl)
    links_only = (
        bare + '[toxiproxy]\napi = "http://127.0.0.1:1"\n[toxiproxy.proxies]\n"replication:kafka-1->kafka-2" = "x"\n'
    )
    assert backend_class(load_cluster_file(write(tmp_path, links_only))) is ExternalLinks
    procs_only = bare + '[commands]\nkill = "true"\n'
    assert backend_class(load_cluster_file(write(tmp_path, procs_only))) is ExternalProcs


def test_capability_refusal_names_what_is_missing(tmp_path: Path) -> None:
    cf = load_cluster_file(write(tmp_path, FULL.split("[toxiproxy]")[0]))
    c = ExternalCluster(cf, ClusterSpec())
    with pytest.raises(CapabilityError, match="fault 'cut' needs link control, which backend 'external' does not have"):
        check_capabilities(c, [FaultKind.CUT])
    with pytest.raises(CapabilityError, match="needs process control"):
        check_capabilities(c, [FaultKind.KILL])


@pytest.mark.parametrize(
    ("text", "key", "what"),
    [
        ("[bootstrap]\ndefault = ['h:1']\n", "brokers", "is required"),
        ("[[brokers]]\nid = 1\nrack = 'r'\n", "bootstrap", "is required"),
        ("[bootstrap]\ndefault = ['nohost']\n[[brokers]]\nid = 1\nrack = 'r'\n", "bootstrap.default", "not host:port"),
        ("[bootstrap]\ndefault = ['h:1']\n[[brokers]]\nid = 'x'\nrack = 'r'\n", r"brokers\[0\].id", "integer"),
        ("[bootstrap]\ndefault = ['h:1']\n[[brokers]]\nid = 1\n", r"brokers\[0\].rack", "is required"),
        (
            "[bootstrap]\ndefault = ['h:1']\n[[brokers]]\nid = 1\nrack = 'r'\n[[brokers]]\nid = 1\nrack = 'r'\n",
            r"brokers\[1\].id",
            "twice",
        ),
        ("[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\nfoo = 1\n", "cluster.foo", "unknown key"),
        ("[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = 'yes'\n", "cluster.discover", "true or false"),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[toxiproxy]\napi = 'x'\n",
            "toxiproxy.api",
            "http",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[toxiproxy]\napi = 'http://h:1'\n",
            "toxiproxy.proxies",
            "is required",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[toxiproxy]\napi = 'http://h:1'\n"
            "[toxiproxy.proxies]\n'kafka-1->kafka-2' = 'p'\n",
            "toxiproxy.proxies",
            "LISTENER:SRC->DST",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[commands]\nreboot = 'x'\n",
            "commands.reboot",
            "unknown",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[commands]\nstart = 'x'\n",
            "commands.kill",
            "required",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[commands]\nkill = 'kill {pid}'\n",
            "commands.kill",
            "bad template",
        ),
        ("[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[extra]\n", "extra", "unknown table"),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[security]\nsasl_user = 'x'\n",
            "security.sasl_user",
            "unknown setting",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[security]\nsecurity_protocol = 'TLS'\n",
            "security.security_protocol",
            "not one of",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[security]\n"
            "security_protocol = 'SASL_PLAINTEXT'\nsasl_mechanism = 'PLAIN'\n",
            "security.sasl_plain_username",
            "needs a username and a password",
        ),
        (
            "[bootstrap]\ndefault = ['h:1']\n[cluster]\ndiscover = true\n[security]\nssl_check_hostname = 'no'\n",
            "security.ssl_check_hostname",
            "true or false",
        ),
        ("[bootstrap\n", "", "not valid TOML"),
    ],
)
def test_malformed_file_is_one_line_naming_file_and_key(tmp_path: Path, text: str, key: str, what: str) -> None:
    p = write(tmp_path, text)
    with pytest.raises(ClusterFileError, match=rf"cluster file {p}: {key}.*{what}") as exc:
        load_cluster_file(p)
    assert "\n" not in str(exc.value)


def test_missing_file_and_missing_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ClusterFileError, match="cannot be read"):
        load_cluster_file(tmp_path / "nope.toml")
    monkeypatch.delenv("HIGHWATER_CLUSTER_FILE", raising=False)
    with pytest.raises(ClusterFileError, match="needs --cluster-file"):
        get_backend("external").start(ClusterSpec(), None)


def test_malformed_file_starts_nothing(tmp_path: Path) -> None:
    """connect() parses before it contacts anything: a bad file never reaches the network."""
    p = write(tmp_path, "[bootstrap]\ndefault = ['127.0.0.1:1']\n")
    with pytest.raises(ClusterFileError):
        connect(ClusterSpec(), None, p)


def test_a_smaller_cluster_than_asked_is_refused(tmp_path: Path) -> None:
    cf = load_cluster_file(write(tmp_path, FULL))
    topo = build_topology(cf, cf.brokers)
    check_shape(cf, topo, ClusterSpec(brokers=2, racks=2))
    with pytest.raises(ExternalClusterError, match="wants 3 brokers in 3 racks, the external cluster has 2 in 2"):
        check_shape(cf, topo, ClusterSpec(brokers=3, racks=3))


def test_only_prefixed_topics_are_created(tmp_path: Path) -> None:
    cf = load_cluster_file(write(tmp_path, FULL))
    c = ExternalCluster(cf, ClusterSpec())
    with pytest.raises(ExternalClusterError, match="topic_prefix 'hw-'"):
        c.create_topic("orders")
    # the suites' and the runner's topics are named through topic_name, so they carry it
    assert c.topic_name("k392local") == "hw-k392local" and c.topic_name("hw-x") == "hw-x"


def test_keep_topics_on_the_command_line_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cf = load_cluster_file(write(tmp_path, FULL))
    assert cf.delete_topics is True
    monkeypatch.delenv(ENV_KEEP_TOPICS, raising=False)
    assert with_command_line(cf).delete_topics is True
    monkeypatch.setenv(ENV_KEEP_TOPICS, "1")
    assert with_command_line(cf).delete_topics is False


def test_unnamed_link_is_refused_and_commands_fill_templates(tmp_path: Path) -> None:
    text = FULL.replace("kubectl delete pod {host} --grace-period=0 --force", f"echo {{id}} {{host}} > {tmp_path}/out")
    cf = load_cluster_file(write(tmp_path, text))
    c = ExternalFull(cf, ClusterSpec())
    c._topo = build_topology(cf, cf.brokers)
    assert c.links() == sorted(cf.proxies)
    with pytest.raises(ExternalClusterError, match="names no proxy for link replication:kafka-2->kafka-1"):
        c.set_links_enabled([Link("kafka-2", "kafka-1", Listener.REPLICATION)], False)
    c.node(1).kill()
    assert (tmp_path / "out").read_text().split() == ["1", "kafka-0.kafka"]
    with pytest.raises(ExternalClusterError, match="commands.pause is not given"):
        c.node("kafka-2").pause()


def test_cli_refuses_a_bad_or_missing_cluster_file_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from highwater.cli import main

    monkeypatch.delenv("HIGHWATER_CLUSTER_FILE", raising=False)
    bad = write(tmp_path, "[bootstrap]\ndefault = ['h:1']\n[[brokers]]\nid = 1\n")
    for argv in (
        ["run", "--backend", "external", "--cluster-file", str(bad), "suites/conformance"],
        ["fault", "apply", "--cluster-file", str(bad), "kill", "--target", "broker:1"],
        ["fault", "heal", "--cluster-file", str(bad)],
    ):
        assert main(argv) == 4  # refused
        err = capsys.readouterr().err.strip()
        assert err == f"highwater: error: cluster file {bad}: brokers[0].rack: is required", argv
    assert main(["run", "--backend", "external", "suites/conformance"]) == 4
    assert "needs --cluster-file" in capsys.readouterr().err
