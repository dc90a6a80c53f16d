"""The rendered compose file: the local backend's address plan and broker properties, on containers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from highwater.harness.compose.images import apt_mirror
from highwater.harness.compose.render import LABEL_CLUSTER, RenderInput, render
from highwater.harness.config import ClusterSpec
from highwater.harness.topology import Ports


def _render(**spec: object) -> str:
    s = ClusterSpec(kafka_version="4.3.1", **spec)  # type: ignore[arg-type]
    n = 4 if s.racks == 3 else s.racks + 1
    return render(
        RenderInput(
            spec=s,
            cluster_id="hw-unit",
            kraft_cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
            kafka_image="highwater/kafka:4.3.1",
            toxiproxy_image="highwater/toxiproxy:2.12.0",
            slot=7,
            ports=Ports(20000, 20001, tuple(range(20002, 20002 + n)), 20002 + n),
            owner_pid=4242,
        )
    )


def test_brokers_carry_rack_selector_and_labels() -> None:
    text = _render()
    for i, rack in ((1, "rack-a"), (2, "rack-b"), (3, "rack-c")):
        assert f"  kafka-{i}:\n" in text
        assert f"broker.rack={rack}" in text
    assert text.count("replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector") == 3
    assert text.count(f'{LABEL_CLUSTER}: "hw-unit"') == 4  # three brokers and the proxy
    assert text.count('highwater.owner-pid: "4242"') == 4
    assert text.count("network_mode: host") == 4


def test_peer_names_point_at_the_proxy_of_each_directed_link() -> None:
    text = _render()
    block = text.split("  kafka-2:\n")[1].split("\n\n")[0]
    assert '"kafka-2:127.107.0.2"' in block  # itself: its home
    assert '"kafka-1:127.107.2.1"' in block  # link kafka-2 -> kafka-1
    assert '"kafka-3:127.107.2.3"' in block


def test_one_client_listener_per_client_rack_advertised_through_that_racks_proxies() -> None:
    text = _render()
    for name, octet in (
        ("CLIENT_RACK_A", 200),
        ("CLIENT_RACK_B", 201),
        ("CLIENT_RACK_C", 202),
        ("CLIENT_NO_RACK", 203),
    ):
        assert re.search(rf"{name}://127\.107\.{octet}\.1:\d+", text)


def test_toxiproxy_gets_one_proxy_per_link() -> None:
    text = _render()
    raw = re.search(r"HW_PROXIES: (\".*\")\n", text)
    assert raw
    proxies = json.loads(json.loads(raw.group(1)))
    names = {p["name"] for p in proxies}
    assert "replication:kafka-1->kafka-2" in names and "client:clients@rack-b->kafka-3" in names
    # 3 brokers: 6 directed replication + 6 controller links, 4 client racks x 3 brokers
    assert len(proxies) == 6 + 6 + 12


def test_dollar_signs_are_escaped_for_compose() -> None:
    text = _render(broker_config={"log.dirs.note": "a$b"})
    assert "a$$b" in text
    assert "$HW_PROPERTIES" not in text.replace("$$HW_PROPERTIES", "")


def test_dedicated_controllers_render_as_their_own_containers() -> None:
    text = _render(brokers=3, racks=3, controllers=1)
    assert "  controller-1:\n" in text and "process.roles=controller" in text


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose is not installed")
def test_docker_compose_accepts_the_rendered_file(tmp_path: Path) -> None:
    f = tmp_path / "docker-compose.yml"
    f.write_text(_render())
    res = subprocess.run(["docker-compose", "-f", str(f), "config", "--services"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert set(res.stdout.split()) == {"toxiproxy", "kafka-1", "kafka-2", "kafka-3"}


def test_apt_mirror_is_read_from_deb822_and_one_line_sources(tmp_path: Path) -> None:
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
    )
    assert apt_mirror(tmp_path) == "http://mirror.example/debian"
    (d / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("deb [arch=amd64] http://old.example/debian bookworm main\n")
    assert apt_mirror(tmp_path) == "http://old.example/debian"
    (tmp_path / "sources.list").write_text("")
    assert apt_mirror(tmp_path) == "http://deb.debian.org/debian"
