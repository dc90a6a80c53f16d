"""The history format: writer, strict and lenient reader, Parquet round trip."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from highwater.core.checks import load
from highwater.core.history import (
    FORMAT,
    PARQUET_SCHEMA,
    HistoryError,
    HistoryWriter,
    read_history,
    to_parquet,
)


def sample(path: Path) -> list[dict]:
    with HistoryWriter(path, run_id="r1", config={"acks": "all"}, kafka_version="4.1.0") as w:
        w.invoke("producer-0", "send", {"topic": "t", "partition": 0, "key": None, "value": "a"})
        w.ok("producer-0", "send", {"topic": "t", "partition": 0, "key": None, "value": "a", "offset": 0})
        w.info(
            "producer-0",
            "send",
            {"topic": "t", "partition": 1, "key": "k", "value": 7},
            error=TimeoutError("timed out"),
        )
        w.ok("consumer-0", "assign", {"topic": "t", "partition": 0, "offset": 0, "reason": "assign"})
        w.ok(
            "consumer-0",
            "poll",
            {"records": [{"topic": "t", "partition": 0, "offset": 0, "value": "a", "leader_epoch": 3, "replica": 2}]},
        )
        w.ok("consumer-0", "poll", {"records": []})
        w.ok(
            "observer",
            "meta",
            {
                "topic": "t",
                "partition": 0,
                "leader": 1,
                "leader_epoch": 3,
                "isr": [1, 2],
                "hw": 1,
                "leo": {"1": 1, "2": 1},
            },
        )
        w.info("nemesis", "fault", {"kind": "kill", "targets": ["kafka-1"], "params": {}})
        w.ok(
            "final",
            "final-read",
            {"topic": "t", "partition": 0, "replica": 1, "hw": 1, "log_start": 0, "records": [[0, "a"]]},
        )
    return list(read_history(path))


def test_writer_header_fields_and_order(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    events = sample(p)
    header = json.loads(p.read_text().splitlines()[0])
    assert header["format"] == FORMAT and header["run_id"] == "r1"
    assert header["config"] == {"acks": "all"} and header["kafka_version"] == "4.1.0"
    assert [e["index"] for e in events] == list(range(9))
    assert all(a["time_ns"] <= b["time_ns"] for a, b in zip(events, events[1:]))
    assert events[2]["error"] == "TimeoutError: timed out" and events[2]["type"] == "info"
    assert set(events[0]) == {"index", "time_ns", "process", "type", "f", "value", "error"}


def test_writer_refuses_bad_events_without_leaving_holes(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h.jsonl") as w:
        with pytest.raises(ValueError):
            w.ok("p", "send", {"value": "x"}, error="oops")
        with pytest.raises(TypeError):
            w.ok("p", "send", {"value": object()})
        with pytest.raises(ValueError):
            w.record("p", "done", "send")
        assert w.ok("p", "commit", {})["index"] == 0
    with pytest.raises(FileExistsError):
        HistoryWriter(tmp_path / "h.jsonl")


def test_writer_is_flushed_and_thread_safe(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    w = HistoryWriter(p)
    w.ok("x", "commit", {})
    assert len(p.read_text().splitlines()) == 2  # visible before close: flushed per event

    def work(k: int) -> None:
        for i in range(200):
            w.ok(f"p{k}", "commit", {"i": i})

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    events = list(read_history(p))
    assert [e["index"] for e in events] == list(range(801))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"index": 9, "time_ns": 1, "process": "p", "type": "ok", "f": "poll"}', "missing field(s) value, error"),
        (
            '{"index": 9, "time_ns": 1, "process": "p", "type": "done", "f": "x", "value": null, "error": null}',
            "'type' must be one of",
        ),
        (
            '{"index": 9, "time_ns": 1, "process": "p", "type": "ok", "f": "poll", "value": {"records": [{"topic": "t"}]}, "error": null}',
            "records[0] has no 'partition'",
        ),
        (
            '{"index": 0, "time_ns": 1, "process": "p", "type": "ok", "f": "commit", "value": {}, "error": null}',
            "index 0 does not increase",
        ),
    ],
)
def test_strict_reader_names_line_and_problem(tmp_path: Path, line: str, message: str) -> None:
    p = tmp_path / "h.jsonl"
    sample(p)
    lines = p.read_text().splitlines()
    lines.insert(4, line)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(HistoryError) as err:
        list(read_history(p))
    assert err.value.line == 5 and message in str(err.value)


def test_lenient_reader_keeps_going(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    good = sample(p)
    lines = p.read_text().splitlines()
    lines.insert(3, "garbage")
    p.write_text("\n".join(lines) + "\n" + '{"index": 99, "time_')  # crash mid-line
    h = read_history(p, lenient=True)
    assert list(h) == good
    assert [(e.line, e.message.split(" ")[0]) for e in h.errors] == [(4, "not"), (12, "incomplete")]
    data = load(p)  # the checks' loader is lenient too
    assert [e.line for e in data.line_errors] == [4, 12] and data.n_events == 9


@pytest.mark.parametrize(
    ("first", "message"),
    [
        ("", "empty file"),
        ('{"format": "other"}', "not a highwater history"),
        ('{"format": "highwater.history/2"}', "unsupported history version"),
        ("[1]", "must be a JSON object"),
    ],
)
def test_bad_header_is_an_error(tmp_path: Path, first: str, message: str) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text(first + "\n" if first else "")
    with pytest.raises(HistoryError, match=message):
        read_history(p, lenient=True)


def test_parquet_round_trip_and_schema(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    events = sample(p)
    out = tmp_path / "h.parquet"
    assert to_parquet(p, out) == []
    assert pq.read_schema(out).remove_metadata() == PARQUET_SCHEMA
    back = read_history(out)
    assert back.header["run_id"] == "r1" and list(back) == events
    table = pq.read_table(out, columns=["f", "topic", "offset"])
    assert table.column("offset").to_pylist()[1] == 0 and table.column("topic").to_pylist()[0] == "t"


def test_final_reads_have_row_groups_of_their_own(tmp_path: Path) -> None:
    """Readers that want only the final reads skip the other row groups; order is kept."""
    p = tmp_path / "h.jsonl"
    events = sample(p)
    out = tmp_path / "h.parquet"
    to_parquet(p, out)
    pf = pq.ParquetFile(out)
    kinds = [set(pf.read_row_group(i, columns=["f"]).column("f").to_pylist()) for i in range(pf.num_row_groups)]
    assert pf.num_row_groups >= 2 and {"final-read"} in kinds
    assert all(k == {"final-read"} or "final-read" not in k for k in kinds)
    assert list(read_history(out)) == events


def test_checks_agree_on_jsonl_and_parquet(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    sample(p)
    to_parquet(p, tmp_path / "h.parquet")
    a, b = load(p), load(tmp_path / "h.parquet")
    assert a.tps == b.tps and a.processes == b.processes
    assert list(a.polls.offset) == list(b.polls.offset) and list(a.sends.type) == list(b.sends.type)
    assert (a.polls.vid[0] == a.sends.vid[0]) and (b.polls.vid[0] == b.sends.vid[0])
    assert [m.isr for m in a.meta] == [m.isr for m in b.meta]
    assert a.finals[0].hw == b.finals[0].hw and list(a.finals[0].offsets) == list(b.finals[0].offsets)
    assert b.events([4])[0] == a.events([4])[0]
