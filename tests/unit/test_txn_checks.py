"""aborted-read: its anomaly is found; clean look-alikes pass; no read_committed consumer is n/a."""

from __future__ import annotations

from harness.checks.txn import aborted_read, nonmonotonic_send, open_txn_read
from harness.checks.verdict import NOT_APPLICABLE
from harness.history.format import check_header, event_problem
from tests.synth.txn import Events, header


def _aborted_then_read() -> Events:
    e = Events().txn("producer-0", "begin", "producer-0#1")
    e.send("producer-0", "v1", 0, txn="producer-0#1").txn("producer-0", "abort", "producer-0#1")
    return e.poll("consumer-0", [(0, "v1")])


def test_events_follow_the_format() -> None:
    check_header(header(consumers={"consumer-0": {"group": "g", "isolation_level": "read_uncommitted"}}))
    assert all(event_problem(ev) is None for ev in _aborted_then_read().events)


def test_read_of_aborted_transaction_is_found() -> None:
    v = aborted_read(header(), _aborted_then_read().events)
    assert v.valid is False
    assert v.counts == {"reads": 1, "aborted-reads": 1}
    assert v.examples[0]["txn"] == "producer-0#1" and v.examples[0]["why"] == "txn-aborted"


def test_read_of_definitely_failed_send_is_found() -> None:
    e = Events().send("producer-0", "v1", None, outcome="fail").poll("consumer-0", [(0, "v1")])
    v = aborted_read(header(), e.events)
    assert v.valid is False and v.examples[0]["why"] == "send-failed"


def test_read_uncommitted_consumer_may_read_aborted_data() -> None:
    h = header(consumers={"consumer-0": {"isolation_level": "read_uncommitted"}})
    assert aborted_read(h, _aborted_then_read().events).valid == NOT_APPLICABLE


def test_info_send_without_txn_is_not_an_aborted_read() -> None:
    e = Events().send("producer-0", "v1", None, outcome="info").poll("consumer-0", [(0, "v1")])
    v = aborted_read(header(), e.events)
    assert v.valid is True and v.counts["aborted-reads"] == 0


def test_info_abort_is_unknown_not_aborted() -> None:
    e = Events().txn("producer-0", "begin", "p#1").send("producer-0", "v1", 0, txn="p#1")
    e.txn("producer-0", "abort", "p#1", outcome="info").poll("consumer-0", [(0, "v1")])
    assert aborted_read(header(), e.events).valid is True


def test_no_read_committed_consumer_is_not_applicable() -> None:
    assert aborted_read(header(isolation=None), _aborted_then_read().events).valid == NOT_APPLICABLE


def test_read_before_commit_invoked_is_found() -> None:
    e = Events().txn("producer-0", "begin", "p#1").send("producer-0", "v1", 0, txn="p#1")
    e.poll("consumer-0", [(0, "v1")]).txn("producer-0", "commit", "p#1")
    v = open_txn_read(header(), e.events)
    assert v.valid is False and v.counts == {"txn-reads": 1, "open-txn-reads": 1}
    assert v.examples[0]["txn"] == "p#1"


def test_poll_completing_between_commit_invoke_and_ok_is_fine() -> None:
    e = Events().txn("producer-0", "begin", "p#1").send("producer-0", "v1", 0, txn="p#1")
    e.add("producer-0", "invoke", "txn", {"op": "commit", "txn": "p#1"}).poll("consumer-0", [(0, "v1")])
    e.add("producer-0", "ok", "txn", {"op": "commit", "txn": "p#1"})
    v = open_txn_read(header(), e.events)
    assert v.valid is True and v.counts["txn-reads"] == 1


def _idem() -> dict[str, object]:
    return {"format": "highwater.history/1", "config": {"idempotence": True}}


def test_backwards_ack_is_found() -> None:
    e = Events().send("producer-0", "v1", 5).send("producer-0", "v2", 4)
    v = nonmonotonic_send(_idem(), e.events)
    assert v.valid is False and v.counts == {"acked": 2, "backwards": 1}
    assert v.examples[0]["value"] == "v2" and v.examples[0]["previous_max"] == 5


def test_other_producer_or_partition_is_not_backwards() -> None:
    e = Events().send("producer-0", "v1", 5).send("producer-1", "v2", 4).send("producer-0", "v3", 0, partition=1)
    assert nonmonotonic_send(_idem(), e.events).valid is True


def test_idempotence_off_is_not_applicable() -> None:
    e = Events().send("producer-0", "v1", 5).send("producer-0", "v2", 4)
    assert nonmonotonic_send(header(), e.events).valid == NOT_APPLICABLE


def test_txn_ends_says_only_what_is_sure() -> None:
    from harness.checks.txn import txn_ends

    e = Events().txn("p", "commit", "c").txn("p", "abort", "a").txn("p", "commit", "u", "info")
    e.txn("p", "commit", "f", "fail").txn("p", "commit", "x", "info").txn("p", "abort", "x")
    e.txn("p", "abort", "late").txn("p", "commit", "late")  # an ok commit outranks an abort
    ends = txn_ends(e.events)
    assert {t: ok for t, (ok, _) in ends.items()} == {"c": True, "a": False, "f": False, "x": False, "late": True}
    assert ends["c"][1] == e.events[1]["time_ns"] and ends["late"][1] == e.events[-1]["time_ns"]
