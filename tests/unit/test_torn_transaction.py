"""torn-transaction: a committed transaction partly in the final log, or partly returned by a
read_committed consumer that read past it, is found; whole, absent, aborted, unknown, retained
and re-positioned look-alikes pass or are not judged."""

from __future__ import annotations

from highwater.core.checks.torn import torn_transaction
from highwater.core.checks.verdict import NOT_APPLICABLE
from highwater.core.history.format import event_problem
from tests.synth.txn import Events, header

T = "producer-0#1"


def _committed(outcome: str = "ok") -> Events:
    """v1 (offset 0) and v2 (offset 1) in one transaction, its commit marker at 2, then v3 at 3."""
    e = Events().txn("producer-0", "begin", T)
    e.send("producer-0", "v1", 0, txn=T).send("producer-0", "v2", 1, txn=T)
    e.txn("producer-0", "commit", T, outcome=outcome)
    return e.send("producer-0", "v3", 3)


def test_events_follow_the_format() -> None:
    e = _committed().final([(0, "v1"), (1, "v2"), (3, "v3")]).seek("consumer-0", 0)
    assert all(event_problem(ev) is None for ev in e.events)


def test_whole_transaction_in_the_final_log_and_in_a_read_passes() -> None:
    e = _committed().final([(0, "v1"), (1, "v2"), (3, "v3")]).poll("consumer-0", [(0, "v1"), (1, "v2"), (3, "v3")])
    v = torn_transaction(header(), e.events)
    assert v.valid is True
    assert v.counts == {"committed": 1, "judged-final": 1, "torn-final": 0, "judged-reads": 1, "torn-reads": 0}


def test_half_a_committed_transaction_in_the_final_log_is_found() -> None:
    v = torn_transaction(header(), _committed().final([(0, "v1"), (3, "v3")], hw=4).events)
    assert v.valid is False and v.counts["torn-final"] == 1
    assert v.examples[0] == {"where": "final", "txn": T, "present": ["v1"], "absent": ["v2"]}


def test_a_consumer_returning_half_a_transaction_it_read_past_is_found() -> None:
    e = _committed().final([(0, "v1"), (1, "v2"), (3, "v3")]).poll("consumer-0", [(0, "v1"), (3, "v3")])
    v = torn_transaction(header(), e.events)
    assert v.valid is False and v.counts["torn-reads"] == 1
    assert v.examples[0]["returned"] == [0] and v.examples[0]["missed"] == [1]


def test_a_whole_transaction_missing_is_lost_write_not_a_tear() -> None:
    v = torn_transaction(header(), _committed().final([(3, "v3")], hw=4).events)
    assert v.valid is True and v.counts["judged-final"] == 1


def test_aborted_and_unknown_transactions_are_not_judged() -> None:
    assert torn_transaction(header(), _committed("info").final([(0, "v1")], hw=4).events).valid == NOT_APPLICABLE
    e = Events().txn("p", "begin", T).send("p", "v1", 0, txn=T).send("p", "v2", 1, txn=T).txn("p", "abort", T)
    assert torn_transaction(header(), e.final([(0, "v1")], hw=4).events).valid == NOT_APPLICABLE


def test_retention_below_an_acked_offset_leaves_the_final_log_unjudged() -> None:
    v = torn_transaction(header(), _committed().final([(1, "v2"), (3, "v3")], log_start=1).events)
    assert v.valid is True and v.counts["judged-final"] == 0


def test_the_most_complete_replica_is_the_final_log() -> None:
    # a lagging replica holds only v1; the leader's log (higher HW) holds the whole transaction
    e = _committed().final([(0, "v1")], hw=1, replica=2).final([(0, "v1"), (1, "v2"), (3, "v3")], replica=1)
    assert torn_transaction(header(), e.events).valid is True


def test_a_consumer_that_started_inside_or_stopped_inside_is_not_judged() -> None:
    started_inside = _committed().seek("consumer-0", 1).poll("consumer-0", [(1, "v2"), (3, "v3")])
    stopped_inside = _committed().poll("consumer-0", [(0, "v1")])
    for e in (started_inside, stopped_inside):
        v = torn_transaction(header(), e.events)
        assert v.valid is True and v.counts["judged-reads"] == 0, v.counts


def test_a_seek_past_the_transaction_splits_the_read() -> None:
    # v1 read, then an explicit seek to 3: the consumer never read *through* v2
    e = _committed().poll("consumer-0", [(0, "v1")]).seek("consumer-0", 3).poll("consumer-0", [(3, "v3")])
    v = torn_transaction(header(), e.events)
    assert v.valid is True and v.counts["judged-reads"] == 0


def test_read_uncommitted_consumers_are_not_judged_for_reads() -> None:
    h = header(consumers={"consumer-0": {"isolation_level": "read_uncommitted"}})
    e = _committed().poll("consumer-0", [(0, "v1"), (3, "v3")])
    v = torn_transaction(h, e.events)
    assert v.valid is True and v.counts["judged-reads"] == 0
