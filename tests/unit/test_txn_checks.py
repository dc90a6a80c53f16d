"""aborted-read: its anomaly is found; clean look-alikes pass; no read_committed consumer is n/a."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from highwater.core.checks.data import from_events
from highwater.core.checks.txn import aborted_read, open_txn_read
from highwater.core.checks.verdict import NOT_APPLICABLE, Verdict
from highwater.core.checks.writes import nonmonotonic_send
from highwater.core.history.format import check_header, event_problem
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


def nonmonotonic(hdr: dict[str, Any], events: list[dict[str, Any]]) -> Verdict:
    return nonmonotonic_send(from_events(hdr, events))


def test_backwards_ack_is_found() -> None:
    e = Events().send("producer-0", "v1", 5).send("producer-0", "v2", 4)
    v = nonmonotonic(_idem(), e.events)
    assert v.valid is False and v.counts == {"acked": 2, "backwards": 1}
    assert v.examples[0]["value"] == "v2" and v.examples[0]["previous_max"] == 5


def test_other_producer_or_partition_is_not_backwards() -> None:
    e = Events().send("producer-0", "v1", 5).send("producer-1", "v2", 4).send("producer-0", "v3", 0, partition=1)
    assert nonmonotonic(_idem(), e.events).valid is True


def test_idempotence_off_is_not_applicable() -> None:
    e = Events().send("producer-0", "v1", 5).send("producer-0", "v2", 4)
    assert nonmonotonic(header(), e.events).valid == NOT_APPLICABLE


def _two_in_flight(first_acked_at: int, second_acked_at: int) -> list[dict[str, Any]]:
    """v1 then v2 invoked, both in flight; v2's ack arrives first."""
    e = Events()
    for value in ("v1", "v2"):
        e.add("producer-0", "invoke", "send", {"topic": "t", "partition": 0, "key": None, "value": value})
    e.add(
        "producer-0",
        "ok",
        "send",
        {"topic": "t", "partition": 0, "key": None, "value": "v2", "offset": second_acked_at},
    )
    e.add(
        "producer-0", "ok", "send", {"topic": "t", "partition": 0, "key": None, "value": "v1", "offset": first_acked_at}
    )
    return e.events


def test_order_is_the_invokes_not_the_acks() -> None:
    """v1 was invoked first but landed after v2: backwards, although the acks' own order rises."""
    v = nonmonotonic(_idem(), _two_in_flight(first_acked_at=5, second_acked_at=4))
    assert v.valid is False and v.counts == {"acked": 2, "backwards": 1}
    assert (v.examples[0]["value"], v.examples[0]["offset"], v.examples[0]["previous_max"]) == ("v2", 4, 5)


def test_acks_arriving_out_of_order_for_rising_offsets_are_fine() -> None:
    """The look-alike: acks out of file order, offsets rising in invoke order."""
    assert nonmonotonic(_idem(), _two_in_flight(first_acked_at=4, second_acked_at=5)).valid is True


def test_txn_ends_says_only_what_is_sure() -> None:
    from highwater.core.checks.txn import txn_ends

    e = Events().txn("p", "commit", "c").txn("p", "abort", "a").txn("p", "commit", "u", "info")
    e.txn("p", "commit", "f", "fail").txn("p", "commit", "x", "info").txn("p", "abort", "x")
    e.txn("p", "abort", "late").txn("p", "commit", "late")  # an ok commit outranks an abort
    ends = txn_ends(e.events)
    assert {t: ok for t, (ok, _) in ends.items()} == {"c": True, "a": False, "f": False, "x": False, "late": True}
    assert ends["c"][1] == e.events[1]["time_ns"] and ends["late"][1] == e.events[-1]["time_ns"]


def test_json_lines_and_parquet_order_the_acks_by_the_same_invokes(tmp_path: Path) -> None:
    """Both loaders find each ack's invoke (``Sends.invoke_row``): the same verdict either way,
    and the rows are those of the invokes in the file."""
    from highwater.core.checks.loading import load
    from highwater.core.history import to_parquet
    from tests.synth.histories import HistoryBuilder

    b = HistoryBuilder(config={"idempotence": True})
    b.events = [dict(ev) for ev in _two_in_flight(first_acked_at=5, second_acked_at=4)]
    src = b.write(tmp_path / "h.jsonl")
    to_parquet(src, tmp_path / "h.parquet")
    for h in (load(src), load(tmp_path / "h.parquet")):
        assert h.sends.invoke_row is not None and h.sends.invoke_row.tolist() == [1, 0]  # v2's ack, then v1's
        v = nonmonotonic_send(h)
        assert v.valid is False and v.counts == {"acked": 2, "backwards": 1}
        assert v.examples[0]["value"] == "v2"
