"""progress and follower-fetch judge a group member only on the partitions it owns: once another
member of its group is positioned on a partition, the stalls of the previous owner there are
not its (a member cut off from its coordinator is evicted and its partition moves)."""

from __future__ import annotations

from tests.synth.histories import HistoryBuilder
from tests.unit.test_bounds_checks import START, T, check, loss_seen_after_the_heal, scenario


def give_to_consumer_0(b: HistoryBuilder, at_ms: int) -> HistoryBuilder:
    """``b`` with consumer-0 positioned on the partition ``at_ms`` into the history (a
    rebalance), the events in time order again."""
    b.now = at_ms * 1_000_000
    b.assign("consumer-0", T, 0, None, reason="rebalance")
    b.events.sort(key=lambda e: (e["time_ns"], e["index"]))
    for i, ev in enumerate(b.events):
        ev["index"] = i
    return b


def test_a_group_member_is_not_judged_on_a_partition_that_moved_away() -> None:
    b = scenario(3000, after_heal_reads=False)  # consumer-1 reads nothing after the heal
    group = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}
    b.header["config"]["consumers"] = group
    assert check("progress", b).valid is False  # the partition is still consumer-1's (its assign came last)
    give_to_consumer_0(b, START + 1500)  # during the fault, the partition moves to consumer-0
    assert check("progress", b).valid is True
    del b.header["config"]["consumers"]  # without groups every consumer is judged on all it read
    assert check("progress", b).valid is False


def _moved_after_the_heal(after_ms: int) -> HistoryBuilder:
    """consumer-1 reads nothing after the heal; ``after_ms`` after the heal its partition moves
    to consumer-0 (a rebalance once the frozen group coordinator came back)."""
    b = scenario(3000, after_heal_reads=False)
    b.header["config"]["consumers"] = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}
    return give_to_consumer_0(b, START + 3000 + after_ms)


def test_a_partition_that_moves_away_after_the_heal_leaves_its_previous_owner_unjudged() -> None:
    """Seen with Java's group in coordinators-cut-pause: the members were blocked in commitSync
    on the frozen coordinator; 0.3 s after it resumed, a rebalance moved two partitions. Their
    previous owners never polled them again: no stall of theirs, and no proof either."""
    moved_soon = check("progress", _moved_after_the_heal(300))
    assert moved_soon.valid == "unknown" and moved_soon.counts["stalls"] == 0, moved_soon.counts
    # a move after the after-heal phase (progress_bound_ms, 1.25 s here) leaves it whole: a stall
    late = check("progress", _moved_after_the_heal(2400))
    assert late.valid is False and any(e["kind"] == "consumer-stalled-after-heal" for e in late.examples)


def test_a_move_is_judged_only_until_the_group_gives_the_partition_away() -> None:
    """follower-fetch (b): the loss is seen 100 ms after the heal, consumer-1 stays on its
    out-of-sync replica (no move within F = 750 ms). Its partition moving to consumer-0 300 ms
    after the loss leaves the move unjudged; a move 1 s after it (past F) leaves the stall, and
    so does a move to a member of another group."""

    def given_away(after_ms: int, group_of_0: str) -> HistoryBuilder:
        b = loss_seen_after_the_heal(look_after_heal=True)
        b.header["config"]["consumers"] = {"consumer-0": {"group": group_of_0}, "consumer-1": {"group": "g"}}
        return give_to_consumer_0(b, START + 3100 + after_ms)

    soon = check("follower-fetch", given_away(300, "g"))
    assert soon.counts["stalls"] == 0 and soon.counts["moves_unjudged"] == 1, soon.counts
    assert soon.valid is not False, soon.to_json()
    for late in (given_away(1000, "g"), given_away(300, "other")):
        v = check("follower-fetch", late)
        assert v.valid is False and v.counts["stalls"] == 1 and v.counts["moves_judged"] == 1, v.counts


def _second_fault_after_the_heal(reads_after_its_heal: bool) -> HistoryBuilder:
    """consumer-1 reads nothing after the heal (4.0 s); 0.5 s later, before its 1.25 s bound ran
    out, another fault (a broker kill) begins, healed at 5.5 s; ``reads_after_its_heal``: it reads
    again 0.1 s after that heal (the coordinators-kill run of kafka-python's group in CI: its
    group coordinator killed while it rebalanced, 1.1 s after its first unread ack)."""
    b = scenario(3000, after_heal_reads=False, tail_ms=5000)  # the heal at 4000, the end at 9000
    for at_ms, f in ((4500, b.fault), (5500, b.heal)):
        b.now = at_ms * 1_000_000
        f("kill", ["kafka-3"])
    if reads_after_its_heal:
        read = 199  # the last poll before the heal (at 3980) read offsets 0..198
        for now in range(5600, 9001, 20):
            b.now = now * 1_000_000
            sent = now // 20  # offsets 0..sent-1 are acknowledged by now
            b.poll("consumer-1", [(T, 0, o, f"v{o}") for o in range(read, sent)], replica=1)
            read = sent
    b.events.sort(key=lambda e: (e["time_ns"], e["index"]))
    for i, ev in enumerate(b.events):
        ev["index"] = i
    return b


def test_a_read_owed_after_a_heal_is_owed_after_the_next_fault_s_heal_when_that_fault_began_first() -> None:
    """The after-heal promise is cut short by a fault that begins before its bound ran out: the
    consumer that reads again soon after the second heal is not a stall of the first; one that
    never reads again is a stall all the same, of the second."""
    back = check("progress", _second_fault_after_the_heal(reads_after_its_heal=True))
    assert back.valid is not False and back.counts["stalls"] == 0, back.to_json()
    never = check("progress", _second_fault_after_the_heal(reads_after_its_heal=False))
    assert never.valid is False and never.counts["stalls"] == 1, never.counts
    (stalled,) = [e for e in never.examples if e["kind"] == "consumer-stalled-after-heal"]
    assert stalled["owed_from_ns"] >= 5_500_000_000, stalled  # owed after the kill's heal
