"""isr-stability and the controller quorum (core.checks.quorum): a bound in which the quorum was
lost runs from the end of the loss, and a rejoin gets one controller failover's time when a
voters' controller link was broken on the way; the anomalies are still found where the quorum
was whole, or lost only apart from the window judged.

The shapes are the hunts' (docs/hunting.md): a paused active controller while a second voter's
controller links are slowed (the paused follower stays in the ISR: no quorum to remove it), and
a voter's slowed controller links whose heal costs a failover before a follower is back."""

from __future__ import annotations

from typing import Any

import pytest

from highwater.core.checks.liveness import isr_stability
from highwater.core.checks.quorum import QuorumState, broken_links, lost_until, state_at, voters
from highwater.core.checks.verdict import Verdict
from highwater.core.checks.windows import fault_windows
from tests.synth.histories import HistoryBuilder

T = "t"
RACKS = {"brokers": {"1": "a", "2": "b", "3": "c"}, "clients": {}}
BOUNDS = {
    "isr_leave_bound_ms": 200,
    "isr_slack_ms": 50,
    "isr_rejoin_bound_ms": 200,
    "controller_failover_ms": 300,
    "controller_quorum_election_timeout_ms": 1000,
}


def links_of(node: str, listener: str) -> list[str]:
    others = [n for n in ("kafka-1", "kafka-2", "kafka-3") if n != node]
    return [f"{listener}:{a}->{b}" for o in others for a, b in ((node, o), (o, node))]


def latency(
    b: HistoryBuilder, node: str, ms: int, listener: str = "controller", both: bool = False, recorded: bool = True
) -> dict[str, Any]:
    """A latency fault as the injector records it (``recorded``: with its ``direction``; else as
    a history before that, the direction only in the spec's text)."""
    spec = f"latency --target broker:{node[-1]} --latency {ms}" + (" --direction both" if both else "")
    value = {"kind": "latency", "targets": [node], "params": {"latency": ms}, "links": links_of(node, listener)}
    if recorded:
        value["direction"] = "both" if both else "downstream"
    return b.event("nemesis", "info", "fault", {**value, "spec": spec})


def observe(b: HistoryBuilder, isr: list[int], times: int, every: int = 50) -> None:
    for _ in range(times):
        b.advance(every)
        b.meta(T, 0, leader=1, isr=isr, hw=0)


def paused_controller(slowed_ms: int, listener: str = "controller") -> HistoryBuilder:
    """kafka-3 paused for 600 ms and still in the ISR then (past the 200 ms leave bound, and
    the 500 ms it is with a controller failover), while kafka-2's ``listener`` links are slowed by
    ``slowed_ms``; everyone back after."""
    b = HistoryBuilder(BOUNDS, racks=RACKS)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    latency(b, "kafka-2", slowed_ms, listener)
    b.fault("pause", ["kafka-3"])
    observe(b, [1, 2, 3], 12)
    b.heal("pause", ["kafka-3"])
    b.heal("latency", ["kafka-2"])
    observe(b, [1, 2, 3], 4)
    return b


def judge(b: HistoryBuilder) -> Verdict:
    return isr_stability(b.data())


def test_no_quorum_leaves_a_cut_off_follower_unjudged() -> None:
    v = judge(paused_controller(1322))  # its votes come back after the 1 s election timeout
    assert v.counts["cut_off_stayed"] == 0 and v.counts["without_quorum"] == 1
    assert v.valid == "unknown" and any("quorum was lost" in n for n in v.notes)


@pytest.mark.parametrize(
    ("slowed_ms", "listener", "why"),
    [
        (1322, "replication", "the second voter's controller links were not slowed: the quorum was whole"),
        (500, "controller", "half a second one way fits the quorum's 1 s election timeout"),
    ],
)
def test_with_a_quorum_the_cut_off_follower_that_stays_is_found(slowed_ms: int, listener: str, why: str) -> None:
    v = judge(paused_controller(slowed_ms, listener))
    assert v.valid is False and v.counts["cut_off_stayed"] == 1 and v.counts["without_quorum"] == 0, why


def slowed_then_back(rejoin_after_ms: int) -> HistoryBuilder:
    """kafka-2's controller links slowed by 2.8 s and kafka-3's replication links cut; kafka-3
    is out of the ISR in time, and back ``rejoin_after_ms`` after the heal."""
    b = HistoryBuilder(BOUNDS, racks=RACKS)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    latency(b, "kafka-2", 2835)
    cut = {"kind": "cut", "targets": ["kafka-3"], "params": {"peer": None}, "links": links_of("kafka-3", "replication")}
    b.event("nemesis", "info", "fault", cut)
    observe(b, [1, 2], 12)
    b.heal("cut", ["kafka-3"])
    b.heal("latency", ["kafka-2"])
    observe(b, [1, 2], rejoin_after_ms // 50)
    observe(b, [1, 2, 3], 12)
    return b


def test_a_rejoin_gets_one_controller_failover_when_a_voter_was_impaired() -> None:
    on_time = judge(slowed_then_back(400))  # past the 200 ms bound, within 200 + 300 ms
    assert on_time.valid is True and on_time.counts["not_rejoined"] == 0
    late = judge(slowed_then_back(700))  # past the failover too
    # one count per fault it left under (the cut and the slowed voter's window), each at 500 ms
    assert late.valid is False and late.counts["not_rejoined"] == 2
    assert {e["bound_ms"] for e in late.examples} == {500}


def kafka_3_killed_and_healed() -> HistoryBuilder:
    """kafka-3 killed, out of the ISR, and its kill healed (not yet back in the ISR)."""
    b = HistoryBuilder(BOUNDS, racks=RACKS)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    b.fault("kill", ["kafka-3"])
    observe(b, [1, 2], 8)
    b.heal("kill", ["kafka-3"])
    return b


def test_a_quorum_lost_apart_from_the_window_hides_nothing() -> None:
    """kafka-3 killed and back, then kafka-2 killed 100 ms later for a moment: the two never
    overlap, so kafka-1 and kafka-3 keep a quorum, and kafka-3 never rejoining is found."""
    b = kafka_3_killed_and_healed()
    b.advance(100)
    b.fault("kill", ["kafka-2"])
    observe(b, [1], 2)
    b.heal("kill", ["kafka-2"])
    observe(b, [1, 2], 20)
    v = judge(b)
    assert v.valid is False and v.counts["not_rejoined"] >= 1 and v.counts["without_quorum"] == 0


def test_the_voters_and_what_the_faults_do_to_them() -> None:
    h = paused_controller(1322).data()
    among = voters(h)
    assert among == {"kafka-1", "kafka-2", "kafka-3"}  # from the racks: combined mode
    slowed, paused = fault_windows(h)
    assert broken_links(h, slowed, among) == {
        ("kafka-2", "kafka-1"),
        ("kafka-1", "kafka-2"),
        ("kafka-2", "kafka-3"),
        ("kafka-3", "kafka-2"),
    }
    during = state_at(h, [slowed, paused], among, paused.start)
    assert during.down == {"kafka-3"} and during.lost(among)
    assert not state_at(h, [slowed], among, paused.start).lost(among)  # kafka-1 and kafka-3 reach each other
    assert lost_until(h, [slowed, paused], among, slowed.start, paused.start) == paused.until(h.end_time)
    assert lost_until(h, [slowed], among, slowed.start, h.end_time) is None
    assert not QuorumState(down=among).lost(frozenset())  # unknown voters: never held against a bound
    named = HistoryBuilder({**BOUNDS, "quorum_voters": ["controller-1"]}, racks=RACKS).data()
    assert voters(named) == {"controller-1"}


@pytest.mark.parametrize("recorded", [True, False])
def test_a_latency_breaks_a_link_by_what_it_adds_to_a_round_trip(recorded: bool) -> None:
    one_way, both = HistoryBuilder(BOUNDS, racks=RACKS), HistoryBuilder(BOUNDS, racks=RACKS)
    latency(one_way, "kafka-2", 600, recorded=recorded)
    latency(both, "kafka-2", 600, both=True, recorded=recorded)
    among = frozenset({"kafka-1", "kafka-2", "kafka-3"})
    (w1,) = fault_windows(one_way.data())
    (w2,) = fault_windows(both.data())
    assert not broken_links(one_way.data(), w1, among)  # 600 ms < the 1 s election timeout
    assert broken_links(both.data(), w2, among)  # 2 x 600 ms >= 1 s


def test_a_replica_faulted_again_before_its_deadline_owes_no_return() -> None:
    """kafka-3 killed and back, then its own links slowed 100 ms later: it may not catch up,
    and its return is not judged (the same shape with kafka-2's links slowed is still found)."""

    def refaulted(node: str) -> Verdict:
        b = kafka_3_killed_and_healed()
        b.advance(100)
        latency(b, node, 4000, "replication")
        observe(b, [1, 2], 20)
        return judge(b)

    own = refaulted("kafka-3")
    assert own.counts["not_rejoined"] == 0 and own.counts["unjudged"] >= 1
    other = refaulted("kafka-2")
    assert other.valid is False and other.counts["not_rejoined"] >= 1


def finalize_during_a_kill(back_after_ms: int) -> Verdict:
    """kafka-3 killed; a finalize through kafka-2 opens and closes while it is down, and kafka-3
    leaves the ISR during that finalize (the upgrade suite's finalize-controller-down); kafka-3
    is back in the ISR ``back_after_ms`` after its kill is healed (never, for a negative)."""
    b = HistoryBuilder(BOUNDS, racks=RACKS)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    b.fault("kill", ["kafka-3"])
    observe(b, [1, 2, 3], 2)
    b.fault("finalize", ["kafka-2"])
    observe(b, [1, 2], 2)
    b.heal("finalize", ["kafka-2"])
    observe(b, [1, 2], 10)  # 500 ms still killed: past the finalize's 200 ms rejoin bound
    b.heal("kill", ["kafka-3"])
    if back_after_ms >= 0:
        observe(b, [1, 2], back_after_ms // 50)
    observe(b, [1, 2, 3] if back_after_ms >= 0 else [1, 2], 12)
    return judge(b)


def test_a_replica_still_killed_at_another_fault_s_heal_owes_its_return_from_its_own_heal() -> None:
    """A replica whose broker another fault still holds when a window closes is not owed back
    at that window's heal but from the end of the hold; one that never returns is still found,
    under both windows."""
    on_time = finalize_during_a_kill(100)
    assert on_time.valid is True and on_time.counts["not_rejoined"] == 0
    never = finalize_during_a_kill(-1)
    assert never.valid is False and never.counts["not_rejoined"] == 2
    assert {e["bound_ms"] for e in never.examples} == {200}


def stale_isr_reader(hw_passes: bool) -> HistoryBuilder:
    """kafka-1 cut off (a swallowing timeout on its replication and controller links, as the hunt's
    seed 2340 drew it) while the observer keeps reading an ISR with it from a stale image: its LEO
    frozen at 100; with ``hw_passes`` the leader's HW goes past it from the third observation on
    (the controller removed it), else the HW waits at it (the leader still counts it in)."""
    b = HistoryBuilder(BOUNDS, racks=RACKS)
    b.meta(T, 0, leader=2, isr=[2, 3, 1], hw=100, leo={1: 100, 2: 100, 3: 100})
    links = links_of("kafka-1", "controller") + links_of("kafka-1", "replication")
    spec = "timeout --target broker:1 --direction upstream"
    value = {"kind": "timeout", "targets": ["kafka-1"], "params": {"timeout": 0, "cuts_off": [1]}, "links": links}
    b.event("nemesis", "info", "fault", {**value, "spec": spec, "direction": "upstream"})
    for i in range(12):
        b.advance(50)
        hw = 100 + 10 * i if hw_passes and i >= 2 else 100
        b.meta(T, 0, leader=2, isr=[2, 3, 1], hw=hw, leo={1: 100, 2: max(hw, 100), 3: max(hw, 100)})
    b.heal("timeout", ["kafka-1"])
    for _ in range(4):
        b.advance(50)
        b.meta(T, 0, leader=2, isr=[2, 3, 1], hw=300, leo={1: 300, 2: 300, 3: 300})
    return b


def test_an_isr_read_from_a_stale_image_does_not_convict_when_the_hw_passed_the_frozen_follower() -> None:
    """The hunt's seed 2340 (Kafka 3.9.1): the leader's HW past the cut-off follower's frozen LEO
    proves the controller had removed it, whatever ISR a stale broker answered (look-alike)."""
    v = judge(stale_isr_reader(hw_passes=True))
    assert v.counts["cut_off_stayed"] == 0 and v.valid is True, v.counts


def test_a_cut_off_follower_the_hw_waits_for_still_stays_in_the_isr() -> None:
    """The anomaly: the HW waits at the follower's LEO (the leader still counts it in) past the
    bound: cut-off-stays-in-isr, as before."""
    v = judge(stale_isr_reader(hw_passes=False))
    assert v.valid is False and v.counts["cut_off_stayed"] == 1 and v.examples[0]["replica"] == 1


def test_a_stale_isr_claim_needs_the_same_leader_a_frozen_leo_and_the_hw_past_it() -> None:
    from highwater.core.checks.data import MetaObs
    from highwater.core.checks.liveness import stale_isr_claim

    def obs(hw: int, leo1: int, leader: int = 2) -> MetaObs:
        return MetaObs(0, 0, 0, 0, hw, leader, 0, frozenset({1, 2, 3}), leo=((1, leo1), (2, hw)))

    assert stale_isr_claim(obs(120, 100), obs(130, 100), 1, 2)
    assert not stale_isr_claim(obs(120, 100), obs(130, 125), 1, 2)  # its LEO moved: a race, no proof
    assert not stale_isr_claim(obs(120, 100), None, 1, 2)  # no next observation
    assert not stale_isr_claim(obs(120, 100, leader=3), obs(130, 100), 1, 2)  # another leader's HW
    assert not stale_isr_claim(obs(100, 100), obs(130, 100), 1, 2)  # HW at its LEO: it may be in
    assert not stale_isr_claim(obs(120, 100), obs(130, 100), 3, 2)  # no LEO of that replica


def controller_cut_off(out_after_ms: int) -> HistoryBuilder:
    """kafka-3, a voter, cut off on its controller and replication links (the hunt's seed 2340:
    the cut-off follower was the active controller): it stays in the ISR until
    ``out_after_ms`` into the fault, then is out."""
    b = HistoryBuilder(BOUNDS, racks=RACKS)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    links = links_of("kafka-3", "controller") + links_of("kafka-3", "replication")
    b.event(
        "nemesis", "info", "fault", {"kind": "cut", "targets": ["kafka-3"], "params": {"peer": None}, "links": links}
    )
    observe(b, [1, 2, 3], out_after_ms // 50)
    observe(b, [1, 2], 24 - out_after_ms // 50)
    b.heal("cut", ["kafka-3"])
    observe(b, [1, 2, 3], 12)
    return b


def test_a_cut_off_voter_gets_one_controller_failover_to_leave_the_isr() -> None:
    """Its leave bound is the 200 ms bound plus a 300 ms failover: seen out at 450 ms is in time;
    still in at 550 ms is the anomaly, found; a follower whose controller links were not broken
    gets no failover (``test_with_a_quorum_the_cut_off_follower_that_stays_is_found``)."""
    on_time = judge(controller_cut_off(400))
    assert on_time.valid is True and on_time.counts["cut_off_stayed"] == 0
    late = judge(controller_cut_off(600))
    assert late.valid is False and late.counts["cut_off_stayed"] == 1
    assert late.examples[0]["bound_ms"] == 500
