"""The group checks (commit-regression, rebalance-skip, commit-ahead, group-delivery): each anomaly is found; look-alikes pass."""

from __future__ import annotations

from highwater.core.checks.groups import (
    commit_ahead,
    commit_regression,
    group_delivery,
    rebalance_rewind,
    rebalance_skip,
)
from highwater.core.checks.verdict import NOT_APPLICABLE
from tests.synth.txn import Events, header


def _commit(e: Events, proc: str, off: int) -> Events:
    v = {"group": "g", "topic": "t", "partition": 0, "offset": off}
    return e.add(proc, "invoke", "commit", v).add(proc, "ok", "commit", v)


def test_unasked_regression_is_found() -> None:
    e = _commit(_commit(Events(), "consumer-0", 10), "consumer-0", 7)
    v = commit_regression(header(), e.events)
    assert v.valid is False and v.counts == {"commits": 2, "regressions": 1, "concurrent": 0}
    assert v.examples[0]["offset"] == 7 and v.examples[0]["previous"] == 10


def test_a_lower_commit_in_flight_while_the_higher_one_completed_is_no_regression() -> None:
    """A member frozen between sending its commit of 406 and reading the answer: the partition's
    next owner commits 706 meanwhile; the frozen member's ok arrives last, but its commit may have
    been applied first (Java, member-faults, 2026-11-26). Invoked after the 706 ok, it would be one."""
    v = {"group": "g", "topic": "t", "partition": 0, "offset": 406}
    e = Events().add("consumer-2", "invoke", "commit", v)
    e = _commit(e, "consumer-1", 706).add("consumer-2", "ok", "commit", v)
    got = commit_regression(header(), e.events)
    assert got.valid is True and got.counts == {"commits": 2, "regressions": 0, "concurrent": 1}
    # the baseline stays 706: a later commit of 500 is judged against it
    assert commit_regression(header(), _commit(e, "consumer-1", 500).events).counts["regressions"] == 1


def test_a_frozen_member_s_commit_of_two_partitions_in_flight_is_no_regression() -> None:
    """The same, when the frozen member's commit covered two partitions (an invoke and an ok per
    partition, Java, member-faults, 2026-12-07): each ok pairs with its own partition's invoke,
    so partition 0's ok, long after the next owner's 726, is concurrent, not a regression."""
    p2 = {"group": "g", "topic": "t", "partition": 2, "offset": 420}
    p0 = {"group": "g", "topic": "t", "partition": 0, "offset": 420}
    e = Events().add("consumer-2", "invoke", "commit", p2).add("consumer-2", "invoke", "commit", p0)
    e = _commit(e, "consumer-1", 726).add("consumer-2", "ok", "commit", p2).add("consumer-2", "ok", "commit", p0)
    got = commit_regression(header(), e.events)
    assert got.valid is True and got.counts == {"commits": 3, "regressions": 0, "concurrent": 1}
    # invoked after the 726 ok, the same two-partition commit is a regression
    late = _commit(Events(), "consumer-1", 726).add("consumer-2", "invoke", "commit", p2)
    late = late.add("consumer-2", "invoke", "commit", p0).add("consumer-2", "ok", "commit", p2)
    late = late.add("consumer-2", "ok", "commit", p0)
    assert commit_regression(header(), late.events).counts["regressions"] == 1


def test_regression_after_a_seek_asking_for_it_is_fine() -> None:
    e = _commit(Events(), "consumer-0", 10)
    e.add("consumer-0", "ok", "seek", {"topic": "t", "partition": 0, "offset": 5, "reason": "seek"})
    assert commit_regression(header(), _commit(e, "consumer-0", 7).events).valid is True


def test_info_commit_is_not_counted() -> None:
    e = _commit(Events(), "consumer-0", 7)
    v = {"group": "g", "topic": "t", "partition": 0, "offset": 10}
    e.add("consumer-0", "invoke", "commit", v).add("consumer-0", "info", "commit", v, "Timeout")
    assert commit_regression(header(), _commit(e, "consumer-0", 8).events).valid is True


def test_no_commit_is_not_applicable() -> None:
    assert commit_regression(header(), Events().send("producer-0", "v", 0).events).valid == NOT_APPLICABLE


def _moved_to(pos: int) -> Events:
    e = Events().add("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": 0, "reason": "assign"})
    e = _commit(e, "consumer-0", 10)
    return e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 0, "offset": pos, "reason": "assign"})


_GROUPED = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}


def test_new_owner_beyond_committed_is_a_skip() -> None:
    v = rebalance_skip(header(consumers=_GROUPED), _moved_to(12).events)
    assert v.valid is False and v.counts == {"moves": 1, "skips": 1}
    assert v.examples[0]["position"] == 12 and v.examples[0]["committed"] == 10


def test_new_owner_exactly_at_committed_is_fine() -> None:
    assert rebalance_skip(header(consumers=_GROUPED), _moved_to(10).events).valid is True


def test_a_commit_in_flight_at_the_move_may_have_been_applied() -> None:
    """consumer-0 sent a commit of 12 and froze before its answer; consumer-1, given the
    partition, starts at 12: no skip (Java, member-faults, 2026-11-26); a commit of 12 answered
    with a failure before the move leaves 10 as all that may be committed."""
    v = {"group": "g", "topic": "t", "partition": 0, "offset": 12}
    e = Events().add("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": 0, "reason": "assign"})
    e = _commit(e, "consumer-0", 10).add("consumer-0", "invoke", "commit", v)
    moved = e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 0, "offset": 12, "reason": "assign"})
    got = rebalance_skip(header(consumers=_GROUPED), moved.add("consumer-0", "ok", "commit", v).events)
    assert got.valid is True and got.counts == {"moves": 1, "skips": 0}
    e = Events().add("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": 0, "reason": "assign"})
    e = _commit(e, "consumer-0", 10).add("consumer-0", "invoke", "commit", v).add("consumer-0", "fail", "commit", v)
    e = e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 0, "offset": 12, "reason": "assign"})
    assert rebalance_skip(header(consumers=_GROUPED), e.events).counts["skips"] == 1


def test_no_groups_is_not_applicable() -> None:
    assert rebalance_skip(header(), _moved_to(12).events).valid == NOT_APPLICABLE


def test_commit_beyond_what_was_returned_is_ahead() -> None:
    e = _commit(Events().poll("consumer-0", [(0, "a"), (1, "b")]), "consumer-0", 5)
    v = commit_ahead(header(consumers=_GROUPED), e.events)
    assert v.valid is False and v.counts == {"commits": 1, "ahead": 1} and v.examples[0]["offset"] == 5


def test_commit_after_last_returned_or_seek_is_fine() -> None:
    e = _commit(Events().poll("consumer-0", [(0, "a"), (1, "b")]), "consumer-0", 2)
    e.add("consumer-1", "ok", "seek", {"topic": "t", "partition": 0, "offset": 9, "reason": "seek"})
    assert commit_ahead(header(consumers=_GROUPED), _commit(e, "consumer-0", 9).events).valid is True


# rebalance-skip with the position unknown at the assign (a rebalance callback) -------------


def _moved_unknown(first: int, final: list[tuple[int, str]]) -> Events:
    """consumer-0 read 0..2 and committed 3; the partition moved to consumer-1, whose assign
    carries no offset; its first record is at ``first``."""
    e = Events().add("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": 0, "reason": "rebalance"})
    e.poll("consumer-0", [(0, "a"), (1, "b"), (2, "c")])
    _commit(e, "consumer-0", 3)
    e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 0, "offset": None, "reason": "rebalance"})
    e.poll("consumer-1", [(first, dict(final)[first])])
    return e.final(final, hw=max(o for o, _ in final) + 1)


GROUPS = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}


def test_unknown_position_first_record_past_committed_records_is_a_skip() -> None:
    e = _moved_unknown(5, [(0, "a"), (1, "b"), (2, "c"), (3, "d"), (4, "e"), (5, "f")])
    v = rebalance_skip(header(consumers=GROUPS), e.events)
    assert v.valid is False and v.counts == {"moves": 1, "skips": 1}
    assert v.examples[0]["skipped"] == 2 and v.examples[0]["position"] == 5


def test_unknown_position_past_only_markers_or_aborted_data_is_fine() -> None:
    # offsets 3 and 4 hold a transaction marker and aborted data: not in the committed log
    e = _moved_unknown(5, [(0, "a"), (1, "b"), (2, "c"), (5, "f")])
    v = rebalance_skip(header(consumers=GROUPS), e.events)
    assert v.valid is True and v.counts == {"moves": 1, "skips": 0}


def test_unknown_position_without_final_read_is_not_judged() -> None:
    e = _moved_unknown(5, [(0, "a"), (1, "b"), (2, "c"), (5, "f")])
    events = [ev for ev in e.events if ev["f"] != "final-read"]
    assert rebalance_skip(header(consumers=GROUPS), events).counts == {"moves": 0, "skips": 0}


# rebalance-skip with a commit whose outcome is unknown -----------------------------------


def _moved_after_unknown_commit(pos: int) -> Events:
    """consumer-0 committed 10 (ok), then 12 with no answer (``info``: a fault ate the response,
    the coordinator may have applied it); the partition moved to consumer-1 at ``pos``."""
    e = Events().add("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": 0, "reason": "assign"})
    e = _commit(e, "consumer-0", 10)
    v = {"group": "g", "topic": "t", "partition": 0, "offset": 12}
    e.add("consumer-0", "invoke", "commit", v).add("consumer-0", "info", "commit", v, "KafkaTimeoutError")
    return e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 0, "offset": pos, "reason": "assign"})


def test_new_owner_at_an_unknown_commit_is_fine() -> None:
    v = rebalance_skip(header(consumers=_GROUPED), _moved_after_unknown_commit(12).events)
    assert v.valid is True and v.counts == {"moves": 1, "skips": 0}


def test_new_owner_beyond_an_unknown_commit_is_a_skip() -> None:
    v = rebalance_skip(header(consumers=_GROUPED), _moved_after_unknown_commit(13).events)
    assert v.valid is False and v.counts == {"moves": 1, "skips": 1}
    assert v.examples[0]["committed"] == 10 and v.examples[0]["possibly_committed"] == 12


# group-delivery: at least once, judged at the end ---------------------------------------------


def _delivered(*, stuck: bool = False) -> Events:
    """Two members read partitions 0 and 1; with ``stuck``, nothing of partition 1 after
    offset 1 is returned (kafka-python #3131: a member kept it across a rebalance and never
    fetched it again), though the final log holds it."""
    e = Events()
    for p in (0, 1):
        for o in range(4):
            e.send("producer-0", f"v{p}-{o}", o, partition=p)
    e.poll("consumer-0", [(0, "v0-0"), (1, "v0-1"), (2, "v0-2"), (3, "v0-3")], partition=0)
    e.poll("consumer-1", [(0, "v1-0"), (1, "v1-1")] + ([] if stuck else [(2, "v1-2"), (3, "v1-3")]), partition=1)
    e.final([(o, f"v0-{o}") for o in range(4)], partition=0)
    return e.final([(o, f"v1-{o}") for o in range(4)], partition=1)


def test_records_a_group_never_returned_are_undelivered() -> None:
    v = group_delivery(header(consumers=_GROUPED), _delivered(stuck=True).events)
    assert v.valid is False and v.counts == {"owed": 8, "unread": 2, "unjudged": 0}
    assert [(x["partition"], x["offset"], x["unread_here"]) for x in v.examples] == [(1, 2, 2), (1, 3, 2)]


def test_every_record_returned_by_some_member_is_delivered() -> None:
    v = group_delivery(header(consumers=_GROUPED), _delivered().events)
    assert v.valid is True and v.counts == {"owed": 8, "unread": 0, "unjudged": 0}


def test_group_delivery_look_alikes_pass() -> None:
    """Not owed: a record the final log lacks (lost-write's), one whose value sits at another
    offset (inconsistent-offsets'), a send that did not end ok, a topic the group does not read;
    a partition without a final read is not judged; returned by a consumer outside the group
    does not count as delivered to it."""
    e = _delivered()
    e.send("producer-0", "lost", 4, partition=0)  # acked, not in the final log
    e.send("producer-0", "moved", 5, partition=0)  # acked at 5, final log has it at 6
    e.send("producer-0", "unknown", None, outcome="info", partition=0)
    e.send("producer-0", "elsewhere", 0, topic="other")  # a topic no member reads
    e.send("producer-0", "no-final", 0, partition=2)  # consumer-1 reads partition 2, no final read
    e.poll("consumer-1", [], partition=2)
    e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 2, "offset": 0, "reason": "assign"})
    e.final([(o, f"v0-{o}") for o in range(4)] + [(6, "moved")], partition=0)
    v = group_delivery(header(consumers=_GROUPED), e.events)
    assert v.valid is True and v.counts == {"owed": 8, "unread": 0, "unjudged": 1}
    outsider = _delivered(stuck=True).poll("observer-x", [(2, "v1-2"), (3, "v1-3")], partition=1)
    assert group_delivery(header(consumers=_GROUPED), outsider.events).counts["unread"] == 2


def test_group_delivery_without_a_group_is_not_applicable() -> None:
    assert group_delivery(header(), _delivered(stuck=True).events).valid == NOT_APPLICABLE


def test_an_exactly_once_copys_group_is_left_to_copy_exactly_once() -> None:
    h = header(consumers={"copier-0": {"group": "cg"}})
    h["config"]["copy"] = {"source": "t", "sink": "s", "group": "cg"}
    stuck = _delivered(stuck=True)
    stuck.poll("copier-0", [(0, "v1-0")], partition=1)
    assert group_delivery(h, stuck.events).valid == NOT_APPLICABLE


def test_records_behind_a_transaction_still_open_are_not_owed() -> None:
    """A transaction open at the final read (offset 2 of partition 1) holds read_committed
    consumers at its first record: the committed records after it are not owed yet."""
    e = _delivered(stuck=True)
    for ev in e.events:
        if ev["f"] == "final-read" and ev["value"]["partition"] == 1:
            ev["value"]["open"] = [[2, "open-txn"]]
    v = group_delivery(header(consumers=_GROUPED), e.events)
    assert v.valid is True and v.counts["owed"] == 6


# rebalance-rewind ------------------------------------------------------------------------------


def test_new_owner_before_committed_is_a_rewind() -> None:
    """The new owner starts at 7 although the group committed 10: three committed records again."""
    e = _moved_to(7).final([(o, f"v{o}") for o in range(12)])
    v = rebalance_rewind(header(consumers=_GROUPED), e.events)
    assert v.valid is False and v.counts == {"moves": 1, "rewinds": 1, "rewound": 3}
    assert (v.examples[0]["position"], v.examples[0]["committed"], v.examples[0]["rewound"]) == (7, 10, 3)
    # without a final read a known position is judged by the offsets alone
    bare = rebalance_rewind(header(consumers=_GROUPED), _moved_to(7).events)
    assert bare.valid is False and bare.counts == {"moves": 1, "rewinds": 1, "rewound": 0}


def test_new_owner_at_committed_or_over_markers_only_is_no_rewind() -> None:
    assert rebalance_rewind(header(consumers=_GROUPED), _moved_to(10).events).valid is True
    # offsets 7-9 hold no committed record (markers, aborted data): nothing re-delivered
    e = _moved_to(7).final([(o, f"v{o}") for o in (*range(7), 10, 11)])
    assert rebalance_rewind(header(consumers=_GROUPED), e.events).valid is True
    assert rebalance_rewind(header(), _moved_to(7).events).valid == NOT_APPLICABLE


def test_an_unknown_commit_never_raises_what_a_rewind_is_judged_by() -> None:
    """A commit of 12 whose outcome is unknown may not have been applied: starting at 10 is fine."""
    e = _commit(Events(), "consumer-0", 10)
    v = {"group": "g", "topic": "t", "partition": 0, "offset": 12}
    e.add("consumer-0", "invoke", "commit", v).add("consumer-0", "info", "commit", v, "Timeout")
    e = e.add("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": 0, "reason": "assign"})
    e = e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 0, "offset": 10, "reason": "assign"})
    assert rebalance_rewind(header(consumers=_GROUPED), e.events).valid is True
