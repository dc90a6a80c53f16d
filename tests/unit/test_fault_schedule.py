"""Seeded fault schedules: reproducible, bounded, serialisable, and free of contradictions."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from highwater.faults.common import FaultError
from highwater.faults.conflicts import conflict
from highwater.faults.schedule import DEFAULT_MIX, Schedule, ScheduleConfig
from highwater.faults.spec import FaultKind
from tests.unit.fault_topology import topo

T = topo()
CONFIG = ScheduleConfig(length=600, duration=(2, 20), gap=(0, 10), partitions=("hw/0", "hw/1"))


def test_same_seed_same_schedule_exactly() -> None:
    a = Schedule.generate(T, 1234, CONFIG)
    b = Schedule.generate(T, 1234, CONFIG)
    assert a == b
    assert a.to_json() == b.to_json()
    assert len(a.faults) > 10


def test_different_seeds_differ() -> None:
    schedules = {Schedule.generate(T, s, CONFIG).to_json() for s in range(10)}
    assert len(schedules) == 10


def test_json_round_trip() -> None:
    for conf in (CONFIG, ScheduleConfig(concurrency=3, length=200, toxicity=(0.2, 0.9)), ScheduleConfig()):
        s = Schedule.generate(T, 7, conf)
        back = Schedule.from_json(s.to_json())
        assert back == s
        assert back.to_json() == s.to_json()
        assert json.loads(s.to_json(indent=2))["format"] == "highwater.schedule/1"
        back.check_topology(T)


def test_reproducible_across_processes() -> None:
    """The schedule must not depend on the hash seed (set iteration order)."""
    import subprocess
    import sys

    code = (
        "from highwater.faults.schedule import Schedule, ScheduleConfig; from highwater.harness.topology import Ports, Topology;"
        "t = Topology.build(brokers=5, racks=3, slot=0, ports=Ports(9091, 9093, (9100, 9101, 9102), 8474));"
        "print(Schedule.generate(t, 99, ScheduleConfig(length=300, partitions=('hw/0',))).to_json())"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(h), "PYTHONPATH": "."},
        ).stdout
        for h in (1, 2)
    }
    assert len(outs) == 1
    assert outs.pop().strip() == Schedule.generate(T, 99, ScheduleConfig(length=300, partitions=("hw/0",))).to_json()


@pytest.mark.parametrize("seed", range(15))
@pytest.mark.parametrize("concurrency", [1, 3])
def test_bounds_and_no_overlapping_contradictions(seed: int, concurrency: int) -> None:
    conf = ScheduleConfig(length=400, duration=(3, 25), gap=(1, 8), concurrency=concurrency, partitions=("hw/0",))
    s = Schedule.generate(T, seed, conf)
    prev_start = -1.0
    for f in s.faults:
        assert f.start >= prev_start
        prev_start = f.start
        assert 3 <= f.duration <= 25
        assert f.end <= conf.length + 1e-9
        f.spec.validate(T)
        assert len(s.active_at(f.start)) <= concurrency
    for i, a in enumerate(s.faults):
        for b in s.faults[i + 1 :]:
            if a.overlaps(b.start, b.end):
                assert conflict(T, a.spec, b.spec) is None, (a, b)
    if concurrency == 1:
        for a, b in zip(s.faults, s.faults[1:]):
            assert b.start - a.end >= 1 - 1e-9  # the gap is respected


def test_overlap_actually_happens_with_concurrency() -> None:
    s = Schedule.generate(T, 3, ScheduleConfig(length=600, duration=(20, 40), gap=(0, 5), concurrency=3))
    assert any(len(s.active_at(f.start)) > 1 for f in s.faults)


def test_mix_is_respected() -> None:
    conf = ScheduleConfig(length=600, duration=(1, 2), gap=(0, 1), mix=(("latency", 1), ("pause", 1), ("kill", 0)))
    kinds = Counter(f.spec.kind for f in Schedule.generate(T, 5, conf).faults)
    assert set(kinds) == {FaultKind.LATENCY, FaultKind.PAUSE}
    for f in Schedule.generate(T, 5, conf).faults:
        if f.spec.kind is FaultKind.LATENCY:
            assert 50 <= f.spec.param("latency") <= 2000
            assert 0 <= f.spec.param("jitter") <= f.spec.param("latency") / 4 + 1


def test_default_mix_covers_every_kind() -> None:
    conf = ScheduleConfig(length=1500, duration=(1, 3), gap=(0, 2), partitions=("hw/0",))
    kinds = {f.spec.kind for f in Schedule.generate(T, 11, conf).faults}
    # client, disk, clock, corruption and release kinds weigh 0 by default
    assert kinds == {
        k
        for k in FaultKind
        if not k.is_client
        and not k.is_disk
        and not k.is_clock
        and not k.is_corruption
        and k not in (FaultKind.ROLL, FaultKind.FINALIZE)
    }
    assert {k for k, _ in DEFAULT_MIX} == {k.value for k in FaultKind}


def test_a_mix_with_client_faults_draws_client_targets() -> None:
    mix = {"client_kill": 1.0, "client_freeze": 1.0, "client_restart": 1.0}
    conf = ScheduleConfig(length=600, duration=(1, 3), gap=(0, 2), mix=mix, groups=("g",))
    faults = Schedule.generate(T, 5, conf).faults
    assert {f.spec.kind for f in faults} == {k for k in FaultKind if k.is_client}
    targets = {str(f.spec.target) for f in faults}
    assert "group:g" in targets and any(t.startswith("consumers:") for t in targets), targets


def test_small_and_dedicated_topologies() -> None:
    for t in (topo(1, 1), topo(2, 2), topo(3, 1, controllers=3)):
        s = Schedule.generate(t, 1, ScheduleConfig(length=300, duration=(1, 5), gap=(0, 3)))
        assert s.faults
        for f in s.faults:
            f.spec.validate(t)


def test_events_heal_before_fault_at_equal_times() -> None:
    s = Schedule.generate(T, 2, ScheduleConfig(length=300, duration=(1, 5), gap=(0, 0.0)))
    events = s.events()
    assert len(events) == 2 * len(s.faults)
    assert [e[0] for e in events] == sorted(e[0] for e in events)
    for (t1, k1, _), (t2, k2, _) in zip(events, events[1:]):
        if t1 == t2:
            assert not (k1 == "fault" and k2 == "heal")


@pytest.mark.parametrize(
    "kwargs,fragment",
    [
        ({"length": 0}, "length"),
        ({"duration": (5, 1)}, "duration"),
        ({"duration": (0, 1)}, "duration"),
        ({"gap": (-1, 1)}, "gap"),
        ({"concurrency": 0}, "concurrency"),
        ({"mix": (("explode", 1.0),)}, "unknown fault kind"),
        ({"mix": (("kill", -1),)}, "weight"),
        ({"mix": (("kill", 0),)}, "no kind with a positive weight"),
        ({"partitions": ("nopartition",)}, "malformed target"),
        ({"toxicity": (0.5, 2.0)}, "toxicity"),
    ],
)
def test_bad_config(kwargs: dict, fragment: str) -> None:
    with pytest.raises(FaultError, match=fragment):
        ScheduleConfig(**kwargs)


def test_bad_json_and_wrong_topology() -> None:
    with pytest.raises(FaultError, match="not a fault schedule"):
        Schedule.from_json('{"format": "other"}')
    with pytest.raises(FaultError, match="not JSON"):
        Schedule.from_json("{")
    data = json.loads(Schedule.generate(T, 1, CONFIG).to_json())
    data["faults"][0]["fault"]["kind"] = "explode"
    with pytest.raises(FaultError, match="unknown fault kind"):
        Schedule.from_dict(data)
    data = json.loads(Schedule.generate(T, 1, CONFIG).to_json())
    data["config"]["colour"] = 1
    with pytest.raises(FaultError, match="unknown schedule config"):
        Schedule.from_dict(data)
    with pytest.raises(FaultError, match="generated for"):
        Schedule.generate(T, 1, CONFIG).check_topology(topo(3, 3))


def test_groups_add_their_coordinator_and_leave_other_schedules_alone() -> None:
    """``groups`` adds ``coordinator:group/<id>`` as a target and as the peer of a clients
    link fault; a config without groups draws exactly what it drew before (and its JSON has no
    ``groups`` key), so every recorded schedule replays."""
    from dataclasses import replace

    grouped = replace(CONFIG, groups=("hw-group",))
    plain, with_groups = Schedule.generate(T, 7, CONFIG), Schedule.generate(T, 7, grouped)
    assert "groups" not in json.loads(plain.to_json())["config"]
    assert Schedule.from_json(with_groups.to_json()) == with_groups
    texts = [str(sf.spec) for s in range(20) for sf in Schedule.generate(T, s, grouped).faults]
    assert any(" --target coordinator:group/hw-group" in t for t in texts)
    assert any(t.startswith("cut --target clients:") and "--peer coordinator:group/hw-group" in t for t in texts)
    with pytest.raises(FaultError):
        ScheduleConfig(groups=("bad/group",))


def test_member_targets_draw_a_majority_one_member_and_the_group_leader() -> None:
    """``member_targets`` adds ``members:<g>``, ``members:<g>:1`` and ``group-leader:<g>`` to
    what client faults draw; without it a schedule draws as before (and its JSON says nothing)."""
    from dataclasses import replace

    mix = {"client_kill": 1.0, "client_freeze": 1.0, "client_restart": 1.0}
    base = ScheduleConfig(length=600, duration=(1, 3), gap=(0, 2), mix=mix, groups=("g",))
    members = replace(base, member_targets=("group-leader", "members"))
    assert members.member_targets == ("members", "group-leader")  # one order, whatever was given
    drawn = Schedule.generate(T, 5, members)
    assert Schedule.from_json(drawn.to_json()) == drawn
    targets = Counter(str(f.spec.target) for f in drawn.faults)
    assert {"members:g", "members:g:1", "group-leader:g", "group:g"} <= set(targets), targets
    plain = Schedule.generate(T, 5, base)
    assert "member_targets" not in json.loads(plain.to_json())["config"]
    assert not any(str(f.spec.target).startswith(("members:", "group-leader:")) for f in plain.faults)
    consumer_protocol = Schedule.generate(T, 5, replace(base, member_targets=("members",)))
    assert not any(str(f.spec.target).startswith("group-leader:") for f in consumer_protocol.faults)
    with pytest.raises(FaultError, match="member_targets takes"):
        replace(base, member_targets=("leader",))
    with pytest.raises(FaultError, match="needs groups"):
        ScheduleConfig(mix=mix, member_targets=("members",))


def test_a_drawn_one_way_cut_goes_the_way_links_go() -> None:
    """A broker never connects to a client, so a one-way cut of a clients party drawn ``in``
    (its peers' links toward it) would cut nothing when its time came (2 of a 2-hour hunt's
    faults, 2026-12-07): every drawn cut with a static target and peer has links to cut, and the
    clients' one-way cuts flow out of them. Seeds whose cut could happen draw what they drew."""
    from highwater.faults.scope import possible_links
    from highwater.faults.spec import Flow
    from highwater.faults.target import ClientsTarget

    conf = ScheduleConfig(length=3000, duration=(2, 20), gap=(0, 5), mix=(("cut", 1.0),), partitions=("hw/0",))
    one_way: Counter[tuple[str, str]] = Counter()
    for seed in range(20):
        for f in Schedule.generate(T, seed, conf).faults:
            spec = f.spec
            static = spec.target.static_parties(T) is not None and (
                spec.peer is None or spec.peer.static_parties(T) is not None
            )
            if static:
                assert possible_links(T, spec), str(spec)
            if spec.flow is not Flow.BOTH and isinstance(spec.target, ClientsTarget):
                one_way[("clients", spec.flow.value)] += 1
    assert one_way[("clients", "out")] > 0 and one_way[("clients", "in")] == 0, one_way
