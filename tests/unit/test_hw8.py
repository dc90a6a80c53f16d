"""What HW-8 explains in ``durability/leader-partition`` (``suites.hw8``), on the generated clean
history of the scenario and its twins: a stall of the rack consumer that read a partition from
its cut-off leader is explained and subtracted; a stall on a partition the cut-off broker only
followed, during a cut that left the controller links up, during a kill, or beside another
violation is not."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from highwater.core.checks.data import from_events
from highwater.core.checks.verdict import Verdict
from highwater.suites.conformance.test_durability import assert_live
from highwater.suites.hw8 import STALL_CHECKS, without_hw8, zombie_readers
from highwater.suites.scenario import PLANS
from tests.data.scenario_histories import Generated, generate
from tests.unit.test_broken_twins import fails, fault_and_heal, never_moves, polls_of, reindex, verdicts_of, write

Events = list[dict[str, Any]]
#: the cut of broker 1 (leader of partition 0) as the injector records it: every link to its
#: peers, the controller's among them, none of the clients'
CUT_LINKS = [
    f"{listener}:{a}->{b}"
    for listener in ("controller", "replication")
    for x in ("kafka-2", "kafka-3")
    for a, b in (("kafka-1", x), (x, "kafka-1"))
]


@pytest.fixture(scope="module")
def partition() -> Generated:
    return generate(PLANS["durability/leader-partition"], partitions=3)


def with_links(events: Events, links: list[str]) -> Events:
    evs = copy.deepcopy(events)
    for e in evs:
        if e["f"] in ("fault", "heal"):
            e["value"]["links"] = links
    return evs


def stalled_on(events: Events, consumer: str, partition: int, replica: int | None = None) -> Events:
    """``consumer`` reads nothing of ``partition`` from the fault to the heal, then everything at
    once (from ``replica`` when given): what the rack consumer of a zombie leader does."""
    evs = copy.deepcopy(events)
    fault, heal = fault_and_heal(evs)
    held = []
    for e in polls_of(evs, consumer):
        if fault["time_ns"] <= e["time_ns"] < heal["time_ns"] and e["type"] == "ok":
            mine = [r for r in e["value"]["records"] if r["partition"] == partition]
            e["value"]["records"] = [r for r in e["value"]["records"] if r["partition"] != partition]
            held += mine
    assert held, "the clean history has records to hold back"
    for r in held:
        r["replica"] = replica if replica is not None else r["replica"]
    evs.append(
        {
            "index": -1,
            "_order": heal["index"] + 0.1,
            "time_ns": heal["time_ns"],
            "process": consumer,
            "type": "ok",
            "f": "poll",
            "value": {"records": held},
            "error": None,
        }
    )
    return reindex([e for e in evs if e["f"] != "poll" or e["type"] != "ok" or e["value"]["records"]])


def judge(tmp_path: Path, g: Generated, events: Events) -> tuple[list[Verdict], Path]:
    return verdicts_of(g.header, events), write(tmp_path, "twin", g.header, events)


def test_the_zombie_leaders_rack_consumer_stall_is_explained(tmp_path: Path, partition: Generated) -> None:
    twin = with_links(stalled_on(partition.events, "consumer-0", 0), CUT_LINKS)
    verdicts, path = judge(tmp_path, partition, twin)
    # the stall is a violation of both stall checks as judged: the twin is a real failure
    assert {v.check for v in verdicts if v.valid is False} >= set(STALL_CHECKS)
    fails(lambda: assert_live(verdicts))
    kept, readers = without_hw8(verdicts, path)
    assert [(z.consumer, z.partition, z.broker) for z in readers] == [("consumer-0", 0, 1)]
    assert readers[0].stall_ms > readers[0].bound_ms
    z = readers[0]
    assert str(z).startswith("HW-8: consumer-0 read ") and f"cut-off leader {z.broker}" in str(z)
    assert f"longest stall {z.stall_ms} ms (bound {z.bound_ms} ms)" in str(z), "both suites print this line"
    assert not {v.check for v in kept} & set(STALL_CHECKS)
    assert_live(kept)


def test_a_clean_history_keeps_its_verdicts(tmp_path: Path, partition: Generated) -> None:
    verdicts, path = judge(tmp_path, partition, with_links(partition.events, CUT_LINKS))
    assert without_hw8(verdicts, path) == (verdicts, [])


def test_a_cut_that_leaves_the_controller_links_up_explains_nothing(tmp_path: Path, partition: Generated) -> None:
    """Without the controller links cut, the broker learns that it was replaced: no zombie."""
    links = [lk for lk in CUT_LINKS if lk.startswith("replication:")]
    verdicts, path = judge(tmp_path, partition, with_links(stalled_on(partition.events, "consumer-0", 0), links))
    assert "no zombie reader's" in fails(lambda: without_hw8(verdicts, path))


def test_a_partition_the_cut_off_broker_only_followed_is_not_explained(tmp_path: Path, partition: Generated) -> None:
    """Partition 1 is led by broker 2; consumer-0 read it from broker 1, its rack's follower.
    Leaving a cut-off follower needs no new leader (HW-9 stays convicted)."""
    twin = with_links(stalled_on(partition.events, "consumer-0", 1), CUT_LINKS)
    verdicts, path = judge(tmp_path, partition, twin)
    h = from_events(partition.header, twin)
    assert [(z.consumer, z.partition) for z in zombie_readers(h)] == [("consumer-0", 0)]
    assert "no zombie reader's" in fails(lambda: without_hw8(verdicts, path))


def test_a_consumer_that_read_from_another_broker_is_not_explained(tmp_path: Path, partition: Generated) -> None:
    """consumer-1 (rack b) read partition 0 from broker 2, not from the cut-off leader."""
    twin = with_links(stalled_on(partition.events, "consumer-1", 0), CUT_LINKS)
    verdicts, path = judge(tmp_path, partition, twin)
    assert any(v.valid is False for v in verdicts if v.check in STALL_CHECKS)
    assert "no zombie reader's" in fails(lambda: without_hw8(verdicts, path))


def test_a_zombie_stall_beside_another_stall_is_not_explained(tmp_path: Path, partition: Generated) -> None:
    twin = with_links(stalled_on(stalled_on(partition.events, "consumer-0", 0), "consumer-2", 2), CUT_LINKS)
    verdicts, path = judge(tmp_path, partition, twin)
    assert "consumer-2 on t-2 is no zombie reader's" in fails(lambda: without_hw8(verdicts, path))


def test_a_killed_leader_explains_nothing(tmp_path: Path) -> None:
    g = generate(PLANS["durability/leader-kill"], partitions=3)
    twin = never_moves(g.events, "consumer-0", replica=1)
    verdicts, path = judge(tmp_path, g, twin)
    assert any(v.valid is False for v in verdicts if v.check in STALL_CHECKS)
    assert "no zombie reader's" in fails(lambda: without_hw8(verdicts, path))


def test_a_violation_other_than_a_stall_names_its_kind(tmp_path: Path, partition: Generated) -> None:
    """A progress violation HW-8 cannot explain (here a consumer that never read on after a
    heal) fails with the kinds of what was shown, so a CI log says what broke."""
    verdicts, path = judge(tmp_path, partition, with_links(partition.events, CUT_LINKS))
    after_heal = {"kind": "consumer-stalled-after-heal", "consumer": "consumer-0", "topic": "t", "partition": 0}
    broken = [Verdict("progress", False, {"stalls": 1}, [after_heal]) if v.check == "progress" else v for v in verdicts]
    why = fails(lambda: without_hw8(broken, path))
    assert "1 violation(s) counted, 0 shown as consumer stalls (examples: consumer-stalled-after-heal x1)" in why
