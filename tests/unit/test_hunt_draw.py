"""A hunt's draws: every choice from the seed alone, windows that outlast the timed checks'
bounds, no conflicting faults together, only the kinds the cluster can apply, refusals honoured."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from highwater.faults.conflicts import conflict
from highwater.faults.schedule import ScheduledFault
from highwater.faults.spec import FaultKind, parse_fault
from highwater.hunt import hunt_topic, retargeted
from highwater.hunt_draw import (
    LINGER_MS,
    MAX_IN_FLIGHT,
    MAX_POLL_RECORDS,
    NEVER_DRAWN,
    WORKLOADS,
    Draw,
    HuntError,
    HuntSpace,
    draw,
    hunt_mix,
    power_losses_at_once,
    schedule_for,
)
from highwater.hunt_draw import schedule_length as length_of
from tests.unit.fault_topology import topo

T = topo(brokers=3, racks=3)
PLAIN_CLUSTER = tuple(k.value for k in FaultKind if not (k.is_disk or k.is_clock))
SPACE = HuntSpace(("4.3.1", "4.4.0"), ("java", "kafka-python"), WORKLOADS, 90.0)
SHORTEST, TAIL = 29.0, 15.0


def _schedule(d: Draw, kinds: tuple[str, ...] = PLAIN_CLUSTER, space: HuntSpace = SPACE):  # type: ignore[no-untyped-def]
    group = f"{hunt_topic(d)}-group" if d.settings.get("consumer_mode") == "subscribe" else None
    return schedule_for(
        d, T, kinds, topic=hunt_topic(d), length=length_of(space, SHORTEST, TAIL), shortest=SHORTEST, group=group
    )


@given(st.integers(min_value=0, max_value=2**31))
@settings(max_examples=60, deadline=None)
def test_a_draw_and_its_schedule_come_from_the_seed_alone(seed: int) -> None:
    a, b = draw(SPACE, seed), draw(SPACE, seed)
    assert a == b
    assert _schedule(a).to_json() == _schedule(b).to_json()
    assert Draw.from_json(a.to_json()) == a  # recorded in the manifest, read back as drawn


def test_the_draws_reach_every_release_client_workload_and_setting() -> None:
    draws = [draw(SPACE, s) for s in range(300)]
    assert {d.release for d in draws} == set(SPACE.releases)
    assert {d.client for d in draws} == set(SPACE.clients)
    assert {d.workload for d in draws} == set(WORKLOADS)
    assert {d.settings["idempotence"] for d in draws if d.workload == "plain"} == {True, False}
    assert {d.settings["partitions"] for d in draws} == set(range(1, 7))
    assert {d.settings.get("group_protocol") for d in draws if d.workload == "group"} == {"classic", "consumer"}
    assert {d.concurrency for d in draws} == {1, 2}
    assert {d.settings["linger_ms"] for d in draws} == set(LINGER_MS)
    assert {d.settings["max_poll_records"] for d in draws} == set(MAX_POLL_RECORDS)
    assert {d.settings.get("max_in_flight") for d in draws if d.settings["idempotence"]} == set(MAX_IN_FLIGHT)
    assert {d.settings.get("client_rack", True) for d in draws} == {True, False}


def test_requests_in_flight_are_drawn_only_with_idempotence() -> None:
    """Without idempotence a retry could overtake a later batch: the producer keeps one in flight."""
    for d in (draw(SPACE, s) for s in range(300)):
        assert ("max_in_flight" in d.settings) == bool(d.settings["idempotence"]), d


def test_the_client_settings_are_drawn_after_everything_recorded_before_them() -> None:
    """Seeds drawn before the client settings keep their release, client, workload and schedule."""
    d = draw(SPACE, 7)  # what seed 7 drew before (1796035739: its schedule's seed then)
    later = ("linger_ms", "max_in_flight", "max_poll_records", "client_rack")
    bare = {k: v for k, v in d.settings.items() if k not in later}
    assert (d.release, d.client, d.workload, d.concurrency, d.schedule_seed) == ("4.4.0", "java", "copy", 1, 1796035739)
    assert bare == {
        "partitions": 6,
        "producers": 1,
        "rate": 20.0,
        "value_size": 0,
        "idempotence": True,
        "isolation_level": "read_committed",
        "transactional": True,
        "read_uncommitted_consumers": 1,
        "txn_records": 1,
        "txn_abort_share": 0.0,
        "copiers": 2,
    }


def test_a_pair_that_cannot_run_a_workload_never_draws_it() -> None:
    def supports(release: str, client: str) -> tuple[str, ...]:
        return ("plain", "group", "transactional", "copy") if client == "java" else ("plain",)

    draws = [draw(SPACE, s, supports) for s in range(200)]
    assert {d.workload for d in draws if d.client == "kafka-python"} == {"plain"}
    assert "share" not in {d.workload for d in draws}
    # no KIP-848 where the pair lacks it ("group-consumer" not supported): classic only
    assert {d.settings["group_protocol"] for d in draws if d.workload == "group"} == {"classic"}


@given(st.integers(min_value=0, max_value=2**31))
@settings(max_examples=60, deadline=None)
def test_every_window_outlasts_the_timed_checks_and_no_conflicting_faults_overlap(seed: int) -> None:
    faults = _schedule(draw(SPACE, seed)).faults
    for f in faults:
        assert f.duration >= SHORTEST
        assert f.start + f.duration <= length_of(SPACE, SHORTEST, TAIL) + 1e-6  # the tail stays calm
        assert f.spec.kind.value in PLAIN_CLUSTER
    for i, f in enumerate(faults):
        for g in faults[i + 1 :]:
            if f.start < g.end and g.start < f.end:
                assert conflict(T, f.spec, g.spec) is None


def test_a_consumers_fault_names_only_a_rack_some_drawn_consumer_sets() -> None:
    """The hunt of 2026-12-06 drew ``client-freeze --target consumers:no-rack``, which names no
    consumer (each sets its broker rack's ``client.rack``, or none at all), so the run went on
    without its fault. Now a consumers target names a rack the draw's consumers set, or all of them."""
    space = HuntSpace(("4.4.0",), ("java",), WORKLOADS, 90.0)
    seen: dict[str, set[str]] = {"on": set(), "off": set()}
    for seed in range(400):
        d = draw(space, seed)
        on = d.settings.get("client_rack") is not False and d.workload != "share"
        for f in _schedule(d, space=space).faults:
            target = str(f.spec.target)
            if f.spec.kind.is_client and target.startswith("consumers"):
                seen["on" if on else "off"].add(target)
    assert seen["on"] == {f"consumers:{r}" for r in T.racks}
    assert seen["off"] == {"consumers"}


def test_a_schedule_config_without_consumer_racks_draws_the_topology_s_client_racks() -> None:
    """Schedules recorded before ``consumer_racks`` existed (the chaos suite's) draw as they did,
    ``no-rack`` included; an empty tuple draws every consumer."""
    from highwater.faults.schedule import Schedule, ScheduleConfig

    def targets(config: ScheduleConfig) -> set[str]:
        out: set[str] = set()
        for seed in range(60):
            out |= {str(f.spec.target) for f in Schedule.generate(T, seed, config).faults}
        return out

    mix = (("client_freeze", 1.0),)
    assert targets(ScheduleConfig(length=200.0, mix=mix)) == {f"consumers:{r}" for r in T.client_racks}
    assert targets(ScheduleConfig(length=200.0, mix=mix, consumer_racks=())) == {"consumers"}
    config = ScheduleConfig(length=200.0, mix=mix, consumer_racks=("r1",))
    assert ScheduleConfig.from_dict(config.to_dict()) == config
    assert "consumer_racks" not in ScheduleConfig(mix=mix).to_dict()


def test_the_mix_weighs_only_what_the_cluster_can_apply_and_never_corruption() -> None:
    plain = dict(hunt_mix(PLAIN_CLUSTER, 75.0))
    assert plain["client_freeze"] > 0 and plain["latency"] > 0 and plain["kill"] > 0
    assert plain["power_loss"] == plain["clock_jump"] == 0.0  # no lossy disks, no faked clocks here
    assert plain["rolling_restart"] == 0.0  # a 75 s schedule cannot hold one
    every = dict(hunt_mix(tuple(k.value for k in FaultKind), 300.0))
    assert every["power_loss"] > 0 and every["clock_drift"] > 0 and every["rolling_restart"] > 0
    assert all(every[k] == 0.0 for k in NEVER_DRAWN)


def test_disk_and_clock_faults_are_drawn_on_a_cluster_that_has_them() -> None:
    every = tuple(k.value for k in FaultKind)
    drawn = {f.spec.kind for s in range(120) for f in _schedule(draw(SPACE, s), every).faults}
    assert any(k.is_disk for k in drawn) and any(k.is_clock for k in drawn)
    assert not {FaultKind.TRUNCATE_FILE, FaultKind.FLIP_BITS} & drawn


def test_a_run_too_short_for_one_window_and_the_tail_is_refused_in_one_line() -> None:
    with pytest.raises(HuntError, match="cannot hold one fault window.*--seconds 44"):
        length_of(HuntSpace(("4.4.0",), ("java",), ("plain",), 40.0), SHORTEST, TAIL)


def test_an_unknown_workload_or_an_empty_space_is_refused() -> None:
    with pytest.raises(HuntError, match="unknown workload"):
        HuntSpace(("4.4.0",), ("java",), ("streams",))
    with pytest.raises(HuntError, match="at least one release"):
        HuntSpace((), ("java",))


def test_a_schedule_retargeted_to_a_try_s_topic_names_only_the_new_topic() -> None:
    d = next(d for d in (draw(SPACE, s) for s in range(100)) if d.workload == "group")
    s = _schedule(d)
    moved = retargeted(s, hunt_topic(d), "hunt-x-try-1")
    assert hunt_topic(d) not in moved.to_json()
    assert [f.spec.kind for f in moved.faults] == [f.spec.kind for f in s.faults]
    assert [(f.start, f.duration) for f in moved.faults] == [(f.start, f.duration) for f in s.faults]


def test_the_hunt_integration_test_s_seeds_draw_what_it_expects() -> None:
    """tests/integration/test_hunt.py: seed 58 has no latency fault, 59 a latency and one more."""
    space = HuntSpace(("4.4.0",), ("kafka-python",), ("plain",), 60.0)
    first, second = (_schedule(draw(space, s), space=space) for s in (58, 59))
    assert "latency" not in [f.spec.kind.value for f in first.faults]
    assert sorted(f.spec.kind.value for f in second.faults) == ["client_freeze", "latency"]


def _losses(*faults: tuple[float, float, str]) -> tuple[ScheduledFault, ...]:
    return tuple(
        ScheduledFault(i, start, length, parse_fault(f"power-loss --target {target}"))
        for i, (start, length, target) in enumerate(faults)
    )


def test_power_losses_apart_or_of_one_broker_take_one_copy_and_the_policy_stays_strict() -> None:
    """One broker's power loss at a time leaves every acknowledged write on the other in-sync
    copies: the run records 1, below min.insync.replicas, so a lost write stays a violation."""
    assert power_losses_at_once(_losses(), T) == 0
    assert power_losses_at_once(_losses((5, 30, "broker:1")), T) == 1
    assert power_losses_at_once(_losses((5, 30, "leader:t/0"), (40, 30, "broker:2")), T) == 1
    assert power_losses_at_once(_losses((5, 30, "broker:1"), (10, 30, "broker:1")), T) == 1
    assert power_losses_at_once(_losses((5, 30, "minority"), (40, 30, "controller")), T) == 1


def test_overlapping_power_losses_of_two_brokers_take_two_copies() -> None:
    """Two brokers losing power at once may lose what only their page caches held: the run
    records 2, so the policy allows the losses such a correlated failure may cause."""
    assert power_losses_at_once(_losses((5, 30, "broker:1"), (20, 30, "rack:rack-b")), T) == 2
    assert power_losses_at_once(_losses((5, 30, "leader:t/0"), (20, 30, "controller")), T) == 2
    assert power_losses_at_once(_losses((5, 30, "brokers")), T) == 3


def test_the_second_client_is_one_that_can_run_the_draw() -> None:
    """A shrunk share schedule is not played on kafka-python (no share consumer): the next
    client that has one is, and with none left there is no second client (the hunt goes on)."""
    from pathlib import Path

    from highwater.hunt import Hunter, HuntSettings

    said: list[str] = []
    space = HuntSpace(("4.4.0",), ("confluent-kafka", "kafka-python", "java"), WORKLOADS, 90.0)
    hunter = Hunter(HuntSettings(space, runs=1, results=Path("/nowhere")), said.append)
    share = Draw(1, "4.4.0", "confluent-kafka", "share")
    assert hunter._second_client(share) == "java"
    assert said == ["hunt seed 1: kafka-python cannot run a share workload on Kafka 4.4.0"]
    alone = Hunter(HuntSettings(space, runs=1, second_client="kafka-python"), said.append)
    assert alone._second_client(share) is None
    assert hunter._second_client(Draw(2, "4.4.0", "java", "plain")) == "confluent-kafka"
