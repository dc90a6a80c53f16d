"""The member selectors of client faults, ``group-leader:<group>`` and ``members:<group>[:<n>]``:
parsing, their resolution at apply time against the live workers (and, for the leader, what the
group's coordinator says), refusals, and what the history records. No cluster, no process: the
workers and the coordinator are fakes; the ``__consumer_offsets`` record parser is fed bytes
encoded here the way Kafka encodes them."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from highwater.faults import clients
from highwater.faults.clients import GroupSnapshot, Unsettled, group_leader, group_view, majority, natural_key, select
from highwater.faults.common import FaultError
from highwater.faults.group_leader import (
    group_of_key,
    java_string_hash,
    last_stored,
    offsets_partition,
    parse_group_metadata,
    snapshot,
)
from highwater.faults.inject import Injector
from highwater.faults.spec import FaultKind, FaultSpec, parse_fault
from highwater.faults.target import ClientTarget, TargetKind, parse_target
from highwater.harness.clients.worker import WorkerInfo
from highwater.suites.conformance import test_groups
from highwater.suites.scenario import PLANS
from tests.unit.fault_topology import topo


def member(client_id: str, group: str | None = "g", rack: str = "rack-a") -> WorkerInfo:
    return WorkerInfo(client_id, "consumer", "java 4.1.0", rack, group)


THREE = [member("consumer-0"), member("consumer-1"), member("consumer-2")]


# -- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, what, arg, count",
    [
        ("group-leader:g", TargetKind.GROUP_LEADER, "g", None),
        ("members:g", TargetKind.MEMBERS, "g", None),
        ("members:hw-groups.x_1:2", TargetKind.MEMBERS, "hw-groups.x_1", 2),
    ],
)
def test_member_selectors_parse_and_render_back(text: str, what: TargetKind, arg: str, count: int | None) -> None:
    t = parse_target(text)
    assert isinstance(t, ClientTarget) and (t.what, t.arg, t.count) == (what, arg, count) and str(t) == text
    for kind in ("client-kill", "client-freeze", "client-restart"):
        spec = parse_fault(f"{kind} --target {text}")
        assert spec.kind.is_client and str(spec) == f"{kind} --target {text}"
        assert FaultSpec.from_dict(spec.to_dict()) == spec  # as a schedule or run.json carries it


@pytest.mark.parametrize(
    "text, says",
    [
        ("group-leader:", "group-leader:my-group"),
        ("group-leader", "group-leader:my-group"),
        ("group-leader:g:1", "group-leader:my-group"),
        ("members:", "members:<group id>[:<count>]"),
        ("members", "members:<group id>[:<count>]"),
        ("members:g:0", "at least 1"),
        ("members:g:two", "at least 1"),
        ("members:g/1", "members:<group id>"),
    ],
)
def test_malformed_member_selectors_are_refused_in_one_line(text: str, says: str) -> None:
    with pytest.raises(FaultError, match="malformed") as err:
        parse_target(text)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_member_selectors_take_client_faults_only() -> None:
    with pytest.raises(FaultError, match="names client workers"):
        parse_fault("kill --target group-leader:g")
    with pytest.raises(FaultError, match="takes no count"):
        ClientTarget(TargetKind.GROUP, "g", 2)
    with pytest.raises(FaultError, match="at least 1"):
        ClientTarget(TargetKind.MEMBERS, "g", 0)


# -- members:<group>[:<n>] ------------------------------------------------------------------------


def test_majority_is_floor_half_plus_one() -> None:
    assert [majority(n) for n in range(1, 8)] == [1, 2, 2, 3, 3, 4, 4]


@pytest.mark.parametrize(
    "text, chosen",
    [
        ("members:g", ["consumer-0", "consumer-1"]),  # 2 of 3: a majority
        ("members:g:1", ["consumer-0"]),
        ("members:g:3", ["consumer-0", "consumer-1", "consumer-2"]),
        ("members:other", []),  # no such group among the workers: resolve says so
    ],
)
def test_members_names_the_lowest_client_ids_of_the_group(text: str, chosen: list[str]) -> None:
    workers = [*reversed(THREE), member("reader", None), WorkerInfo("producer-0", "producer", "java 4.1.0")]
    assert select(parse_target(text), workers) == chosen  # type: ignore[arg-type]


def test_members_orders_client_ids_naturally_and_counts_the_group_only() -> None:
    group = [member(f"consumer-{i}") for i in (10, 2, 1, 11)] + [member("consumer-0", "h")]
    assert sorted(["consumer-10", "consumer-2"], key=natural_key) == ["consumer-2", "consumer-10"]
    # 4 members of g: a majority is 3, the lowest in natural order (not consumer-10 before consumer-2)
    assert select(parse_target("members:g"), group) == ["consumer-1", "consumer-10", "consumer-2"]  # type: ignore[arg-type]


def test_members_asking_for_more_than_the_group_has_is_refused() -> None:
    with pytest.raises(FaultError, match=r"members:g:4 names 4 members; group g has 3 running"):
        select(parse_target("members:g:4"), THREE)  # type: ignore[arg-type]


# -- live workers, faked -------------------------------------------------------------------------


@dataclass(eq=False)
class FakeWorker:
    info: WorkerInfo
    killed_by: str | None = None
    frozen: bool = False

    def freeze(self) -> bool:
        self.frozen = True
        return True

    def thaw(self) -> bool:
        self.frozen = False
        return True

    def crash(self, reason: str) -> bool:
        self.killed_by = reason
        return True


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> list[FakeWorker]:
    live = [FakeWorker(w) for w in THREE]
    monkeypatch.setattr(clients, "live_workers", lambda: list(live))
    return live


def test_members_resolve_at_apply_time_without_the_killed(workers: list[FakeWorker]) -> None:
    target = parse_target("members:g")
    assert isinstance(target, ClientTarget)
    assert clients.resolve(target) == ("consumer-0", "consumer-1")
    workers[0].killed_by = "killed by the fault f1 (client-kill)"  # not started again yet
    # two running members: a majority of two is both of them
    assert clients.resolve(target) == ("consumer-1", "consumer-2")
    for w in workers:
        w.killed_by = "gone"
    with pytest.raises(FaultError, match="names no running client worker"):
        clients.resolve(target)


# -- group-leader:<group> --------------------------------------------------------------------------


def classic(
    state: str = "Stable", leader: str | None = "m1", stored: tuple[str, ...] = ("m0", "m1", "m2"), **kw: Any
) -> GroupSnapshot:
    members = {"m0": "consumer-0", "m1": "consumer-1", "m2": "consumer-2"}
    return GroupSnapshot("g", kw.get("group_type", "classic"), state, members, 5, leader, frozenset(stored))


def test_the_leader_of_a_settled_classic_group_is_its_stored_leader() -> None:
    assert group_leader(classic()) == "consumer-1"
    assert group_leader(classic(group_type="")) == "consumer-1"  # a broker that does not say: classic


@pytest.mark.parametrize(
    "snap, says",
    [
        (classic(state="PreparingRebalance"), "PreparingRebalance, not Stable"),
        (classic(state="CompletingRebalance"), "not Stable"),
        (classic(leader=None), "stored no generation"),
        (classic(stored=("m0", "m1", "m9")), "is not the one described"),  # the store is a generation behind
        (classic(leader="m9", stored=("m0", "m1", "m2")), "is not the one described"),
    ],
)
def test_a_group_between_generations_has_no_leader_yet(snap: GroupSnapshot, says: str) -> None:
    with pytest.raises(Unsettled, match=says):
        group_leader(snap)


def test_the_consumer_protocol_has_no_leader_member_refused_in_one_line() -> None:
    with pytest.raises(FaultError) as err:
        group_leader(classic(group_type="consumer"))
    text = str(err.value)
    assert "KIP-848" in text and "no member is the group's leader" in text and "\n" not in text
    with pytest.raises(FaultError, match="share group"):
        group_leader(classic(group_type="share"))


class FakeView:
    def __init__(self, *answers: GroupSnapshot | Exception) -> None:
        self.answers = list(answers)
        self.asked = 0

    def group(self, group: str) -> GroupSnapshot:
        self.asked += 1
        a = self.answers[min(self.asked, len(self.answers)) - 1]
        if isinstance(a, Exception):
            raise a
        return a


def test_the_leader_is_asked_again_until_the_group_settles(workers: list[FakeWorker]) -> None:
    target = parse_target("group-leader:g")
    assert isinstance(target, ClientTarget)
    view = FakeView(classic(state="PreparingRebalance"), RuntimeError("COORDINATOR_LOAD_IN_PROGRESS"), classic())
    assert clients.resolve(target, view, timeout_s=10) == ("consumer-1",)
    assert view.asked == 3


def test_a_killed_leader_the_group_still_lists_is_waited_out(workers: list[FakeWorker]) -> None:
    target = parse_target("group-leader:g")
    assert isinstance(target, ClientTarget)
    workers[1].killed_by = "killed"  # consumer-1, the stored leader, is dead; its session lives on
    new = GroupSnapshot(
        "g", "classic", "Stable", {"m0": "consumer-0", "m2": "consumer-2"}, 6, "m2", frozenset({"m0", "m2"})
    )
    assert clients.resolve(target, FakeView(classic(), new), timeout_s=10) == ("consumer-2",)
    with pytest.raises(
        FaultError, match=r"no leader after 1s: the coordinator names consumer-1 the leader, not a running"
    ):
        clients.resolve(target, FakeView(classic()), timeout_s=1)


def test_an_unsettled_group_times_out_with_the_reason(workers: list[FakeWorker]) -> None:
    target = parse_target("group-leader:g")
    assert isinstance(target, ClientTarget)
    with pytest.raises(FaultError, match=r"group-leader:g: no leader after 1s: group g is PreparingRebalance"):
        clients.resolve(target, FakeView(classic(state="PreparingRebalance")), timeout_s=1)


def test_the_refusal_is_final_not_waited_on(workers: list[FakeWorker]) -> None:
    target = parse_target("group-leader:g")
    assert isinstance(target, ClientTarget)
    view = FakeView(classic(group_type="consumer"))
    with pytest.raises(FaultError, match="KIP-848"):
        clients.resolve(target, view, timeout_s=30)
    assert view.asked == 1


def test_without_a_registered_view_the_leader_cannot_be_asked(workers: list[FakeWorker]) -> None:
    target = parse_target("group-leader:g")
    assert isinstance(target, ClientTarget)
    with pytest.raises(FaultError, match="no cluster registered"):
        clients.resolve(target)
    with group_view(FakeView(classic())):
        assert clients.resolve(target) == ("consumer-1",)
    with pytest.raises(FaultError, match="no cluster registered"):
        clients.resolve(target)
    with pytest.raises(FaultError, match="names no running client worker"):
        clients.resolve(parse_target("group-leader:nobody"))  # type: ignore[arg-type]


# -- the injector records what the selectors resolved to ------------------------------------------


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def invoke(self, process: str, f: str, value: Any = None, error: None = None) -> None:
        self.events.append(("invoke", f, value))

    def ok(self, process: str, f: str, value: Any = None, error: None = None) -> None:
        self.events.append(("ok", f, value))

    def fail(self, process: str, f: str, value: Any = None, error: Any = None) -> None:
        self.events.append(("fail", f, value))


@pytest.fixture
def injector(workers: list[FakeWorker], monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Injector, Sink]]:
    def restart(ids: Any, timeout_s: float = 60.0, relaunch: Any = None) -> dict[str, Any]:
        for w in workers:
            w.killed_by = None
        return {}

    monkeypatch.setattr(clients, "restart", restart)
    sink = Sink()
    cluster = SimpleNamespace(topo=topo(3, 3), backend_name="fake")
    with group_view(FakeView(classic())):
        yield Injector(cluster, sink), sink  # type: ignore[arg-type]  # client faults use no backend


def test_the_history_names_the_client_ids_each_selector_resolved_to(
    injector: tuple[Injector, Sink], workers: list[FakeWorker]
) -> None:
    inj, sink = injector
    kill = inj.apply(parse_fault("client-kill --target members:g"))
    assert sink.events[-1][:2] == ("ok", "fault")
    assert sink.events[-1][2]["targets"] == ["consumer-0", "consumer-1"]
    assert sink.events[-1][2]["spec"] == "client-kill --target members:g"
    assert [w.killed_by is not None for w in workers] == [True, True, False]
    inj.heal(kill)  # started again
    freeze = inj.apply(parse_fault("client-freeze --target group-leader:g"))
    assert sink.events[-1][2]["targets"] == ["consumer-1"] and workers[1].frozen
    inj.heal(freeze)
    assert not workers[1].frozen
    inj.apply(parse_fault("client-restart --target members:g:1"))
    assert sink.events[-1][2]["targets"] == ["consumer-0"] and FaultKind.CLIENT_RESTART.value == "client_restart"


def test_a_refused_leader_is_a_lone_fail_in_the_history(injector: tuple[Injector, Sink]) -> None:
    inj, sink = injector
    with group_view(FakeView(classic(group_type="consumer"))):
        with pytest.raises(FaultError, match="KIP-848"):
            inj.apply(parse_fault("client-kill --target group-leader:g"))
    assert [e[:2] for e in sink.events] == [("fail", "fault")]


# -- the coordinator's record of a classic group ------------------------------------------------


def s16(text: str | None) -> bytes:
    return struct.pack(">h", -1) if text is None else struct.pack(">h", len(text)) + text.encode()


def uv(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def cstr(text: str | None) -> bytes:
    return uv(0) if text is None else uv(len(text) + 1) + text.encode()


def group_key(group: str) -> bytes:
    return struct.pack(">h", 2) + s16(group)


def group_value(version: int, leader: str | None, members: dict[str, str], generation: int = 7) -> bytes:
    """A GroupMetadataValue as Kafka writes it (version 3 today; 4 is flexible)."""
    flex = version >= 4
    st = cstr if flex else s16

    def blob(data: bytes) -> bytes:
        return uv(len(data) + 1) + data if flex else struct.pack(">i", len(data)) + data

    out = struct.pack(">h", version) + st("consumer") + struct.pack(">i", generation) + st("range") + st(leader)
    if version >= 2:
        out += struct.pack(">q", 1_700_000_000_000)
    out += uv(len(members) + 1) if flex else struct.pack(">i", len(members))
    for member_id, client_id in members.items():
        out += st(member_id)
        if version >= 3:
            out += st(None)  # no group instance id
        out += st(client_id) + st("/127.0.0.1")
        if version >= 1:
            out += struct.pack(">i", 30000)
        out += struct.pack(">i", 6000) + blob(b"\x00\x01sub") + blob(b"\x00\x01asg")
        if flex:
            out += uv(0)  # no tagged fields
    if flex:
        out += uv(1) + uv(0) + uv(2) + b"xx"  # one unknown tagged field: skipped
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_the_group_metadata_record_gives_the_leader_and_client_ids(version: int) -> None:
    members = {"consumer-1-4d2f": "consumer-1", "consumer-0-aa01": "consumer-0"}
    stored = parse_group_metadata(group_value(version, "consumer-1-4d2f", members))
    assert (stored.protocol_type, stored.generation, stored.protocol) == ("consumer", 7, "range")
    assert stored.leader == "consumer-1-4d2f" and stored.members == members
    assert parse_group_metadata(group_value(version, None, {})).leader is None  # an empty group


def test_only_the_group_s_last_metadata_record_counts() -> None:
    offset_commit_key = struct.pack(">h", 1) + s16("g") + s16("t") + struct.pack(">i", 0)
    assert group_of_key(offset_commit_key) is None and group_of_key(struct.pack(">h", 3) + s16("g")) is None
    assert group_of_key(group_key("g")) == "g" and group_of_key(None) is None
    old = group_value(3, "a", {"a": "consumer-0"}, generation=1)
    new = group_value(3, "b", {"b": "consumer-1"}, generation=2)
    records: list[tuple[bytes | None, bytes | None]] = [
        (group_key("g"), old),
        (offset_commit_key, b"\x00\x03whatever"),
        (group_key("h"), new),
        (group_key("g"), new),
    ]
    last = last_stored(records, "g")
    assert last is not None and last.generation == 2 and last.leader == "b"
    assert last_stored([*records, (group_key("g"), None)], "g") is None  # a tombstone: deleted
    described = {"group_state": "Stable", "members": [{"member_id": "b", "client_id": "consumer-1"}]}
    assert group_leader(snapshot("g", "classic", described, last)) == "consumer-1"


def test_the_group_s_offsets_partition_is_kafka_s() -> None:
    assert java_string_hash("") == 0 and java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE: Utils.abs gives 0
    assert offsets_partition("polygenelubricants", 50) == 0
    # a negative hash: the absolute value (not the sign bit masked off, which gives 2**31 - h)
    h = java_string_hash("groups-leader-classic-java-group")
    assert h < 0 and offsets_partition("groups-leader-classic-java-group", 50) == -h % 50 != (h & 0x7FFFFFFF) % 50
    assert offsets_partition("hello", 50) == 99162322 % 50
    assert java_string_hash("é€") == (0xE9 * 31 + 0x20AC)  # UTF-16 code units, not bytes


# -- the scenario's own assertion on what the history records -----------------------------------


def fault_event(kind: str, targets: list[str], spec: str, t: int) -> dict[str, Any]:
    value = {"kind": kind, "targets": targets, "spec": spec}
    return {"process": "nemesis", "f": "fault", "type": "ok", "time_ns": t, "value": value}


def polls_after(t: int) -> list[dict[str, Any]]:
    return [{"process": m, "f": "poll", "type": "ok", "time_ns": t + 1} for m in test_groups.MEMBERS]


def test_the_scenarios_assert_the_resolved_targets() -> None:
    plan = PLANS["groups/majority-member-faults"]
    clean = [
        fault_event("client_kill", ["consumer-0", "consumer-1"], "client-kill --target members:hw-g", 1),
        fault_event("client_restart", ["consumer-0", "consumer-1"], "client-restart --target members:hw-g", 2),
        *polls_after(2),
    ]
    assert test_groups.assert_faults_resolved(clean, plan, [2, 2]) == [["consumer-0", "consumer-1"]] * 2
    one = [fault_event("client_kill", ["consumer-0"], "client-kill --target members:hw-g", 1), *clean[1:]]
    with pytest.raises(AssertionError):
        test_groups.assert_faults_resolved(one, plan, [2, 2])
    silent = [e for e in clean if e["process"] != "consumer-2"]
    with pytest.raises(AssertionError, match="consumer-2 read nothing"):
        test_groups.assert_faults_resolved(silent, plan, [2, 2])
    leader = PLANS["groups/leader-member-faults"]
    named = [
        fault_event("client_kill", ["consumer-1"], "client-kill --target group-leader:hw-g", 1),
        fault_event("client_freeze", ["consumer-2"], "client-freeze --target group-leader:hw-g", 2),
        *polls_after(2),
    ]
    test_groups.assert_faults_resolved(named, leader, [1, 1])
    static = [fault_event("client_kill", ["consumer-1"], "client-kill --target client:consumer-1", 1), *named[1:]]
    with pytest.raises(AssertionError):
        test_groups.assert_faults_resolved(static, leader, [1, 1])


def test_member_churn_is_a_seeded_schedule_of_one_member_at_a_time() -> None:
    from highwater.suites.scenario import GROUP_SESSION_MS, MEMBER_CHURN_SEED, member_churn_steps

    steps = PLANS["groups/member-churn"].steps
    assert steps == member_churn_steps(MEMBER_CHURN_SEED) and len(steps) >= 5
    assert member_churn_steps(MEMBER_CHURN_SEED + 1) != steps  # another seed, another churn
    members = [s.fault.rsplit(":", 1)[1] for s in steps]
    assert all(a != b for a, b in zip(members, members[1:], strict=False)), members  # never twice in a row
    assert {s.kind.value for s in steps} <= {"client_kill", "client_restart"} and len(set(members)) == 3
    assert all(2 <= s.duration <= 8 for s in steps) and steps[0].after == 4
    # every member reads again before the next fault: gaps of at least the session timeout and 2 s
    assert all(GROUP_SESSION_MS / 1000 + 2 <= s.after <= GROUP_SESSION_MS / 1000 + 4 for s in steps[1:])


def test_the_seeded_member_fault_schedules_draw_the_member_selectors() -> None:
    """groups/seeded-member-faults: its classic schedule draws ``members:<g>``, ``members:<g>:1``
    and ``group-leader:<g>``; the consumer protocol's never draws the leader (it has none); every
    gap is at least the session timeout plus 2 s and every window 2..9 s."""
    from highwater.suites.scenario import GROUP_SESSION_MS, member_fault_schedule
    from tests.unit.fault_topology import topo

    classic = member_fault_schedule(topo(), "g", "classic")
    assert {"members:g", "members:g:1", "group-leader:g"} <= {str(f.spec.target) for f in classic.faults}
    consumer = member_fault_schedule(topo(), "g", "consumer")
    targets = [str(f.spec.target) for f in consumer.faults]
    assert "members:g" in targets and not any(t.startswith("group-leader:") for t in targets)
    for schedule in (classic, consumer):
        protocol = "classic" if "group-leader" in schedule.config.member_targets else "consumer"
        assert schedule == member_fault_schedule(topo(), "g", protocol)  # a pure function of its arguments
        ends = [0.0, *(f.end for f in schedule.faults)]
        assert all(f.start - end >= GROUP_SESSION_MS / 1000 + 2 for f, end in zip(schedule.faults, ends))
        assert all(2.0 <= f.duration <= 9.0 for f in schedule.faults)
