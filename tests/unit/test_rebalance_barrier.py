"""rebalance-barrier (core.checks.barrier): a consumer-protocol member that keeps its partitions
and stops returning records while they wait is found; the same stall is passed when its
assignment changed, when it was itself faulted, while a broker fault was open, when no record
waited, or when it is short; classic groups are not judged, only measured; a group migrated online
is judged member by member from each one's restart on the consumer protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from highwater.core.checks import load
from highwater.core.checks.barrier import rebalance_barrier, unchanged_stalls
from highwater.core.checks.data import from_events
from highwater.core.checks.verdict import NOT_APPLICABLE, Verdict
from highwater.core.history import to_parquet

MS = 1_000_000
GROUP = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}
STALL = (1_000, 5_000)  # consumer-0 returns nothing between these (ms)


class Timeline:
    """Events at given milliseconds: a producer acknowledging a record of each partition every
    100 ms, consumer-0 holding partition 0 and consumer-1 partition 1, each polling what was
    acknowledged every 100 ms, except consumer-0 inside ``stall``."""

    def __init__(self, stall: tuple[int, int] | None = STALL, quiet: tuple[int, int] | None = None) -> None:
        self.timed: list[tuple[int, str, str, str, Any]] = []
        self.at(0, "consumer-0", "ok", "assign", self._tp(0))
        self.at(0, "consumer-1", "ok", "assign", self._tp(1))
        offset = {0: 0, 1: 0}
        for t in range(100, 8_000, 100):
            for p in (0, 1):
                if quiet and quiet[0] <= t < quiet[1]:
                    continue
                v = f"v{p}-{offset[p]}"
                self.at(t, "producer-0", "ok", "send", {"topic": "t", "partition": p, "value": v, "offset": offset[p]})
                offset[p] += 1
            for p in (0, 1):
                if p == 0 and stall and stall[0] < t < stall[1]:
                    continue
                self.at(t + 5, f"consumer-{p}", "ok", "poll", self._records(p, offset[p] - 1))

    @staticmethod
    def _records(p: int, o: int) -> dict[str, Any]:
        return {
            "records": [
                {"topic": "t", "partition": p, "offset": o, "value": f"v{p}-{o}", "leader_epoch": None, "replica": None}
            ]
        }

    @staticmethod
    def _tp(p: int) -> dict[str, Any]:
        return {"topic": "t", "partition": p, "offset": None, "reason": "rebalance"}

    def at(self, ms: int, process: str, typ: str, f: str, value: Any) -> Timeline:
        self.timed.append((ms, process, typ, f, value))
        return self

    def fault(self, start: int, end: int, kind: str, target: str) -> Timeline:
        v = {"kind": kind, "targets": [target], "params": {}}
        return self.at(start, "nemesis", "ok", "fault", v).at(end, "nemesis", "ok", "heal", v)

    def events(self) -> list[dict[str, Any]]:
        ordered = sorted(enumerate(self.timed), key=lambda x: (x[1][0], x[0]))
        return [
            {"index": i, "time_ns": ms * MS + i, "process": p, "type": typ, "f": f, "value": v, "error": None}
            for i, (_, (ms, p, typ, f, v)) in enumerate(ordered)
        ]

    def header(self, protocol: str) -> dict[str, Any]:
        config = {
            "consumers": GROUP,
            "group_protocol": protocol,
            "consumer_fetch_max_wait_ms": 500,
            "bound_slack_ms": 2000,
            "member_fence_grace_ms": 1000,
            "progress_bound_ms": 1000,
        }
        return {"format": "highwater.history/1", "config": config}

    def judge(self, protocol: str = "consumer") -> Verdict:
        return rebalance_barrier(from_events(self.header(protocol), self.events()))


def test_a_member_that_keeps_its_partition_and_stops_is_found() -> None:
    v = Timeline().fault(900, 3_000, "client_kill", "consumer-1").judge()
    assert v.valid is False and v.counts["violations"] == 1
    ex = v.examples[0]
    assert ex["member"] == "consumer-0" and ex["partitions"] == ["t/0"] and ex["bound_ms"] == 2500
    assert 3_800 <= ex["waiting_ms"] <= 4_000
    assert [e["f"] for e in ex["events"]] == ["poll", "poll"]


def test_an_eager_re_assignment_of_the_same_partitions_is_no_change() -> None:
    t = Timeline().at(2_000, "consumer-0", "ok", "revoke", {"topic": "t", "partition": 0, "reason": "revoked"})
    v = t.at(4_000, "consumer-0", "ok", "assign", Timeline._tp(0)).judge()
    assert v.valid is False and v.counts["violations"] == 1


def test_a_member_whose_assignment_changed_passes() -> None:
    gained = Timeline().at(2_000, "consumer-0", "ok", "assign", Timeline._tp(1))
    assert gained.judge().valid is True
    lost = Timeline().at(2_000, "consumer-0", "ok", "revoke", {"topic": "t", "partition": 0, "reason": "lost"})
    v = lost.at(4_000, "consumer-0", "ok", "assign", Timeline._tp(0)).judge()
    assert v.valid is True and v.counts["violations"] == 0


def test_a_member_faulted_itself_or_a_broker_fault_passes() -> None:
    assert Timeline().fault(900, 3_000, "client_freeze", "consumer-0").judge().valid is True
    assert Timeline().fault(900, 3_000, "kill", "kafka-1").judge().valid is True


def test_no_record_waiting_or_a_short_stall_passes() -> None:
    v = Timeline(quiet=(1_000, 4_900)).judge()
    assert v.valid is True and v.counts["longest_waiting_ms"] < 500
    short = Timeline(stall=(1_000, 3_000)).judge()
    assert short.valid is True and short.counts["stalls_over_fetch_wait"] == 1
    assert short.counts["gaps_judged"] > 100


def test_classic_groups_are_measured_not_judged() -> None:
    t = Timeline()
    v = t.judge("classic")
    assert v.valid == NOT_APPLICABLE and "classic" in v.notes[0]
    stalls = unchanged_stalls(from_events(t.header("classic"), t.events()), over_ms=500)
    assert [s.member for s in stalls] == ["consumer-0"] and stalls[0].waiting_ms > 3_800
    no_group = t.header("consumer")
    no_group["config"].pop("consumers")
    assert rebalance_barrier(from_events(no_group, t.events())).valid == NOT_APPLICABLE


def test_revocations_load_alike_from_json_lines_and_parquet(tmp_path: Path) -> None:
    t = Timeline().at(2_000, "consumer-0", "ok", "revoke", {"topic": "t", "partition": 0, "reason": "lost"})
    t.at(2_100, "consumer-1", "ok", "revoke", {"topic": "t", "partition": 1, "reason": "revoked"})
    src = tmp_path / "h.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in [t.header("consumer"), *t.events()]))
    to_parquet(src, tmp_path / "h.parquet")
    got = [
        [(h.proc_name(r.proc), h.tp_name(r.tp), r.lost) for r in h.revocations]
        for h in map(load, (src, tmp_path / "h.parquet"))
    ]
    assert got[0] == got[1] == [("consumer-0", ("t", 0), True), ("consumer-1", ("t", 1), False)]


def _migrate(t: Timeline, ms: int, member: str, to: str = "consumer") -> Timeline:
    """``member`` restarted on the ``to`` protocol at ``ms`` (a client_restart: fault and heal
    100 ms apart, the fault's event naming what it moved, as ``faults.inject`` records it)."""
    change = {
        "from": {"client": "java 4.4.0", "group_protocol": "classic"},
        "to": {"client": "java 4.4.0", "group_protocol": to},
    }
    v = {"kind": "client_restart", "targets": [member], "params": {}, "members": {member: change}}
    return t.at(ms, "nemesis", "ok", "fault", v).at(ms + 100, "nemesis", "ok", "heal", {**v, "members": {}})


def test_a_migrated_member_is_judged_from_its_restart_on_the_consumer_protocol() -> None:
    """A classic group migrated online (KIP-848): consumer-0 restarted on the consumer protocol,
    then consumer-1 (still classic) killed: consumer-0 keeps its partition and stops, a violation
    while the group is mixed; before its own migration the same stall is not judged."""
    later = (2_000, 6_000)  # past the grace after consumer-0's own restart
    mixed = _migrate(Timeline(later), 300, "consumer-0").fault(1_900, 4_000, "client_kill", "consumer-1")
    mixed = mixed.judge("classic")
    assert mixed.valid is False and mixed.counts["violations"] == 1
    assert mixed.counts["violations_while_mixed"] == 1
    late = _migrate(Timeline(later), 6_500, "consumer-0").fault(1_900, 4_000, "client_kill", "consumer-1")
    late = late.judge("classic")
    assert late.valid is True and late.counts["gaps_judged"] > 0  # judged after 6 s only
    across = _migrate(Timeline(), 3_000, "consumer-0").judge("classic")  # its own restart
    assert across.valid is True


def test_a_member_moved_back_to_classic_is_not_judged_after_it() -> None:
    t = _migrate(Timeline((2_000, 6_000)), 300, "consumer-0", to="classic")
    t = t.fault(1_900, 4_000, "client_kill", "consumer-1")
    v = t.judge("consumer")
    assert v.valid is True and v.counts["violations"] == 0


def test_member_protocols_over_time() -> None:
    from highwater.core.checks.group_cols import member_protocols, protocol_over

    t = _migrate(Timeline(), 300, "consumer-0")
    h = from_events(t.header("classic"), t.events())
    got = member_protocols(h)
    assert got["consumer-1"] == [(0, "classic")]
    assert [p for _, p in got["consumer-0"]] == ["classic", "consumer"]
    assert protocol_over(got["consumer-0"], 0, 200 * MS) == "classic"
    assert protocol_over(got["consumer-0"], 200 * MS, 400 * MS) is None
    assert protocol_over(got["consumer-0"], 500 * MS, 900 * MS) == "consumer"


def test_a_migration_loads_alike_from_json_lines_and_parquet(tmp_path: Path) -> None:
    from highwater.core.checks.group_cols import member_protocols

    t = _migrate(Timeline(), 300, "consumer-0")
    src = tmp_path / "h.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in [t.header("classic"), *t.events()]))
    to_parquet(src, tmp_path / "h.parquet")
    got = [{m: [p for _, p in c] for m, c in member_protocols(load(x)).items()} for x in (src, tmp_path / "h.parquet")]
    assert got[0] == got[1] == {"consumer-0": ["classic", "consumer"], "consumer-1": ["classic"]}
