"""The release steps (``faults.release``): roll and finalize as fault specs, their order, their
refusals in one line, and that they contradict what they should (pure; no processes)."""

from __future__ import annotations

import pytest

from highwater.faults.capability import check_capabilities
from highwater.faults.common import FaultError
from highwater.faults.conflicts import conflict
from highwater.faults.release import path_refusal, roll_order, rollback_refusal
from highwater.faults.schedule import Schedule, ScheduleConfig
from highwater.faults.spec import FaultKind, parse_fault
from highwater.sweep import SweepError, path_ends, upgrade_paths
from tests.unit.fault_topology import topo
from tests.unit.test_backend import FakeBackend, FakeProcessBackend


def test_a_roll_takes_controllers_then_combined_nodes_then_brokers() -> None:
    dedicated = topo(3, 3, controllers=3)
    names = ["kafka-2", "controller-3", "kafka-1", "controller-1"]
    assert roll_order(dedicated, names) == ["controller-1", "controller-3", "kafka-1", "kafka-2"]
    assert roll_order(topo(3, 3), ["kafka-3", "kafka-1", "kafka-2"]) == ["kafka-1", "kafka-2", "kafka-3"]


def test_a_roll_names_its_release_and_round_trips() -> None:
    spec = parse_fault("roll --target brokers --release 4.4.0 --interval 2")
    assert spec.kind is FaultKind.ROLL and spec.param("release") == "4.4.0" and spec.param("interval") == 2.0
    assert parse_fault(str(spec)) == spec and spec.kind.heals_itself
    for bad in ("roll --target brokers", "roll --target brokers --release 4.4", "roll --target brokers --release x"):
        with pytest.raises(FaultError, match="roll needs --release MAJOR.MINOR.PATCH"):
            parse_fault(bad)


def test_finalize_goes_to_the_controller_and_defaults_to_the_newest_metadata_version() -> None:
    spec = parse_fault("finalize --target controller")
    assert spec.param("feature") == "metadata.version" and spec.param("level") == 0 and spec.kind.heals_itself
    assert parse_fault("finalize --target controller --feature transaction.version --level 2").param("level") == 2
    with pytest.raises(FaultError, match="finalize goes to the active controller"):
        parse_fault("finalize --target broker:1")


def test_a_roll_needs_release_control_and_finalize_needs_nothing_more() -> None:
    roll = parse_fault("roll --target brokers --release 4.4.0")
    for backend in (FakeBackend(), FakeProcessBackend()):
        with pytest.raises(FaultError) as err:
            check_capabilities(backend, [roll])
        assert str(err.value).startswith("fault 'roll' needs release control, which backend")
        check_capabilities(backend, [parse_fault("finalize --target controller")])


def test_a_roll_contradicts_a_fault_on_its_nodes_and_a_finalization_contradicts_none() -> None:
    t = topo(3, 3)
    roll = parse_fault("roll --target broker:2 --release 4.4.0")
    assert conflict(t, roll, parse_fault("kill --target broker:2")) is not None
    assert conflict(t, roll, parse_fault("kill --target broker:3")) is None
    finalize = parse_fault("finalize --target controller")
    assert conflict(t, finalize, parse_fault("kill --target controller")) is None


def test_a_schedule_draws_rolls_only_toward_a_release_it_is_given_and_never_a_finalization() -> None:
    with pytest.raises(FaultError, match="roll is drawn only with roll_to"):
        ScheduleConfig(mix=(("roll", 1.0), ("cut", 1.0)))
    with pytest.raises(FaultError, match="finalize is not drawn"):
        ScheduleConfig(mix=(("finalize", 1.0), ("cut", 1.0)), roll_to="4.4.0")
    with pytest.raises(FaultError, match="roll_to must be a release"):
        ScheduleConfig(roll_to="4.4")
    assert dict(ScheduleConfig().mix)["roll"] == 0.0 and dict(ScheduleConfig().mix)["finalize"] == 0.0
    config = ScheduleConfig(length=600, duration=(20, 40), mix=(("roll", 1.0), ("kill", 1.0)), roll_to="4.4.0")
    schedule = Schedule.generate(topo(3, 3), 7, config)
    rolls = [f.spec for f in schedule.faults if f.spec.kind is FaultKind.ROLL]
    assert rolls and all(r.param("release") == "4.4.0" for r in rolls)
    assert {str(r.target) for r in rolls} <= {"brokers", "broker:1", "broker:2", "broker:3"}
    assert Schedule.from_json(schedule.to_json()) == schedule and ScheduleConfig.from_dict(config.to_dict()) == config
    assert Schedule.generate(topo(3, 3), 7, config) == schedule  # seeded


def test_an_upgrade_path_is_refused_in_one_line_unless_it_goes_up_between_kraft_releases() -> None:
    assert path_refusal("3.9.1", "4.4.0") is None and path_refusal("3.3.1", "3.9.1") is None
    assert "not newer" in str(path_refusal("4.4.0", "3.9.1")) and "not newer" in str(path_refusal("4.4.0", "4.4.0"))
    assert "KRaft releases, 3.3.1 or newer" in str(path_refusal("3.2.3", "4.4.0"))
    assert "MAJOR.MINOR.PATCH" in str(path_refusal("3.9", "4.4.0"))


def test_a_roll_back_after_finalizing_beyond_the_old_release_is_refused_in_one_line() -> None:
    assert rollback_refusal("3.9.1", 21) is None  # 3.9 runs 3.9-IV0 (21): not finalized past it
    refused = rollback_refusal("3.9.1", 33)
    assert refused is not None and "finalized metadata.version 33" in refused and "21 at most" in refused
    assert rollback_refusal("4.4.0", 33) is None and rollback_refusal("9.9.0", 99) is None  # unknown line: Kafka says


def test_a_sweep_s_upgrade_paths_go_from_each_line_s_newest_patch_to_each_newer_one() -> None:
    releases = ["3.8.0", "3.8.1", "3.9.0", "3.9.1", "4.0.1", "4.4.0"]
    assert upgrade_paths(releases, "4.4.0") == ["3.8.1->4.4.0", "3.9.1->4.4.0", "4.0.1->4.4.0"]
    assert upgrade_paths(releases) == [
        "3.8.1->3.9.1",
        "3.8.1->4.0.1",
        "3.8.1->4.4.0",
        "3.9.1->4.0.1",
        "3.9.1->4.4.0",
        "4.0.1->4.4.0",
    ]
    assert path_ends("3.9.1->4.4.0") == ("3.9.1", "4.4.0")
    with pytest.raises(SweepError, match="--upgrade-to 3.9.0 is not the newest patch of its line"):
        upgrade_paths(releases, "3.9.0")
    with pytest.raises(SweepError, match="no upgrade path among 4.4.0"):
        upgrade_paths(["4.4.0"])
