"""copy-exactly-once: each of its anomalies is found (missing, duplicated, phantom); clean
look-alikes pass (a copy re-made after an aborted transaction, records not yet copied); and the
group checks count offsets sent inside a transaction only when it committed."""

from __future__ import annotations

from typing import Any

from highwater.core.checks import CHECKS, from_events
from highwater.core.checks.copy import copy_exactly_once
from highwater.core.checks.groups import commit_ahead, commit_regression, settled_commits
from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN
from highwater.core.history.format import copy_value, source_of
from tests.synth.txn import Events, header

_COPY = {"source": "src", "sink": "dst", "group": "g"}


def _header() -> dict[str, Any]:
    h = header(consumers={"copier-0": {"group": "g", "isolation_level": "read_committed"}})
    h["config"]["copy"] = _COPY
    return h


def _copy_txn(e: Events, txn: str, records: list[tuple[int, str]], sink_offset: int, end: str = "commit") -> Events:
    """copier-0 reads ``records`` of src/0, copies them to dst/0 from ``sink_offset`` in ``txn``
    with the offsets inside, and ends it with ``end`` (commit or abort)."""
    e.poll("copier-0", records, topic="src").txn("copier-0", "begin", txn)
    for i, (_, val) in enumerate(records):
        e.send("copier-0", copy_value(val, txn), sink_offset + i, txn=txn, topic="dst")
    c = {"group": "g", "topic": "src", "partition": 0, "offset": records[-1][0] + 1, "txn": txn}
    e.add("copier-0", "invoke", "commit", c).add("copier-0", "ok", "commit", c)
    return e.txn("copier-0", end, txn)


def _finals(e: Events, source: list[str], sink: list[str]) -> Events:
    e.final(list(enumerate(source)), topic="src")
    return e.final(list(enumerate(sink)), topic="dst")


def _clean() -> Events:
    """a, b copied and committed in c#0; c copied in c#1, aborted; then c again in c#2."""
    e = _copy_txn(Events(), "c#0", [(0, "a"), (1, "b")], 0)
    e = _copy_txn(e, "c#1", [(2, "c")], 2, end="abort")
    e.seek("copier-0", 2, reason="rewind", topic="src")
    return _copy_txn(e, "c#2", [(2, "c")], 4)


def test_a_copy_re_made_after_an_abort_is_exactly_once() -> None:
    e = _finals(_clean(), ["a", "b", "c"], ["a@c#0", "b@c#0", "c@c#2"])  # c@c#1 is aborted data
    v = copy_exactly_once(_header(), e.events)
    assert v.valid is True and v.counts == {"judged": 3, "copies": 3, "missing": 0, "duplicated": 0, "phantom": 0}


def test_a_record_committed_past_but_not_in_the_sink_is_missing() -> None:
    e = _finals(_clean(), ["a", "b", "c"], ["a@c#0", "c@c#2"])
    v = copy_exactly_once(_header(), e.events)
    assert v.valid is False and v.counts["missing"] == 1
    assert v.examples[0] == {"kind": "missing", "value": "b", "topic": "src", "partition": 0, "offset": 1}


def test_records_beyond_the_committed_offset_are_not_yet_owed() -> None:
    e = _finals(_clean(), ["a", "b", "c", "d"], ["a@c#0", "b@c#0", "c@c#2"])
    assert copy_exactly_once(_header(), e.events).valid is True


def test_two_committed_copies_of_one_record_are_duplicated() -> None:
    # the aborted transaction's copy of c committed after all: c is in the sink twice
    e = _finals(_clean(), ["a", "b", "c"], ["a@c#0", "b@c#0", "c@c#1", "c@c#2"])
    v = copy_exactly_once(_header(), e.events)
    assert v.valid is False and v.counts["duplicated"] == 1 and v.examples[0]["value"] == "c"


def test_a_copy_of_an_aborted_source_record_is_a_phantom() -> None:
    # x was read (read_committed should not have returned it) and copied: it is not in src
    e = _finals(_clean(), ["a", "b", "c"], ["a@c#0", "b@c#0", "c@c#2", "x@c#2"])
    v = copy_exactly_once(_header(), e.events)
    assert v.valid is False and v.counts["phantom"] == 1 and v.examples[0]["value"] == "x"


def test_offsets_of_an_aborted_transaction_are_not_the_group_s() -> None:
    """Only c#1 sent offset 3 and it aborted: b (offset 1) is below the committed offset 2,
    c (offset 2) is not owed; an abort that counted would make c missing."""
    e = _copy_txn(Events(), "c#0", [(0, "a"), (1, "b")], 0)
    e = _copy_txn(e, "c#1", [(2, "c")], 2, end="abort")
    v = copy_exactly_once(_header(), _finals(e, ["a", "b", "c"], ["a@c#0", "b@c#0"]).events)
    assert v.valid is True and v.counts["judged"] == 2


def test_without_a_copy_it_is_not_applicable_and_without_finals_unknown() -> None:
    assert copy_exactly_once(header(), _clean().events).valid == NOT_APPLICABLE
    assert copy_exactly_once(_header(), _clean().events).valid == UNKNOWN


def test_settled_commits_follow_their_transaction() -> None:
    e = _copy_txn(Events(), "c#0", [(0, "a")], 0)
    e = _copy_txn(e, "c#1", [(1, "b")], 1, end="abort")
    e = _copy_txn(e, "c#2", [(2, "c")], 2, end="no end")  # unknown: the end was never recorded
    commits = [ev for ev in settled_commits(e.events) if ev["f"] == "commit" and ev["type"] != "invoke"]
    assert [(c["value"]["txn"], c["type"]) for c in commits] == [("c#0", "ok"), ("c#1", "fail"), ("c#2", "info")]
    commit_ok = next(
        ev
        for ev in e.events
        if ev["f"] == "txn" and ev["type"] == "ok" and ev["value"]["txn"] == "c#0" and ev["value"]["op"] == "commit"
    )
    assert commits[0]["time_ns"] == commit_ok["time_ns"] > e.events[commits[0]["index"]]["time_ns"]


def test_an_aborted_commit_further_back_is_no_regression_and_counts_for_no_one() -> None:
    """c#1 sends offset 1 after c#0 committed 2 (a regression, were it committed): it aborted."""
    e = _copy_txn(Events(), "c#0", [(0, "a"), (1, "b")], 0)
    e = _copy_txn(e, "c#1", [(0, "a")], 2, end="abort")
    h = _header()
    assert commit_regression(h, e.events).valid is True
    assert commit_ahead(h, e.events).counts == {"commits": 1, "ahead": 0}


def test_copy_values_name_their_source() -> None:
    assert source_of(copy_value("producer-0-7", "copier-0#3")) == "producer-0-7"
    assert source_of("producer-0-7") is None


def test_registered_and_not_applicable_to_a_plain_history() -> None:
    h = from_events({"format": "highwater.history/1", "config": {}}, Events().send("p", "v", 0).events)
    assert CHECKS["copy-exactly-once"](h).valid == NOT_APPLICABLE
