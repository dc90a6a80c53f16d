"""exclusive-read (core.checks.ownership): a group's partition read by two members at once is
found; a handover, a member given its partition back and a fenced member's reads within the
grace after its fault pass."""

from __future__ import annotations

from typing import Any

from highwater.core.checks.data import from_events
from highwater.core.checks.ownership import exclusive_read
from highwater.core.checks.verdict import NOT_APPLICABLE, Verdict
from tests.synth.txn import Events, header

GRACE_MS = 5  # the given member_fence_grace_ms: five events (one per ms, ``_judge``)
GROUP = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}, "consumer-2": {"group": "g"}}


def _assign(e: Events, proc: str, partition: int = 0) -> Events:
    return e.add(proc, "ok", "assign", {"topic": "t", "partition": partition, "offset": None, "reason": "rebalance"})


def _fault(e: Events, f: str, kind: str, target: str) -> Events:
    v = {"kind": kind, "targets": [target], "params": {}}
    return e.add("nemesis", "invoke", f, v).add("nemesis", "ok", f, v)


def _judge(e: Events, consumers: dict[str, Any] | None = GROUP) -> Verdict:
    """The check on ``e`` with one event per millisecond."""
    events = [{**ev, "time_ns": (i + 1) * 1_000_000} for i, ev in enumerate(e.events)]
    h = header(None, consumers)
    h["config"]["member_fence_grace_ms"] = GRACE_MS
    return exclusive_read(from_events(h, events))


def _taken_over() -> Events:
    """consumer-0 reads partition 0, then consumer-1 is given it and reads it."""
    e = _assign(Events(), "consumer-0").poll("consumer-0", [(0, "v0"), (1, "v1")])
    return _assign(e, "consumer-1").poll("consumer-1", [(2, "v2")])


def test_the_old_owner_reading_on_after_a_takeover_is_found() -> None:
    v = _judge(_taken_over().poll("consumer-0", [(2, "v2"), (3, "v3")]))
    assert v.valid is False and v.counts["violations"] == 1 and v.counts["takeovers"] == 1
    ex = v.examples[0]
    assert (ex["consumer"], ex["taken_over_by"], ex["offsets"], ex["partition"]) == (
        "consumer-0",
        "consumer-1",
        [2, 3],
        0,
    )
    assert [ev["f"] for ev in ex["events"]] == ["assign", "assign", "poll"]


def test_a_handover_and_an_owner_given_its_partition_back_pass() -> None:
    e = _assign(_taken_over(), "consumer-0").poll("consumer-0", [(3, "v3")])
    v = _judge(e.poll("consumer-0", [(4, "v4")]))
    assert v.valid is True and v.counts["takeovers"] == 2 and v.counts["stale_polls"] == 0
    # another partition read by another member at the same time is no takeover
    other = _assign(_taken_over(), "consumer-0", 1).poll("consumer-0", [(0, "w0")], partition=1)
    assert _judge(other).valid is True


def _frozen_and_taken_over() -> Events:
    """consumer-0 frozen while consumer-1 is given its partition (the group fenced it), then thawed."""
    e = _assign(Events(), "consumer-0").poll("consumer-0", [(0, "v0")])
    e = _fault(e, "fault", "client_freeze", "consumer-0")
    e = _assign(e, "consumer-1").poll("consumer-1", [(1, "v1")])
    return _fault(e, "heal", "client_freeze", "consumer-0")


def test_a_member_fenced_while_frozen_may_read_on_until_the_grace_after_its_thaw() -> None:
    v = _judge(_frozen_and_taken_over().poll("consumer-0", [(1, "v1")]))
    assert v.valid is True and v.counts["stale_polls"] == 1 and v.counts["allowed_stale"] == 1
    late = _frozen_and_taken_over()
    for i in range(GRACE_MS):  # the grace passes
        late.poll("consumer-1", [(2 + i, f"v{2 + i}")])
    v = _judge(late.poll("consumer-0", [(1, "v1")]))
    assert v.valid is False and v.counts["allowed_stale"] == 0 and v.examples[0]["fault_windows_open"] == 1


def test_another_member_s_freeze_excuses_nothing() -> None:
    e = _assign(Events(), "consumer-0").poll("consumer-0", [(0, "v0")])
    e = _fault(e, "fault", "client_freeze", "consumer-2")
    e = _assign(e, "consumer-1").poll("consumer-1", [(1, "v1")]).poll("consumer-0", [(1, "v1")])
    v = _judge(_fault(e, "heal", "client_freeze", "consumer-2"))
    assert v.valid is False and v.examples[0]["fault_windows_open"] == 0


def test_a_broker_fault_at_the_takeover_may_have_fenced_anyone() -> None:
    e = _assign(Events(), "consumer-0").poll("consumer-0", [(0, "v0")])
    e = _fault(e, "fault", "kill", "coordinator:group/g")
    e = _assign(e, "consumer-1").poll("consumer-1", [(1, "v1")]).poll("consumer-0", [(1, "v1")])
    assert _judge(_fault(e, "heal", "kill", "coordinator:group/g")).valid is True


def test_without_a_group_or_a_read_it_is_not_applicable() -> None:
    assert _judge(_taken_over().poll("consumer-0", [(2, "v2")]), consumers=None).valid == NOT_APPLICABLE
    assert _judge(_assign(Events(), "consumer-0")).valid == NOT_APPLICABLE
