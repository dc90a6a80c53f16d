"""Per-node CPU and memory limits (``ClusterSpec.broker_cpus``/``broker_memory``): parsing and
validation in one line, what the compose backend hands the docker SDK and writes into a rendered
file, and the refusal by backends that cannot apply them. Also the pure parts of attaching to a
compose cluster kept up by ``highwater cluster up``: its recorded state and its containers' status."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from highwater import cli
from highwater.cli_cluster import _forward_args
from highwater.core.errors import ClusterError
from highwater.harness.backend import NodeState
from highwater.harness.backends import BackendError, get_backend, start_backend
from highwater.harness.cluster_state import spec_from_state, topology_from_state
from highwater.harness.compose.backend import check_engine_fits, limit_args, node_state
from highwater.harness.compose.render import RenderInput, limits_block, render
from highwater.harness.config import ClusterSpec, SpecError, memory_bytes, parse_cpus
from highwater.harness.topology import Ports

GIB = 1024**3


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2g", 2 * GIB), ("2G", 2 * GIB), ("512m", 512 * 1024**2), ("1.5g", 3 * GIB // 2), ("64k", 65536), ("999", 999)],
)
def test_memory_is_read_in_dockers_notation(text: str, expected: int) -> None:
    assert memory_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "2 g", "two", "2t", "-1g", "g", "2gb", "1e9"])
def test_a_bad_memory_value_is_one_line(text: str) -> None:
    with pytest.raises(SpecError) as err:
        memory_bytes(text)
    assert str(err.value) == f"broker memory must be a size such as 2g or 512m, got {text!r}"


def test_cpus_are_parsed_and_bounded() -> None:
    assert parse_cpus("1.5") == 1.5 and parse_cpus("2") == 2.0 and parse_cpus("0.01") == 0.01
    with pytest.raises(SpecError, match=r"^broker cpus must be a number of CPUs such as 1\.5, got 'abc'$"):
        parse_cpus("abc")
    for text in ("0", "0.001", "-1", "nan", "inf"):
        with pytest.raises(SpecError, match=r"^broker cpus must be at least 0\.01 \(docker's smallest quota\)"):
            parse_cpus(text)


def test_the_spec_validates_its_limits() -> None:
    spec = ClusterSpec(broker_cpus=1.5, broker_memory="2g")
    assert spec.has_limits and spec.broker_nano_cpus == 1_500_000_000 and spec.broker_memory_bytes == 2 * GIB
    assert not ClusterSpec().has_limits and ClusterSpec().broker_nano_cpus is None
    with pytest.raises(SpecError, match=r"^broker memory 320m leaves no room for the 320 MB heap"):
        ClusterSpec(broker_memory="320m")
    assert ClusterSpec(broker_memory="200m", heap_mb=128).broker_memory_bytes == 200 * 1024**2
    with pytest.raises(SpecError, match="^broker cpus must be a number, got '1'$"):
        ClusterSpec(broker_cpus="1")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="at least 0.01"):
        ClusterSpec(broker_cpus=0)


def test_the_sdk_gets_nano_cpus_and_bytes() -> None:
    assert limit_args(ClusterSpec()) == {}
    assert limit_args(ClusterSpec(broker_cpus=0.5)) == {"nano_cpus": 500_000_000}
    assert limit_args(ClusterSpec(broker_cpus=2, broker_memory="1g")) == {"nano_cpus": 2 * 10**9, "mem_limit": GIB}


def test_limits_the_engine_cannot_give_are_one_line() -> None:
    check_engine_fits(ClusterSpec(broker_cpus=2, broker_memory="1g"), engine_cpus=2, engine_memory=2 * GIB)
    with pytest.raises(ClusterError, match="^broker cpus 3 is more than the 2 CPUs docker has$"):
        check_engine_fits(ClusterSpec(broker_cpus=3), engine_cpus=2, engine_memory=2 * GIB)
    with pytest.raises(ClusterError, match=r"^broker memory 4g is more than the 2\.0 GiB docker's host has$"):
        check_engine_fits(ClusterSpec(broker_memory="4g"), engine_cpus=2, engine_memory=2 * GIB)


# -- the rendered file ------------------------------------------------------------------------------


def _render(spec: ClusterSpec) -> str:
    n = spec.racks + 1
    return render(
        RenderInput(
            spec=spec,
            cluster_id="hw-unit",
            kraft_cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
            kafka_image="highwater/kafka:4.3.1",
            toxiproxy_image="highwater/toxiproxy:2.12.0",
            slot=7,
            ports=Ports(20000, 20001, tuple(range(20002, 20002 + n)), 20002 + n),
        )
    )


def _block(text: str, service: str) -> str:
    return text.split(f"  {service}:\n")[1].split("\n\n")[0]


def test_every_node_service_carries_the_limits_and_the_proxy_none() -> None:
    text = _render(ClusterSpec(kafka_version="4.3.1", controllers=1, broker_cpus=1.5, broker_memory="2g"))
    for service in ("kafka-1", "kafka-2", "kafka-3", "controller-1"):
        block = _block(text, service)
        assert "\n    cpus: 1.5\n" in block and '\n    mem_limit: "2g"\n' in block, block
    assert "cpus" not in _block(text, "toxiproxy") and "mem_limit" not in _block(text, "toxiproxy")
    assert limits_block(ClusterSpec()) == ""
    plain = _render(ClusterSpec(kafka_version="4.3.1"))
    assert "cpus:" not in plain and "mem_limit:" not in plain


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose is not installed")
def test_docker_compose_reads_the_limits(tmp_path: Path) -> None:
    f = tmp_path / "docker-compose.yml"
    f.write_text(_render(ClusterSpec(kafka_version="4.3.1", broker_cpus=0.5, broker_memory="768m")))
    res = subprocess.run(["docker-compose", "-f", str(f), "config"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("cpus: 0.5") == 3 and res.stdout.count("mem_limit: 768m") == 3, res.stdout


# -- backends that cannot apply them, and the CLI ---------------------------------------------------


def test_only_the_compose_backend_takes_limits() -> None:
    limited = ClusterSpec(broker_memory="1g")
    get_backend("compose").check_spec(limited)
    get_backend("local").check_spec(ClusterSpec())
    for name in ("local", "external"):
        with pytest.raises(BackendError) as err:
            start_backend(name, limited)  # refused before anything starts
        assert str(err.value) == f"cpu/memory limits need the compose backend (backend {name!r} cannot apply them)"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["cluster", "up", "--broker-cpus", "abc"], "broker cpus must be a number of CPUs such as 1.5, got 'abc'"),
        (["cluster", "up", "--backend", "compose", "--broker-memory", "lots"], "broker memory must be a size"),
        (["cluster", "up", "--broker-memory", "2g"], "cpu/memory limits need the compose backend"),
        (["cluster", "up", "--broker-cpus", "1"], "cpu/memory limits need the compose backend"),
        (["compose", "render", "--broker-cpus", "0", "-o", "x.yml"], "broker cpus must be at least 0.01"),
    ],
)
def test_cli_refuses_bad_limits_in_one_line(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 4  # refused
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"highwater: error: {line}"), err


def test_compose_render_writes_the_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dc.yml"
    argv = ["compose", "render", "--kafka-version", "4.3.1", "--broker-cpus", "1", "--broker-memory", "1g"]
    assert cli.main([*argv, "-o", str(out)]) == 0
    text = out.read_text()
    assert text.count("    cpus: 1.0\n") == 3 and text.count('    mem_limit: "1g"\n') == 3


def test_the_supervisor_gets_the_limits() -> None:
    args = argparse.Namespace(
        backend="compose",
        name="m",
        brokers=3,
        racks=3,
        controllers=0,
        kafka_version=None,
        base_port=None,
        broker_config=[],
        broker_cpus="1.5",
        broker_memory="2g",
        clock="real",
        disk="plain",
        tiered=False,
    )
    forwarded = _forward_args(args)
    assert forwarded[-4:] == ["--broker-cpus", "1.5", "--broker-memory", "2g"]
    assert "--broker-cpus" not in _forward_args(argparse.Namespace(**{**vars(args), "broker_cpus": None}))


# -- attaching --------------------------------------------------------------------------------------


def _state() -> dict[str, Any]:
    """What ``ComposeCluster`` writes to ``cluster.json`` (the parts attach reads), as JSON gives it back."""
    return {
        "backend": "compose",
        "cluster_id": "manual-3-1-abc",
        "image": "highwater/kafka:4.3.1",
        "kafka_version": "4.3.1",
        "slot": 3,
        "spec": {
            "brokers": 3,
            "racks": 3,
            "controllers": 0,
            "client_racks": ["rack-a", "rack-b", "rack-c", "no-rack"],
            "broker_config": {"x": "1"},
            "heap_mb": 256,
            "name": "manual",
            "broker_cpus": 1.5,
            "broker_memory": "1g",
        },
        "ports": {
            "replication": 30000,
            "controller": 30001,
            "clients": [30002, 30003, 30004, 30005],
            "toxiproxy_api": 30006,
        },
    }


def test_the_recorded_state_gives_back_the_spec_and_topology() -> None:
    state = _state()
    spec = spec_from_state(state)
    assert spec == ClusterSpec(
        brokers=3,
        racks=3,
        kafka_version="4.3.1",
        broker_config={"x": "1"},
        client_racks=("rack-a", "rack-b", "rack-c", "no-rack"),
        base_port=30000,
        heap_mb=256,
        name="manual",
        broker_cpus=1.5,
        broker_memory="1g",
    )
    topo = topology_from_state(state)
    assert topo.slot == 3 and [n.name for n in topo.nodes] == ["kafka-1", "kafka-2", "kafka-3"]
    assert topo.bootstrap("rack-b")[0].endswith(":30003")


def test_a_containers_status_is_its_nodes_state() -> None:
    assert node_state("running") is NodeState.RUNNING
    assert node_state("paused") is NodeState.PAUSED
    for status in ("exited", "created", "dead", "restarting"):
        assert node_state(status) is NodeState.STOPPED


def test_cluster_down_takes_the_backend_it_was_started_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """``cluster down --backend compose`` parses (it was a usage error, so the natural way down
    left the containers running); a backend other than the one the state records is refused."""
    from highwater import cli_cluster

    args = cli.build_parser().parse_args(["cluster", "down", "--name", "c", "--backend", "compose"])
    assert args.backend == "compose"
    monkeypatch.setattr(cli_cluster, "_read_state", lambda name: {"pid": 1, "backend": "local", "cluster_dir": "/x"})
    monkeypatch.setattr(cli_cluster, "_supervisor_alive", lambda state: True)
    with pytest.raises(ClusterError, match="runs on backend 'local', not 'compose'"):
        cli_cluster.cmd_down(args)
