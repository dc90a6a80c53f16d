"""Fault specs as data: parsing, rendering, JSON, validation, scope and contradictions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from highwater.faults.common import Direction, FaultError
from highwater.faults.conflicts import check_no_conflicts, conflict
from highwater.faults.scope import possible_links, possible_nodes, resolve_link_fault, resolve_links
from highwater.faults.spec import FaultKind, FaultSpec, Flow, parse_command, parse_fault
from highwater.faults.target import (
    AllTarget,
    BridgeTarget,
    BrokersTarget,
    BrokerTarget,
    ClientsTarget,
    ControllersTarget,
    ControllerTarget,
    FollowerInTarget,
    LeaderTarget,
    MinorityTarget,
    NodeTarget,
    RackTarget,
    Target,
    TargetKind,
    parse_target,
)
from highwater.harness.topology import Link, Listener
from tests.unit.fault_topology import topo

T = topo()


# -- targets ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("broker:2", BrokerTarget(2)),
        ("node:controller-1", NodeTarget("controller-1")),
        ("leader:topic/0", LeaderTarget("topic", 0)),
        ("leader:my.topic_x-1/12", LeaderTarget("my.topic_x-1", 12)),
        ("follower-in:rack-b", FollowerInTarget("rack-b")),
        ("follower-in:rack-b@hw/3", FollowerInTarget("rack-b", "hw", 3)),
        ("controller", ControllerTarget()),
        ("controllers", ControllersTarget()),
        ("brokers", BrokersTarget()),
        ("minority", MinorityTarget()),
        ("minority:42", MinorityTarget(seed=42)),
        ("bridge:7", BridgeTarget(seed=7)),
        ("rack:rack-b", RackTarget("rack-b")),
        ("clients:rack-a", ClientsTarget("rack-a")),
        ("all", AllTarget()),
    ],
)
def test_target_parse_and_render_round_trip(text: str, expected: Target) -> None:
    assert parse_target(text) == expected
    assert str(expected) == text
    assert expected.kind is TargetKind(text.partition(":")[0])  # the union's tag


def test_targets_of_different_kinds_never_compare_equal() -> None:
    assert MinorityTarget(seed=3) != BridgeTarget(seed=3)
    assert RackTarget("rack-a") != ClientsTarget("rack-a")
    assert len({parse_target("minority:3"), MinorityTarget(seed=3)}) == 1


def test_follower_in_takes_both_topic_and_partition_or_neither() -> None:
    with pytest.raises(FaultError, match="both a topic and a partition"):
        FollowerInTarget("rack-b", "hw")


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("leader", "needs an argument"),
        ("leader:topic", "leader:<topic>/<partition>"),
        ("leader:topic/x", "leader:<topic>/<partition>"),
        ("broker:two", "integer id"),
        ("controller:1", "takes no argument"),
        ("minority:abc", "integer seed"),
        ("follower-in:rack-b@t", "follower-in"),
        ("wizard:1", "unknown target"),
        ("", "unknown target"),
        ("rack:", "needs an argument"),
    ],
)
def test_malformed_targets(text: str, fragment: str) -> None:
    with pytest.raises(FaultError, match=fragment) as err:
        parse_target(text)
    assert "\n" not in str(err.value)


def test_target_validation_against_topology() -> None:
    for bad in ("broker:9", "rack:rack-z", "clients:rack-q", "follower-in:rack-z", "node:kafka-7"):
        with pytest.raises(FaultError, match="no "):
            parse_target(bad).validate(T)
    with pytest.raises(FaultError, match="not a broker"):
        parse_target("broker:1001").validate(topo(3, 3, controllers=1))
    parse_target("node:1001").validate(topo(3, 3, controllers=1))


@dataclass
class FakeView:
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    replica_sets: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    controller: int | None = 1
    coordinators: dict[tuple[str, str], int] = field(default_factory=dict)

    def leader(self, topic: str, partition: int) -> int | None:
        return self.leaders.get((topic, partition))

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.replica_sets.get((topic, partition), [])

    def active_controller(self) -> int | None:
        return self.controller

    def coordinator(self, key_type: str, key: str) -> int | None:
        return self.coordinators.get((key_type, key))


def test_coordinator_targets_parse_render_and_resolve() -> None:
    view = FakeView(coordinators={("txn", "t-producer-0"): 2, ("group", "g1"): 3})
    for text, node in (("coordinator:txn/t-producer-0", "kafka-2"), ("coordinator:group/g1", "kafka-3")):
        target = parse_target(text)
        assert str(target) == text and target.is_dynamic and target.single
        assert target.resolve(T, view) == {node}
    with pytest.raises(FaultError, match="no txn coordinator"):
        parse_target("coordinator:txn/unknown").resolve(T, view)
    for bad in ("coordinator:txn", "coordinator:share/x", "coordinator:group/"):
        with pytest.raises(FaultError, match="coordinator:txn/<transactional id>"):
            parse_target(bad)


def test_resolve_dynamic_targets() -> None:
    view = FakeView({("hw", 0): 1}, {("hw", 0): [1, 2, 5, 3]}, controller=3)
    assert parse_target("leader:hw/0").resolve(T, view) == {"kafka-1"}
    # rack-b holds kafka-2 and kafka-5 (round robin over 3 racks): the lowest id follower
    assert parse_target("follower-in:rack-b@hw/0").resolve(T, view) == {"kafka-2"}
    assert parse_target("follower-in:rack-b").resolve(T, view, default_partition=("hw", 0)) == {"kafka-2"}
    assert parse_target("controller").resolve(T, view) == {"kafka-3"}
    assert parse_target("minority").resolve(T, seed=3) == parse_target("minority:3").resolve(T)
    with pytest.raises(FaultError, match="no follower in rack-a"):
        parse_target("follower-in:rack-a@hw/0").resolve(T, view)  # kafka-1 is the leader
    with pytest.raises(FaultError, match="no leader"):
        parse_target("leader:other/0").resolve(T, view)
    with pytest.raises(FaultError, match="live cluster"):
        parse_target("leader:hw/0").resolve(T)


class MovingLeaderView(FakeView):
    """Leadership moves after every question, as it may during a chaos run."""

    def leader(self, topic: str, partition: int) -> int | None:
        now = self.leaders[(topic, partition)]
        self.leaders[(topic, partition)] = 2 if now == 1 else 1
        return now


def test_link_fault_parties_are_the_ones_whose_links_are_cut() -> None:
    view = MovingLeaderView({("hw", 0): 1})
    links, parties = resolve_link_fault(T, parse_fault("cut --target leader:hw/0"), view)
    assert parties == {"kafka-1"}
    assert links and all("kafka-1" in (l.src, l.dst) for l in links)
    assert not any("kafka-2" in (l.src, l.dst) and "kafka-1" not in (l.src, l.dst) for l in links)
    links2, parties2 = resolve_link_fault(T, parse_fault("cut --target leader:hw/0"), view)
    assert parties2 == {"kafka-2"} and all("kafka-2" in (l.src, l.dst) for l in links2)
    bridge_links, none = resolve_link_fault(T, parse_fault("cut --target bridge:7"))
    assert bridge_links and none == frozenset()


# -- specs ----------------------------------------------------------------------------------------


def test_parse_latency_with_everything() -> None:
    spec = parse_fault(
        "latency --target follower-in:rack-b@hw/0 --peer leader:hw/0 --flow out "
        "--latency 40000 --jitter=500 --direction upstream --toxicity 0.5 "
        "--listener replication"
    )
    assert spec.kind is FaultKind.LATENCY
    assert spec.target == FollowerInTarget("rack-b", "hw", 0)
    assert spec.peer == LeaderTarget("hw", 0)
    assert spec.flow is Flow.OUT
    assert spec.param("latency") == 40000 and spec.param("jitter") == 500
    assert spec.streams == (Direction.UPSTREAM,)
    assert spec.effective_toxicity == 0.5
    assert spec.listeners == (Listener.REPLICATION,)


def test_defaults_are_filled_and_canonical() -> None:
    a = parse_fault("latency --target broker:2")
    b = FaultSpec.make("latency", "broker:2", latency=1000, jitter=0)
    assert a == b and hash(a) == hash(b)
    assert a.streams == (Direction.DOWNSTREAM,)
    assert parse_fault("timeout --target broker:1 --direction both").streams == (
        Direction.UPSTREAM,
        Direction.DOWNSTREAM,
    )
    assert parse_fault("cut --target broker:1").streams == ()


@pytest.mark.parametrize(
    "text",
    [
        "cut --target broker:2",
        "cut --target broker:2 --flow in",
        "cut --target clients:rack-b --peer broker:2",
        "cut --target bridge:5",
        "cut --target minority:9 --listener controller,replication",
        "timeout --target rack:rack-a --timeout 100 --direction both",
        "latency --target leader:t/0 --latency 250 --jitter 20 --toxicity 0.25",
        "bandwidth --target broker:3 --rate 10",
        "slow-close --target broker:1 --delay 50",
        "reset-peer --target broker:1 --timeout 10",
        "slicer --target broker:1 --average-size 10 --size-variation 5 --delay 100",
        "kill --target leader:hw/0",
        "stop --target broker:1",
        "pause --target controller",
        "restart --target follower-in:rack-b --clean true",
        "rolling-restart --target brokers --interval 2.5",
    ],
)
def test_spec_round_trips_through_args_and_json(text: str) -> None:
    spec = parse_fault(text)
    assert parse_fault(spec.to_args()) == spec
    assert parse_fault(str(spec)) == spec
    assert FaultSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    spec.validate(T)


def test_parse_command_duration() -> None:
    cmd = parse_command(["kill", "--target", "broker:2", "--duration", "30"])
    assert cmd.duration == 30.0 and cmd.spec.kind is FaultKind.KILL
    with pytest.raises(FaultError, match="positive"):
        parse_command("kill --target broker:2 --duration 0")


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("explode --target broker:1", "unknown fault kind 'explode'"),
        ("", "no fault kind"),
        ("latency", "needs --target"),
        ("latency --target", "needs a value"),
        ("latency --target wizard", "unknown target"),
        ("latency --target broker:x", "malformed target"),
        ("latency --target broker:1 --latency fast", "expects int"),
        ("latency --target broker:1 --latency -5", ">= 0"),
        ("latency --target broker:1 --rate 5", "no option --rate"),
        ("latency --target broker:1 --toxicity 2", "within"),
        ("latency --target broker:1 --direction sideways", "--direction"),
        ("latency --target broker:1 --flow up", "--flow"),
        ("latency --target broker:1 --listener ssl", "--listener"),
        ("latency --target broker:1 --target broker:2", "twice"),
        ("latency --target broker:1 extra", "unexpected argument"),
        ("cut --target broker:1 --direction upstream", "cut takes no"),
        ("cut --target broker:1 --peer broker:1", "target itself"),
        ("cut --target bridge --peer broker:1", "bridge target"),
        ("cut --target all", "only valid as --peer"),
        ("kill --target clients:rack-a", "not a process"),
        ("kill --target broker:1 --peer broker:2", "process fault and takes no --peer"),
        ("slicer --target broker:1 --average-size 4 --size-variation 4", "smaller"),
        ("restart --target broker:1 --clean maybe", "expects bool"),
    ],
)
def test_bad_specs_get_one_clear_line(text: str, fragment: str) -> None:
    with pytest.raises(FaultError, match=fragment) as err:
        parse_fault(text)
    assert "\n" not in str(err.value)


def test_from_dict_rejects_unknown_fields() -> None:
    with pytest.raises(FaultError, match="unknown fault field"):
        FaultSpec.from_dict({"kind": "kill", "target": "broker:1", "color": "red"})
    with pytest.raises(FaultError, match="needs 'kind'"):
        FaultSpec.from_dict({"target": "broker:1"})


def test_validate_against_topology() -> None:
    with pytest.raises(FaultError, match="no node 9"):
        parse_fault("kill --target broker:9").validate(T)
    with pytest.raises(FaultError, match="outside"):
        parse_fault("cut --target brokers --peer rack:rack-a").validate(T)


# -- scope ------------------------------------------------------------------------------------


def test_scope_of_link_faults() -> None:
    rep = Listener.REPLICATION
    assert resolve_links(T, parse_fault("cut --target clients:rack-b --peer broker:2")) == {
        Link("clients@rack-b", "kafka-2", Listener.CLIENT)
    }
    inbound = resolve_links(T, parse_fault("cut --target broker:1 --flow in"))
    assert inbound and all(l.dst == "kafka-1" for l in inbound)
    out = resolve_links(T, parse_fault("latency --target broker:1 --peer broker:2 --flow out --listener replication"))
    assert out == {Link("kafka-1", "kafka-2", rep)}
    everyone = resolve_links(T, parse_fault("cut --target broker:1 --peer all"))
    assert {l for l in everyone if l.listener is Listener.CLIENT} == {
        Link(f"clients@{r}", "kafka-1", Listener.CLIENT) for r in T.client_racks
    }
    view = FakeView({("hw", 0): 3}, {("hw", 0): [3, 2]})
    fetch_path = resolve_links(
        T,
        parse_fault("latency --target follower-in:rack-b@hw/0 --peer leader:hw/0 --flow out --listener replication"),
        view,
    )
    assert fetch_path == {Link("kafka-2", "kafka-3", rep)}
    # conservative scope of a dynamic fault covers every resolution
    assert fetch_path <= possible_links(
        T, parse_fault("latency --target follower-in:rack-b@hw/0 --peer leader:hw/0 --flow out --listener replication")
    )


def test_possible_nodes() -> None:
    assert possible_nodes(T, parse_fault("kill --target rack:rack-b")) == {"kafka-2", "kafka-5"}
    assert possible_nodes(T, parse_fault("kill --target leader:t/0")) == {f"kafka-{i}" for i in range(1, 6)}
    t = topo(3, 3, controllers=3)
    assert possible_nodes(t, parse_fault("pause --target controller")) == {
        "controller-1",
        "controller-2",
        "controller-3",
    }


# -- contradictions -----------------------------------------------------------------------------


def specs(*texts: str) -> list[FaultSpec]:
    return [parse_fault(t) for t in texts]


@pytest.mark.parametrize(
    "texts",
    [
        ("pause --target broker:2", "kill --target broker:2"),
        ("kill --target broker:2", "kill --target broker:2"),
        ("stop --target rack:rack-b", "pause --target broker:5"),
        ("pause --target leader:hw/0", "kill --target broker:1"),
        ("rolling-restart --target brokers", "pause --target broker:3"),
        ("latency --target broker:1", "latency --target broker:2"),  # share kafka-1 <-> kafka-2
        (
            "latency --target broker:1 --direction both",
            "latency --target broker:1 --peer broker:3 --direction upstream",
        ),
        ("cut --target broker:1", "cut --target minority:0"),
        ("cut --target broker:1", "cut --target broker:2 --flow in"),
    ],
)
def test_contradictions_are_rejected(texts: tuple[str, str]) -> None:
    with pytest.raises(FaultError, match="contradictory") as err:
        check_no_conflicts(T, specs(*texts))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "texts",
    [
        ("pause --target broker:1", "kill --target broker:2"),
        ("kill --target leader:hw/0", "pause --target follower-in:rack-b@hw/0"),
        ("pause --target broker:2", "latency --target broker:2"),
        ("latency --target broker:1", "bandwidth --target broker:1"),
        ("latency --target broker:1 --direction upstream", "latency --target broker:1 --direction downstream"),
        ("latency --target broker:1 --peer broker:2", "latency --target broker:3 --peer broker:4"),
        ("cut --target broker:1 --flow in", "cut --target broker:1 --flow out"),
        ("cut --target broker:1", "timeout --target broker:1"),
        ("stop --target rack:rack-a", "stop --target rack:rack-b"),
    ],
)
def test_compatible_faults_pass(texts: tuple[str, str]) -> None:
    check_no_conflicts(T, specs(*texts))
    a, b = specs(*texts)
    assert conflict(T, a, b) is None and conflict(T, b, a) is None


def test_conflict_check_in_dedicated_mode() -> None:
    t = topo(3, 3, controllers=3)
    # the active controller is a dedicated controller, never a broker
    check_no_conflicts(t, specs("pause --target controller", "kill --target leader:hw/0"))
    with pytest.raises(FaultError, match="contradictory"):
        check_no_conflicts(t, specs("pause --target controller", "kill --target node:controller-2"))


def test_conflict_check_validates_targets() -> None:
    with pytest.raises(FaultError, match="no rack"):
        check_no_conflicts(T, specs("kill --target rack:rack-x"))
