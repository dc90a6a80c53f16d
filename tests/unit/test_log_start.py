"""log-start (core.checks.tiered): on a tiered topic that keeps every record, an observed log
start above an acknowledged record's offset is found; a log start that stays put, or that moved
only past offsets no send was acknowledged at, passes; with a finite retention, a log start that
passed a record younger than the retention (less the delivery timeout and the slack) is found,
and one that passed only older records passes; a run that observed no log start is not judged,
and one whose retention is not recorded is unknown."""

from __future__ import annotations

from highwater.core.checks.data import from_events
from highwater.core.checks.tiered import log_start
from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN, Verdict
from tests.synth.histories import HistoryBuilder

TIERED = {"tiered": True, "retention_ms": -1}


def history(
    starts: list[int], *, acked_from: int = 0, config: dict[str, object] | None = None, after_s: float = 0
) -> HistoryBuilder:
    """Ten sends to t/0, acknowledged from ``acked_from`` on (the ones before failed), and,
    ``after_s`` later, one observation of t/0 (and of t/1, at 0) per entry of ``starts``."""
    b = HistoryBuilder(TIERED if config is None else config, client="java 4.4.0")
    for o in range(10):
        b.send(
            "producer-0",
            "t",
            0,
            f"v{o}",
            offset=o if o >= acked_from else None,
            outcome="ok" if o >= acked_from else "fail",
        )
    b.advance(after_s * 1000)
    for start in starts:
        b.meta("t", 0, leader=1, isr=[1, 2, 3], hw=10, log_start=start, local_start=max(start, 6))
        b.meta("t", 1, leader=2, isr=[1, 2, 3], hw=0, log_start=0, local_start=0)
    return b


def judge(b: HistoryBuilder) -> Verdict:
    return log_start(from_events(b.header, b.events))


def test_a_log_start_past_an_acknowledged_record_is_found() -> None:
    v = judge(history([0, 0, 4, 3]))
    assert v.valid is False
    assert v.counts == {
        "observations": 8,
        "partitions": 2,
        "partitions_moved": 1,
        "acked_below": 4,
        "retention_ms": -1,
    }
    ex = v.examples[0]
    assert (ex["kind"], ex["log_start"], ex["lowest_acked"], ex["acked_below"], ex["leader"]) == (
        "log-start-passed-an-acknowledged-record",
        4,
        0,
        4,
        1,
    )


def test_a_log_start_that_stays_or_passes_only_unacknowledged_offsets_passes() -> None:
    still = judge(history([0, 0, 0]))
    assert still.valid is True and still.counts["partitions_moved"] == 0
    # offsets 0-2 were never acknowledged (their sends failed): a log start of 3 deletes nothing promised
    past_failed = judge(history([0, 3, 3], acked_from=3))
    assert past_failed.valid is True and past_failed.counts["acked_below"] == 0
    # the local log start moving (local retention, the data now remote) is not the log start moving
    assert judge(history([0, 0])).valid is True


def test_runs_without_observed_log_starts_are_not_judged_and_unknown_retention_is_unknown() -> None:
    b = history([0, 4])
    untiered = HistoryBuilder({}, client="java 4.4.0")
    untiered.events = [dict(e, value={k: v for k, v in e["value"].items() if "start" not in k}) for e in b.events]
    assert judge(untiered).valid == NOT_APPLICABLE
    unknown = judge(history([0, 4], config={"tiered": True}))
    assert unknown.valid == UNKNOWN and unknown.counts["observations"] == 4


#: a 60 s retention; records stamped up to a 20 s delivery timeout before their ack, 2 s slack:
#: a record is promised for 38 s after its ack
FINITE = {"tiered": True, "retention_ms": 60_000, "producer_delivery_timeout_ms": 20_000, "bound_slack_ms": 2000}


def test_retention_that_deletes_a_record_younger_than_itself_is_found() -> None:
    for after in (1, 37):
        v = judge(history([0, 4], config=FINITE, after_s=after))
        assert v.valid is False, after
        assert v.counts["acked_below"] == 4 and v.examples[0]["kind"] == "log-start-passed-an-acknowledged-record"


def test_retention_that_deletes_only_records_older_than_itself_passes() -> None:
    for after in (39, 120):
        v = judge(history([0, 4], config=FINITE, after_s=after))
        assert v.valid is True and v.counts["partitions_moved"] == 0, after
    # the young records a log start passed were never acknowledged: nothing promised
    assert judge(history([0, 3], acked_from=3, config=FINITE, after_s=1)).valid is True
