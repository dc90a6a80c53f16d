"""The client-driver protocol: the registry, the typed events, the workers' shared bookkeeping
over a scripted driver, and where kafka-python may be imported (no cluster needed)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import kafka
import pytest
from kafka import errors as kerr

from highwater.clients.python.kafka_python import FetchSources, classify_send_error
from highwater.core.errors import HighwaterError
from highwater.core.history import HistoryWriter, read_history
from highwater.harness.clients import (
    CLIENTS,
    DEFAULT_CLIENT,
    ClientSpec,
    ConsumerListener,
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
    UnknownClientError,
    client_label,
    client_names,
    get_driver,
    parse_client_spec,
    parse_client_specs,
)
from highwater.harness.clients.base import Outcome, send_batch
from highwater.harness.clients.worker import WorkerGone
from highwater.harness.workload import ConsumerConfig, ConsumerWorker, ProducerConfig, ProducerWorker

ROOT = Path(__file__).resolve().parents[2]


# --- the registry ---------------------------------------------------------------------------


def test_registry_names_kafka_python_with_its_version() -> None:
    assert DEFAULT_CLIENT == "kafka-python" and DEFAULT_CLIENT in client_names()
    assert client_names() == list(CLIENTS)
    driver = get_driver("kafka-python")
    assert (driver.name, driver.version) == ("kafka-python", kafka.__version__)
    assert client_label(driver) == f"kafka-python {kafka.__version__}"  # the history header's "client"


def test_client_specs_name_a_client_and_optionally_its_version() -> None:
    assert parse_client_specs("kafka-python, confluent-kafka==2.3.0,confluent-kafka:2.6.1") == [
        ClientSpec("kafka-python"),
        ClientSpec("confluent-kafka", "2.3.0"),
        ClientSpec("confluent-kafka", "2.6.1"),
    ]
    assert (
        str(parse_client_spec("confluent-kafka:2.6.1")) == "confluent-kafka==2.6.1"
        and str(parse_client_spec("kafka-python")) == "kafka-python"
    )
    for bad, says in [("java:", "bad client"), ("kafka python", "bad client"), ("nope==1.0", "unknown client 'nope'")]:
        with pytest.raises(UnknownClientError) as err:
            parse_client_spec(bad)
        assert says in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(UnknownClientError, match="no client"):
        parse_client_specs(" , ")


def test_any_kafka_python_version_runs_in_a_virtual_environment_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed version runs its workers on the harness's interpreter; another one on its
    own venv's (made once), never in the harness's process."""
    import sys

    from highwater.harness.clients import python as pyclients

    assert get_driver(f"kafka-python=={kafka.__version__}").launcher.python == Path(sys.executable)  # type: ignore[attr-defined]
    made: list[tuple[str, str]] = []

    def fake_venv(dist: str, version: str, progress: Callable[[str], None] = print) -> Path:
        made.append((dist, version))
        return tmp_path / dist / version / "bin" / "python"

    monkeypatch.setattr(pyclients, "ensure_venv", fake_venv)
    driver = get_driver("kafka-python==3.0.5")
    assert (driver.name, driver.version, client_label(driver)) == ("kafka-python", "3.0.5", "kafka-python 3.0.5")
    assert driver.launcher.python == tmp_path / "kafka-python" / "3.0.5" / "bin" / "python"  # type: ignore[attr-defined]
    assert made == [("kafka-python", "3.0.5")]
    for bad, says in [("kafka-python==1.4.7", "too old"), ("confluent-kafka==2.0.2", "too old")]:
        with pytest.raises(UnknownClientError, match=says) as err:
            get_driver(bad)
        assert "\n" not in str(err.value)
    assert made == [("kafka-python", "3.0.5")]  # refused before anything was installed


def test_a_local_build_is_named_by_its_path_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``NAME@PATH`` names a local build of a Python client; the path is made absolute so the
    spec means the same in a child process; the Java client's local builds go by version."""
    monkeypatch.chdir(tmp_path)
    spec = parse_client_spec("kafka-python@checkout")
    assert spec == ClientSpec("kafka-python", None, str(tmp_path / "checkout"))
    assert str(spec) == f"kafka-python@{tmp_path / 'checkout'}" and parse_client_spec(str(spec)) == spec
    assert parse_client_specs(f"kafka-python@{tmp_path}/a.whl,kafka-python") == [
        ClientSpec("kafka-python", path=str(tmp_path / "a.whl")),
        ClientSpec("kafka-python"),
    ]
    with pytest.raises(UnknownClientError, match="local Maven repository") as err:
        parse_client_spec("java@/src/kafka")
    assert "\n" not in str(err.value)
    for bad, says in [
        ("kafka-python@nowhere", "no such file or directory"),
        ("confluent-kafka@setup.cfg", "neither a source tree nor a wheel"),
    ]:
        (tmp_path / "setup.cfg").write_text("[metadata]\n")
        with pytest.raises(UnknownClientError, match=says) as err:
            get_driver(bad)
        assert "\n" not in str(err.value)
    assert not (tmp_path / "nowhere").exists()


def test_a_source_trees_fingerprint_follows_its_sources_only(tmp_path: Path) -> None:
    """A local build is installed again when its sources change (a file edited, added or
    removed), not when only version control, caches or build output do."""
    from highwater.harness.clients.python import source_fingerprint

    tree = tmp_path / "client"
    (tree / "kafka").mkdir(parents=True)
    (tree / "kafka" / "consumer.py").write_text("A = 1\n")
    (tree / "pyproject.toml").write_text("[project]\n")
    first = source_fingerprint(tree)
    for noise in (".git/index", "kafka/__pycache__/consumer.pyc", "build/lib/x.py", "kafka_python.egg-info/PKG-INFO"):
        (tree / noise).parent.mkdir(parents=True, exist_ok=True)
        (tree / noise).write_text("noise")
    assert source_fingerprint(tree) == first
    (tree / "kafka" / "consumer.py").write_text("A = 22\n")  # edited (another size)
    edited = source_fingerprint(tree)
    assert edited != first
    (tree / "kafka" / "fetcher.py").write_text("")
    assert source_fingerprint(tree) not in (first, edited)
    wheel = tmp_path / "kafka_python-3.0.12-py2.py3-none-any.whl"
    wheel.write_bytes(b"PK one")
    one = source_fingerprint(wheel)
    wheel.write_bytes(b"PK two")
    assert source_fingerprint(wheel) != one


def test_unknown_client_is_one_clear_line() -> None:
    with pytest.raises(UnknownClientError) as err:
        get_driver("kafka-java")
    assert isinstance(err.value, HighwaterError)
    message = str(err.value)
    assert "\n" not in message and "'kafka-java'" in message and "kafka-python" in message


# --- the typed events -----------------------------------------------------------------------


def test_events_as_the_history_records_them() -> None:
    rec = PolledRecord("t", 1, 7, "v", leader_epoch=3, replica=2)
    assert list(rec.to_event_value().items()) == [
        ("topic", "t"),
        ("partition", 1),
        ("offset", 7),
        ("value", "v"),
        ("leader_epoch", 3),
        ("replica", 2),
    ]
    for reason, f in [
        (PositionReason.ASSIGN, "assign"),
        (PositionReason.REBALANCE, "assign"),
        (PositionReason.RESET, "seek"),
        (PositionReason.TRUNCATION, "seek"),
    ]:
        change = PositionChange("t", 0, None, reason)
        assert change.f == f
        assert change.to_event_value() == {"topic": "t", "partition": 0, "offset": None, "reason": reason.value}
        assert type(change.to_event_value()["reason"]) is str
    assert SendOutcome.ok(5).offset == 5 and SendOutcome.ok(5).error is None


# --- the workers over a scripted driver -----------------------------------------------------


class ScriptedProducer:
    """Answers the n-th send with ``script[n % len(script)]``; asks the worker to stop after
    ``stop_after`` sends."""

    def __init__(self, script: list[SendOutcome | Exception], stop_after: int, stop: Callable[[], None]) -> None:
        self.script, self.stop_after, self.stop = script, stop_after, stop
        self.sent: list[tuple[str, int, str]] = []
        self.flushed = self.closed = False

    def send(self, topic: str, partition: int, value: str, on_outcome: Callable[[SendOutcome], None]) -> None:
        answer = self.script[len(self.sent) % len(self.script)]
        self.sent.append((topic, partition, value))
        if len(self.sent) >= self.stop_after:
            self.stop()
        if isinstance(answer, Exception):
            raise answer
        on_outcome(answer)

    def flush(self, timeout_s: float) -> None:
        self.flushed = True

    def close(self, timeout_s: float) -> None:
        self.closed = True


class ScriptedConsumer:
    """Returns the scripted poll answers in turn (an exception is raised), then empty polls."""

    def __init__(self, listener: ConsumerListener, polls: list[Any]) -> None:
        self.listener, self.polls = listener, list(polls)
        self.calls: list[tuple[Any, ...]] = []

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self.calls.append(("assign", list(partitions)))

    def subscribe(self, topics: Sequence[str]) -> None:
        self.calls.append(("subscribe", list(topics)))
        self.listener.on_position_change(PositionChange(topics[0], 0, None, PositionReason.REBALANCE))

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.calls.append(("seek", tp, offset))

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.calls.append(("seek_to_beginning", tp))

    def poll(self, timeout_ms: int) -> Sequence[PolledRecord] | TruncationSignal:
        answer = self.polls.pop(0) if self.polls else []
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer()
        return answer

    def commit(self, offsets: Any = None) -> None:
        self.calls.append(("commit", offsets))

    def close(self) -> None:
        self.calls.append(("close",))


class ScriptedDriver:
    name = "scripted"
    version = "0.1"

    def __init__(
        self,
        producer_script: list[SendOutcome | Exception] | None = None,
        stop_after: int = 0,
        polls: list[Any] | None = None,
    ) -> None:
        self.producer_script = producer_script or []
        self.stop_after = stop_after
        self.polls = polls or []
        self.stop: Callable[[], None] = lambda: None
        self.producers: list[ScriptedProducer] = []
        self.consumers: list[ScriptedConsumer] = []
        self.settings: list[Any] = []

    def producer(self, settings: ProducerSettings) -> ScriptedProducer:
        self.settings.append(settings)
        self.producers.append(ScriptedProducer(self.producer_script, self.stop_after, lambda: self.stop()))
        return self.producers[-1]

    def consumer(self, settings: ConsumerSettings, listener: ConsumerListener) -> ScriptedConsumer:
        self.settings.append(settings)
        self.consumers.append(ScriptedConsumer(listener, self.polls))
        return self.consumers[-1]


def _events(path: Path) -> list[dict[str, Any]]:
    return [{k: e[k] for k in ("process", "type", "f", "value", "error")} for e in read_history(path)]


def test_producer_worker_records_each_outcome_once_for_any_driver(tmp_path: Path) -> None:
    no_metadata = kerr.KafkaTimeoutError("no metadata")
    script: list[SendOutcome | Exception] = [
        SendOutcome.ok(10),
        SendOutcome.fail(no_metadata),
        SendOutcome.info("TimeoutException: expired"),
        RuntimeError("boom"),
    ]
    driver = ScriptedDriver(script, stop_after=8)
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        worker = ProducerWorker(
            "producer-0",
            ["127.0.0.1:1"],
            history,
            ProducerConfig("t", partitions=2, rate=1e6, value_size=16),
            client=driver,
        )
        driver.stop = worker.stopping.set
        worker.run()
        worker.close()
    producer = driver.producers[0]
    assert producer.flushed and producer.closed
    assert driver.settings[0] == ProducerSettings(
        bootstrap=["127.0.0.1:1"],
        client_id="producer-0",
        acks="all",
        idempotence=False,
        retries=3,
        request_timeout_ms=5000,
        delivery_timeout_ms=20000,
        max_in_flight=1,
    )
    values = [v for _, _, v in producer.sent]
    n = len(values)  # at least 8: a loop behind its rate hands over every send that is due at once
    assert n >= 8 and len(set(values)) == n and all(len(v) == 16 and v.startswith("producer-0-") for v in values)
    assert [p for _, p, _ in producer.sent] == [i % 2 for i in range(n)]
    assert worker.stats() == {"sent": n, "acked": len(range(0, n, 4))}
    events = _events(tmp_path / "h.jsonl")
    # each send's invoke, then its one outcome, as the script answered the n-th send
    by_value: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_value.setdefault(e["value"]["value"], []).append(e)
    assert list(by_value) == values
    assert [[e["type"] for e in by_value[v]] for v in values] == [
        ["invoke", t] for t in ("ok", "fail", "info", "info")
    ] * (n // 4) + [["invoke", t] for t in ("ok", "fail", "info", "info")][: n % 4]
    first_ok, fail, info, raised = (by_value[values[i]][1] for i in range(4))
    assert first_ok["value"] == {"topic": "t", "partition": 0, "key": None, "value": values[0], "offset": 10}
    assert fail["error"] == f"KafkaTimeoutError: {no_metadata}" and "offset" not in fail["value"]
    assert info["error"] == "TimeoutException: expired"
    assert raised["error"] == "RuntimeError: boom"


class BatchScriptedProducer(ScriptedProducer):
    """A ``ScriptedProducer`` that takes batches (``BatchProducer``), answering each send as
    the script says: the acknowledgements of a batch in one ``acked`` call, after the others."""

    def __init__(self, script: list[SendOutcome | Exception], gone_at: int = -1) -> None:
        super().__init__(script, 1 << 30, lambda: None)
        self.batches: list[int] = []
        self.gone_at = gone_at  # the send at which the "worker" dies: it and the rest end info

    def send_batch(self, topic: str, partitions: Sequence[int], values: Sequence[str], outcomes: Any) -> None:
        self.batches.append(len(values))
        indexes: list[int] = []
        offsets: list[int] = []
        for i, (partition, value) in enumerate(zip(partitions, values, strict=True)):
            if len(self.sent) == self.gone_at:
                gone = WorkerGone("killed by the fault f1 (client-kill)")
                for j in range(i, len(values)):
                    outcomes.ended(j, SendOutcome.info(gone))
                outcomes.acked(indexes, offsets)
                raise gone
            answer = self.script[len(self.sent) % len(self.script)]
            self.sent.append((topic, partition, value))
            if isinstance(answer, Exception):
                outcomes.ended(i, SendOutcome.info(answer))
            elif answer.outcome is Outcome.OK:
                indexes.append(i)
                offsets.append(int(answer.offset))  # type: ignore[arg-type]
            else:
                outcomes.ended(i, answer)
        outcomes.acked(indexes, offsets)


def test_a_batch_of_sends_records_what_single_sends_record(tmp_path: Path) -> None:
    """The producer workload's batch (``_send_many``, when sends are due faster than one at a
    time) writes the events single sends write: each send's invoke, then its one outcome."""
    script: list[SendOutcome | Exception] = [SendOutcome.ok(10), SendOutcome.fail("E: no"), RuntimeError("boom")]
    driver = ScriptedDriver()
    producer = BatchScriptedProducer(script)
    driver.producer = lambda settings: producer  # type: ignore[method-assign]
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        worker = ProducerWorker(
            "producer-0", ["127.0.0.1:1"], history, ProducerConfig("t", partitions=2), client=driver
        )
        worker._send_many(0, 6)
        worker._send_one(0, worker.value(6))  # a single send after it: the old path, unchanged
    assert producer.batches == [6] and len(producer.sent) == 7
    assert worker.stats() == {"sent": 7, "acked": 3}
    events = _events(tmp_path / "h.jsonl")
    by_value: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_value.setdefault(e["value"]["value"], []).append(e)
    assert list(by_value) == [worker.value(i) for i in range(7)]
    assert [[e["type"] for e in by_value[worker.value(i)]] for i in range(7)] == [
        ["invoke", "ok"],
        ["invoke", "fail"],
        ["invoke", "info"],
    ] * 2 + [["invoke", "ok"]]
    ok = by_value[worker.value(3)][1]
    assert ok["value"] == {"topic": "t", "partition": 1, "key": None, "value": worker.value(3), "offset": 10}
    assert by_value[worker.value(1)][1]["error"] == "E: no"
    assert by_value[worker.value(2)][1]["error"] == "RuntimeError: boom"


def test_a_batch_whose_worker_dies_ends_every_send_of_it_once(tmp_path: Path) -> None:
    """The worker dies within a batch: every send of it has one outcome (the ones after its end
    ``info``), and the workload records nothing more for them; without a restart it stops."""
    driver = ScriptedDriver()
    producer = BatchScriptedProducer([SendOutcome.ok(1)], gone_at=2)
    driver.producer = lambda settings: producer  # type: ignore[method-assign]
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        worker = ProducerWorker("producer-0", ["127.0.0.1:1"], history, ProducerConfig("t"), client=driver)
        worker.stopping.set()  # no restart comes: await_restart returns at once
        worker._send_many(0, 5)
    events = _events(tmp_path / "h.jsonl")
    completions = [e for e in events if e["type"] != "invoke"]
    assert [e["type"] for e in events[:5]] == ["invoke"] * 5
    assert sorted((e["value"]["value"], e["type"]) for e in completions) == sorted(
        [(worker.value(0), "ok"), (worker.value(1), "ok")] + [(worker.value(i), "info") for i in range(2, 5)]
    )
    assert all(
        e["error"] == "WorkerGone: killed by the fault f1 (client-kill)" for e in completions if e["type"] == "info"
    )


def test_send_batch_over_a_driver_without_batches_sends_one_by_one() -> None:
    """``send_batch`` over a plain ``ProducerDriver``: one ``send`` each, acknowledgements to
    ``acked``, a raise ``info``; the worker's end ends the rest ``info`` and is raised after."""
    got: list[tuple[int, Any]] = []

    class Outcomes:
        def acked(self, indexes: Sequence[int], offsets: Sequence[int]) -> None:
            got.extend(zip(indexes, offsets, strict=True))

        def ended(self, index: int, outcome: SendOutcome) -> None:
            got.append((index, outcome.outcome.value))

    script: list[SendOutcome | Exception] = [SendOutcome.ok(7), RuntimeError("boom"), SendOutcome.info("E: t")]
    plain = ScriptedProducer(script, 1 << 30, lambda: None)
    send_batch(plain, "t", [0, 1, 0], ["a", "b", "c"], Outcomes())
    assert got == [(0, 7), (1, "info"), (2, "info")] and [v for _, _, v in plain.sent] == ["a", "b", "c"]
    got.clear()
    dying = ScriptedProducer([SendOutcome.ok(1), WorkerGone("killed")], 1 << 30, lambda: None)
    with pytest.raises(WorkerGone):
        send_batch(dying, "t", [0, 0, 0, 0], ["a", "b", "c", "d"], Outcomes())
    assert got == [(0, 1), (1, "info"), (2, "info"), (3, "info")] and len(dying.sent) == 2
    with pytest.raises(ValueError):
        send_batch(plain, "t", [0], ["a", "b"], Outcomes())


def test_consumer_worker_records_polls_positions_and_truncation(tmp_path: Path) -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    worker: ConsumerWorker | None = None

    def reset_then_records() -> list[PolledRecord]:
        assert worker is not None  # the driver reports a move it made on its own, mid-poll
        worker.on_position_change(PositionChange("t", 1, 4, PositionReason.RESET))
        return [PolledRecord("t", 0, 0, "a", 1, 2), PolledRecord("t", 1, 4, "b", None, None)]

    polls = [
        reset_then_records,
        [],
        TruncationSignal({tp0: 3, tp1: None}, "LogTruncationError: diverged"),
        RuntimeError("network"),
    ]
    driver = ScriptedDriver(polls=polls)
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        worker = ConsumerWorker(
            "consumer-1",
            ["127.0.0.1:1"],
            history,
            ConsumerConfig("t", partitions=2, client_rack="rack-b"),
            client=driver,
        )
        worker.stopping.set()  # run() assigns; the polls are driven one by one below
        worker.run()
        assert [worker.poll_once() for _ in polls] == [2, 0, 0, 0]
        worker.close()
    settings = driver.settings[0]
    assert (settings.client_rack, settings.group_id, settings.auto_commit) == ("rack-b", None, False)
    consumer = driver.consumers[0]
    assert consumer.calls == [
        ("assign", [tp0, tp1]),
        ("seek", tp0, 0),
        ("seek", tp1, 0),
        ("seek", tp0, 3),
        ("seek_to_beginning", tp1),
        ("close",),
    ]
    assert worker.records_read == 2
    events = _events(tmp_path / "h.jsonl")
    assert [(e["type"], e["f"]) for e in events] == [
        ("ok", "assign"),
        ("ok", "assign"),
        ("ok", "seek"),
        ("ok", "poll"),
        ("fail", "poll"),
        ("ok", "seek"),
        ("ok", "seek"),
        ("info", "poll"),
    ]
    assert events[0]["value"] == {"topic": "t", "partition": 0, "offset": 0, "reason": "assign"}
    assert events[2]["value"] == {"topic": "t", "partition": 1, "offset": 4, "reason": "reset"}
    assert events[3]["value"]["records"] == [
        {"topic": "t", "partition": 0, "offset": 0, "value": "a", "leader_epoch": 1, "replica": 2},
        {"topic": "t", "partition": 1, "offset": 4, "value": "b", "leader_epoch": None, "replica": None},
    ]
    assert events[4]["value"] == {"divergent_offsets": {"t-0": 3, "t-1": None}}
    assert events[4]["error"] == "LogTruncationError: diverged"
    assert [e["value"] for e in events[5:7]] == [
        {"topic": "t", "partition": 0, "offset": 3, "reason": "truncation"},
        {"topic": "t", "partition": 1, "offset": None, "reason": "truncation"},
    ]
    assert events[7]["value"] is None and events[7]["error"] == "RuntimeError: network"


def test_group_consumer_asks_for_a_group_and_records_rebalances(tmp_path: Path) -> None:
    driver = ScriptedDriver()
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        worker = ConsumerWorker(
            "consumer-0", ["127.0.0.1:1"], history, ConsumerConfig("t", mode="subscribe", group_id="g"), client=driver
        )
        worker.stopping.set()
        worker.run()
    settings = driver.settings[0]
    # the worker commits itself, after each poll, so that every commit is in the history
    assert (settings.group_id, settings.auto_commit) == ("g", False)
    assert driver.consumers[0].calls == [("subscribe", ["t"])]
    assert _events(tmp_path / "h.jsonl") == [
        {
            "process": "consumer-0",
            "type": "ok",
            "f": "assign",
            "error": None,
            "value": {"topic": "t", "partition": 0, "offset": None, "reason": "rebalance"},
        }
    ]


def test_group_consumer_commits_after_each_poll_and_records_it(tmp_path: Path) -> None:
    recs = [PolledRecord("t", 0, 4, "a", 0, 1), PolledRecord("t", 0, 5, "b", 0, 1), PolledRecord("t", 1, 9, "c", 0, 1)]
    driver = ScriptedDriver(polls=[recs, RuntimeError("rebalancing"), [PolledRecord("t", 1, 10, "d", 0, 1)]])
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        worker = ConsumerWorker(
            "consumer-0",
            ["127.0.0.1:1"],
            history,
            ConsumerConfig("t", 2, mode="subscribe", group_id="g"),
            client=driver,
        )
        for _ in range(3):
            worker.poll_once()
    commits = [c for c in driver.consumers[0].calls if c[0] == "commit"]
    assert commits == [
        ("commit", {TopicPartition("t", 0): 6, TopicPartition("t", 1): 10}),
        ("commit", {TopicPartition("t", 1): 11}),
    ]
    got = [(e["type"], e["value"]) for e in _events(tmp_path / "h.jsonl") if e["f"] == "commit"]
    assert got == [
        ("invoke", {"group": "g", "topic": "t", "partition": 0, "offset": 6}),
        ("invoke", {"group": "g", "topic": "t", "partition": 1, "offset": 10}),
        ("ok", {"group": "g", "topic": "t", "partition": 0, "offset": 6}),
        ("ok", {"group": "g", "topic": "t", "partition": 1, "offset": 10}),
        ("invoke", {"group": "g", "topic": "t", "partition": 1, "offset": 11}),
        ("ok", {"group": "g", "topic": "t", "partition": 1, "offset": 11}),
    ]


def test_workers_resolve_client_names_through_the_registry(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h.jsonl") as history, pytest.raises(UnknownClientError):
        ProducerWorker("producer-0", ["127.0.0.1:1"], history, ProducerConfig("t"), client="nope")


# --- kafka-python's quirks stay in its driver -----------------------------------------------


def test_kafka_python_send_errors_are_classified_honestly() -> None:
    rejected = kerr.MessageSizeTooLargeError("too big")
    assert classify_send_error(rejected, retries=0) == SendOutcome.fail(rejected)
    assert classify_send_error(rejected, retries=3) == SendOutcome.info(rejected)  # an earlier attempt may have written
    timeout = kerr.KafkaTimeoutError("expired")
    assert classify_send_error(timeout, retries=0) == SendOutcome.info(timeout)


def test_fetch_sources_name_the_broker_of_the_covering_fetch() -> None:
    s = FetchSources()
    tp = ("t", 0)
    assert s.source_of(tp, 5) is None
    s.note(tp, 0, 1)
    s.note(tp, 10, 3)
    assert [s.source_of(tp, o) for o in (0, 9, 10, 50)] == [1, 1, 3, 3]
    s.note(tp, 45, 2)  # a fetch noted after lookups: they see it (the sorted offsets are redone)
    assert [s.source_of(tp, o) for o in (44, 45, 50)] == [3, 2, 2]
    s.note(tp, 45, 3)
    for o in range(11, 11 + FetchSources.KEEP):
        s.note(tp, o, 2)
    s.forget_below(tp, 40)
    assert s.source_of(tp, 40) == 2 and s.source_of(tp, 100) == 2
    assert s.source_of(tp, 5) is None  # forgotten: below every kept fetch offset


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_kafka_python_is_imported_only_by_its_driver_and_the_observation() -> None:
    """The workers use the driver protocol; kafka-python's client classes and patches live in
    ``clients/python/kafka_python.py`` (the worker side). The final read observes with its protocol classes."""
    allowed = {"clients/python/kafka_python.py", "clients/python/highwater_worker.py", "harness/workload/final_read.py"}
    files = sorted(
        [
            *(ROOT / "harness/clients").rglob("*.py"),
            *(ROOT / "harness/workload").rglob("*.py"),
            *(ROOT / "clients/python").rglob("*.py"),
        ]
    )
    importing = {str(f.relative_to(ROOT)) for f in files if "kafka" in _imports(f)}
    assert importing <= allowed and "clients/python/kafka_python.py" in importing


@pytest.mark.parametrize(
    ("idempotence", "asked", "linger", "in_flight"),
    [(False, None, 2, 1), (True, None, 0, 5), (True, 2, 100, 2), (False, 1, 20, 1)],
)
def test_the_producer_hands_its_driver_the_run_s_linger_and_requests_in_flight(
    tmp_path: Path, idempotence: bool, asked: int | None, linger: int, in_flight: int
) -> None:
    """One request in flight without idempotence unless asked; five with it; a hunt's draw wins."""
    driver = ScriptedDriver([], stop_after=0)
    made: list[Any] = []
    driver.producer = lambda settings: made.append(settings) or BatchScriptedProducer([])  # type: ignore[method-assign]
    config = ProducerConfig("t", idempotence=idempotence, linger_ms=linger, max_in_flight=asked)
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        ProducerWorker("producer-0", ["127.0.0.1:1"], history, config, client=driver)
    assert (made[0].linger_ms, made[0].max_in_flight, made[0].idempotence) == (linger, in_flight, idempotence)
