"""The ckjs worker's reading of librdkafka's debug log (``clients/node/ckjs_worker.js``,
``ConsumerRole.line``): which broker served each fetch, and the position changes librdkafka makes
on its own, which the checks judge (a reset after a looked-up offset, a KIP-320 truncation seek,
a truncation that stops a partition under ``auto.offset.reset=error``), each fed the line it
reads and look-alikes it must leave alone. The lines are librdkafka 2.15's formats."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from highwater.harness.clients import ckjs
from highwater.harness.clients.npm_tree import find_node

_SCRIPT = """
const { ConsumerRole, FetchSources } = require(process.argv[1])
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'))
const role = Object.create(ConsumerRole.prototype) // no client: only the log reading is tested
Object.assign(role, {
  sources: new FetchSources(), unapplied: new Map(), stopped: new Set(), queue: [],
  mode: 'subscribe', wanted: new Set(), waiting: null,
  delivered: new Map(Object.entries(input.delivered).map(([k, v]) => [k.replace('/', '\\u0000'), v]))
})
for (const text of input.lines) role.line(text, false)
const sources = input.lookups.map(([t, p, o]) => role.sources.sourceOf(`${t}\\u0000${p}`, o))
process.stdout.write(JSON.stringify({ queue: role.queue, sources }))
"""


def _read(lines: list[str], delivered: dict[str, int] | None = None, lookups: Any = ()) -> dict[str, Any]:
    try:
        modules = ckjs.ensure_tree(ckjs.PINNED)
    except Exception as exc:  # noqa: BLE001 - no built tree here (make install builds it)
        pytest.skip(f"no ckjs {ckjs.PINNED} tree: {exc}")
    node, _ = find_node("ckjs")
    done = subprocess.run(
        [node, "-e", _SCRIPT, str(ckjs.WORKER)],
        input=json.dumps({"lines": lines, "delivered": delivered or {}, "lookups": list(lookups)}),
        capture_output=True,
        text=True,
        env={**os.environ, "NODE_PATH": str(modules)},
        timeout=60,
        check=True,
    )
    return dict(json.loads(done.stdout))


def _positions(queue: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    return [(e["event"]["partition"], e["event"]["offset"], e["event"]["reason"]) for e in queue if "event" in e]


def test_each_fetch_names_its_broker_and_a_fetch_lower_down_forgets_those_above() -> None:
    lines = [
        "127.0.0.1:30001/1: Fetch topic t [0] at offset 42 (leader epoch 3, current leader epoch 3, v2)",
        "127.0.0.1:30002/2: Fetch topic t [0] at offset 60 (leader epoch 3, current leader epoch 3, v2)",
        "127.0.0.1:30003/3: Fetch topic t [0] at offset 45 (leader epoch 4, current leader epoch 4, v2)",
    ]
    got = _read(lines, lookups=[["t", 0, 44], ["t", 0, 61], ["t", 0, 41], ["t", 1, 50]])
    assert got["sources"] == [1, 3, None, None]
    assert got["queue"] == []


def test_a_looked_up_offset_the_fetcher_starts_at_is_a_reset_and_one_it_leaves_is_not() -> None:
    lines = [
        "Offset BEGINNING request for t [0] returned offset BEGINNING (7)",
        "Partition t [0] start fetching at offset 7 (leader epoch 3)",
        "Offset END request for t [1] returned offset END (90)",
        "Partition t [1] start fetching at offset 12 (leader epoch 3)",  # its own position: no reset
        "Partition t [2] start fetching at offset 5 (leader epoch 3)",  # nothing looked up
    ]
    assert _positions(_read(lines)["queue"]) == [(0, 7, "reset")]


def test_a_seek_with_a_leader_epoch_away_from_what_was_handed_over_is_a_truncation() -> None:
    """librdkafka's KIP-320 seek carries the epoch; the compat layer's repositioning to where its
    records to the worker ended does too, and is no move; the worker's own seeks carry none."""
    lines = [
        "Seek t [2] to offset 302 (leader epoch 5) in state active (v4)",
        "Seek t [3] to offset 120 (leader epoch 5) in state active (v4)",
        "Seek t [4] to offset 50 (leader epoch -1) in state active (v4)",
    ]
    got = _read(lines, delivered={"t/2": 350, "t/3": 120})
    assert _positions(got["queue"]) == [(2, 302, "truncation")]


def test_a_truncation_that_stops_a_partition_is_reported_with_the_broker_s_end_offset() -> None:
    lines = [
        "t [5]: offset reset (at offset 400 (leader epoch 2), broker 1) to offset INVALID: log truncation "
        "detected at offset 400 (leader epoch 2): broker end offset is 303 (offset leader epoch 2)",
        "t [6]: offset reset (at offset 10, broker 1) to offset INVALID: no previously committed offset",
    ]
    queue = _read(lines)["queue"]
    assert queue[0]["truncation"] == [{"topic": "t", "partition": 5, "offset": 303}]
    assert "truncation" not in queue[1] and "_AUTO_OFFSET_RESET: t [6]" in queue[1]["error"]
