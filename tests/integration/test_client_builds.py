"""Client builds on a real cluster: a local build of kafka-python (a source tree, as a client's
author has it) is installed into a virtual environment of its own, runs in its workers, and is
installed again when its sources change, so a run tests the code as it is now; a version pip
cannot install is one line and leaves nothing in the cache."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from highwater.harness.clients import ClientDriver, ProducerSettings, SendOutcome, UnknownClientError, get_driver
from highwater.harness.local.cluster import Cluster
from highwater.harness.paths import home

SDIST = "kafka-python==3.0.12"  # a release whose source tree stands in for a checkout


def _source_tree(tmp_path: Path) -> Path:
    """kafka-python's source distribution from PyPI, unpacked: a tree pip builds as it would a
    git checkout (pyproject.toml, version from ``kafka/version.py``)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            SDIST,
            "-d",
            str(tmp_path),
        ],
        check=True,
        timeout=300,
    )
    (archive,) = tmp_path.glob("kafka_python-*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    (tree,) = (p for p in tmp_path.iterdir() if p.is_dir())
    return tree


def _produce_one(driver: ClientDriver, cluster: Cluster, topic: str) -> tuple[str, list[str]]:
    """The library version the worker itself reported, and the outcome of one send."""
    outcomes: list[SendOutcome] = []
    producer = driver.producer(ProducerSettings(cluster.bootstrap(), f"local-{time.monotonic_ns()}"))
    try:
        producer.send(topic, 0, "v", outcomes.append)
        producer.flush(30)
    finally:
        producer.close(10)
    return producer.process.version, [o.outcome.value for o in outcomes]  # type: ignore[attr-defined]


def test_a_local_build_runs_as_its_sources_are_now(cluster: Cluster, tmp_path: Path) -> None:
    tree = _source_tree(tmp_path)
    version_file = tree / "kafka" / "version.py"
    version_file.write_text("__version__ = '3.0.12.dev1'\n")  # the author's change
    spec = f"kafka-python@{tree}"
    driver = get_driver(spec)
    assert driver.version.startswith("3.0.12.dev1+local.") and driver.name == "kafka-python"
    venv = Path(driver.launcher.python).parents[1]  # type: ignore[attr-defined]
    try:
        assert venv.parent.parent == home() / "clients" / "kafka-python" / "local"
        cluster.create_topic("cb-local", 1, 3)
        assert _produce_one(driver, cluster, "cb-local") == ("3.0.12.dev1", ["ok"])
        assert get_driver(spec).version == driver.version  # unchanged sources: not installed again
        version_file.write_text("__version__ = '3.0.12.dev2'\n")  # edited again
        again = get_driver(spec)
        assert again.version.startswith("3.0.12.dev2+local.") and again.launcher.python == driver.launcher.python  # type: ignore[attr-defined]
        assert _produce_one(again, cluster, "cb-local") == ("3.0.12.dev2", ["ok"])
    finally:
        shutil.rmtree(venv.parent, ignore_errors=True)


def test_a_version_pip_cannot_install_is_one_line_and_leaves_nothing() -> None:
    with pytest.raises(UnknownClientError) as err:
        get_driver("kafka-python==3.0.99")
    assert str(err.value).startswith("kafka-python 3.0.99 is not on PyPI") and "\n" not in str(err.value)
    assert not (home() / "clients" / "kafka-python" / "3.0.99").exists()
