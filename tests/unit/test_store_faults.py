"""Faults of the tiered remote store (``--target store``): the disk faults it takes (slowed,
full, failing, losing what was not fsynced) and the ones it does not, disk-fail on nothing else, and the one-line refusal on a
cluster whose store is not on lossyfs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from highwater.core.policy import RunConfig, allowed
from highwater.faults.capability import refusal
from highwater.faults.common import FaultError
from highwater.faults.spec import FaultKind, parse_fault
from highwater.faults.target import StoreTarget, TargetKind, parse_target
from highwater.harness.tiered import STORE_PARTY
from tests.unit.fault_topology import topo


def test_store_is_a_target_of_its_own() -> None:
    target = parse_target("store")
    assert target == StoreTarget() and str(target) == "store" and target.kind is TargetKind.STORE
    assert target.static_parties(topo(brokers=3)) == {STORE_PARTY}
    with pytest.raises(FaultError, match="store takes no argument"):
        parse_target("store:1")


@pytest.mark.parametrize(
    "fault",
    ["disk-fail --target store", "disk-full --target store", "disk-slow --target store", "power-loss --target store"],
)
def test_the_store_takes_its_disk_faults(fault: str) -> None:
    assert parse_fault(fault).target.kind is TargetKind.STORE


@pytest.mark.parametrize(
    "fault, why",
    [
        ("kill --target store", "it takes disk-fail, disk-full, disk-slow, power-loss, not kill"),
        ("restart --target store", "it takes disk-fail, disk-full, disk-slow, power-loss, not restart"),
        ("disk-fail --target broker:1", "disk-fail acts on the tiered remote store only"),
    ],
)
def test_what_the_store_does_not_take_is_one_line(fault: str, why: str) -> None:
    with pytest.raises(FaultError, match=why):
        parse_fault(fault)


class _Disks:
    """A backend with the disk layer, tiered or not."""

    def __init__(self, tiered: bool) -> None:
        self.spec = SimpleNamespace(tiered=tiered)
        self.backend_name = "local"

    @property
    def disks_enabled(self) -> bool:
        return True

    def disk(self, key: Any) -> Any:
        raise AssertionError("not asked")


def test_a_store_fault_needs_a_tiered_cluster_on_lossy_disks() -> None:
    fault = parse_fault("disk-fail --target store")
    assert refusal(_Disks(tiered=True), [fault]) is None
    error = refusal(_Disks(tiered=False), [fault])
    assert error is not None and "needs a tiered cluster whose disks are lossy" in str(error)
    # a node's disk fault on the same untiered cluster is fine
    assert refusal(_Disks(tiered=False), [parse_fault("disk-full --target broker:1")]) is None
    assert FaultKind.DISK_FAIL.is_disk


def test_the_policy_excuses_what_a_remote_store_that_lost_its_unsynced_files_took() -> None:
    """A run whose remote store lost what it had not fsynced (the header's ``remote_store_loss``)
    may lose acknowledged writes, and its consumers may wait at the lost segments; a skip, a
    rewind, a missed truncation or a read of what was never committed is never excused, and a
    run without the loss excuses nothing."""
    base = {"acks": "all", "min_insync_replicas": 2}
    lost = {**base, "remote_store_loss": True}
    for check in ("lost-write", "progress"):
        assert allowed(check, base) is None
        assert "remote store lost the segments it had not fsynced" in (allowed(check, lost) or "")
    for check in ("poll-skip", "nonmonotonic-poll", "truncation-undetected", "duplicate", "uncommitted-read"):
        assert allowed(check, {**lost, "idempotence": True}) is None, check


def test_the_policy_reads_the_remote_store_s_loss_from_the_header() -> None:
    assert RunConfig.from_header({"remote_store_loss": True}).remote_store_loss
    assert not RunConfig.from_header({}).remote_store_loss
    assert not RunConfig.from_header({"remote_store_loss": "false"}).remote_store_loss


def test_a_catch_up_read_must_have_read_from_the_store(tmp_path: Any) -> None:
    """``assert_read_from_remote``: a run whose consumers returned no record while it was below
    the local log start (3.6.2's first half minute keeps every segment local) fails; one that
    did passes."""
    import json

    from highwater.core.run_dir import RunDir
    from highwater.suites.conformance.test_tiered import assert_read_from_remote

    run = RunDir(tmp_path)
    run.tiered_measures.write_text(json.dumps({"records": 15669, "remote_records": 0}))
    with pytest.raises(AssertionError, match="no record was read from the remote store"):
        assert_read_from_remote(run)
    run.tiered_measures.write_text(json.dumps({"records": 15633, "remote_records": 3665}))
    assert_read_from_remote(run)
