"""The tiered measures (core.checks.tiered_measures): a record below its leader's local log start
at the last observation before its poll counts as served from remote, at or above it as local;
each poll's wait since the same consumer's previous one is counted in its tier; a history that
observed no local log start has no measures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from highwater.core.checks.tiered_measures import Waits, remote_mask, tiered_measures
from highwater.core.run_dir import TIERED_MEASURES
from highwater.reports.layout import RunInfo
from highwater.reports.render_html import _template
from highwater.reports.tiered import tiered_rows
from tests.synth.histories import HistoryBuilder

T = "t"


def catch_up() -> HistoryBuilder:
    """The leader keeps offsets 60 and up locally; consumer-0 catches up from 0: three polls of
    20 records from remote 400 ms apart, then two local ones 50 ms apart; consumer-1 polls one
    local batch before the first observation (not counted)."""
    b = HistoryBuilder({"tiered": True}, step_ms=0)
    b.poll("consumer-1", [(T, 0, 90, "v90")])
    b.advance(10)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=100, log_start=0, local_start=60)
    for first in (0, 20, 40):
        b.advance(400)
        b.poll("consumer-0", [(T, 0, o, f"v{o}") for o in range(first, first + 20)])
    for first in (60, 80):
        b.advance(50)
        b.poll("consumer-0", [(T, 0, o, f"v{o}") for o in range(first, first + 20)])
    return b


def test_records_below_the_local_log_start_are_counted_remote() -> None:
    tier = remote_mask(catch_up().data())
    assert tier is not None
    assert list(tier) == [-1, *[1] * 60, *[0] * 40]


def test_each_poll_s_wait_is_counted_in_its_tier() -> None:
    m = tiered_measures(catch_up().data(), remote_bytes=12345)
    assert m is not None
    assert (m.records, m.remote_records, m.remote_bytes) == (100, 60, 12345)
    # the first poll of consumer-0 has no previous one; the 2nd and 3rd waited 400 ms (remote),
    # the 4th 50 ms but it is local; the 5th 50 ms (local)
    assert m.waits["remote"] == Waits(2, 400.0, 400.0, 400.0)
    assert m.waits["local"] == Waits(2, 50.0, 50.0, 50.0)


def test_a_wait_across_the_consumer_s_own_fault_is_not_a_wait() -> None:
    b = catch_up()
    b.fault("client_kill", ["consumer-0"])
    b.advance(12_000)
    b.heal("client_kill", ["consumer-0"])
    b.advance(30)
    b.poll("consumer-0", [(T, 0, o, f"v{o}") for o in range(0, 20)])  # re-read from remote after its restart
    m = tiered_measures(b.data())
    assert m is not None and m.waits["remote"] == Waits(2, 400.0, 400.0, 400.0)  # the 12 s gap is left out


def test_remote_records_a_follower_served_are_counted_apart() -> None:
    """Served by broker 2 while broker 1 leads: a follower read the store for its rack; the
    leader's own remote records, its local ones and records of no known broker are not."""
    b = HistoryBuilder({"tiered": True}, step_ms=0)
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=100, log_start=0, local_start=60)
    b.advance(10)
    b.poll("consumer-1", [(T, 0, o, f"v{o}") for o in range(0, 20)], replica=2)  # remote, by a follower
    b.poll("consumer-0", [(T, 0, o, f"v{o}") for o in range(20, 30)], replica=1)  # remote, by the leader
    b.poll("consumer-2", [(T, 0, o, f"v{o}") for o in range(30, 35)])  # remote, serving broker unknown
    b.poll("consumer-1", [(T, 0, o, f"v{o}") for o in range(60, 70)], replica=2)  # local, by a follower
    m = tiered_measures(b.data())
    assert m is not None and (m.remote_records, m.remote_from_followers) == (35, 20)
    assert tiered_measures(catch_up().data()).remote_from_followers == 0  # type: ignore[union-attr]


def test_an_untiered_history_has_no_measures() -> None:
    b = HistoryBuilder({})
    b.meta(T, 0, leader=1, isr=[1, 2, 3], hw=1)
    b.poll("consumer-0", [(T, 0, 0, "v0")])
    assert tiered_measures(b.data()) is None


def _run(tmp: Path, name: str, measures: dict[str, Any]) -> RunInfo:
    d = tmp / name
    d.mkdir()
    (d / TIERED_MEASURES).write_text(json.dumps(measures))
    return RunInfo(0, "c", name, d, suite="tiered", scenario="catch-up", kafka_version="4.4.0", client="java")


def test_the_report_table_sums_the_reads_and_keeps_the_slowest_waits(tmp_path: Path) -> None:
    m = tiered_measures(catch_up().data(), remote_bytes=3 * 1048576)
    assert m is not None
    slower = {**m.to_json(), "waits": {"remote": {"median_ms": 900.0, "p95_ms": 1200.0}, "local": {}}}
    rows = tiered_rows([_run(tmp_path, "r1", m.to_json()), _run(tmp_path, "r2", slower)])
    assert len(rows) == 1
    row = rows[0]
    assert (row["runs"], row["records"], row["remote_records"], row["remote_share"]) == (2, 200, 120, 0.6)
    assert row["remote_wait"] == {"median_ms": 900.0, "p95_ms": 1200.0}
    assert row["local_wait"] == {"median_ms": 50.0, "p95_ms": 50.0}
    html = _template("tiered.html").render(tiered=rows)
    assert "tiered-table" in html and "120 (60%)" in html and "900.0 / 1200.0" in html and "3.0 MiB" in html
    assert row["remote_from_followers"] == 0 and "of those, by a follower" in html
    assert "No tiered runs" in _template("tiered.html").render(tiered=[])
