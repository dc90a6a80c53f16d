"""progress and follower-fetch judge a group member only on the partitions it owns: once another
member of its group is positioned on a partition, the stalls of the previous owner there are
not its (a member cut off from its coordinator is evicted and its partition moves)."""

from __future__ import annotations

from tests.unit.test_bounds_checks import START, T, check, scenario


def test_a_group_member_is_not_judged_on_a_partition_that_moved_away() -> None:
    b = scenario(3000, after_heal_reads=False)  # consumer-1 reads nothing after the heal
    group = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}
    b.header["config"]["consumers"] = group
    assert check("progress", b).valid is False  # the partition is still consumer-1's (its assign came last)
    b.now = (START + 1500) * 1_000_000  # during the fault, the partition moves to consumer-0
    b.assign("consumer-0", T, 0, None, reason="rebalance")
    b.events.sort(key=lambda e: (e["time_ns"], e["index"]))
    for i, ev in enumerate(b.events):
        ev["index"] = i
    assert check("progress", b).valid is True
    del b.header["config"]["consumers"]  # without groups every consumer is judged on all it read
    assert check("progress", b).valid is False
