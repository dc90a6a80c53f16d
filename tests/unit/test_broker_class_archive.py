"""The class-data-sharing archive: used when present, never required."""

from __future__ import annotations

from pathlib import Path

from highwater.harness.distribution import KafkaDistribution
from highwater.harness.java_runtime import Java, jvm_base
from highwater.harness.local.broker_class_archive import _training_properties, archive_flags, archive_path


def test_flags_name_the_archive_only_when_it_exists(tmp_path: Path) -> None:
    dist = KafkaDistribution("4.4.0", tmp_path / "4.4.0" / "libs")
    java = Java(Path("/usr/bin/java"), 17)
    assert archive_path(dist, java) == tmp_path / "4.4.0" / "classes-java17.jsa"
    assert archive_flags(dist, java) == []  # no archive: JVMs start the usual way
    archive_path(dist, java).parent.mkdir(parents=True)
    archive_path(dist, java).write_bytes(b"x")
    assert archive_flags(dist, java) == [f"-XX:SharedArchiveFile={archive_path(dist, java)}"]
    # another Java major has its own archive
    assert archive_flags(dist, Java(Path("/usr/bin/java"), 21)) == []


def test_training_node_is_one_combined_node_on_loopback(tmp_path: Path) -> None:
    props = dict(line.split("=", 1) for line in _training_properties(tmp_path / "data", 20000).splitlines() if line)
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:20000,CONTROLLER://127.0.0.1:20001"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:20001"
    assert props["log.dirs"] == str(tmp_path / "data")


def test_nodes_and_training_share_the_jvm_flags() -> None:
    base = jvm_base(Java(Path("/usr/bin/java"), 17), 256)
    assert base[0] == "/usr/bin/java" and "-Xmx256m" in base and "-XX:TieredStopAtLevel=1" in base
