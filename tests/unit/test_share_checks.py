"""The share-group checks (``core.checks.share``): each fed its anomaly, and clean look-alikes
it must pass: share_delivery, share_exclusive, share_settled_redelivered, share_delivery_limit,
share_release_redelivered."""

from __future__ import annotations

from highwater.core.checks import CHECKS, run_checks
from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN
from tests.synth.histories import HistoryBuilder

LOCK_MS = 5_000
SHARE = {"group": "g", "topic": "t", "lock_ms": LOCK_MS, "delivery_limit": 3, "session_ms": 6_000}


def builder(**extra: object) -> HistoryBuilder:
    b = HistoryBuilder({"share": {**SHARE, **extra}})
    b.meta("t", 0, leader=1, isr=[1, 2, 3], hw=0, epoch=5)
    return b


def end(b: HistoryBuilder, n: int = 2) -> None:
    """A later observation (the leader's epoch unchanged) and the final read of ``n`` records."""
    b.meta("t", 0, leader=1, isr=[1, 2, 3], hw=n, epoch=5)
    b.final("t", 0, 1, n, [(i, f"v{i}") for i in range(n)])


def verdict(b: HistoryBuilder, check: str):  # type: ignore[no-untyped-def]
    return CHECKS[check](b.data())


def accepted_once(b: HistoryBuilder, proc: str, offsets: list[int]) -> None:
    b.acquire(proc, [("t", 0, o, f"v{o}", 1) for o in offsets])
    b.ack(proc, "t", 0, offsets, "accept")
    b.acked(proc, "t", 0, offsets)


def test_a_clean_history_passes_every_share_check() -> None:
    b = builder()
    accepted_once(b, "consumer-0", [0, 1])
    end(b)
    h = b.data()
    for name in [n for n in CHECKS if n.startswith("share-")]:
        v = CHECKS[name](h)
        assert v.valid in (True, UNKNOWN), (name, v)
    assert CHECKS["share-delivery"](h).valid is True
    assert CHECKS["share-delivery"](h).counts["settled"] == 2


def test_not_applicable_without_a_share_group() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "v0", offset=0)
    b.final("t", 0, 1, 1, [(0, "v0")])
    verdicts = {v.check: v.valid for v in run_checks(b.data())}
    assert all(verdicts[n] == NOT_APPLICABLE for n in CHECKS if n.startswith("share-"))


# share-delivery -------------------------------------------------------------------------


def test_share_delivery_finds_a_record_never_delivered() -> None:
    b = builder()
    accepted_once(b, "consumer-0", [0])
    end(b)
    v = verdict(b, "share-delivery")
    assert v.valid is False and v.counts["never_delivered"] == 1
    assert v.examples[0]["offset"] == 1


def test_share_delivery_finds_a_released_record_left_unsettled() -> None:
    b = builder()
    accepted_once(b, "consumer-0", [0])
    b.acquire("consumer-1", [("t", 0, 1, "v1", 1)])
    b.ack("consumer-1", "t", 0, [1], "release")
    b.acked("consumer-1", "t", 0, [1])
    end(b)
    v = verdict(b, "share-delivery")
    assert v.valid is False and v.counts["unsettled"] == 1


def test_share_delivery_counts_an_archived_record_as_settled() -> None:
    """Released three times (the limit): Kafka archives it; nothing is owed."""
    b = builder()
    accepted_once(b, "consumer-0", [0])
    for n in (1, 2, 3):
        b.acquire("consumer-1", [("t", 0, 1, "v1", n)])
        b.ack("consumer-1", "t", 0, [1], "release")
        b.acked("consumer-1", "t", 0, [1])
    end(b)
    assert verdict(b, "share-delivery").valid is True


def test_share_delivery_is_unknown_when_the_last_accept_may_not_have_landed() -> None:
    b = builder()
    accepted_once(b, "consumer-0", [0])
    b.acquire("consumer-1", [("t", 0, 1, "v1", 1)])
    b.ack("consumer-1", "t", 0, [1], "accept")
    b.acked("consumer-1", "t", 0, [1], "info", "TimeoutException: no answer")
    end(b)
    v = verdict(b, "share-delivery")
    assert v.valid == UNKNOWN and v.counts["uncertain"] == 1


def test_share_delivery_weighs_an_unknown_accept_against_the_group_s_state() -> None:
    """Below the start offset Kafka says settled: the accept may have landed. At or above it with
    a lag left, Kafka still owes a record: the accept did not land."""
    for start, lag, expected, count in (
        (2, None, True, "settled_by_state"),
        (1, 1, False, "owed"),
        (1, None, UNKNOWN, "uncertain"),
    ):
        b = builder()
        accepted_once(b, "consumer-0", [0])
        b.acquire("consumer-1", [("t", 0, 1, "v1", 1)])
        b.ack("consumer-1", "t", 0, [1], "accept")
        b.acked("consumer-1", "t", 0, [1], "info", "UnknownServerException: unexpected")
        b.share_state("g", "t", 0, start, lag)
        end(b)
        v = verdict(b, "share-delivery")
        assert v.valid == expected and v.counts[count] == 1, (start, v)


def test_share_delivery_takes_a_zero_lag_as_kafka_s_word_and_a_lag_as_records_owed() -> None:
    for lag, expected in ((0, True), (1, False)):
        b = builder()
        accepted_once(b, "consumer-0", [0, 1])
        b.share_state("g", "t", 0, 0, lag)  # a start offset that trails the acknowledgements
        end(b)
        v = verdict(b, "share-delivery")
        assert v.valid is expected and v.counts["owed"] == lag, (lag, v)


def test_share_delivery_is_unknown_when_kafka_settled_what_no_member_settled() -> None:
    b = builder()
    accepted_once(b, "consumer-0", [0])
    b.acquire("consumer-1", [("t", 0, 1, "v1", 1)])
    b.ack("consumer-1", "t", 0, [1], "accept")
    b.acked("consumer-1", "t", 0, [1], "fail", "InvalidRecordStateException: lock expired")
    b.share_state("g", "t", 0, 2)
    end(b)
    v = verdict(b, "share-delivery")
    assert v.valid == UNKNOWN and v.counts["unexplained"] == 1


# share-exclusive ------------------------------------------------------------------------


def test_share_exclusive_finds_a_record_handed_out_while_locked() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.advance(1_000)
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])  # 1 s later: consumer-0's 5 s lock still holds
    b.ack("consumer-0", "t", 0, [0], "accept")
    b.acked("consumer-0", "t", 0, [0], "fail", "InvalidRecordStateException: not acquired")
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0])
    accepted_once(b, "consumer-1", [1])
    end(b)
    v = verdict(b, "share-exclusive")
    assert v.valid is False and v.counts["held_twice"] == 1
    assert v.examples[0]["holder"] == "consumer-0" and v.examples[0]["process"] == "consumer-1"


def test_share_exclusive_passes_a_redelivery_after_the_lock_expired() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.advance(LOCK_MS + 100)
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0])
    accepted_once(b, "consumer-1", [1])
    end(b)
    assert verdict(b, "share-exclusive").valid is True


def test_share_exclusive_passes_a_redelivery_after_a_release_and_after_a_kill() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.ack("consumer-0", "t", 0, [0], "release")
    b.acked("consumer-0", "t", 0, [0])
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])
    b.fault("client-kill", ["consumer-1"])
    b.acquire("consumer-2", [("t", 0, 0, "v0", 3)])  # consumer-1's connection closed with it
    b.heal("client-kill", ["consumer-1"])
    b.ack("consumer-2", "t", 0, [0], "accept")
    b.acked("consumer-2", "t", 0, [0])
    accepted_once(b, "consumer-2", [1])
    end(b)
    v = verdict(b, "share-exclusive")
    assert v.valid is True and v.counts["redeliveries"] == 2


def test_share_exclusive_allows_a_redelivery_across_a_leader_change() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.meta("t", 0, leader=2, isr=[2, 3], hw=0, epoch=6)  # a new leader reloads the state
    b.acquire("consumer-1", [("t", 0, 0, "v0", 1)])
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0])
    accepted_once(b, "consumer-1", [1])
    b.meta("t", 0, leader=2, isr=[2, 3], hw=2, epoch=6)
    b.final("t", 0, 2, 2, [(0, "v0"), (1, "v1")])
    v = verdict(b, "share-exclusive")
    assert v.valid is True and v.counts["leader_moved"] == 1


def test_share_exclusive_finds_a_frozen_holder_s_record_handed_out_before_its_lock_expired() -> None:
    """The group drops a frozen member at its session timeout, but its records stay locked until
    their locks expire."""
    b = builder(lock_ms=60_000)
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.fault("client-freeze", ["consumer-0"])
    b.advance(6_500)  # past the 6 s session timeout, long before the 60 s lock expires
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0])
    b.heal("client-freeze", ["consumer-0"])
    accepted_once(b, "consumer-1", [1])
    end(b)
    assert verdict(b, "share-exclusive").valid is False


def test_share_exclusive_passes_a_frozen_holder_s_record_handed_out_after_its_lock_expired() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.fault("client-freeze", ["consumer-0"])
    b.advance(LOCK_MS + 100)
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0])
    b.heal("client-freeze", ["consumer-0"])
    accepted_once(b, "consumer-1", [1])
    end(b)
    assert verdict(b, "share-exclusive").valid is True


def test_share_exclusive_is_unknown_without_epochs_after() -> None:
    b = HistoryBuilder({"share": SHARE})
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])
    v = verdict(b, "share-exclusive")
    assert v.valid == UNKNOWN and v.counts["unjudged"] == 1


# share-settled-redelivered --------------------------------------------------------------


def test_share_settled_redelivered_finds_an_accepted_record_delivered_again() -> None:
    b = builder()
    accepted_once(b, "consumer-0", [0, 1])
    b.advance(LOCK_MS * 2)
    b.acquire("consumer-1", [("t", 0, 1, "v1", 2)])
    b.ack("consumer-1", "t", 0, [1], "accept")
    b.acked("consumer-1", "t", 0, [1])
    end(b)
    v = verdict(b, "share-settled-redelivered")
    assert v.valid is False and v.counts["redelivered"] == 1


def test_share_settled_redelivered_passes_a_stale_copy_returned_after_the_accept() -> None:
    """consumer-1 fetched ahead, stalled past its lock, and returned its delivery (count 1) after
    consumer-0 got the record again (count 2) and accepted it: no new delivery after the accept."""
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 2)])
    b.ack("consumer-0", "t", 0, [0], "accept")
    b.acked("consumer-0", "t", 0, [0])
    b.acquire("consumer-1", [("t", 0, 0, "v0", 1)], since_ms=LOCK_MS * 3)
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0], "fail", "InvalidRecordStateException: not acquired")
    accepted_once(b, "consumer-0", [1])
    end(b)
    v = verdict(b, "share-settled-redelivered")
    assert v.valid is True and v.counts["stale"] == 1
    assert verdict(b, "share-exclusive").valid is True


def test_share_exclusive_finds_one_delivery_handed_to_two_members() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.acquire("consumer-1", [("t", 0, 0, "v0", 1)])
    b.ack("consumer-0", "t", 0, [0], "accept")
    b.acked("consumer-0", "t", 0, [0])
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0], "fail", "InvalidRecordStateException: not acquired")
    accepted_once(b, "consumer-0", [1])
    end(b)
    v = verdict(b, "share-exclusive")
    assert v.valid is False and v.counts["delivered_twice"] == 1


def test_share_settled_redelivered_passes_an_ok_kafka_ignored() -> None:
    """consumer-2, frozen past its lock, returns its delivery (count 1) and accepts it after
    consumer-0 got the record again (count 2) and accepted it: Kafka answers the late accept with
    success and applies nothing; consumer-0's delivery is no redelivery after it."""
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 2)])
    b.ack("consumer-0", "t", 0, [0], "accept")
    b.acked("consumer-0", "t", 0, [0])
    b.acquire("consumer-2", [("t", 0, 0, "v0", 1)], since_ms=LOCK_MS * 3)
    b.ack("consumer-2", "t", 0, [0], "accept")
    b.acked("consumer-2", "t", 0, [0])
    accepted_once(b, "consumer-0", [1])
    end(b)
    v = verdict(b, "share-settled-redelivered")
    assert v.valid is True and v.counts["ignored"] == 1 and v.counts["stale"] == 1, v


def test_share_settled_redelivered_passes_after_a_failed_accept() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.ack("consumer-0", "t", 0, [0], "accept")
    b.acked("consumer-0", "t", 0, [0], "fail", "InvalidRecordStateException: lock expired")
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0])
    accepted_once(b, "consumer-1", [1])
    end(b)
    assert verdict(b, "share-settled-redelivered").valid is True


# share-delivery-limit ---------------------------------------------------------------------


def test_share_delivery_limit_finds_a_fourth_delivery() -> None:
    b = builder()
    for n in (1, 2, 3, 4):
        b.acquire("consumer-0", [("t", 0, 0, "v0", n)])
        b.ack("consumer-0", "t", 0, [0], "release")
        b.acked("consumer-0", "t", 0, [0])
    accepted_once(b, "consumer-0", [1])
    end(b)
    v = verdict(b, "share-delivery-limit")
    assert v.valid is False and v.counts["max_deliveries"] == 4


def test_share_delivery_limit_finds_a_reported_count_over_the_limit() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 4)])
    accepted_once(b, "consumer-0", [1])
    end(b)
    assert verdict(b, "share-delivery-limit").valid is False


def test_share_delivery_limit_allows_going_over_across_a_leader_change() -> None:
    """A new leader starts from the last count written down (KIP-932: not precise)."""
    b = builder()
    for n in (1, 2, 3):
        b.acquire("consumer-0", [("t", 0, 0, "v0", n)])
        b.ack("consumer-0", "t", 0, [0], "release")
        b.acked("consumer-0", "t", 0, [0])
    b.meta("t", 0, leader=2, isr=[2, 3], hw=0, epoch=6)
    b.acquire("consumer-0", [("t", 0, 0, "v0", 3)])
    b.ack("consumer-0", "t", 0, [0], "accept")
    b.acked("consumer-0", "t", 0, [0])
    accepted_once(b, "consumer-0", [1])
    b.meta("t", 0, leader=2, isr=[2, 3], hw=2, epoch=6)
    v = verdict(b, "share-delivery-limit")
    assert v.valid is True and v.counts["leader_moved"] == 1


def test_share_delivery_limit_passes_exactly_the_limit() -> None:
    b = builder()
    for n in (1, 2, 3):
        b.acquire("consumer-0", [("t", 0, 0, "v0", n)])
        b.ack("consumer-0", "t", 0, [0], "release")
        b.acked("consumer-0", "t", 0, [0])
    accepted_once(b, "consumer-0", [1])
    end(b)
    assert verdict(b, "share-delivery-limit").valid is True


# share-release-redelivered ----------------------------------------------------------------


def test_share_release_redelivered_finds_a_release_never_delivered_again() -> None:
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.ack("consumer-0", "t", 0, [0], "release")
    b.acked("consumer-0", "t", 0, [0])
    accepted_once(b, "consumer-0", [1])
    end(b)
    v = verdict(b, "share-release-redelivered")
    assert v.valid is False and v.counts["not_redelivered"] == 1


def test_share_release_redelivered_passes_a_last_release_that_archives() -> None:
    b = builder(delivery_limit=2)
    for n in (1, 2):
        b.acquire("consumer-0", [("t", 0, 0, "v0", n)])
        b.ack("consumer-0", "t", 0, [0], "release")
        b.acked("consumer-0", "t", 0, [0])
    accepted_once(b, "consumer-0", [1])
    end(b)
    v = verdict(b, "share-release-redelivered")
    assert v.valid is True and v.counts["released"] == 1


def test_share_release_redelivered_passes_a_failed_release() -> None:
    """A release the broker refused (the lock had expired) promises nothing by itself; the
    record came back anyway here."""
    b = builder()
    b.acquire("consumer-0", [("t", 0, 0, "v0", 1)])
    b.ack("consumer-0", "t", 0, [0], "release")
    b.acked("consumer-0", "t", 0, [0], "fail", "InvalidRecordStateException: lock expired")
    b.acquire("consumer-1", [("t", 0, 0, "v0", 2)])
    b.ack("consumer-1", "t", 0, [0], "accept")
    b.acked("consumer-1", "t", 0, [0])
    accepted_once(b, "consumer-1", [1])
    end(b)
    v = verdict(b, "share-release-redelivered")
    assert v.valid == UNKNOWN and v.counts["released"] == 0
