"""Tiered storage's pure parts (``harness.tiered``): which releases have it (one line for those
that do not), which Maven artifact holds Kafka's LocalTieredStorage per release, the configs a
node and a topic take, the remote store's segments read from its file names, and the spec that
asks for it kept in the cluster's record and refused by a backend that cannot give it."""

from __future__ import annotations

from pathlib import Path

import pytest

from highwater.harness import tiered
from highwater.harness.backends import BackendError, get_backend
from highwater.harness.cluster_state import shape_record, spec_from_state
from highwater.harness.config import ClusterSpec
from tests.unit.fault_topology import topo as fault_topo


@pytest.mark.parametrize(
    ("version", "refused"),
    [("3.5.2", True), ("3.6.0", False), ("3.9.1", False), ("4.4.0", False)],
)
def test_tiered_storage_since_3_6(version: str, refused: bool) -> None:
    why = tiered.tiered_refusal(version)
    assert (why is not None) is refused
    if why is not None:
        assert "early access in 3.6" in why and "\n" not in why


def test_the_store_is_in_the_test_jar_until_4_4_then_in_test_fixtures() -> None:
    assert tiered.store_artifact("4.3.1") == (
        "org.apache.kafka:kafka-storage:4.3.1:jar:test",
        "kafka-storage-4.3.1-test.jar",
    )
    assert tiered.store_artifact("4.4.0") == (
        "org.apache.kafka:kafka-storage:4.4.0:jar:test-fixtures",
        "kafka-storage-4.4.0-test-fixtures.jar",
    )


def test_a_node_and_a_topic_take_what_tiers_within_seconds(tmp_path: Path) -> None:
    props = tiered.broker_config(tmp_path / "store", tmp_path / "rsm.jar", "REPLICATION")
    assert props["remote.log.storage.system.enable"] == "true"
    assert props["rsm.config.dir"] == str(tmp_path / "store")
    assert props["remote.log.storage.manager.class.path"] == str(tmp_path / "rsm.jar")
    assert props["remote.log.metadata.manager.listener.name"] == "REPLICATION"
    # none of the defaults that make tiering wait 30 s to 5 min is left
    for key in ("remote.log.manager.task.interval.ms", "log.retention.check.interval.ms", "log.initial.task.delay.ms"):
        assert int(props[key]) <= 1000
    topic = tiered.topic_config()
    assert topic["remote.storage.enable"] == "true"
    assert topic["segment.ms"] == str(tiered.SEGMENT_MS)
    # not a tiny offset index: a follower's append could overflow it (HW-25)
    assert "segment.index.bytes" not in topic and "index.interval.bytes" not in topic


def test_remote_segments_and_bytes_are_read_from_the_store_s_folders(tmp_path: Path) -> None:
    """Folders are ``<topic>-<partition>-<22-character topic id>``; an id may hold ``-``."""
    root = tmp_path / "kafka-tiered-storage"
    mine = root / "t-0-AAAAAAAAAA-AAAAAAAAAAA"  # t/0, an id with a dash
    other = root / "t-0-1-BBBBBBBBBBBBBBBBBBBBBB"  # topic "t-0", partition 1: not t/0
    for d, offsets in ((mine, (50, 0)), (other, (7,))):
        d.mkdir(parents=True)
        for o in offsets:
            (d / f"{o:020d}-uuid.log").write_text("x" * 100)
            (d / f"{o:020d}-uuid.index").write_text("x" * 10)
    assert tiered.remote_segments(tmp_path, "t", 0) == [0, 50]
    assert tiered.remote_segments(tmp_path, "t-0", 1) == [7]
    assert tiered.remote_segments(tmp_path, "u", 0) == []
    assert tiered.remote_bytes(tmp_path, "t") == 220
    assert tiered.remote_bytes(tmp_path, "t-0") == 110
    assert tiered.remote_bytes(tmp_path, "u") == 0


def test_a_tiered_spec_survives_the_cluster_record_and_only_the_local_backend_takes_it() -> None:
    spec = ClusterSpec(tiered=True)
    topo = fault_topo(3, 3)
    state = {**shape_record(spec, topo, "4.4.0"), "nodes": {}}
    assert spec_from_state(state).tiered is True
    get_backend("local").check_spec(spec)
    with pytest.raises(BackendError, match="tiered storage needs the local backend"):
        get_backend("compose").check_spec(spec)
