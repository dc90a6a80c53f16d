"""Revocations as the clients report them (issue 27): a worker's ``revoke`` events (protocol 2)
reach the listener in order with its position events, the consumer workload records them as
``revoke`` history events, the drivers turn each library's callbacks into them, and the
history's loaders and checks tolerate them (no check reads them yet).

The worker here is a scripted protocol peer, as in ``test_worker_sends.py``: what is under test is
the harness's side of the line protocol, and each driver's mapping of its library's callbacks."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest

from highwater.core.checks import run_all_checks
from highwater.core.history import HistoryError, HistoryWriter, read_history, to_parquet
from highwater.core.history.format import event_problem
from highwater.harness.client_common import PROTOCOL, WorkerError
from highwater.harness.clients import (
    ConsumerSettings,
    PositionChange,
    PositionReason,
    Revocation,
    RevocationListener,
    RevocationReason,
    report_revocation,
)
from highwater.harness.clients.worker import PROTOCOLS, Launch, WorkerDriver, revocation_of
from highwater.harness.workload.consumer import ConsumerConfig, ConsumerWorker
from tests.synth.txn import Events, header

NOWHERE = ("127.0.0.1:1",)

_PEER = r"""
import json, sys
protocol = int(sys.argv[1])
first = json.loads(sys.stdin.readline())
print(json.dumps({"id": 0, "ok": True, "version": "0", "protocol": protocol}), flush=True)
polls = 0
for raw in sys.stdin:
    cmd = json.loads(raw)
    if cmd["op"] == "poll":
        polls += 1
        if polls == 1:
            print(json.dumps({"event": "position", "topic": "t", "partition": 0, "offset": None, "reason": "rebalance"}))
            print(json.dumps({"event": "position", "topic": "t", "partition": 1, "offset": None, "reason": "rebalance"}))
        elif polls == 2:
            print(json.dumps({"event": "revoke", "topic": "t", "partition": 1, "reason": "revoked"}))
            print(json.dumps({"event": "something-newer", "topic": "t"}))
            print(json.dumps({"event": "revoke", "topic": "t", "partition": 2, "reason": "from-the-future"}))
            print(json.dumps({"event": "revoke", "topic": "t", "partition": 0, "reason": "lost"}))
        print(json.dumps({"id": cmd["id"], "ok": True, "parts": []}), flush=True)
        continue
    print(json.dumps({"id": cmd["id"], "ok": True}), flush=True)
    if cmd["op"] == "close":
        break
"""


class _Peer:
    def __init__(self, tmp_path: Path, protocol: int) -> None:
        self.script = tmp_path / "peer.py"
        self.script.write_text(_PEER)
        self.protocol = protocol
        self.log = tmp_path / "worker.log"

    def launch(self, role: str, client_id: str) -> Launch:
        return Launch([sys.executable, str(self.script), str(self.protocol)], self.log)

    def producer_config(self, settings: Any) -> dict[str, Any]:
        return {}

    def consumer_config(self, settings: Any) -> dict[str, Any]:
        return {}


class Seen:
    """A listener of both: what reached it, in order."""

    def __init__(self) -> None:
        self.seen: list[PositionChange | Revocation] = []

    def on_position_change(self, change: PositionChange) -> None:
        self.seen.append(change)

    def on_revocation(self, revocation: Revocation) -> None:
        self.seen.append(revocation)


class PositionsOnly:
    def __init__(self) -> None:
        self.seen: list[PositionChange] = []

    def on_position_change(self, change: PositionChange) -> None:
        self.seen.append(change)


def _settings(**fields: Any) -> ConsumerSettings:
    return ConsumerSettings(NOWHERE, "consumer-0", group_id="g", **fields)


def test_revoke_events_parse_and_a_bad_reason_is_an_error() -> None:
    event = {"event": "revoke", "topic": "t", "partition": "2", "reason": "lost"}
    assert revocation_of(event) == Revocation("t", 2, RevocationReason.LOST)
    assert revocation_of(event).to_event_value() == {"topic": "t", "partition": 2, "reason": "lost"}
    with pytest.raises(ValueError):
        revocation_of({**event, "reason": "gone"})
    assert PROTOCOL == 3 and PROTOCOLS == {1, 2, 3}


def test_revocations_reach_the_listener_in_order_with_the_positions(tmp_path: Path) -> None:
    listener = Seen()
    consumer = WorkerDriver("peer", "0", _Peer(tmp_path, 2)).consumer(_settings(), listener)
    try:
        assert consumer.process.protocol == 2
        consumer.subscribe(["t"])
        consumer.poll(10)
        consumer.poll(10)
    finally:
        consumer.close()
    assert listener.seen == [
        PositionChange("t", 0, None, PositionReason.REBALANCE),
        PositionChange("t", 1, None, PositionReason.REBALANCE),
        # an event of a kind it does not know is skipped, a revocation it cannot read logged
        Revocation("t", 1, RevocationReason.REVOKED),
        Revocation("t", 0, RevocationReason.LOST),
    ]


def test_a_listener_of_positions_only_is_left_alone(tmp_path: Path) -> None:
    listener = PositionsOnly()
    assert isinstance(Seen(), RevocationListener) and not isinstance(listener, RevocationListener)
    report_revocation(listener, Revocation("t", 0, RevocationReason.REVOKED))  # nothing to call: no error
    consumer = WorkerDriver("peer", "0", _Peer(tmp_path, 2)).consumer(_settings(), listener)
    try:
        consumer.poll(10)
        consumer.poll(10)
    finally:
        consumer.close()
    assert [c.partition for c in listener.seen] == [0, 1]


def test_a_worker_of_protocol_1_still_works_and_another_is_refused(tmp_path: Path) -> None:
    old = WorkerDriver("peer", "0", _Peer(tmp_path, 1)).consumer(_settings(), Seen())
    try:
        assert old.process.protocol == 1
        assert old.poll(10) == []
    finally:
        old.close()
    with pytest.raises(WorkerError, match="speaks protocol 4, the harness 1 or 2 or 3"):
        WorkerDriver("peer", "0", _Peer(tmp_path, 4)).consumer(_settings(), Seen())


class _RevokingConsumer:
    """A driver's consumer whose library reports an assignment, then gives it up."""

    def __init__(self, listener: Any) -> None:
        self.listener = listener

    def subscribe(self, topics: list[str]) -> None:
        self.listener.on_position_change(PositionChange("t", 0, None, PositionReason.REBALANCE))

    def poll(self, timeout_ms: int) -> list[Any]:
        report_revocation(self.listener, Revocation("t", 0, RevocationReason.REVOKED))
        report_revocation(self.listener, Revocation("t", 1, RevocationReason.LOST))
        return []

    def close(self) -> None:
        pass


class _RevokingDriver:
    name, version = "revoking", "0"

    def consumer(self, settings: ConsumerSettings, listener: Any) -> _RevokingConsumer:
        return _RevokingConsumer(listener)


def test_the_consumer_workload_records_revocations_as_history_events(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as history:
        worker = ConsumerWorker(
            "consumer-0",
            ["127.0.0.1:1"],
            history,
            ConsumerConfig("t", mode="subscribe", group_id="g"),
            client=_RevokingDriver(),  # type: ignore[arg-type]
        )
        worker._start()
        worker.poll_once()
    events = [(e["process"], e["type"], e["f"], e["value"]) for e in read_history(path)]  # the strict reader
    assert events == [
        ("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": None, "reason": "rebalance"}),
        ("consumer-0", "ok", "revoke", {"topic": "t", "partition": 0, "reason": "revoked"}),
        ("consumer-0", "ok", "revoke", {"topic": "t", "partition": 1, "reason": "lost"}),
    ]


def test_the_format_checks_a_revoke_events_fields() -> None:
    ev = {"index": 0, "time_ns": 1, "process": "consumer-0", "type": "ok", "f": "revoke", "error": None}
    assert event_problem({**ev, "value": {"topic": "t", "partition": 1, "reason": "revoked"}}) is None
    assert "reason" in str(event_problem({**ev, "value": {"topic": "t", "partition": 1}}))
    assert "partition" in str(event_problem({**ev, "value": {"topic": "t", "partition": "x", "reason": "lost"}}))


_GROUPED = {"consumer-0": {"group": "g"}, "consumer-1": {"group": "g"}}


def _group_history(revocations: bool) -> Events:
    """Two members; consumer-0 reads partition 0, gives it and partition 1 up, consumer-1 takes
    partition 0 over from the committed offset."""
    e = Events()
    for p in (0, 1):
        for o in range(4):
            e.send("producer-0", f"v{p}-{o}", o, partition=p)
    e.add("consumer-0", "ok", "assign", {"topic": "t", "partition": 0, "offset": None, "reason": "rebalance"})
    e.poll("consumer-0", [(0, "v0-0"), (1, "v0-1")], partition=0)
    e.add("consumer-0", "invoke", "commit", {"group": "g", "topic": "t", "partition": 0, "offset": 2})
    e.add("consumer-0", "ok", "commit", {"group": "g", "topic": "t", "partition": 0, "offset": 2})
    if revocations:
        e.add("consumer-0", "ok", "revoke", {"topic": "t", "partition": 0, "reason": "revoked"})
        e.add("consumer-0", "ok", "revoke", {"topic": "t", "partition": 1, "reason": "lost"})
    e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 0, "offset": None, "reason": "rebalance"})
    e.poll("consumer-1", [(2, "v0-2"), (3, "v0-3")], partition=0)
    e.add("consumer-1", "ok", "assign", {"topic": "t", "partition": 1, "offset": None, "reason": "rebalance"})
    e.poll("consumer-1", [(o, f"v1-{o}") for o in range(4)], partition=1)
    e.final([(o, f"v0-{o}") for o in range(4)], partition=0)
    return e.final([(o, f"v1-{o}") for o in range(4)], partition=1)


def _write(path: Path, e: Events) -> Path:
    lines = [header(isolation=None, consumers=_GROUPED), *e.events]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _judged(path: Path) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Each verdict's validity and counts; the ``history`` verdict's event count left out (it
    counts every event, the two revocations too)."""
    out = {v.check: (v.valid, dict(v.counts)) for v in run_all_checks(path)}
    out["history"][1].pop("events")
    return out


def test_the_checks_judge_a_history_with_revocations_as_one_without(tmp_path: Path) -> None:
    """Revocations change no verdict where the assignment they end is given again before the
    next poll: on JSON Lines and Parquet alike, a group history judges the same with them as
    without them (rebalance-barrier, the one check that reads them, included)."""
    without = _judged(_write(tmp_path / "without.jsonl", _group_history(False)))
    src = _write(tmp_path / "with.jsonl", _group_history(True))
    to_parquet(src, tmp_path / "with.parquet")
    assert without["group-delivery"][0] is True  # a group history the group checks judged
    assert _judged(src) == without
    assert _judged(tmp_path / "with.parquet") == without


def test_kafka_python_reports_revoked_and_lost_partitions() -> None:
    from kafka import TopicPartition as KTopicPartition

    from highwater.clients.python.kafka_python import _Rebalances

    seen = Seen()
    listener = _Rebalances(seen)
    listener.on_partitions_assigned({KTopicPartition("t", 1)})
    listener.on_partitions_revoked({KTopicPartition("t", 1), KTopicPartition("t", 0)})
    listener.on_partitions_revoked(set())  # eager: called at a first join with nothing to give up
    listener.on_partitions_lost({KTopicPartition("t", 2)})
    assert seen.seen == [
        PositionChange("t", 1, None, PositionReason.REBALANCE),
        Revocation("t", 0, RevocationReason.REVOKED),
        Revocation("t", 1, RevocationReason.REVOKED),
        Revocation("t", 2, RevocationReason.LOST),
    ]


class _Subscribing:
    """Stands in for librdkafka's consumer at ``subscribe``: keeps the callbacks given."""

    def __init__(self) -> None:
        self.callbacks: dict[str, Any] = {}

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.callbacks = callbacks


def test_librdkafka_reports_revoked_and_lost_partitions() -> None:
    from highwater.clients.python.confluent import ConfluentConsumer

    seen = Seen()
    consumer = ConfluentConsumer(ck, _settings(), seen)
    real, fake = consumer._consumer, _Subscribing()
    try:
        consumer._consumer = fake
        consumer.subscribe(["t"])
        assert set(fake.callbacks) == {"on_assign", "on_revoke", "on_lost"}
        fake.callbacks["on_assign"](None, [ck.TopicPartition("t", 0), ck.TopicPartition("t", 1)])
        fake.callbacks["on_revoke"](None, [ck.TopicPartition("t", 1)])
        fake.callbacks["on_lost"](None, [ck.TopicPartition("t", 0)])
    finally:
        consumer._consumer = real
        consumer.close()
    assert seen.seen == [
        PositionChange("t", 0, None, PositionReason.REBALANCE),
        PositionChange("t", 1, None, PositionReason.REBALANCE),
        Revocation("t", 1, RevocationReason.REVOKED),
        Revocation("t", 0, RevocationReason.LOST),
    ]


_KAFKAJS_SCRIPT = """
const { ConsumerRole } = require(process.argv[1])
const role = new ConsumerRole(JSON.parse(require('fs').readFileSync(0, 'utf8')))
role.mode = 'subscribe'
const out = []
const take = () => { out.push(role.events.splice(0).filter(e => e.event === 'revoke')) }
role.joined({ memberId: 'm1', memberAssignment: { t: [0, 1] } }); take()
role.gaveUp('rebalancing'); take() // kafkajs's REBALANCING event
role.joined({ memberId: 'm1', memberAssignment: { t: [1] } }); take() // nothing left to give up
role.joined({ memberId: 'm2', memberAssignment: { t: [1, 2] } }); take() // a join without REBALANCING
role.mode = 'assign'
role.joined({ memberId: 'm3', memberAssignment: { t: [0] } }); role.gaveUp('rebalancing'); take()
process.stdout.write(JSON.stringify(out))
"""


def test_the_kafkajs_worker_reports_what_kafkajs_tells_it() -> None:
    """kafkajs names no partition when it gives them up: its REBALANCING event gives up every
    partition of the last join, a join without it those of the previous join; an assign-mode
    consumer (a private group of its own) reports none."""
    from highwater.harness.clients import kafkajs

    node, _ = kafkajs.find_node()
    env = {**os.environ, "NODE_PATH": str(kafkajs.ensure_tree(kafkajs.pinned_version()))}
    done = subprocess.run(
        [node, "-e", _KAFKAJS_SCRIPT, str(kafkajs.WORKER)],
        input=json.dumps(dataclasses.asdict(_settings())),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    got = [[(e["partition"], e["reason"]) for e in step] for step in json.loads(done.stdout)]
    assert got == [[], [(0, "rebalancing"), (1, "rebalancing")], [], [(1, "rejoin")], []]
    assert all(revocation_of(e) for step in json.loads(done.stdout) for e in step)


def test_history_error_is_still_raised_for_a_malformed_revoke(tmp_path: Path) -> None:
    bad = Events().add("consumer-0", "ok", "revoke", {"topic": "t", "partition": 0})
    path = _write(tmp_path / "bad.jsonl", bad)
    with pytest.raises(HistoryError, match="reason"):
        list(read_history(path))
