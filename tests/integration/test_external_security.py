"""TLS/SASL settings from a cluster file reach every client: a local cluster whose client
listeners ask for SASL_PLAINTEXT (PLAIN), run through the external backend only. The observer,
the final read and both client drivers must authenticate, or nothing is read at all."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from highwater.harness.config import ClusterSpec
from highwater.harness.external import connect
from highwater.harness.local.cluster import Cluster
from highwater.harness.security import ClientSecurity
from highwater.harness.waiting import wait_until
from highwater.run_spec import RunSpec
from highwater.runner import execute_run
from highwater.suites.nightly import cases, nightly

from .test_external import cluster_file, run_rack_suite_on_external

SASL = ClientSecurity("SASL_PLAINTEXT", "PLAIN", "highwater", "hw-secret")
PREFIX = "highwater-"  # the default topic_prefix of a cluster file


@pytest.fixture(scope="module")
def sasl_cluster(kafka_version: str) -> Iterator[Cluster]:
    """A local 3-broker, 3-rack cluster (always the local backend: it is the cluster under the
    external one) whose client listeners ask for SASL_PLAINTEXT with PLAIN."""
    c = Cluster(ClusterSpec(brokers=3, racks=3, kafka_version=kafka_version, client_security=SASL)).start()
    try:
        yield c
    finally:
        c.stop()


def sasl_file(tmp: Path, cluster: Cluster, security: dict[str, str] | None) -> Path:
    assert cluster.dir is not None
    info = json.loads((cluster.dir / "cluster.json").read_text())
    info["name"] = "sasl"
    path = cluster_file(tmp, info, toxiproxy=True, commands=False, prefix=PREFIX)
    if security is not None:
        table = "\n".join(f'{k} = "{v}"' for k, v in security.items())
        path.write_text(path.read_text() + f"\n[security]\n{table}\n")
    return path


def test_the_listeners_refuse_a_client_without_credentials(sasl_cluster: Cluster) -> None:
    """The look-alike that makes the next tests mean something: plaintext clients get nowhere."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    with pytest.raises(KafkaError):
        KafkaAdminClient(
            bootstrap_servers=sasl_cluster.bootstrap(), request_timeout_ms=3000, api_version_auto_timeout_ms=3000
        )


@pytest.mark.parametrize(
    "client",
    cases(
        ["kafka-python", "confluent-kafka"],
        {"confluent-kafka": nightly("kafka-python's run through the external backend authenticates in make test", 20)},
    ),
)
def test_a_run_through_the_external_backend_authenticates_every_client(
    sasl_cluster: Cluster, tmp_path: Path, client: str
) -> None:
    path = sasl_file(
        tmp_path,
        sasl_cluster,
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": SASL.sasl_username or "",
            "sasl_plain_password": SASL.sasl_password or "",
        },
    )
    ext = connect(ClusterSpec(brokers=3, racks=3), None, path)
    try:
        assert ext.client_security == SASL
        topic = f"sasl-{client}"
        spec = RunSpec(
            suite="external", scenario="sasl", results_root=tmp_path, topic=topic, duration=12, client=client
        )
        result = execute_run(ext, spec)
        stats = result.stats
        assert result.valid is True, [v.to_json() for v in result.verdicts if v.valid is not True]
        assert sum(p["acked"] for p in stats["producers"].values()) > 0, stats
        assert all(n > 0 for n in stats["consumers"].values()), stats
        # the run's topic carries the file's prefix, and is gone once the backend stops
        assert json.loads((result.dir / "run.json").read_text())["spec"]["topic"] == PREFIX + topic
        assert PREFIX + topic in sasl_cluster.observer().admin.list_topics()
    finally:
        ext.stop()
    # Kafka deletes a topic asynchronously: gone from the metadata a moment after the request
    wait_until(
        lambda: PREFIX + topic not in sasl_cluster.observer().admin.list_topics(), 30, f"{PREFIX + topic} is deleted"
    )


@nightly("kafka-python's SASL authentication through the external backend stays in make test", 45)
def test_a_conformance_suite_runs_on_a_sasl_cluster_through_pytest(sasl_cluster: Cluster, tmp_path: Path) -> None:
    path = sasl_file(
        tmp_path,
        sasl_cluster,
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "highwater",
            "sasl_plain_password": "hw-secret",
        },
    )
    res = run_rack_suite_on_external(path, tmp_path / "results")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
