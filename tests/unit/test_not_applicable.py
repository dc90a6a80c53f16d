"""not-applicable: a check whose inputs the history does not carry at all is not run and does
not make the overall verdict unknown; unknown stays for inputs present but inconclusive; a
violation elsewhere is still a violation."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from highwater.cli import main
from highwater.cli_check import cmd_check
from highwater.core.checks import (
    CHECKS,
    NEEDS,
    NOT_APPLICABLE,
    UNKNOWN,
    Input,
    from_events,
    needs_text,
    overall,
    present_inputs,
    run_checks,
)
from highwater.core.checks.upgrade import RELEASE_STEPS
from highwater.core.checks.verdict import Verdict, merge_valid, overall_valid
from tests.synth.histories import HistoryBuilder
from tests.unit.test_checks import TXN_AND_GROUP

T = "t"
COPY_SINK = "t-copy"
RACKS = {"brokers": {"1": "a", "2": "b", "3": "c"}, "clients": {"consumer-0": "a"}}
#: the event kinds that carry each input (racks live in the header)
KINDS = {
    Input.SENDS: {"send"},
    Input.POLLS: {"poll", "assign", "seek"},
    Input.FINAL_READS: {"final-read"},
    Input.META: {"meta"},
    Input.FAULTS: {"fault", "heal"},
    Input.TXNS: {"txn"},
    Input.COMMITS: {"commit"},
    Input.SHARE: {"acquire", "ack"},
}
#: the checks a plain history (no racks, meta, transactions or group commits) cannot run
#: not applicable by the run's settings, not its inputs: remote-reset judges tiered topics only,
#: log-start the log starts a tiered run's observer asks for
BY_CONFIG = {"remote-reset", "log-start"}
PLAIN_SKIPPED = [
    c
    for c in CHECKS
    if c in {"hw-regression", "follower-fetch", "follower-latency", "isr-stability"} | TXN_AND_GROUP | BY_CONFIG
]


def plain(n: int = 6, *, lost: bool = False) -> HistoryBuilder:
    """A clean history with sends, polls and final reads only: no racks, no meta, no faults."""
    b = HistoryBuilder({"progress_bound_ms": 10_000})
    b.assign("consumer-0", T, 0, 0)
    for i in range(n):
        b.send("producer-0", T, 0, f"v{i}", offset=i)
        b.poll("consumer-0", [(T, 0, i, f"v{i}")], replica=1)
    if lost:
        b.send("producer-0", T, 0, "gone", offset=n)
    for r in (1, 2, 3):
        b.final(T, 0, r, n, [(i, f"v{i}") for i in range(n)])
    return b


def full(n: int = 6) -> HistoryBuilder:
    """A clean history carrying every input: racks, meta, sends, polls, a fault, a finalization, final reads,
    and a committed transaction (v{n+1}, v{n+2}; its marker at n+3) whose reads the group of
    the read_committed consumer commits, then an aborted one (its record at n+4, marker n+5)."""
    b = HistoryBuilder(
        {
            "follower_fetch_grace_ms": 0,
            "progress_bound_ms": 10_000,
            "isr_slack_ms": 0,
            "replica_lag_time_max_ms": 100_000,
            "isr_rejoin_bound_ms": 100_000,
            "isolation_level": "read_committed",
            "consumers": {"consumer-0": {"group": "g"}, "copier-0": {"group": "cg"}},
            "group_protocol": "consumer",  # rebalance-barrier judges only KIP-848's protocol
            "copy": {"source": T, "sink": COPY_SINK, "group": "cg"},
            "share": {"group": "sg", "topic": T, "lock_ms": 5_000, "session_ms": 6_000, "delivery_limit": 3},
            "tiered": True,  # remote-reset judges tiered topics only, on a client that reports resets
            "retention_ms": -1,  # log-start: the topic keeps every record
        },
        racks=RACKS,
        client="kafka-python 3.0.12",
    )
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=0, log_start=0, local_start=0)
    b.assign("consumer-0", T, 0, 0)
    for i in range(n):
        if i == n // 2:
            b.fault("latency", [3], peer=1)
        b.send("producer-0", T, 0, f"v{i}", offset=i)
        b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=i + 1)
        b.poll("consumer-0", [(T, 0, i, f"v{i}")], replica=1)
    b.heal("latency", [3])
    # a finalization that kept everything (faults.release)
    kept = {"cluster_id": "c", "topics": {T: {"id": "i", "partitions": 1}}, "features": {"metadata.version": 27}}
    asked = {"feature": "metadata.version", "asked": 27, "from": 27, "to": 27}
    step = {"kind": "finalize", "targets": ["kafka-1"], "params": {}}
    b.event("nemesis", "ok", "fault", {**step, "observed": {"before": kept, "after": kept}, "finalized": asked})
    b.send("producer-0", T, 0, f"v{n}", offset=n)
    b.poll("consumer-0", [(T, 0, n, f"v{n}")], replica=1)
    b.txn("producer-0", "begin", "producer-0#1")
    for i in (n + 1, n + 2):
        b.send("producer-0", T, 0, f"v{i}", offset=i, txn="producer-0#1")
    b.txn("producer-0", "commit", "producer-0#1")
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=n + 4)
    b.poll("consumer-0", [(T, 0, i, f"v{i}") for i in (n + 1, n + 2)], replica=1)
    b.commit("consumer-0", "g", T, 0, n + 3)
    b.txn("producer-0", "begin", "producer-0#2")
    b.send("producer-0", T, 0, "gone", offset=n + 4, txn="producer-0#2")
    b.txn("producer-0", "abort", "producer-0#2")
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=n + 6)
    # the exactly-once copy of v0 (its marker at 1)
    b.poll("copier-0", [(T, 0, 0, "v0")], replica=1)
    b.txn("copier-0", "begin", "copier-0#0")
    b.send("copier-0", COPY_SINK, 0, "v0@copier-0#0", offset=0, txn="copier-0#0")
    b.commit("copier-0", "cg", T, 0, 1, txn="copier-0#0")
    b.txn("copier-0", "commit", "copier-0#0")
    # a share group's member reads the committed records: releases v0 once, accepts the rest
    committed = list(range(n + 3))
    b.acquire("sharer-0", [(T, 0, i, f"v{i}", 1) for i in committed])
    b.ack("sharer-0", T, 0, committed, ["release", *["accept"] * (len(committed) - 1)])
    b.acked("sharer-0", T, 0, committed)
    b.acquire("sharer-0", [(T, 0, 0, "v0", 2)])
    b.ack("sharer-0", T, 0, [0], "accept")
    b.acked("sharer-0", T, 0, [0])
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=n + 6)
    for r in (1, 2, 3):
        b.final(T, 0, r, n + 6, [(i, f"v{i}") for i in range(n + 3)], aborted=[(n + 4, "gone")])
        b.final(COPY_SINK, 0, r, 2, [(0, "v0@copier-0#0")])
    return b


def is_step(e: dict[str, Any]) -> bool:
    return e["f"] == "fault" and (e.get("value") or {}).get("kind") in RELEASE_STEPS


def without(b: HistoryBuilder, *drop: Input) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kinds = set().union(*(KINDS.get(i, set()) for i in drop))
    header = dict(b.header)
    if Input.RACKS in drop:
        header.pop("racks", None)
    if Input.COPY in drop:
        header["config"] = {k: v for k, v in header["config"].items() if k != "copy"}
    # release steps are fault events of their own inputs' (a roll, a finalize): each input drops its own
    steps = Input.RELEASE_STEPS in drop
    events = [dict(e) for e in b.events if (not steps if is_step(e) else e["f"] not in kinds)]
    for i, e in enumerate(events):
        e["index"] = i
    return header, events


def verdicts_of(header: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Verdict]:
    return {v.check: v for v in run_checks(from_events(header, events))}


# the acceptance test of issue 12, item 5 -----------------------------------------------------


def test_check_exits_0_on_clean_history_without_racks_or_meta_and_lists_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plain().write(tmp_path / "plain.jsonl")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    skipped = PLAIN_SKIPPED
    for name in skipped:
        line = next(x for x in out.splitlines() if x.startswith(name + " "))
        assert "not-applicable" in line and ("needs" in line or name in BY_CONFIG), line
    assert f"not applicable ({len(skipped)}): {', '.join(skipped)}" in out
    assert out.strip().endswith("overall: valid")
    assert "unknown" not in out
    buf = io.StringIO()
    code = cmd_check(argparse.Namespace(history=str(path), json=True, checks=None, no_policy=False), buf)
    doc = json.loads(buf.getvalue())
    assert code == 0 and doc["valid"] is True
    assert doc["not_applicable"] == skipped
    assert doc["inputs"] == ["sends", "polls", "final-reads"]
    by = {v["check"]: v for v in doc["verdicts"]}
    assert {c for c, v in by.items() if v["valid"] == "not-applicable"} == set(skipped)
    assert all(v["valid"] is True for c, v in by.items() if c not in skipped)
    assert "no racks and no meta" in by["follower-fetch"]["notes"][0]


def test_a_violation_elsewhere_is_still_false(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = plain(lost=True).write(tmp_path / "lost.jsonl")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "lost-write" in out and "VIOLATED" in out and out.strip().endswith("overall: VIOLATED")
    v = verdicts_of(*without(plain(lost=True)))
    assert v["lost-write"].valid is False and v["hw-regression"].valid == NOT_APPLICABLE


def test_inputs_present_but_inconclusive_stay_unknown(tmp_path: Path) -> None:
    # meta is there, but no process saw the high watermark twice: unknown, not not-applicable
    b = plain()
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=6)
    v = verdicts_of(b.header, b.events)
    assert v["hw-regression"].valid == UNKNOWN
    assert main(["check", str(b.write(tmp_path / "one-meta.jsonl"))]) == 3  # unknown
    # racks, meta and polls are there, but no record says which replica served it
    b = HistoryBuilder({"follower_fetch_grace_ms": 0}, racks=RACKS)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=1)
    b.poll("consumer-0", [(T, 0, 0, "v0")], replica=None)
    assert verdicts_of(b.header, b.events)["follower-fetch"].valid == UNKNOWN
    # final reads are there, but not of the partition the consumer read
    b = plain()
    b.poll("consumer-0", [(T, 1, 0, "w0")], replica=1)
    v = verdicts_of(b.header, b.events)
    assert v["uncommitted-read"].valid == UNKNOWN and v["lost-write"].valid is True
    assert overall(list(v.values())) == UNKNOWN
    # sends were invoked but none completed (a crash): lost-write judged nothing, unknown
    b = plain()
    b.send("producer-0", T, 0, "pending", outcome=None)
    header, events = without(b, Input.POLLS)
    events = [e for e in events if e["f"] != "send" or e["value"]["value"] == "pending"]
    for i, e in enumerate(events):
        e["index"] = i
    assert verdicts_of(header, events)["lost-write"].valid == UNKNOWN


def test_a_history_with_nothing_to_check_is_unknown(tmp_path: Path) -> None:
    b = HistoryBuilder()
    v = run_checks(b.data())
    assert [x.valid for x in v[1:]] == [NOT_APPLICABLE] * len(CHECKS)
    assert overall(v) == UNKNOWN
    assert main(["check", str(b.write(tmp_path / "empty.jsonl"))]) == 3  # nothing judged: unknown
    # one check asked for, and it cannot apply: nothing judged
    assert main(["check", "--check", "hw-regression", str(plain().write(tmp_path / "p.jsonl"))]) == 3


# the registry's declared inputs ------------------------------------------------------------


def test_full_history_carries_every_input_and_every_check_applies() -> None:
    b = full()
    assert present_inputs(b.data()) == frozenset(Input)
    v = verdicts_of(b.header, b.events)
    assert {c: x.valid for c, x in v.items()} == {"history": True, **{c: True for c in CHECKS}}


@pytest.mark.parametrize("check", list(CHECKS))
def test_a_check_is_not_applicable_exactly_when_a_needed_input_is_missing(check: str) -> None:
    b = full()
    for group in NEEDS[check]:
        header, events = without(b, *group)
        v = verdicts_of(header, events)[check]
        assert v.valid == NOT_APPLICABLE and not v.counts and not v.examples, (check, group)
        assert CHECKS[check](from_events(header, events)).valid is not False  # nothing hidden
        assert needs_text(NEEDS[check]) in v.notes[0]
        if len(group) > 1:  # any one input of the group is enough
            for keep in group:
                rest = [i for i in group if i != keep]
                assert verdicts_of(*without(b, *rest))[check].valid != NOT_APPLICABLE, (check, keep)
    needed = set().union(*NEEDS[check])
    other = [i for i in Input if i not in needed]
    assert verdicts_of(*without(b, *other))[check].valid != NOT_APPLICABLE, (check, other)


def test_every_check_declares_its_inputs() -> None:
    assert NEEDS.keys() == CHECKS.keys()
    assert all(NEEDS[c] and all(g for g in NEEDS[c]) for c in CHECKS)


def test_failed_polls_and_positions_count_as_polls() -> None:
    b = HistoryBuilder()
    b.poll_error("consumer-0", "NotLeaderForPartitionError")
    assert Input.POLLS in present_inputs(b.data())
    b = HistoryBuilder()
    b.assign("consumer-0", T, 0, 0)
    assert Input.POLLS in present_inputs(b.data())
    b = HistoryBuilder(racks={"brokers": {"1": "a"}, "clients": {}})
    assert Input.RACKS not in present_inputs(b.data())


# merging -----------------------------------------------------------------------------------


def test_merge_ignores_not_applicable() -> None:
    na = NOT_APPLICABLE
    assert merge_valid([True, na]) is True
    assert merge_valid([na, UNKNOWN]) == UNKNOWN
    assert merge_valid([na, False, UNKNOWN]) is False
    assert merge_valid([na, na]) == na
    assert merge_valid([]) is True
    assert overall_valid([("history", True), ("lost-write", na), ("poll-skip", True)]) is True
    assert overall_valid([("history", True), ("lost-write", na)]) == UNKNOWN
    assert overall_valid([("history", UNKNOWN), ("lost-write", na)]) == UNKNOWN
    assert overall_valid([("history", True), ("lost-write", na), ("duplicate", False)]) is False
    assert overall_valid([]) is True


def test_the_check_table_says_what_each_check_needs() -> None:
    """The one table of checks, docs/checks.md ("Definitions and inputs"), column "needs": every
    check in report order; no other page keeps a second table of what the checks need."""
    docs = Path(__file__).parents[2] / "docs"
    lines = (docs / "checks.md").read_text(encoding="utf-8").splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("| check |") and "needs" in x)
    cols = [c.strip() for c in lines[head].strip("|").split("|")]
    k = next(i for i, c in enumerate(cols) if c.startswith("needs"))
    rows = {}
    for x in lines[head + 2 :]:
        if not x.startswith("|"):
            break
        cells = [c.strip().strip("`") for c in x.strip("|").split("|")]
        rows[cells[0]] = cells[k]
    assert rows == {c: needs_text(NEEDS[c]) for c in CHECKS}
    assert list(rows) == list(CHECKS)
    others = [
        p.name
        for p in docs.glob("*.md")
        if p.name != "checks.md"
        and any(x.startswith("| check |") and "needs" in x for x in p.read_text(encoding="utf-8").splitlines())
    ]
    assert others == []


def test_failed_final_reads_make_the_checks_unknown_not_inapplicable() -> None:
    b = plain()
    header, events = without(b, Input.FINAL_READS)
    events.append(
        {
            "index": len(events),
            "time_ns": events[-1]["time_ns"] + 1,
            "process": "final",
            "type": "info",
            "f": "final-read",
            "value": {"topic": T, "partition": 0, "replica": 1},
            "error": "NotLeaderOrFollowerError",
        }
    )
    h = from_events(header, events)
    assert Input.FINAL_READS in present_inputs(h) and not h.finals
    v = {x.check: x for x in run_checks(h)}
    assert v["lost-write"].valid == UNKNOWN and v["uncommitted-read"].valid == UNKNOWN
    assert overall(list(v.values())) == UNKNOWN
    # without that event the same history's final-read checks are not applicable
    v = verdicts_of(*without(b, Input.FINAL_READS))
    assert v["lost-write"].valid == NOT_APPLICABLE and overall(list(v.values())) is True


def test_inputs_promised_by_the_header_but_absent_are_unknown_not_inapplicable() -> None:
    """A run that crashed before its final read promised final reads in its header: the final-read
    checks run and cannot vouch for anything (unknown); a history that never promised them is n/a."""
    header, events = without(plain(), Input.FINAL_READS)
    v = verdicts_of({**header, "records": ["sends", "polls", "final-reads"]}, events)
    assert v["lost-write"].valid == UNKNOWN and v["uncommitted-read"].valid == UNKNOWN
    assert overall(list(v.values())) == UNKNOWN
    assert verdicts_of(header, events)["lost-write"].valid == NOT_APPLICABLE
    # names a newer recorder may add are ignored, not an error
    v = verdicts_of({**header, "records": ["sends", "polls", "commits-v9"]}, events)
    assert v["lost-write"].valid == NOT_APPLICABLE
