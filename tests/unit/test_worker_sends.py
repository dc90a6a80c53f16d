"""Sends through ``WorkerProcess``: queued, written in bursts (one ``sends`` line when the worker
takes batches, ``send`` lines otherwise), every one answered once, in order with the replies;
and a worker that dies leaves no send without an outcome or an exception.

The peer is a scripted protocol worker (``_PEER``): a program that speaks the worker protocol
and "acknowledges" each send with the next offset. It stands in for no Kafka client: what is
under test is the harness's side of the line protocol."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.clients.base import Outcome, ProducerSettings, SendOutcome
from harness.clients.worker import Launch, WorkerDriver, WorkerGone

_PEER = r"""
import json, os, sys
batches = sys.argv[1] in ("batches", "oks")
oks = sys.argv[1] == "oks"  # acknowledgements as compact ``oks`` lines, every 7th send failing
die_after = int(sys.argv[2])
log = open(sys.argv[3], "a")
first = json.loads(sys.stdin.readline())
print(json.dumps({"id": 0, "ok": True, "version": "0", "protocol": 1, "batches": batches, "compact_oks": oks}), flush=True)
offset = 0
for raw in sys.stdin:
    cmd = json.loads(raw)
    log.write(cmd["op"] + "\n"); log.flush()
    if cmd["op"] in ("send", "sends"):
        ids = [s[0] for s in cmd["sends"]] if cmd["op"] == "sends" else [cmd["id"]]
        outcomes = []
        for sid in ids:
            if offset == die_after:  # the outcomes so far are out, then the worker dies
                if batches and outcomes:
                    print(json.dumps({"sends": outcomes}), flush=True)
                os._exit(9)
            outcomes.append([sid, "ok", offset, None])
            offset += 1
        if oks:  # runs of acknowledgements as ``oks`` lines, the failures between them as ``sends``
            out = []
            for o in outcomes:
                if o[0] % 7 == 0:
                    out.append({"sends": [[o[0], "fail", None, "E: refused"]]})
                elif out and "oks" in out[-1]:
                    out[-1]["oks"] += [o[0], o[2]]
                else:
                    out.append({"oks": [o[0], o[2]]})
            sys.stdout.write("".join(json.dumps(line) + "\n" for line in out))
            sys.stdout.flush()
        elif batches:
            print(json.dumps({"sends": outcomes}), flush=True)
        else:
            for sid, o, off, e in outcomes:
                print(json.dumps({"send": sid, "outcome": o, "offset": off, "error": e}), flush=True)
        continue
    print(json.dumps({"id": cmd["id"], "ok": True}), flush=True)
    if cmd["op"] == "close":
        break
"""


class _Peer:
    def __init__(self, tmp_path: Path, batches: bool, die_after: int = -1, mode: str | None = None) -> None:
        self.script = tmp_path / "peer.py"
        self.script.write_text(_PEER)
        self.ops = tmp_path / "ops.log"
        self.args = [mode or ("batches" if batches else "lines"), str(die_after), str(self.ops)]
        self.log = tmp_path / "worker.log"

    def launch(self, role: str, client_id: str) -> Launch:
        return Launch([sys.executable, str(self.script), *self.args], self.log)

    def producer_config(self, settings: ProducerSettings) -> dict[str, Any]:
        return {}

    def consumer_config(self, settings: Any) -> dict[str, Any]:
        return {}


class _Outcomes:
    def __init__(self) -> None:
        self.got: list[SendOutcome] = []
        self.lock = threading.Lock()

    def __call__(self, outcome: SendOutcome) -> None:
        with self.lock:
            self.got.append(outcome)


@pytest.mark.parametrize("batches", [True, False])
def test_every_send_is_answered_once_in_order_and_before_the_flush_reply(tmp_path: Path, batches: bool) -> None:
    peer = _Peer(tmp_path, batches)
    producer = WorkerDriver("peer", "0", peer).producer(ProducerSettings(bootstrap=("127.0.0.1:1",), client_id="p"))
    outcomes = _Outcomes()
    try:
        for i in range(2000):
            producer.send("t", i % 3, f"v{i}", outcomes)
        producer.flush(10.0)
        got = list(outcomes.got)  # the flush's reply came after every outcome
    finally:
        producer.close(5.0)
    assert [o.outcome for o in got] == [Outcome.OK] * 2000
    assert [o.offset for o in got] == list(range(2000))
    ops = peer.ops.read_text().split()
    assert ops[-2:] == ["flush", "close"]
    if batches:  # a burst of sends went out in far fewer lines than sends
        assert set(ops[:-2]) == {"sends"} and len(ops) - 2 < 2000
    else:
        assert ops[:-2] == ["send"] * 2000


@pytest.mark.parametrize("batches", [True, False])
def test_a_worker_that_dies_leaves_no_send_unanswered(tmp_path: Path, batches: bool) -> None:
    """The first 100 sends are acknowledged; the worker dies at the 101st; every send queued
    before its end is ``info``; once it is known gone, a send raises ``WorkerGone``."""
    peer = _Peer(tmp_path, batches, die_after=100)
    producer = WorkerDriver("peer", "0", peer).producer(ProducerSettings(bootstrap=("127.0.0.1:1",), client_id="p"))
    outcomes = _Outcomes()
    sent = 0
    try:
        with pytest.raises(WorkerGone):
            for i in range(1_000_000):
                producer.send("t", 0, f"v{i}", outcomes)
                sent += 1
        producer.flush(1.0)
    finally:
        producer.close(5.0)
    got = list(outcomes.got)
    assert len(got) == sent  # each send that did not raise has exactly one outcome
    assert [o.outcome for o in got[:100]] == [Outcome.OK] * 100
    assert {o.outcome for o in got[100:]} == {Outcome.INFO} and sent > 100
    assert all("WorkerGone" in str(o.error) for o in got[100:])


def test_compact_acknowledgements_answer_each_send_once_in_order(tmp_path: Path) -> None:
    """A worker announcing ``compact_oks`` answers runs of acknowledged sends as ``oks`` lines
    (``[id, offset, ...]``) and the others as ``sends`` lines: each send gets its own outcome,
    with its offset or its error, in the order the worker stated them."""
    peer = _Peer(tmp_path, True, mode="oks")
    producer = WorkerDriver("peer", "0", peer).producer(ProducerSettings(bootstrap=("127.0.0.1:1",), client_id="p"))
    got: list[tuple[int, SendOutcome]] = []
    try:
        for i in range(1, 2001):
            producer.send("t", i % 3, f"v{i}", lambda o, i=i: got.append((i, o)))
        producer.flush(10.0)
        answered = list(got)  # the flush's reply came after every outcome
    finally:
        producer.close(5.0)
    assert [i for i, _ in answered] == list(range(1, 2001))
    for n, (i, o) in enumerate(answered):
        if i % 7 == 0:
            assert o == SendOutcome.fail("E: refused")
        else:
            assert o == SendOutcome.ok(n) and type(o) is SendOutcome and o.outcome is Outcome.OK
