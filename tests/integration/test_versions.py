"""Older KRaft releases side by side with the default one: the oldest supported (3.3.1) and the
last 3.x line. Each boots with racks, replicates, and serves a rack consumer from its follower."""

from __future__ import annotations

import pytest

from highwater.harness.distribution import installed_versions

from .kafka_util import bytes_served, consume_all, produce

VERSIONS = ["3.3.1", "3.9.1"]


@pytest.mark.parametrize("version", VERSIONS)
def test_release_boots_replicates_and_fetches_from_follower(cluster_factory, version: str) -> None:  # type: ignore[no-untyped-def]
    cluster = cluster_factory(brokers=3, racks=3, kafka_version=version)
    assert version in installed_versions()
    cluster.create_topic("v", partitions=1, replication_factor=3)
    produce(cluster, "v", 1000, size=1000)
    state = cluster.partition_state("v", 0)
    assert state.hw == 1000 and len(state.isr) == 3
    follower = next(r for r in state.replicas if r != state.leader)
    rack = cluster.rack_of(follower)
    before = cluster.client_bytes(rack)
    assert consume_all(cluster, "v", 1000, rack=rack, client_rack=rack) == 1000
    assert bytes_served(cluster, rack, before)[follower] >= 1000 * 1000
