"""The wheel installs one import name and carries what setup and the runs read: built from this
checkout with pip (the same build a user's ``pip install`` does), then read as a zip."""

from __future__ import annotations

import zipfile

import pytest

from tests.integration.installed import ROOT, build_wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    return zipfile.ZipFile(build_wheel(tmp_path_factory.mktemp("wheel")))


def test_the_wheel_installs_only_the_highwater_name(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"highwater"}
    (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    assert wheel.read(top_level).decode().split() == ["highwater"]


def test_the_wheel_carries_the_workers_templates_lossyfs_findings_and_suites(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for needed in (
        "highwater/clients/java/pom.xml",
        "highwater/clients/java/src/main/java/highwater/Worker.java",
        "highwater/clients/node/highwater_worker.js",
        "highwater/clients/node/package-lock.json",
        "highwater/clients/python/highwater_worker.py",
        # the worker side of the Python clients (their in-worker drivers) and the module it shares
        "highwater/clients/python/kafka_python.py",
        "highwater/clients/python/confluent.py",
        "highwater/clients/python/confluent_share.py",
        "highwater/clients/go/franz/main.go",
        "highwater/clients/go/protocol/protocol.go",
        "highwater/clients/go/protocol/go.mod",
        "highwater/clients/go/franz/go.mod",
        "highwater/clients/go/franz/go.sum",
        "highwater/harness/client_common.py",
        "highwater/compose/docker-compose.yml.tmpl",
        "highwater/faults/lossyfs/main.go",
        "highwater/faults/lossyfs/go.sum",
        "highwater/reports/templates/report.html",
        "highwater/core/findings.toml",
        "highwater/suites/conftest.py",
        "highwater/suites/conformance/test_durability.py",
        "highwater/harness/clients/java.py",
        "highwater/pytest_plugin.py",
    ):
        assert needed in names, needed
    # each Java source of the worker ships (the build copies the folder)
    java = {p.name for p in (ROOT / "clients" / "java" / "src" / "main" / "java" / "highwater").glob("*.java")}
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("highwater/clients/java/src/")} == java
    # nothing built or installed by a run leaks in
    assert not [n for n in names if "/target/" in n or "node_modules" in n or "__pycache__" in n]
