"""Transactions through the registry: the final read's split of a replica's log, and the
columnar checks staying right on transactional histories (aborted acks are not owed to the log,
read_uncommitted consumers may read aborted data, read_committed ones may not), on JSON Lines
and Parquet alike."""

from __future__ import annotations

from pathlib import Path

from highwater.core.checks import CHECKS, Input, load, present_inputs, run_checks
from highwater.core.checks.verdict import NOT_APPLICABLE
from highwater.core.history import to_parquet
from highwater.harness.workload.final_read import BatchView, split_transactions
from tests.synth.histories import HistoryBuilder

T = "t"
RC, RU = "consumer-0", "consumer-1"  # read_committed, read_uncommitted
CONFIG = {
    "progress_bound_ms": 10_000,
    "isolation_level": "read_committed",
    "consumers": {RU: {"isolation_level": "read_uncommitted"}},
}

# -- the final read's split ----------------------------------------------------------------


def test_split_puts_records_under_their_transactions_marker() -> None:
    got = split_transactions(
        [
            BatchView(7, True, False, [(0, "a0"), (1, "a1")]),
            BatchView(-1, False, False, [(2, "plain")]),
            BatchView(8, True, False, [(3, "b0")]),
            BatchView(7, True, True, [(4, "commit")]),
            BatchView(8, True, True, [(5, "abort")]),
            BatchView(7, True, False, [(6, "c0")]),  # no marker yet: open
        ]
    )
    assert got.committed == [[0, "a0"], [1, "a1"], [2, "plain"]]
    assert got.aborted == [[3, "b0"]]
    assert got.open == [[6, "c0"]]


def test_split_without_transactions_keeps_every_record() -> None:
    got = split_transactions([BatchView(-1, False, False, [(0, "x"), (1, "y")])])
    assert (got.committed, got.aborted, got.open) == ([[0, "x"], [1, "y"]], [], [])


# -- the columnar checks on transactional histories ------------------------------------------


def history(*, rc_reads_aborted: bool = False, commit_lost: bool = False) -> HistoryBuilder:
    """producer-0#1 commits v0, v1 (marker at 2); producer-0#2 writes x at 3 and aborts (marker
    at 4); producer-0#3 commits v5 (marker at 6). The read_uncommitted consumer reads x; the
    read_committed one skips it (or, with ``rc_reads_aborted``, returns it too)."""
    b = HistoryBuilder(CONFIG)
    for c in (RC, RU):
        b.assign(c, T, 0, 0)
    b.txn("producer-0", "begin", "producer-0#1")
    b.send("producer-0", T, 0, "v0", offset=0, txn="producer-0#1")
    b.send("producer-0", T, 0, "v1", offset=None, outcome="info", txn="producer-0#1")
    b.txn("producer-0", "commit", "producer-0#1")
    b.txn("producer-0", "begin", "producer-0#2")
    b.send("producer-0", T, 0, "x", offset=3, txn="producer-0#2")
    b.txn("producer-0", "abort", "producer-0#2")
    b.txn("producer-0", "begin", "producer-0#3")
    b.send("producer-0", T, 0, "v5", offset=5, txn="producer-0#3")
    b.txn("producer-0", "commit", "producer-0#3")
    b.poll(RU, [(T, 0, 0, "v0"), (T, 0, 1, "v1"), (T, 0, 3, "x"), (T, 0, 5, "v5")], replica=1)
    rc = [(T, 0, 0, "v0"), (T, 0, 1, "v1"), (T, 0, 5, "v5")]
    if rc_reads_aborted:
        rc.insert(2, (T, 0, 3, "x"))
    b.poll(RC, rc, replica=1)
    committed = [(0, "v0"), (5, "v5")] if commit_lost else [(0, "v0"), (1, "v1"), (5, "v5")]
    for r in (1, 2, 3):
        b.final(T, 0, r, 7, committed, aborted=[(3, "x")])
    return b


def verdicts(b: HistoryBuilder) -> dict[str, object]:
    return {v.check: v for v in run_checks(b.data(), policy=False)}


def test_clean_transactional_history_passes_every_check_that_applies() -> None:
    got = verdicts(history())
    assert present_inputs(history().data()) >= {Input.TXNS, Input.SENDS, Input.POLLS, Input.FINAL_READS}
    valid = {c: v.valid for c, v in got.items()}  # type: ignore[attr-defined]
    assert all(x is True or x == NOT_APPLICABLE for x in valid.values()), valid
    for c in (
        "lost-write",
        "uncommitted-read",
        "poll-skip",
        "truncation-undetected",
        "aborted-read",
        "torn-transaction",
    ):
        assert valid[c] is True, c
    lost = got["lost-write"]
    assert lost.counts["txn_not_owed"] == 1 and lost.counts["acknowledged"] == 3  # type: ignore[attr-defined]
    assert got["uncommitted-read"].counts["txn_uncommitted_allowed"] == 1  # type: ignore[attr-defined]


def test_read_committed_consumer_returning_aborted_data_is_found_twice() -> None:
    got = verdicts(history(rc_reads_aborted=True))
    assert got["aborted-read"].valid is False  # type: ignore[attr-defined]
    ur = got["uncommitted-read"]
    assert ur.valid is False and ur.counts["uncommitted_reads"] == 1  # type: ignore[attr-defined]
    assert ur.examples[0]["consumer"] == RC  # type: ignore[attr-defined]


def test_a_committed_transactions_write_missing_from_the_log_is_lost_even_if_its_ack_was_unknown() -> None:
    got = verdicts(history(commit_lost=True))
    lost = got["lost-write"]
    assert lost.valid is False and lost.counts["lost"] == 1  # type: ignore[attr-defined]
    assert got["torn-transaction"].valid is False  # type: ignore[attr-defined]


def test_parquet_gives_the_same_verdicts(tmp_path: Path) -> None:
    for b in (history(), history(rc_reads_aborted=True), history(commit_lost=True)):
        src = b.write(tmp_path / "h.jsonl")
        pq = tmp_path / "h.parquet"
        to_parquet(src, pq)
        j = {v.check: (v.valid, v.counts) for v in run_checks(load(src), policy=False)}
        p = {v.check: (v.valid, v.counts) for v in run_checks(load(pq), policy=False)}
        assert j == p
        assert Input.TXNS in present_inputs(load(pq))
    assert set(j) == {"history", *CHECKS}
