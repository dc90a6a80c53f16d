"""Sends through ``WorkerProcess``: queued, written in bursts (one ``sends`` line when the worker
takes batches, ``send`` lines otherwise), every one answered once, in order with the replies;
and a worker that dies leaves no send without an outcome or an exception.

The peer is a scripted protocol worker (``_PEER``): a program that speaks the worker protocol
and "acknowledges" each send with the next offset. It stands in for no Kafka client: what is
under test is the harness's side of the line protocol."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from highwater.harness.client_common import PROTOCOL, Outcome, ProducerSettings, SendOutcome, encode_line
from highwater.harness.clients import get_driver
from highwater.harness.clients.worker import (
    BATCH_LINE_SENDS,
    Launch,
    WorkerDriver,
    WorkerGone,
    WorkerProducer,
    encode_send_lines,
)

_PEER = r"""
import json, os, sys
batches = sys.argv[1] in ("batches", "oks")
oks = sys.argv[1] == "oks"  # acknowledgements as compact ``oks`` lines, every 7th send failing
die_after = int(sys.argv[2])
log = open(sys.argv[3], "a")
protocol = int(sys.argv[4])
first = json.loads(sys.stdin.readline())
print(json.dumps({"id": 0, "ok": True, "version": "0", "protocol": protocol, "batches": batches, "compact_oks": oks}), flush=True)
offset = 0
for raw in sys.stdin:
    cmd = json.loads(raw)
    log.write(cmd["op"] + "\n"); log.flush()
    if cmd["op"] in ("send", "sends", "batch"):
        if cmd["op"] == "batch":  # protocol 3: sends first, first + 1, ... as columns
            assert protocol >= 3 and len(cmd["partitions"]) == len(cmd["values"])
            ids = list(range(cmd["first"], cmd["first"] + len(cmd["values"])))
        else:
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
    def __init__(
        self, tmp_path: Path, batches: bool, die_after: int = -1, mode: str | None = None, protocol: int = 1
    ) -> None:
        self.script = tmp_path / "peer.py"
        self.script.write_text(_PEER)
        self.ops = tmp_path / "ops.log"
        self.args = [mode or ("batches" if batches else "lines"), str(die_after), str(self.ops), str(protocol)]
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


class _BatchOutcomes:
    """What ``send_batch`` answered, by index: ``("ok", offset)`` or the ``SendOutcome``."""

    def __init__(self) -> None:
        self.got: list[tuple[int, Any]] = []
        self.lock = threading.Lock()

    def acked(self, indexes: Sequence[int], offsets: Sequence[int]) -> None:
        with self.lock:
            self.got.extend((i, ("ok", o)) for i, o in zip(indexes, offsets, strict=True))

    def ended(self, index: int, outcome: SendOutcome) -> None:
        with self.lock:
            self.got.append((index, outcome))


@pytest.mark.parametrize(("protocol", "mode"), [(3, "oks"), (1, "oks"), (3, "batches"), (2, "batches")])
def test_a_batch_goes_as_batch_lines_to_protocol_3_and_each_send_is_answered_once(
    tmp_path: Path, protocol: int, mode: str
) -> None:
    """``send_batch`` among single sends: to a worker of protocol 3 as ``batch`` lines of
    ``BATCH_LINE_SENDS``, to an older one as ``sends`` lines; acknowledgements (in ``oks``
    lines, or in ``sends`` lines as the Node.js worker writes them) reach ``acked`` with the
    batch's indexes, the others ``ended``; the single sends keep theirs."""
    peer = _Peer(tmp_path, True, mode=mode, protocol=protocol)
    producer = WorkerDriver("peer", "0", peer).producer(ProducerSettings(bootstrap=("127.0.0.1:1",), client_id="p"))
    singles: list[tuple[int, SendOutcome]] = []
    batch = _BatchOutcomes()
    n = BATCH_LINE_SENDS * 2 + 500
    try:
        producer.send("t", 0, "first", lambda o: singles.append((1, o)))  # send id 1
        producer.send_batch("t", [i % 3 for i in range(n)], [f"v{i}" for i in range(n)], batch)  # ids 2..n+1
        producer.send("t", 0, "last", lambda o: singles.append((n + 2, o)))
        producer.flush(10.0)
        answered, single = list(batch.got), list(singles)  # the flush's reply came after every outcome
    finally:
        producer.close(5.0)
    assert [i for i, _ in single] == [1, n + 2]
    assert sorted(i for i, _ in answered) == list(range(n))  # each send of the batch once
    for index, outcome in answered:
        sid = index + 2
        if sid % 7 == 0 and mode == "oks":  # the peer fails these in its oks mode only
            assert outcome == SendOutcome.fail("E: refused")
        else:
            assert outcome == ("ok", sid - 1)  # the peer's offsets count every send from 0
    ops = peer.ops.read_text().split()
    sends = [op for op in ops if op not in ("flush", "close")]
    if protocol >= 3:
        assert sends.count("batch") == 3 and set(sends) == {"batch", "sends"}
    else:
        assert set(sends) == {"sends"}


def test_a_worker_that_dies_in_a_batch_answers_every_send_of_it(tmp_path: Path) -> None:
    """The worker dies at the batch's 101st send: the first 100 are acknowledged, the rest end
    ``info``; a batch after its end raises ``WorkerGone`` with every send of it ended ``info``."""
    peer = _Peer(tmp_path, True, die_after=100, mode="oks", protocol=3)
    producer = WorkerDriver("peer", "0", peer).producer(ProducerSettings(bootstrap=("127.0.0.1:1",), client_id="p"))
    batch, after = _BatchOutcomes(), _BatchOutcomes()
    try:
        producer.send_batch("t", [0] * 1000, [f"v{i}" for i in range(1000)], batch)
        producer.flush(5.0)
        with pytest.raises(WorkerGone):
            for _ in range(1_000_000):  # until its end is known (the reader thread sees it)
                producer.send_batch("t", [0, 0], ["a", "b"], after)
    finally:
        producer.close(5.0)
    answered = dict(batch.got)
    assert sorted(answered) == list(range(1000))
    ok = [i for i, o in answered.items() if o[0] == "ok"]
    assert len(ok) <= 100 and all(answered[i] == ("ok", i) for i in ok if (i + 1) % 7)
    ended = [o for o in answered.values() if o[0] != "ok"]
    assert all(
        o.outcome is Outcome.INFO and "WorkerGone" in str(o.error) for o in ended if o.outcome is not Outcome.FAIL
    )
    late = list(after.got)
    assert len(late) % 2 == 0 and all(o.outcome is Outcome.INFO and isinstance(o.error, WorkerGone) for _, o in late)


def test_the_python_worker_takes_batch_lines() -> None:
    """The Python worker itself (protocol 3) reads ``batch`` lines into its library: with no
    broker to reach, each send of a batch ends once with the library's own error when the
    producer closes (not the harness's ``WorkerGone``), and the worker exits cleanly.
    confluent-kafka only: kafka-python's producer refuses to start without a broker (its batch
    lines are proven on a cluster, ``test_client_driver_contract``)."""
    client = "confluent-kafka"
    producer = get_driver(client).producer(
        ProducerSettings(bootstrap=("127.0.0.1:1",), client_id=f"batch-lines-{client}", max_block_ms=1000)
    )
    assert isinstance(producer, WorkerProducer) and producer.process.protocol == PROTOCOL >= 3
    batch = _BatchOutcomes()
    try:
        producer.send_batch("t", [0, 1, 2] * 5, [f"v{i}" for i in range(15)], batch)
    finally:
        producer.close(1.0)
    assert producer.process.proc.returncode == 0
    answered = dict(batch.got)
    assert sorted(answered) == list(range(15)) and len(batch.got) == 15
    assert all(o.outcome is not Outcome.OK and "WorkerGone" not in str(o.error) for o in answered.values())


def test_send_lines_are_what_encode_line_writes() -> None:
    """``encode_send_lines`` formats each ``send`` line itself: byte for byte ``encode_line``'s,
    escapes and non-ASCII characters included (a lone surrogate too)."""
    sends = [[1, "t", 0, "plain"], [22, "t\u00e9", 7, 'q"\\\n\t\u00e9\u4e2d\U0001f600\udc80'], [3, "", 2, ""]]
    expected = b"".join(
        encode_line({"id": sid, "op": "send", "topic": t, "partition": p, "value": v}) for sid, t, p, v in sends
    )
    assert encode_send_lines(sends) == expected
