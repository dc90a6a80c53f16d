"""The upgrade check (``core.checks.upgrade``): each anomaly fed and found, and the clean
look-alikes it passes (a topic created between steps, an asked downgrade, a level raised)."""

from __future__ import annotations

from typing import Any

from highwater.core.checks import CHECKS
from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN
from tests.synth.histories import HistoryBuilder

T1 = {"id": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": 3}


def seen(cid: str = "c1", topics: dict[str, Any] | None = None, mv: int = 21) -> dict[str, Any]:
    return {"cluster_id": cid, "topics": {"t": T1} if topics is None else topics, "features": {"metadata.version": mv}}


def step(b: HistoryBuilder, kind: str, before: dict[str, Any], after: dict[str, Any], **extra: Any) -> None:
    value = {"kind": kind, "targets": ["kafka-1"], "params": {}, "observed": {"before": before, "after": after}}
    b.event("nemesis", "invoke", "fault", {"kind": kind, "targets": ["kafka-1"], "params": {}})
    b.event("nemesis", "ok", "fault", {**value, **extra})


def judge(*steps: tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]) -> Any:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "v0", offset=0)
    for kind, before, after, extra in steps:
        step(b, kind, before, after, **extra)
    return CHECKS["upgrade"](b.data())


def kinds(v: Any) -> set[str]:
    return {e["kind"] for e in v.examples}


def finalized(asked: int, to: int, was: int = 21) -> dict[str, Any]:
    return {"finalized": {"feature": "metadata.version", "asked": asked, "from": was, "to": to}}


def test_a_clean_road_is_valid_and_new_topics_and_raised_levels_are_no_change() -> None:
    other = {"t": T1, "u": {"id": "BBBBBBBBBBBBBBBBBBBBBB", "partitions": 1}}
    v = judge(
        ("roll", seen(), seen(), {}),
        ("roll", seen(), seen(topics=other), {}),
        ("finalize", seen(topics=other), seen(topics=other, mv=27), finalized(27, 27)),
    )
    assert v.valid is True and v.counts["steps"] == 3 and v.counts["observations"] == 6, v
    assert v.counts["nodes_rolled"] == 0  # these rolls name no node they moved


def test_a_changed_cluster_id_or_topic_is_found() -> None:
    assert kinds(judge(("roll", seen(), seen(cid="c2"), {}))) == {"cluster-id-changed"}
    assert kinds(judge(("roll", seen(), seen(topics={}), {}))) == {"topic-lost"}
    new_id = {"t": {**T1, "id": "CCCCCCCCCCCCCCCCCCCCCC"}}
    assert kinds(judge(("roll", seen(), seen(topics=new_id), {}))) == {"topic-id-changed"}
    fewer = {"t": {**T1, "partitions": 2}}
    v = judge(("roll", seen(), seen(), {}), ("roll", seen(), seen(topics=fewer), {}))
    assert v.valid is False and kinds(v) == {"partitions-changed"}


def test_a_level_not_finalized_or_lowered_is_found_and_an_asked_downgrade_is_not() -> None:
    short = judge(("finalize", seen(), seen(), finalized(27, 21)))
    assert short.valid is False and kinds(short) == {"level-not-finalized"}
    lowered = judge(("finalize", seen(), seen(mv=27), finalized(27, 27)), ("roll", seen(mv=27), seen(mv=25), {}))
    assert lowered.valid is False and kinds(lowered) == {"level-lowered"}
    asked_down = judge(
        ("finalize", seen(), seen(mv=27), finalized(27, 27)),
        ("finalize", seen(mv=27), seen(mv=25), finalized(25, 25, was=27)),
    )
    assert asked_down.valid is True, asked_down.examples


def test_a_history_without_a_release_step_is_not_applicable() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "v0", offset=0)
    b.event("nemesis", "ok", "fault", {"kind": "kill", "targets": ["kafka-1"], "params": {}})
    assert CHECKS["upgrade"](b.data()).valid == NOT_APPLICABLE
    b.event("nemesis", "invoke", "fault", {"kind": "roll", "targets": ["kafka-1"], "params": {}})
    cut_short = CHECKS["upgrade"](b.data())  # a roll the run ended in: it observed nothing to compare
    assert cut_short.valid == UNKNOWN and cut_short.counts == {"steps": 0}


def test_only_restarts_that_moved_a_node_count_as_rolled() -> None:
    moved = {
        "kafka-1": {"from": "3.9.1", "to": "4.4.0", "back_s": 2.4},
        "kafka-2": {"from": "4.4.0", "to": "4.4.0", "skipped": "already on it"},
    }
    assert judge(("roll", seen(), seen(), {"releases": moved})).counts["nodes_rolled"] == 1
