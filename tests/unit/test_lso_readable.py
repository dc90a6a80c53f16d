"""A read_committed consumer is owed a committed record only once the partition's last stable
offset passed it (``core.checks.raw.lso_readable``): a transaction left open below it holds it
(the fourth night's seed 2344: a fenced coordinator that did not know it kept a transaction
open 16.9 s). The stall checks (progress, follower-fetch) count from then for such a reader,
and still from the commit for a read_uncommitted one."""

from __future__ import annotations

from typing import Any

import numpy as np

from highwater.core.checks import CHECKS
from highwater.core.checks.raw import lso_readable, txn_view
from highwater.core.checks.stalls import owed_times
from highwater.core.checks.verdict import Verdict
from tests.synth.histories import HistoryBuilder

T = "t"
RACKS = {"brokers": {"1": "a", "2": "b", "3": "c"}, "clients": {"consumer-0": "a"}}


def history(
    *, open_below: str, isolation: str = "read_committed", hold_ms: int = 5000, read_at_ms: int = 900
) -> HistoryBuilder:
    """Offsets 0-2 written and read; producer-1's transaction #5 writes offset 3 before a pause
    of kafka-1; after the heal producer-0's transaction commits offset 4 and the consumer reads
    nothing of it until ``read_at_ms`` later, when producer-1 goes on (a new transaction, offset 5) and
    the consumer reads 4 and 5. ``open_below``: how #5 ends: ``"open"`` (no end in the history),
    ``"aborted"`` (an ok abort before the fault)."""
    b = HistoryBuilder(
        {"progress_bound_ms": 100, "txn_hold_bound_ms": hold_ms, "isolation_level": isolation}, racks=RACKS
    )
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    b.assign("consumer-0", T, 0, 0)
    for i in range(3):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
        b.poll("consumer-0", [(T, 0, i, f"v{i}")], replica=1)
    b.txn("producer-1", "begin", "producer-1#5")
    b.send("producer-1", T, 0, "v3", offset=3, txn="producer-1#5")
    if open_below == "aborted":
        b.txn("producer-1", "abort", "producer-1#5")
    else:
        b.txn("producer-1", "abort", "producer-1#5", outcome="info")  # its abort hangs at a fenced coordinator
    b.fault("pause", ["kafka-1"])
    b.advance(50)
    b.heal("pause", ["kafka-1"])
    # another partition, without transactions, goes on at once (progress's "a poll after the heal")
    b.send("producer-2", T, 1, "w0", offset=0)
    b.poll("consumer-1", [(T, 1, 0, "w0")], replica=1)
    b.txn("producer-0", "begin", "producer-0#1")
    b.send("producer-0", T, 0, "v4", offset=4, txn="producer-0#1")
    b.txn("producer-0", "commit", "producer-0#1")
    b.advance(read_at_ms)
    b.txn("producer-1", "begin", "producer-1#6")
    b.send("producer-1", T, 0, "v5", offset=5, txn="producer-1#6")
    b.txn("producer-1", "commit", "producer-1#6")
    b.poll("consumer-0", [(T, 0, 4, "v4"), (T, 0, 5, "v5")], replica=1)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=6)
    return b


def progress(b: HistoryBuilder) -> Verdict:
    return CHECKS["progress"](b.data())


def stalled_after_heal(v: Verdict) -> bool:
    """consumer-0 did not read partition 0 within the bound of what it was owed after the heal
    (and nothing else was found)."""
    kinds = {e["kind"] for e in v.examples} - {"longest-stall"}
    return v.valid is False and kinds == {"consumer-stalled-after-heal"}


def test_an_open_transaction_below_makes_a_later_commit_readable_when_it_ends() -> None:
    b = history(open_below="open")
    h = b.data()
    readable, committed = lso_readable(h), txn_view(h)
    assert readable is not None and committed is not None
    s = h.sends
    (v4,) = np.nonzero(s.offset == 4)[0]
    (v5_send,) = np.nonzero((s.offset == 5) & (s.type == 1))[0]
    # offset 4 committed early, but #5 (offset 3) stayed open until producer-1's next ok send
    assert committed.readable_ns[v4] < readable[v4] == s.time[v5_send]
    assert progress(b).valid is True


def test_the_same_history_with_the_transaction_ended_at_once_is_still_a_stall() -> None:
    v = progress(history(open_below="aborted"))
    assert stalled_after_heal(v)


def test_a_read_uncommitted_consumer_is_never_excused() -> None:
    """The last stable offset bounds only read_committed reads."""
    b = history(open_below="open", isolation="read_uncommitted")
    assert stalled_after_heal(progress(b))


def test_the_hold_ends_at_the_transaction_timeout() -> None:
    """A transaction whose end the history does not show holds the LSO at most
    ``txn_hold_bound_ms`` after it began: a consumer still silent after that has stalled."""
    b = history(open_below="open", hold_ms=80, read_at_ms=900)  # #5 began ~60 ms before the heal
    h = b.data()
    readable = lso_readable(h)
    assert readable is not None
    s = h.sends
    (v4,) = np.nonzero(s.offset == 4)[0]
    (v3,) = np.nonzero(s.offset == 3)[0]
    assert s.time[v3] < readable[v4] < s.time[v3] + 80 * 1_000_000
    assert stalled_after_heal(progress(b))


def test_a_history_without_transactions_has_no_lso_rule() -> None:
    b = HistoryBuilder({}, racks=RACKS)
    b.send("producer-0", T, 0, "v0", offset=0)
    assert lso_readable(b.data()) is None


def _interleaved(first_commit_late: bool) -> dict[str, Any]:
    b = HistoryBuilder({"txn_hold_bound_ms": 60_000})
    b.txn("producer-1", "begin", "producer-1#1")
    b.send("producer-1", T, 0, "a", offset=0, txn="producer-1#1")
    b.txn("producer-0", "begin", "producer-0#1")
    b.send("producer-0", T, 0, "b", offset=1, txn="producer-0#1")
    b.txn("producer-0", "commit", "producer-0#1")
    b.advance(500 if first_commit_late else 0)
    end = b.txn("producer-1", "commit", "producer-1#1")
    h = b.data()
    readable = lso_readable(h)
    assert readable is not None
    (b_row,) = np.nonzero(h.sends.offset == 1)[0]
    return {"readable": int(readable[b_row]), "end": end["time_ns"], "own": int(txn_view(h).readable_ns[b_row])}  # type: ignore[union-attr]


def test_a_commit_above_another_transaction_waits_for_that_ones_commit_and_no_longer() -> None:
    late = _interleaved(True)
    assert late["readable"] == late["end"] > late["own"]
    prompt = _interleaved(False)
    assert prompt["readable"] == max(prompt["end"], prompt["own"])


def during_fault(open_below: bool) -> Verdict:
    """follower-fetch (c), as on seed 2344: the rack's broker is paused for 1.2 s; inside the
    window producer-0 commits offset 4 at once and the rack's read_committed consumer reads it
    only 900 ms later, when producer-1's transaction below it ends (``open_below``) or long
    after it ended (an ok abort before the fault)."""
    b = HistoryBuilder(
        {
            "follower_fetch_grace_ms": 0,
            "consumer_stall_bound_ms": 100,
            "consumer_stall_hang_bound_ms": 100,
            "isolation_level": "read_committed",
        },
        racks=RACKS,
    )
    b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=0)
    b.assign("consumer-0", T, 0, 0)
    b.send("producer-0", T, 0, "v0", offset=0)
    b.poll("consumer-0", [(T, 0, 0, "v0")], replica=1)
    b.txn("producer-1", "begin", "producer-1#5")
    b.send("producer-1", T, 0, "v1", offset=1, txn="producer-1#5")
    b.txn("producer-1", "abort", "producer-1#5", outcome="info" if open_below else "ok")
    b.fault("pause", ["kafka-1"])
    b.txn("producer-0", "begin", "producer-0#1")
    b.send("producer-0", T, 0, "v2", offset=2, txn="producer-0#1")
    b.txn("producer-0", "commit", "producer-0#1")
    b.advance(900)
    b.send("producer-1", T, 0, "v3", offset=3)  # producer-1 goes on
    b.poll("consumer-0", [(T, 0, 2, "v2"), (T, 0, 3, "v3")], replica=2)
    b.advance(300)
    b.heal("pause", ["kafka-1"])
    b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=4)
    return CHECKS["follower-fetch"](b.data())


def test_follower_fetch_excuses_a_read_committed_stall_behind_an_open_transaction_only() -> None:
    excused = during_fault(open_below=True)
    assert excused.valid is True and excused.counts["windows_judged"] == 1
    held = during_fault(open_below=False)
    assert held.valid is False and held.counts["window_stalls"] == 1


def test_a_read_uncommitted_consumer_is_owed_every_acknowledged_record_from_its_ack() -> None:
    """The hunt's seed 2322 (a copy run): a transaction whose end the history does not show
    wrote offsets a read_uncommitted consumer had to read (they are below the high watermark);
    a read_committed consumer is owed none of them."""
    b = HistoryBuilder(
        {"consumers": {"consumer-0": {"isolation_level": "read_uncommitted"}}, "isolation_level": "read_committed"},
        racks=RACKS,
    )
    b.poll("consumer-0", [], replica=1)
    b.poll("consumer-1", [], replica=1)
    b.txn("producer-0", "begin", "producer-0#1")
    acked = b.send("producer-0", T, 0, "v0", offset=0, txn="producer-0#1")
    b.txn("producer-0", "commit", "producer-0#1", outcome="info")
    h = b.data()
    uncommitted = owed_times(h, h.processes.index("consumer-0"), 0)
    assert uncommitted.tolist() == [acked["time_ns"]]
    assert owed_times(h, h.processes.index("consumer-1"), 0).tolist() == []
