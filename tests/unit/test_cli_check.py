"""``highwater check``: output and exit status (0 valid, 1 violations, 3 unknown, 4 unreadable)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

from highwater.cli import main
from highwater.cli_check import cmd_check, register
from highwater.core.history import to_parquet
from highwater.exit_codes import Exit
from tests.synth.histories import HistoryBuilder
from tests.unit.test_checks import TXN_AND_GROUP

RACKS = {"brokers": {"1": "a", "2": "b"}, "clients": {"consumer-0": "a"}}


def builder() -> HistoryBuilder:
    return HistoryBuilder({"follower_fetch_grace_ms": 0}, racks=RACKS)


def begin(b: HistoryBuilder) -> None:
    b.meta("t", 0, leader=1, isr=[1, 2], hw=0)
    b.assign("consumer-0", "t", 0, 0)


def write_and_read(b: HistoryBuilder, n: int) -> None:
    for i in range(n):
        b.send("producer-0", "t", 0, f"v{i}", offset=i)
        b.meta("t", 0, leader=1, isr=[1, 2], hw=i + 1)
        b.poll("consumer-0", [("t", 0, i, f"v{i}")], replica=1)


def finals(b: HistoryBuilder, n: int) -> None:
    for r in (1, 2):
        b.final("t", 0, r, n, [(i, f"v{i}") for i in range(n)])


def _valid(tmp_path: Path) -> Path:
    b = builder()
    begin(b)
    write_and_read(b, 5)
    finals(b, 5)
    return b.write(tmp_path / "ok.jsonl")


def test_register_sets_func_and_exit_codes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser(prog="highwater")
    register(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["check", str(_valid(tmp_path))])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "lost-write" in out and out.strip().endswith("overall: valid")


def test_violation_exits_1_with_json(tmp_path: Path) -> None:
    b = builder()
    begin(b)
    write_and_read(b, 5)
    b.send("producer-0", "t", 0, "gone", offset=5)
    finals(b, 5)
    path = b.write(tmp_path / "lost.jsonl")
    buf = io.StringIO()
    code = cmd_check(argparse.Namespace(history=str(path), json=True, checks=None, no_policy=False), buf)
    doc = json.loads(buf.getvalue())
    lost = next(v for v in doc["verdicts"] if v["check"] == "lost-write")
    assert code == 1 and doc["valid"] is False and lost["counts"]["lost"] == 1
    assert lost["examples"][0]["events"][0]["value"]["value"] == "gone"
    # acks=1 allows it
    b.header["config"]["acks"] = "1"
    b.write(path)
    assert main(["check", str(path)]) == 0


def test_unknown_exits_3_and_unreadable_4(tmp_path: Path) -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", offset=0)  # one ack: progress has no gap to judge
    assert main(["check", str(b.write(tmp_path / "u.jsonl"))]) == Exit.UNKNOWN == 3  # (lost-write: not applicable)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a history\n")
    assert main(["check", str(bad)]) == Exit.HARNESS == 4
    assert main(["check", str(tmp_path / "missing.jsonl")]) == Exit.HARNESS


def test_bad_line_makes_it_unknown_but_still_checks(tmp_path: Path) -> None:
    path = _valid(tmp_path)
    path.write_text(path.read_text() + "{oops\n")
    buf = io.StringIO()
    code = cmd_check(argparse.Namespace(history=str(path), json=True, checks=None, no_policy=False), buf)
    doc = json.loads(buf.getvalue())
    hist = doc["verdicts"][0]
    assert code == Exit.UNKNOWN and hist["check"] == "history" and hist["counts"]["unreadable_lines"] == 1
    # every check ran and passed, but those of transactions and group commits (none recorded)
    judged = {v["check"]: v["valid"] for v in doc["verdicts"][1:] if v["check"] not in TXN_AND_GROUP}
    assert judged and all(x is True for x in judged.values())


def test_parquet_and_selected_checks(tmp_path: Path) -> None:
    pq = tmp_path / "ok.parquet"
    to_parquet(_valid(tmp_path), pq)
    buf = io.StringIO()
    code = cmd_check(
        argparse.Namespace(history=str(pq), json=False, checks=["poll-skip"], no_policy=False, examples=True), buf
    )
    assert code == 0 and "poll-skip" in buf.getvalue() and "lost-write" not in buf.getvalue()
