"""Every check on hand-built histories: with its anomaly (found, with the right count and
example) and without it (valid)."""

from __future__ import annotations

from typing import Any

import pytest

from highwater.core.checks import CHECKS, run_checks
from highwater.core.checks.verdict import NOT_APPLICABLE, UNKNOWN, Verdict, merge_valid
from highwater.core.policy import allowed, apply_policy
from tests.synth.histories import HistoryBuilder

T = "t"
RACKS = {"brokers": {"1": "a", "2": "b", "3": "c"}, "clients": {"consumer-0": "a", "consumer-1": "b"}}
SERVES = {"consumer-0": 1, "consumer-1": 2}  # each consumer's rack replica
FAST = {"follower_fetch_grace_ms": 0, "progress_bound_ms": 10_000}


def builder(**config: Any) -> HistoryBuilder:
    return HistoryBuilder({**FAST, **config}, racks=RACKS)


def write_and_read(
    b: HistoryBuilder, n: int, start: int = 0, consumers: tuple[str, ...] = ("consumer-0", "consumer-1")
) -> None:
    """Values v{start}..v{n-1} acked at their offsets, each polled by every consumer."""
    for i in range(start, n):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
        b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=i + 1)
        for c in consumers:
            b.poll(c, [(T, 0, i, f"v{i}")], replica=SERVES[c])


def begin(b: HistoryBuilder) -> None:
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    for c in SERVES:
        b.assign(c, T, 0, 0)


def finals(b: HistoryBuilder, n: int, replicas: tuple[int, ...] = (1, 2, 3), **override: Any) -> None:
    for r in replicas:
        recs = [(i, f"v{i}") for i in range(n)]
        b.final(T, 0, r, n, override.get(f"r{r}", recs))


def clean(n: int = 8, **config: Any) -> HistoryBuilder:
    b = builder(**config)
    begin(b)
    write_and_read(b, n)
    finals(b, n)
    return b


def check(name: str, b: HistoryBuilder) -> Verdict:
    """The check run directly, and through the registry (``run_checks``, which may skip it as
    not-applicable): both must agree, and a skipped check must not be hiding a violation."""
    v = CHECKS[name](b.data())
    via = run_checks(b.data(), [name], policy=False)[1]
    if via.valid == NOT_APPLICABLE:
        assert v.valid is not False, (name, v)
    else:
        assert (via.valid, via.counts) == (v.valid, v.counts), name
    return v


def rows(v: Verdict, k: int = 0) -> list[int]:
    return [e["index"] for e in v.examples[k]["events"]]


#: checks that judge transactions or group commits: a history without them cannot run them
TXN_AND_GROUP = {
    "aborted-read",
    "open-txn-read",
    "torn-transaction",
    "commit-ahead",
    "commit-regression",
    "rebalance-skip",
    "rebalance-rewind",
    "group-delivery",
    "exclusive-read",
    "rebalance-barrier",  # a group's: not applicable without one
    "copy-exactly-once",
    "share-delivery",
    "share-exclusive",
    "share-settled-redelivered",
    "share-delivery-limit",
    "share-release-redelivered",
    "upgrade",  # judged only over a roll or finalize step
    "remote-reset",  # judged only where the run's topics tier
    "log-start",  # judged only where the observer asked for log starts (tiered runs)
}


def test_clean_history_passes_every_check() -> None:
    verdicts = run_checks(clean().data())
    assert {v.check: v.valid for v in verdicts} == {
        "history": True,
        **{n: NOT_APPLICABLE if n in TXN_AND_GROUP else True for n in CHECKS},
    }


# uncommitted-read -------------------------------------------------------------------------


def test_uncommitted_read_other_value_committed() -> None:
    b = builder()
    begin(b)
    write_and_read(b, 5)
    bad = b.poll("consumer-1", [(T, 0, 5, "ghost")], replica=2)  # later truncated, then v5 won
    write_and_read(b, 8, start=5, consumers=("consumer-0",))
    finals(b, 8)
    v = check("uncommitted-read", b)
    assert v.valid is False and v.counts["uncommitted_reads"] == 1
    ex = v.examples[0]
    assert (ex["offset"], ex["consumer"], ex["committed"]) == (5, "consumer-1", True)
    assert bad["index"] in rows(v)
    final_ev = [e for e in ex["events"] if e["f"] == "final-read"][0]
    assert final_ev["value"]["records"] == [[5, "v5"]] and final_ev["value"]["records_total"] == 8


def test_uncommitted_read_above_final_hw() -> None:
    b = clean(6)
    b.poll("consumer-0", [(T, 0, 6, "never-committed")], replica=1)
    v = check("uncommitted-read", b)
    assert v.counts["uncommitted_reads"] == 1 and v.examples[0]["committed"] is False


def test_uncommitted_read_clean_and_unknown_without_final() -> None:
    assert check("uncommitted-read", clean()).valid is True
    b = builder()
    begin(b)
    write_and_read(b, 3)
    v = check("uncommitted-read", b)
    assert v.valid == UNKNOWN and v.counts["records_unjudged"] == 6


# poll-skip / nonmonotonic-poll ------------------------------------------------------------


def test_poll_skip_found() -> None:
    b = builder()
    begin(b)
    for i in range(6):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
    b.poll("consumer-0", [(T, 0, 0, "v0"), (T, 0, 1, "v1")])
    jump = b.poll("consumer-0", [(T, 0, 4, "v4"), (T, 0, 5, "v5")])
    b.poll("consumer-1", [(T, 0, i, f"v{i}") for i in range(6)])
    finals(b, 6)
    v = check("poll-skip", b)
    assert v.valid is False and v.counts["skips"] == 1 and v.counts["skipped_offsets"] == 2
    ex = v.examples[0]
    assert (ex["consumer"], ex["expected_offset"], ex["got_offset"]) == ("consumer-0", 2, 4)
    assert rows(v)[-1] == jump["index"]


def test_poll_skip_after_assign_and_not_over_missing_offsets() -> None:
    b = builder()
    b.assign("consumer-0", T, 0, 0)
    b.poll("consumer-0", [(T, 0, 2, "v2")])  # offsets 0, 1 skipped right after the assign
    finals(b, 3)
    v = check("poll-skip", b)
    assert v.counts["skips"] == 1 and v.examples[0]["after_position_change"] is True

    b = builder()
    b.assign("consumer-0", T, 0, 0)
    b.poll("consumer-0", [(T, 0, 0, "v0"), (T, 0, 2, "v2")])  # 1 is a transaction marker
    b.final(T, 0, 1, 3, [(0, "v0"), (2, "v2")])
    assert check("poll-skip", b).valid is True


def test_poll_skip_not_across_position_change() -> None:
    b = builder()
    b.poll("consumer-0", [(T, 0, 0, "v0")])
    b.seek("consumer-0", T, 0, 3)
    b.poll("consumer-0", [(T, 0, 3, "v3")])
    b.assign("consumer-0", None, None, None, reason="rebalance")  # all partitions
    b.poll("consumer-0", [(T, 0, 5, "v5")])
    finals(b, 6)
    v = check("poll-skip", b)
    assert v.valid is True and v.counts["steps_judged"] == 1


def test_nonmonotonic_poll() -> None:
    b = builder()
    b.assign("consumer-0", T, 0, 0)
    b.poll("consumer-0", [(T, 0, 0, "v0"), (T, 0, 1, "v1"), (T, 0, 2, "v2")])
    rep = b.poll("consumer-0", [(T, 0, 2, "v2")])
    back = b.poll("consumer-0", [(T, 0, 1, "v1")])
    v = check("nonmonotonic-poll", b)
    assert v.valid is False
    assert (v.counts["nonmonotonic"], v.counts["repeats"], v.counts["backwards"]) == (2, 1, 1)
    assert v.examples[0]["repeated"] is True and rows(v, 0)[-1] == rep["index"]
    assert (v.examples[1]["expected_offset"], v.examples[1]["got_offset"]) == (3, 1)
    assert rows(v, 1)[-1] == back["index"]


def test_nonmonotonic_poll_clean_after_seek_back() -> None:
    b = builder()
    b.poll("consumer-0", [(T, 0, 0, "v0"), (T, 0, 1, "v1")])
    b.seek("consumer-0", T, 0, 0, reason="rewind")
    b.poll("consumer-0", [(T, 0, 0, "v0")])
    assert check("nonmonotonic-poll", b).valid is True
    assert check("nonmonotonic-poll", builder()).valid == UNKNOWN


# lost-write ----------------------------------------------------------------------------------


def test_lost_write() -> None:
    b = builder()
    begin(b)
    write_and_read(b, 4)
    lost = b.send("producer-0", T, 0, "gone", offset=4)
    b.send("producer-0", T, 0, "maybe", outcome="info")
    b.send("producer-0", T, 0, "nope", outcome="fail")
    finals(b, 4)
    v = check("lost-write", b)
    assert v.valid is False and v.counts["lost"] == 1
    assert (v.counts["uncertain"], v.counts["failed"]) == (1, 1)
    assert v.examples[0]["offset"] == 4 and rows(v) == [lost["index"]]


def test_lost_write_clean_uncertain_and_unknown() -> None:
    b = clean(4)
    b.send("producer-0", T, 0, "maybe", outcome="info")  # uncertain, absent: fine
    v = check("lost-write", b)
    assert v.valid is True and v.counts["uncertain"] == 1
    nf = builder()
    write_and_read(nf, 3)
    v = check("lost-write", nf)
    assert v.valid == UNKNOWN and "no final read" in v.notes[0]


# unseen ------------------------------------------------------------------------------------


def test_unseen() -> None:
    b = builder()
    begin(b)
    for i in range(5):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
    for c in SERVES:
        b.poll(c, [(T, 0, 0, "v0"), (T, 0, 1, "v1")])
        b.seek(c, T, 0, 3, reason="reset")  # both consumers jump over offset 2
        b.poll(c, [(T, 0, 3, "v3"), (T, 0, 4, "v4")])
    finals(b, 5)
    v = check("unseen", b)
    assert v.valid is False and v.counts["unseen"] == 1 and v.examples[0]["offset"] == 2
    assert v.examples[0]["events"][0]["value"]["value"] == "v2"
    assert check("poll-skip", b).valid is True
    assert check("unseen", clean()).valid is True


# duplicate ---------------------------------------------------------------------------------


def test_duplicate_in_final_log() -> None:
    b = builder()
    begin(b)
    write_and_read(b, 4)
    recs = [(i, f"v{i}") for i in range(4)] + [(4, "v1")]  # a retry wrote v1 again
    for r in (1, 2, 3):
        b.final(T, 0, r, 5, recs)
    v = check("duplicate", b)
    assert v.valid is False and v.counts["duplicates"] == 1
    assert v.examples[0]["offsets"] == [1, 4]
    assert check("duplicate", clean()).valid is True
    # the policy allows it without idempotence
    assert allowed("duplicate", {"idempotence": False}) is not None
    assert allowed("duplicate", {"idempotence": True}) is None


def test_duplicate_examples_are_the_lowest_in_the_log() -> None:
    """Seven values written twice: the five examples are those placed lowest, whatever order the
    values were interned in (value ids once decided it, and a hash decided those)."""
    b = builder()
    begin(b)
    write_and_read(b, 10)
    values = [f"v{i}" for i in range(10)]
    again = [9, 2, 7, 0, 5, 3, 8]  # retries of these, in this order, after the ten
    recs = [(i, v) for i, v in enumerate(values)] + [(10 + j, values[i]) for j, i in enumerate(again)]
    for r in (1, 2, 3):
        b.final(T, 0, r, len(recs), recs)
    v = check("duplicate", b)
    assert v.valid is False and v.counts["duplicates"] == 7
    assert [e["offsets"][0] for e in v.examples] == [0, 2, 3, 5, 7]


# inconsistent-offsets ----------------------------------------------------------------------


def test_inconsistent_offsets_ack_at_wrong_offset() -> None:
    b = builder()
    begin(b)
    write_and_read(b, 3)
    ack = b.send("producer-0", T, 0, "v3", offset=7)  # the log has it at 3
    b.poll("consumer-0", [(T, 0, 3, "v3")])
    finals(b, 4)
    v = check("inconsistent-offsets", b)
    assert v.valid is False and v.counts["ack_offset_mismatch"] == 1
    assert (v.examples[0]["acked_offset"], v.examples[0]["final_offset"]) == (7, 3)
    assert rows(v) == [ack["index"]]


def test_inconsistent_offsets_tolerates_a_retry_duplicate_whose_acked_copy_was_truncated() -> None:
    """Seen in a KIP-320 run (idempotence off, unclean election): a timed-out first attempt
    wrote v3 at 3, the retry wrote it again at 5 and was acked there; consumers read it at 5;
    the unclean election kept a log with v3 at 3 and another value at 5. The ack was right:
    not an offset inconsistency (the truncation is the uncommitted-read check's business)."""
    b = builder(idempotence=False, unclean_leader_election=True)
    begin(b)
    write_and_read(b, 3)
    b.send("producer-0", T, 0, "v4", offset=4)
    ack = b.send("producer-0", T, 0, "v3", offset=5)
    b.poll("consumer-0", [(T, 0, 3, "v3"), (T, 0, 4, "v4"), (T, 0, 5, "v3")])
    recs = [(0, "v0"), (1, "v1"), (2, "v2"), (3, "v3"), (4, "w4"), (5, "w5")]
    finals(b, 6, r1=recs, r2=recs, r3=recs)
    v = check("inconsistent-offsets", b)
    assert v.valid is True and v.counts["ack_offset_mismatch"] == 0
    assert v.counts["acked_copy_lost"] == 1
    assert check("uncommitted-read", b).valid is not True  # the truncation itself is seen
    # never read at its acked offset: the ack itself is suspect, still a violation
    b2 = builder(idempotence=False)
    begin(b2)
    write_and_read(b2, 3)
    b2.send("producer-0", T, 0, "v3", offset=5)
    b2.poll("consumer-0", [(T, 0, 3, "v3")])
    finals(b2, 6, r1=recs, r2=recs, r3=recs)
    v2 = check("inconsistent-offsets", b2)
    assert v2.valid is False and v2.counts["ack_offset_mismatch"] == 1
    assert ack["value"]["offset"] == 5


def test_inconsistent_offsets_without_final() -> None:
    b = builder()
    b.poll("consumer-0", [(T, 1, 0, "a")])
    b.poll("consumer-1", [(T, 1, 0, "b")])
    b.poll("consumer-1", [(T, 1, 1, "c")])
    v = check("inconsistent-offsets", b)
    assert v.valid is False and v.counts["conflicting_offsets"] == 1
    assert (v.examples[0]["partition"], v.examples[0]["offset"]) == (1, 0)
    assert check("inconsistent-offsets", clean()).valid is True


# replica-divergence ------------------------------------------------------------------------


def test_replica_divergence() -> None:
    b = builder()
    begin(b)
    write_and_read(b, 6)
    good = [(i, f"v{i}") for i in range(6)]
    bad = [(i, "zz" if i == 4 else f"v{i}") for i in range(6)]
    finals(b, 6, r3=bad)
    v = check("replica-divergence", b)
    assert v.valid is False and v.counts == {"diverged_replicas": 1, "differing_offsets": 1, "replicas_compared": 2}
    assert v.examples[0]["offsets"] == [4] and v.examples[0]["replicas"] == [1, 3]
    assert good != bad


def test_replica_divergence_allows_uncommitted_tail_and_lagging_replica() -> None:
    b = builder()
    begin(b)
    write_and_read(b, 4)
    b.final(T, 0, 1, 4, [(i, f"v{i}") for i in range(4)] + [(4, "tail-a")])
    b.final(T, 0, 2, 4, [(i, f"v{i}") for i in range(4)] + [(4, "tail-b"), (5, "tail-b2")])
    b.final(T, 0, 3, 2, [(0, "v0"), (1, "v1")])  # behind
    assert check("replica-divergence", b).valid is True


# hw-regression -----------------------------------------------------------------------------


def test_hw_regression() -> None:
    b = clean(3)
    b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=5, epoch=1)
    back = b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=4, epoch=1)
    b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=3, proc="other-observer")  # another client: own order
    v = check("hw-regression", b)
    assert v.valid is False and v.counts["regressions"] == 1
    assert (v.examples[0]["hw_before"], v.examples[0]["hw_after"]) == (5, 4)
    assert rows(v)[-1] == back["index"]
    assert check("hw-regression", builder()).valid == UNKNOWN
    assert allowed("hw-regression", {"unclean_leader_election": True})


def test_hw_regression_skips_a_deposed_leaders_stale_answer_but_not_a_new_leaders() -> None:
    # the compose leader-partition run: new leader 3 (epoch 1) at 138, then stale metadata sends
    # the observer to the cut-off old leader 2 (epoch 0) at 136, then leader 3 again
    b = clean(3)
    b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=130, epoch=0)
    b.meta(T, 0, leader=3, isr=[1, 3], hw=138, epoch=1)
    b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=136, epoch=0)
    b.meta(T, 0, leader=3, isr=[1, 3], hw=482, epoch=1)
    v = check("hw-regression", b)
    assert v.valid is True and v.counts["stale_observations"] == 1 and v.counts["regressions"] == 0
    # a new leader's own HW below the old leader's is still a regression (KIP-207)
    b = clean(3)
    b.meta(T, 0, leader=2, isr=[1, 2, 3], hw=138, epoch=0)
    b.meta(T, 0, leader=3, isr=[1, 3], hw=136, epoch=1)
    v = check("hw-regression", b)
    assert v.valid is False and v.counts["regressions"] == 1 and v.counts["stale_observations"] == 0


# truncation-undetected ---------------------------------------------------------------------


def _truncated(b: HistoryBuilder) -> None:
    begin(b)
    write_and_read(b, 5)
    # consumer-0 reads two records of the old leader that an unclean election then dropped
    b.poll("consumer-0", [(T, 0, 5, "old5"), (T, 0, 6, "old6")])


def _new_leader(b: HistoryBuilder) -> None:
    for i in range(5, 10):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
    b.poll("consumer-1", [(T, 0, i, f"v{i}") for i in range(5, 10)])


def test_truncation_undetected_carried_on() -> None:
    b = builder(unclean_leader_election=True)
    _truncated(b)
    _new_leader(b)
    cont = b.poll("consumer-0", [(T, 0, 7, "v7"), (T, 0, 8, "v8")])
    finals(b, 10)
    v = check("truncation-undetected", b)
    assert v.valid is False and v.counts["undetected"] == 1
    assert v.examples[0]["divergence_offset"] == 5 and v.examples[0]["how"] == "went on reading"
    assert rows(v)[-1] == cont["index"]
    # under unclean election the lost reads are allowed, the silent carry-on is not
    verdicts = {x.check: x for x in run_checks(b.data())}
    assert verdicts["uncommitted-read"].valid is True and verdicts["uncommitted-read"].allowed
    assert verdicts["truncation-undetected"].valid is False


def test_truncation_undetected_moved_past_divergence() -> None:
    b = builder()
    _truncated(b)
    _new_leader(b)
    b.seek("consumer-0", T, 0, 9, reason="offset reset")
    b.poll("consumer-0", [(T, 0, 9, "v9")])
    finals(b, 10)
    v = check("truncation-undetected", b)
    assert v.counts["undetected"] == 1 and v.examples[0]["how"] == "moved past the divergence point"


@pytest.mark.parametrize("how", ["error", "seek"])
def test_truncation_detected(how: str) -> None:
    b = builder()
    _truncated(b)
    _new_leader(b)
    if how == "error":
        b.poll_error("consumer-0", "LogTruncationError")
        b.seek("consumer-0", T, 0, 5, reason="truncation")
    else:
        b.seek("consumer-0", T, 0, 5, reason="reset to divergence")
    b.poll("consumer-0", [(T, 0, i, f"v{i}") for i in range(5, 10)])
    finals(b, 10)
    v = check("truncation-undetected", b)
    assert v.valid is True and v.counts["segments_with_truncated_reads"] == 1
    assert check("uncommitted-read", b).counts["uncommitted_reads"] == 2


# follower-fetch ----------------------------------------------------------------------------


def test_follower_fetch_misrouted() -> None:
    b = builder()
    begin(b)
    write_and_read(b, 3)
    wrong = b.poll("consumer-0", [(T, 0, 3, "v3")], replica=3)  # rack c, while 1 (rack a) in ISR
    v = check("follower-fetch", b)
    assert v.valid is False and v.counts["misrouted"] == 1
    assert (v.examples[0]["consumer"], v.examples[0]["replica"]) == ("consumer-0", 3)
    assert rows(v)[0] == wrong["index"]
    assert check("follower-fetch", clean()).valid is True


def test_follower_fetch_does_not_judge_routing_while_a_fault_is_on() -> None:
    """A killed replica stays in the ISR until the controller fences it: reads served from
    another rack meanwhile (and within the grace after the heal) are not misrouted."""
    b = builder(follower_fetch_grace_ms=50)
    begin(b)
    write_and_read(b, 3)
    b.advance(100)
    b.fault("kill", ["kafka-1"])
    during = b.poll("consumer-0", [(T, 0, 3, "v3")], replica=2)  # ISR still lists 1 (rack a)
    b.advance(10)
    b.heal("kill", ["kafka-1"])
    b.advance(20)
    b.poll("consumer-0", [(T, 0, 4, "v4")], replica=2)  # within the grace after the heal
    calm_so_far = check("follower-fetch", b)
    assert calm_so_far.valid is not False and calm_so_far.counts["misrouted"] == 0
    b.advance(100)
    late = b.poll("consumer-0", [(T, 0, 5, "v5")], replica=2)  # calm again: misrouted
    v = check("follower-fetch", b)
    assert v.valid is False and v.counts["misrouted"] == 1 and rows(v)[0] == late["index"]
    assert during["index"] not in rows(v)


def test_follower_fetch_must_move_after_isr_loss() -> None:
    b = builder(follower_fetch_bound_ms=100)
    begin(b)
    write_and_read(b, 3)
    b.meta(T, 0, leader=2, isr=[2, 3], hw=3)  # rack a has no in-sync replica any more
    for i in range(3, 8):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
        b.poll("consumer-1", [(T, 0, i, f"v{i}")], replica=2)
        b.advance(30)
    v = check("follower-fetch", b)  # consumer-0 never reads again
    assert v.valid is False and v.counts["stalls"] == 1 and v.counts["misrouted"] == 0
    b2 = builder(follower_fetch_bound_ms=100)
    begin(b2)
    write_and_read(b2, 3)
    b2.meta(T, 0, leader=2, isr=[2, 3], hw=3)
    for i in range(3, 8):
        b2.send("producer-0", T, 0, f"v{i}", offset=i)
        for c in SERVES:
            b2.poll(c, [(T, 0, i, f"v{i}")], replica=2)
        b2.advance(30)
    assert check("follower-fetch", b2).valid is True


def test_follower_fetch_unknown_without_racks() -> None:
    b = HistoryBuilder()
    b.poll("consumer-0", [(T, 0, 0, "v0")], replica=1)
    assert check("follower-fetch", b).valid == UNKNOWN


# isr-stability -----------------------------------------------------------------------------

ISR = {"replica_lag_time_max_ms": 100, "isr_slack_ms": 50, "isr_rejoin_bound_ms": 200, "controller_failover_ms": 50}


def test_isr_shrunk_while_quiet() -> None:
    b = builder(**ISR)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    b.advance(1000)
    shrink = b.meta(T, 0, leader=1, isr=[1, 2], hw=0)
    v = check("isr-stability", b)
    assert v.valid is False and v.counts["shrunk_while_quiet"] == 1
    assert v.examples[0]["replicas"] == [3] and rows(v)[-1] == shrink["index"]


def _isr_fault(b: HistoryBuilder, leaves: bool, rejoins: bool) -> None:
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    b.fault("kill", ["kafka-3"])
    for _ in range(4):
        b.advance(50)
        b.meta(T, 0, leader=1, isr=[1, 2] if leaves else [1, 2, 3], hw=0)
    b.heal("kill", ["kafka-3"])
    for _ in range(6):
        b.advance(50)
        b.meta(T, 0, leader=1, isr=[1, 2, 3] if rejoins else [1, 2], hw=0)


def test_isr_fault_cycle_clean() -> None:
    b = builder(**ISR)
    _isr_fault(b, leaves=True, rejoins=True)
    v = check("isr-stability", b)
    assert v.valid is True and v.counts["judged"] >= 2


def test_isr_cut_off_replica_stays() -> None:
    b = builder(**ISR)
    _isr_fault(b, leaves=False, rejoins=True)
    v = check("isr-stability", b)
    assert v.valid is False and v.counts["cut_off_stayed"] == 1 and v.examples[0]["replica"] == 3


def _blind_observer(b: HistoryBuilder, late_isr: list[int] | None) -> None:
    """A cut-off follower seen in the ISR only early in the window (50 ms of a 150 ms bound),
    then, like an observer hung on a frozen broker, not again until ``late_isr`` past the bound."""
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    b.fault("pause", ["kafka-3"])
    b.advance(50)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    b.advance(250)
    if late_isr is not None:
        b.meta(T, 0, leader=1, isr=late_isr, hw=0)
    b.advance(50)
    b.heal("pause", ["kafka-3"])
    for _ in range(3):
        b.advance(50)
        b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)


def test_isr_an_early_observation_alone_does_not_convict() -> None:
    # seen in only before the bound, then out: it may have left in time -> unknown, not a violation
    for late in ([1, 2], None):
        b = builder(**ISR, isr_leave_bound_ms=150)
        _blind_observer(b, late)
        v = check("isr-stability", b)
        assert v.valid == UNKNOWN and v.counts["cut_off_stayed"] == 0, (late, v.counts)
    # the same early observation, then still in past the bound: that is the violation
    b = builder(**ISR, isr_leave_bound_ms=150)
    _blind_observer(b, [1, 2, 3])
    v = check("isr-stability", b)
    assert v.valid is False and v.counts["cut_off_stayed"] == 1


def test_isr_no_rejoin() -> None:
    b = builder(**ISR)
    _isr_fault(b, leaves=True, rejoins=False)
    b.advance(500)
    b.meta(T, 0, leader=1, isr=[1, 2], hw=0)
    v = check("isr-stability", b)
    assert v.valid is False and v.counts["not_rejoined"] == 1


# progress ------------------------------------------------------------------------------------


def test_progress_after_heal() -> None:
    b = builder(progress_bound_ms=100)
    begin(b)
    write_and_read(b, 3)
    b.fault("pause", ["kafka-1"])
    b.advance(50)
    heal = b.heal("pause", ["kafka-1"])
    b.advance(500)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=3)  # the run goes on, the workload does not
    v = check("progress", b)
    assert v.valid is False and v.counts["stalls"] == 2  # no send and no poll after the heal
    assert {e["kind"] for e in v.examples} == {"no-send-after-heal", "no-poll-after-heal"}
    assert rows(v) == [heal["index"]]


def test_progress_after_a_heal_is_owed_when_no_other_fault_is_still_on() -> None:
    """A heal while another fault is still on (a consumer back from its restart while the tiered
    store still fails): what is owed after it is owed after the last heal instead; the stall past
    the last heal is still found."""

    def overlapping(read_after_last_heal: bool) -> HistoryBuilder:
        b = builder(progress_bound_ms=100)
        begin(b)
        write_and_read(b, 3)
        b.fault("disk_fail", ["remote-store"])
        b.fault("pause", ["kafka-1"])
        b.advance(50)
        b.heal("pause", ["kafka-1"])
        b.advance(500)  # nothing read or written while the store still fails
        b.heal("disk_fail", ["remote-store"])
        b.advance(20)
        if read_after_last_heal:
            write_and_read(b, 5, start=3)
        b.advance(500)
        b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=5)
        return b

    assert check("progress", overlapping(True)).valid is True
    late = check("progress", overlapping(False))
    assert late.valid is False and {e["kind"] for e in late.examples} >= {"no-poll-after-heal"}


def test_progress_stall_without_fault_and_clean() -> None:
    b = builder(progress_bound_ms=100)
    begin(b)
    write_and_read(b, 3)
    b.advance(1000)
    write_and_read(b, 5, start=3)
    v = check("progress", b)
    assert v.valid is False and {e["kind"] for e in v.examples} == {"send-stalled", "poll-stalled"}
    assert v.examples[0]["gap_ms"] >= 1000
    b = builder(progress_bound_ms=100)
    begin(b)
    write_and_read(b, 3)
    b.fault("kill", ["kafka-1"])
    b.advance(1000)  # no progress while the leader is down: allowed by default
    b.heal("kill", ["kafka-1"])
    write_and_read(b, 5, start=3)
    assert check("progress", b).valid is True


# verdicts and policy -----------------------------------------------------------------------


def test_merge_valid() -> None:
    assert merge_valid([True, UNKNOWN, True]) == UNKNOWN
    assert merge_valid([True, UNKNOWN, False]) is False
    assert merge_valid([True, True]) is True
    assert merge_valid([True, NOT_APPLICABLE]) is True
    assert merge_valid([NOT_APPLICABLE, NOT_APPLICABLE]) == NOT_APPLICABLE


def test_each_anomaly_is_found_through_the_registry() -> None:
    """The registry's declared inputs never skip a check on a history with its anomaly: the
    checks' own anomaly histories above, run through ``run_checks`` with every check."""
    b = clean(4)
    b.send("producer-0", T, 0, "gone", offset=4)  # lost-write
    b.poll("consumer-0", [(T, 0, 3, "v3")], replica=SERVES["consumer-0"])  # nonmonotonic-poll
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=2)  # hw-regression (and isr-stability stays quiet)
    got = {v.check: v.valid for v in run_checks(b.data(), policy=False)}
    assert {c for c, v in got.items() if v == NOT_APPLICABLE} == TXN_AND_GROUP  # no transactions here
    assert {c for c, v in got.items() if v is False} >= {"lost-write", "nonmonotonic-poll", "hw-regression"}


def test_policy_lost_write_by_config() -> None:
    lost = Verdict("lost-write", False, {"lost": 1})
    assert apply_policy([lost], {"acks": "all"})[0].valid is False
    assert apply_policy([lost], {"acks": 1})[0].valid is True
    got = apply_policy([lost], {"acks": "all", "unclean_leader_election": "true"})[0]
    assert got.valid is True and got.allowed and "unclean" in got.notes[-1]
    never = Verdict("truncation-undetected", False)
    assert apply_policy([never], {"acks": "1", "unclean_leader_election": True})[0].valid is False


def test_a_meta_observation_is_dated_by_when_it_began(tmp_path: Any) -> None:
    """An observer held up by a frozen broker writes its event late: the ISR it reports is as
    old as its Metadata read (``observed_ns``), on JSON Lines and Parquet alike."""
    from highwater.core.checks import load
    from highwater.core.history import to_parquet

    b = builder()
    b.advance(1000)
    ev = b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0)
    ev["value"]["observed_ns"] = ev["time_ns"] - 900 * 1_000_000  # began 0.9 s before it was written
    late = b.meta(T, 0, leader=1, isr=[1, 2], hw=0)
    late["value"]["observed_ns"] = late["time_ns"] + 5  # a clock it cannot have: ignored
    src = b.write(tmp_path / "h.jsonl")
    to_parquet(src, tmp_path / "h.parquet")
    for h in (b.data(), load(src), load(tmp_path / "h.parquet")):
        assert [m.time for m in h.meta] == [ev["value"]["observed_ns"], late["time_ns"]]
