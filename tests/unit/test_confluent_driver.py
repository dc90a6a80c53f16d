"""The confluent-kafka driver without a cluster: settings reach librdkafka (which validates its
configuration when a client is made), delivery errors are classified conservatively, and the
librdkafka log lines that carry the serving broker, resets and KIP-320 seeks are read right."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka import KafkaError

from highwater.clients.python.confluent import (
    ConfluentConsumer,
    ConfluentProducer,
    FetchSources,
    LibrdkafkaLog,
    classify_delivery_error,
    consumer_config,
    error_text,
    producer_config,
)
from highwater.harness import client_common
from highwater.harness.clients import (
    ConsumerSettings,
    Outcome,
    PositionChange,
    PositionReason,
    ProducerSettings,
    TopicPartition,
    TruncationSignal,
    UnknownClientError,
    get_driver,
)
from highwater.harness.waiting import wait_until

NOWHERE = ["127.0.0.1:1"]  # nothing listens: clients are made and closed, never connected


class Changes:
    def __init__(self) -> None:
        self.seen: list[PositionChange] = []

    def on_position_change(self, change: PositionChange) -> None:
        self.seen.append(change)


def test_driver_names_the_installed_library() -> None:
    driver = get_driver("confluent-kafka")
    assert (driver.name, driver.version) == ("confluent-kafka", ck.__version__)
    assert get_driver(f"confluent-kafka=={ck.__version__}").version == ck.__version__


def test_two_versions_are_two_workers_not_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each version's workers run on the interpreter of its own virtual environment, so two
    versions of the extension module live side by side in one run."""
    from highwater.harness.clients import python as pyclients

    monkeypatch.setattr(pyclients, "ensure_venv", lambda dist, version, progress=None: tmp_path / version / "python")
    older, newer = get_driver("confluent-kafka==2.13.0"), get_driver("confluent-kafka==2.13.2")
    assert (older.version, newer.version) == ("2.13.0", "2.13.2")
    assert older.launcher.python != newer.launcher.python  # type: ignore[attr-defined]


def test_the_installed_version_is_the_environments() -> None:
    assert client_common.installed_version("confluent-kafka") == ck.__version__
    assert client_common.installed_version("no-such-distribution-here") is None


def test_every_producer_setting_reaches_librdkafka() -> None:
    s = ProducerSettings(
        NOWHERE, "p", acks=1, idempotence=False, retries=0, request_timeout_ms=1234, delivery_timeout_ms=9876
    )
    conf = producer_config(s)
    assert conf == {
        "bootstrap.servers": "127.0.0.1:1",
        "client.id": "p",
        "acks": 1,
        "enable.idempotence": False,
        "retries": 0,
        "request.timeout.ms": 1234,
        "socket.timeout.ms": 1234,
        "delivery.timeout.ms": 9876,
        "linger.ms": s.linger_ms,
        "max.in.flight.requests.per.connection": s.max_in_flight,
    }
    assert producer_config(ProducerSettings(NOWHERE, "p", idempotence=True, max_in_flight=5))["acks"] == "all"
    # librdkafka accepts them (it refuses unknown keys and bad values when the client is made)
    for settings in (s, ProducerSettings(NOWHERE, "p", idempotence=True, retries=3, max_in_flight=5)):
        producer = ConfluentProducer(ck, settings)
        producer.close(0)
        assert not producer._poller.is_alive()


def test_every_consumer_setting_reaches_librdkafka() -> None:
    s = ConsumerSettings(NOWHERE, "c", client_rack="rack-b", group_id="g", auto_commit=True, auto_offset_reset="none")
    conf = consumer_config(s)
    assert conf["client.rack"] == "rack-b" and conf["group.id"] == "g" and conf["enable.auto.commit"] is True
    assert conf["auto.offset.reset"] == "error"  # Kafka's "none"
    assert conf["fetch.wait.max.ms"] == s.fetch_max_wait_ms
    assert conf["socket.timeout.ms"] == s.request_timeout_ms
    assert conf["topic.metadata.refresh.interval.ms"] == s.metadata_max_age_ms
    assert set(conf["debug"].split(",")) == {"fetch", "topic"}
    # assign mode: a throwaway group of its own, never auto-committed
    a, b = (consumer_config(ConsumerSettings(NOWHERE, "c", auto_commit=True)) for _ in range(2))
    assert a["group.id"] != b["group.id"] and a["enable.auto.commit"] is False and "client.rack" not in a
    consumer = ConfluentConsumer(ck, s, Changes())
    consumer.commit()  # nothing consumed: nothing to commit, no error
    consumer.close()
    consumer.close()  # twice is harmless


def test_delivery_errors_fail_only_when_the_write_provably_did_not_happen() -> None:
    size = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    assert classify_delivery_error(size.name(), True, "e").outcome is Outcome.FAIL
    assert classify_delivery_error(size.name(), False, "e").outcome is Outcome.INFO  # an earlier try may have landed
    for code in (
        KafkaError._MSG_TIMED_OUT,
        KafkaError._PURGE_INFLIGHT,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,
    ):
        assert classify_delivery_error(KafkaError(code).name(), True, "e").outcome is Outcome.INFO, code
    assert classify_delivery_error(KafkaError(KafkaError._PURGE_QUEUE).name(), True, "e").outcome is Outcome.FAIL
    assert error_text(size).startswith("KafkaError: MSG_SIZE_TOO_LARGE: ")


def test_fetch_lines_name_the_serving_broker() -> None:
    sources = FetchSources()
    log = LibrdkafkaLog(Changes(), sources)
    tp = TopicPartition("t-1", 0)
    fetch = "[thrd:127.0.0.1:29093/2]: 127.0.0.1:29093/2: Fetch topic t-1 [0] at offset {} (leader epoch 3, current leader epoch 3, v4)"
    assert sources.source_of(tp, 0) is None  # no fetch seen: unknown, never guessed
    log.log(10, "%s [%s] %s", "FETCH", "rdkafka#consumer-1", fetch.format(0))
    log.line(fetch.format(10).replace("29093/2", "29094/3"))
    assert [sources.source_of(tp, o) for o in (0, 9, 10, 55)] == [2, 2, 3, 3]
    log.line(fetch.format(5))  # a fetch back at 5 (a seek back): what was fetched above it is gone
    assert [sources.source_of(tp, o) for o in (4, 5, 12)] == [2, 2, 2]
    assert sources.source_of(TopicPartition("t-1", 1), 5) is None


# librdkafka's debug lines as its format strings make them (src/rdkafka_partition.c,
# rdkafka_offset.c, rdkafka_fetcher.c); "[thrd:...]: " and a broker's "host:port/id: " lead them
B1 = "127.0.0.1:29092/1"
B2 = "127.0.0.1:29093/2"


def _pos(offset: int | str, epoch: int) -> str:  # rd_kafka_fetch_pos2str
    return f"offset {offset} (leader epoch {epoch})"


def start_fetch(topic: str, p: int, state: str, offset: int | str, version: int) -> str:
    return f"[thrd:main]: Start fetch for {topic} [{p}] in state {state} at {_pos(offset, -1)} (v{version})"


def stop_fetch(topic: str, p: int, state: str, version: int) -> str:
    return f"[thrd:main]: Stopping fetch for {topic} [{p}] in state {state} (v{version})"


def offset_reset(topic: str, p: int, at: int | str, broker: int, to: str, reason: str, err: str) -> str:
    """``to``: ``offset BEGINNING (leader epoch -1)`` (to be looked up) or ``cached BEGINNING
    offset offset N (leader epoch -1)``."""
    return f"[thrd:main]: {topic} [{p}]: offset reset (at {_pos(at, -1)}, broker {broker}) to {to}: {reason}: {err}"


def query_timer(topic: str, p: int, reason: str) -> str:  # rd_kafka_toppar_offset_retry
    return f"[thrd:main]: {topic} [{p}]: {reason}: (re)starting offset query timer for {_pos('BEGINNING', -1)}"


def timed_query(topic: str, p: int, state: str) -> str:
    return f"[thrd:main]: Topic {topic} [{p}]: timed offset query for {_pos('BEGINNING', -1)} in state {state}"


def querying(topic: str, p: int, opv: int) -> str:
    return f"[thrd:main]: {B1}: Partition {topic} [{p}]: querying for logical offset BEGINNING (opv {opv})"


def state(topic: str, p: int, old: str, new: str) -> str:
    return f"[thrd:main]: Partition {topic} [{p}] changed fetch state {old} -> {new}"


def offset_reply(topic: str, p: int, version: int, current: int) -> str:
    return f"[thrd:main]: {B1}: Offset reply for topic {topic} [{p}] (v{version} vs v{current})"


def outdated_reply(topic: str, p: int, version: int) -> str:
    return f"[thrd:main]: {B1}: Offset reply error for topic {topic} [{p}] (v{version}, Local: Outdated): "


def looked_up(topic: str, p: int, offset: int, epoch: int) -> str:
    return (
        f"[thrd:main]: Offset BEGINNING request for {topic} [{p}] returned offset {offset} ({offset}) "
        f"leader epoch {epoch}"
    )


def start_fetching(topic: str, p: int, offset: int, epoch: int) -> str:
    return f"[thrd:main]: Partition {topic} [{p}] start fetching at {_pos(offset, epoch)}"


def fetch_decide(topic: str, p: int, version: int, was: int, at: str, was_at: str) -> str:
    return (
        f"[thrd:{B2}]: Topic {topic} [{p}]: fetch decide: updating to version {version} (was {was}) "
        f"at {at} (was {was_at})"
    )


def fetch(topic: str, p: int, offset: int, version: int) -> str:
    return (
        f"[thrd:{B2}]: {B2}: Fetch topic {topic} [{p}] at offset {offset} "
        f"(leader epoch 0, current leader epoch 0, v{version})"
    )


def seek(topic: str, p: int, offset: int | str, epoch: int, version: int) -> str:
    return f"[thrd:main]: Seek {topic} [{p}] to {_pos(offset, epoch)} in state active (v{version})"


def feed(lines: list[str]) -> list[PositionChange]:
    changes = Changes()
    log = LibrdkafkaLog(changes, FetchSources())
    for line in lines:
        log.line(line)
    return changes.seen


def test_resets_and_library_seeks_are_position_changes() -> None:
    no_offset = "no previously committed offset available"
    out_of_range = "fetch failed due to requested offset not available on the broker"
    assert feed(
        [
            # a missing committed offset: auto.offset.reset looks BEGINNING up, the partition
            # turns active there
            start_fetch("t", 0, "stopped", "INVALID", 3),
            offset_reset("t", 0, "INVALID", -1, _pos("BEGINNING", -1), no_offset, "Local: No offset stored"),
            state("t", 0, "stopped", "offset-query"),
            querying("t", 0, 3),
            state("t", 0, "offset-query", "offset-wait"),
            offset_reply("t", 0, 3, 3),
            looked_up("t", 0, 7, 2),
            state("t", 0, "offset-wait", "active"),
            start_fetching("t", 0, 7, 2),
            fetch_decide("t", 0, 3, 0, _pos(7, 2), _pos("INVALID", -1)),
            fetch("t", 0, 7, 3),
            # out of range while active: the log start cached from the last Fetch, taken up by
            # the broker thread's next decision (no state change, no "start fetching" line)
            offset_reset(
                "t", 1, 90, 2, "cached BEGINNING offset " + _pos(4, -1), out_of_range, "Broker: Offset out of range"
            ),
            fetch_decide("t", 1, 6, 6, _pos(4, -1), _pos("INVALID", -1)),
            fetch("t", 1, 4, 6),
            # KIP-320: librdkafka's own seek to the divergence point carries the end offset's epoch
            seek("t", 2, 40, 5, 6),
            # the driver's own seeks carry no epoch: recorded by the workload, not here
            seek("t", 2, 0, -1, 7),
            seek("t", 2, "BEGINNING", -1, 8),
        ]
    ) == [
        PositionChange("t", 0, 7, PositionReason.RESET),
        PositionChange("t", 1, 4, PositionReason.RESET),
        PositionChange("t", 2, 40, PositionReason.TRUNCATION),
    ]


def test_an_out_of_range_reset_is_reported_whichever_thread_logs_first() -> None:
    """An out-of-range Fetch invalidates the fetch position in the broker thread and hands the
    reset to the main thread: the broker thread may restart at the old start first."""
    reason = "fetch failed due to requested offset not available on the broker"
    to_cached = "cached BEGINNING offset " + _pos(4, -1)
    warning = offset_reset("t", 0, 90, 2, to_cached, reason, "Broker: Offset out of range")
    # the old start was elsewhere: a second decision takes the reset up
    assert feed(
        [
            fetch_decide("t", 0, 6, 6, _pos(0, 0), _pos("INVALID", -1)),
            warning,
            fetch_decide("t", 0, 6, 6, _pos(4, -1), _pos(0, 0)),
            fetch("t", 0, 4, 6),
        ]
    ) == [PositionChange("t", 0, 4, PositionReason.RESET)]
    # the old start is the log start: no second decision, the next Fetch is there
    assert feed([fetch_decide("t", 0, 6, 6, _pos(4, 0), _pos("INVALID", -1)), warning, fetch("t", 0, 4, 6)]) == [
        PositionChange("t", 0, 4, PositionReason.RESET)
    ]
    # librdkafka logs this reset as a warning: it counts through ``log`` as through ``line``
    changes = Changes()
    log = LibrdkafkaLog(changes, FetchSources())
    log.log(30, "%s [%s] %s", "OFFSET", "rdkafka#consumer-1", warning)
    log.log(10, "%s [%s] %s", "FETCHDEC", "rdkafka#consumer-1", fetch_decide("t", 0, 6, 6, _pos(4, -1), _pos(90, 0)))
    assert changes.seen == [PositionChange("t", 0, 4, PositionReason.RESET)]


def test_seek_to_beginning_is_where_the_fetcher_restarts() -> None:
    """librdkafka resolves ``seek_to_beginning`` lazily: from the log start cached by the last
    Fetch (the partition stays active) or by a lookup (it waits for the reply)."""
    update = ("update", "Success")
    assert feed(
        [
            seek("t", 0, "BEGINNING", -1, 8),
            offset_reset("t", 0, "BEGINNING", -1, "cached BEGINNING offset " + _pos(4, -1), *update),
            fetch_decide("t", 0, 8, 7, _pos(4, -1), _pos(30, 0)),
            fetch("t", 0, 4, 8),
        ]
    ) == [PositionChange("t", 0, 4, PositionReason.RESET)]
    assert feed(
        [
            seek("t", 0, "BEGINNING", -1, 8),
            offset_reset("t", 0, "BEGINNING", -1, _pos("BEGINNING", -1), *update),
            state("t", 0, "active", "offset-query"),
            querying("t", 0, 8),
            state("t", 0, "offset-query", "offset-wait"),
            offset_reply("t", 0, 8, 8),
            looked_up("t", 0, 4, 0),
            state("t", 0, "offset-wait", "active"),
            start_fetching("t", 0, 4, 0),
            fetch_decide("t", 0, 8, 7, _pos(4, 0), _pos(30, 0)),
            fetch("t", 0, 4, 8),
        ]
    ) == [PositionChange("t", 0, 4, PositionReason.RESET)]


def test_a_lookup_the_fetcher_does_not_take_up_is_no_reset(caplog: pytest.LogCaptureFixture) -> None:
    """hunt night-2h-b, group-2317 (Kafka 4.2.2, confluent-kafka 2.16.1, KIP-848): consumer-1
    read p0 on from 165 after a ``reset`` to 0 it reported at 4.209 s. p0 was looking BEGINNING
    up when KIP-848's incremental revoke of p1 and p2 paused (v4) and resumed (v5) every assigned
    partition; the resume asked again, the first reply came back outdated and re-armed the
    offset-query timer (500 ms), which the second reply did not stop: it fired in the active
    state and its lookup, the same offset 0 at the same leader epoch, left the fetcher where it
    was (``rd_kafka_toppar_fetch_decide`` restarts only on a new version or a new start)."""
    caplog.set_level(logging.INFO, logger=LibrdkafkaLog.__module__)
    topic = "hunt-2317"
    lines = [
        start_fetch(topic, 0, "stopped", "INVALID", 3),
        offset_reset(
            topic,
            0,
            "INVALID",
            -1,
            _pos("BEGINNING", -1),
            "no previously committed offset available",
            "Local: No offset stored",
        ),
        query_timer(topic, 0, "backoff"),
        state(topic, 0, "stopped", "offset-query"),
        timed_query(topic, 0, "offset-query"),
        querying(topic, 0, 3),
        state(topic, 0, "offset-query", "offset-wait"),
        # the incremental revoke's pause (v4) and resume (v5): the resume looks up again
        offset_reset(topic, 0, "INVALID", -1, _pos("BEGINNING", -1), "update", "Success"),
        state(topic, 0, "offset-wait", "offset-query"),
        querying(topic, 0, 5),
        state(topic, 0, "offset-query", "offset-wait"),
        offset_reply(topic, 0, 3, 5),
        outdated_reply(topic, 0, 3),
        query_timer(topic, 0, "outdated offset response"),
        state(topic, 0, "offset-wait", "offset-query"),
        offset_reply(topic, 0, 5, 5),
        looked_up(topic, 0, 0, 0),
        state(topic, 0, "offset-query", "active"),
        start_fetching(topic, 0, 0, 0),  # 3.636 s: the reset, taken up
        fetch_decide(topic, 0, 5, 0, _pos(0, 0), _pos("INVALID", -1)),
        fetch(topic, 0, 0, 5),
        fetch(topic, 0, 129, 5),
        fetch(topic, 0, 165, 5),
        # ~500 ms after the outdated reply: the timer nobody stopped
        timed_query(topic, 0, "active"),
        querying(topic, 0, 5),
        state(topic, 0, "active", "offset-wait"),
        offset_reply(topic, 0, 5, 5),
        looked_up(topic, 0, 0, 0),  # 4.209 s: reported as a reset before
        state(topic, 0, "offset-wait", "active"),
        start_fetching(topic, 0, 165, 0),
        fetch(topic, 0, 165, 5),
        fetch(topic, 0, 181, 5),
    ]
    assert feed(lines) == [PositionChange(topic, 0, 0, PositionReason.RESET)]
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert sum(looked_up(topic, 0, 0, 0) in m for m in logged) == 2  # the evidence stays in the log
    assert any(start_fetching(topic, 0, 165, 0) in m for m in logged)
    assert any("looked-up offset 0 not taken up (the fetcher goes on at 165)" in m for m in logged)
    assert not any("Fetch topic" in m for m in logged)  # never the per-Fetch lines


def test_a_lookup_without_a_decision_ends_at_the_second_fetch_elsewhere() -> None:
    """A reply applied to a partition already active (two lookups in flight) turns nothing
    active: the broker thread's decision or its Fetches say. One Fetch at the old offset may
    come between the lookup and the decision that takes it up (the lookup landed between the
    broker thread's decision and the Fetch it was building), a second one may not."""
    taken_up = [looked_up("t", 0, 0, 1), fetch("t", 0, 165, 5), fetch_decide("t", 0, 5, 5, _pos(0, 1), _pos(181, 0))]
    assert feed(taken_up) == [PositionChange("t", 0, 0, PositionReason.RESET)]
    left = [looked_up("t", 0, 0, 0), fetch("t", 0, 165, 5), fetch("t", 0, 181, 5)]
    # a later restart at 0 (pause and resume with the stale start) has no lookup of its own
    assert feed([*left, fetch_decide("t", 0, 6, 5, _pos(0, 0), _pos(197, 0))]) == []


def test_a_lookup_a_seek_or_a_stop_overtakes_is_no_reset() -> None:
    for overtaking in (
        seek("t", 0, 0, -1, 6),
        start_fetch("t", 0, "active", 0, 6),
        stop_fetch("t", 0, "active", 6),
    ):
        assert feed([looked_up("t", 0, 0, 0), overtaking, fetch_decide("t", 0, 6, 5, _pos(0, -1), _pos(9, 0))]) == []


def test_the_evidence_reaches_the_workers_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker configures no logging: its stderr is its log, where Python's last-resort
    handler writes warnings only; the consumer gives the driver's logger a handler at INFO."""
    driver_log = logging.getLogger(LibrdkafkaLog.__module__)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(driver_log, "handlers", [])
    level = driver_log.level
    try:
        consumer = ConfluentConsumer(ck, ConsumerSettings(NOWHERE, "c"), Changes())
        try:
            consumer.log.line(looked_up("t", 0, 0, 0))
            consumer.log.line(fetch("t", 0, 165, 5))
        finally:
            consumer.close()
    finally:
        driver_log.setLevel(level)  # (setLevel, not an attribute: it clears the loggers' caches)
    err = capsys.readouterr().err
    assert f"INFO {LibrdkafkaLog.__module__}: librdkafka: {looked_up('t', 0, 0, 0)}" in err
    assert "Fetch topic" not in err


class _ErrorMessage:
    """What ``consume()`` returns for a partition error (a real ``KafkaError`` inside)."""

    def __init__(self, error: KafkaError) -> None:
        self._error = error

    def error(self) -> KafkaError:
        return self._error

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return 3


def test_truncation_without_a_reset_policy_is_a_signal() -> None:
    consumer = ConfluentConsumer(ck, ConsumerSettings(NOWHERE, "c", auto_offset_reset="none"), Changes())
    try:
        reason = (
            "Partition log truncation detected at offset 120 (leader epoch 4): broker end offset is 96 "
            "(offset leader epoch 3). Reset to INVALID.: Local: Partition log truncation detected (broker 2)"
        )
        error = KafkaError(KafkaError._AUTO_OFFSET_RESET, reason)
        signal = consumer._truncation(_ErrorMessage(error), error)
        assert isinstance(signal, TruncationSignal)
        assert dict(signal.divergent) == {TopicPartition("t", 3): 96}
        other = KafkaError(KafkaError._AUTO_OFFSET_RESET, "no previously committed offset available")
        assert consumer._truncation(_ErrorMessage(other), other) is None
    finally:
        consumer.close()


def test_close_leaves_no_thread_of_ours() -> None:
    before = set(threading.enumerate())
    producer = ConfluentProducer(ck, ProducerSettings(NOWHERE, "p"))
    outcomes = []
    producer.send("t", 0, "v", outcomes.append)  # never delivered: nothing listens
    producer.close(0)
    assert set(threading.enumerate()) <= before
    # the purge at close gives the queued send its outcome; with retries a queued message may be
    # the retry of an attempt that was sent, so only ``info`` is honest
    assert [o.outcome for o in outcomes] == [Outcome.INFO]


class _Record:
    """A record as ``consume()`` returns it."""

    def __init__(self, partition: int, offset: int) -> None:
        self._p, self._o = partition, offset

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes:
        return f"v{self._o}".encode()

    def leader_epoch(self) -> int:
        return 2


class _Batches:
    """``consume()`` answering scripted batches, then nothing."""

    def __init__(self, *batches: list[object]) -> None:
        self.batches = list(batches)

    def consume(self, num_messages: int, timeout: float) -> list[object]:
        return self.batches.pop(0) if self.batches else []

    def close(self) -> None:
        return None


def test_no_consumed_record_goes_unrecorded_around_a_truncation() -> None:
    consumer = ConfluentConsumer(ck, ConsumerSettings(NOWHERE, "c", auto_offset_reset="none"), Changes())
    real = consumer._consumer
    try:
        truncated = KafkaError(
            KafkaError._AUTO_OFFSET_RESET,
            "Partition log truncation detected at offset 9 (leader epoch 2): broker end offset is 7 (offset leader epoch 1)",
        )
        transport = KafkaError(KafkaError._TRANSPORT, "broker down")
        consumer._consumer = _Batches(
            [_Record(0, 8), _ErrorMessage(transport), _ErrorMessage(truncated), _Record(1, 3)],
            [_ErrorMessage(KafkaError(KafkaError._FATAL, "fenced", fatal=True))],
        )
        first = consumer.poll(10)
        assert isinstance(first, list) and [(r.partition, r.offset, r.value) for r in first] == [
            (0, 8, "v8"),
            (1, 3, "v3"),  # after the error in the batch: still recorded
        ]
        assert all(r.leader_epoch == 2 and r.replica is None for r in first)
        second = consumer.poll(10)  # the truncation, after the records, as it happened
        assert isinstance(second, TruncationSignal) and dict(second.divergent) == {TopicPartition("t", 3): 7}
        with pytest.raises(ck.KafkaException):
            consumer.poll(10)  # a fatal error is a failed poll; the transport error was not
        assert consumer.poll(10) == []
    finally:
        consumer._consumer = real
        consumer.close()


def test_only_the_driver_knows_confluent_kafka() -> None:
    """Every import and quirk of confluent-kafka stays in its driver module (which imports it by
    name through ``client_common.import_library``, inside the worker)."""
    root = Path(__file__).resolve().parents[2]
    offenders = [
        str(f.relative_to(root))
        for package in ("core", "harness", "highwater", "faults", "reports", "suites")
        for f in sorted((root / package).rglob("*.py"))
        if "import confluent_kafka" in f.read_text(encoding="utf-8")
        or "from confluent_kafka" in f.read_text(encoding="utf-8")
    ]
    assert offenders == []
    assert '"confluent_kafka"' in (root / "clients/python/confluent.py").read_text(encoding="utf-8")


def test_a_version_without_leader_epochs_is_refused_in_one_line() -> None:
    with pytest.raises(UnknownClientError) as err:
        get_driver("confluent-kafka==1.9.2")  # refused before anything is installed
    assert "too old" in str(err.value) and "2.1.0" in str(err.value) and "\n" not in str(err.value)


def test_a_fatal_error_raised_by_poll_does_not_end_the_delivery_thread() -> None:
    """librdkafka raises a fatal error (INVALID_TXN_STATE from EndTxn, seen at a transactional
    producer's close after its coordinator was cut off) from ``poll`` once; the delivery thread
    must go on serving reports, or every later send would never get its outcome."""
    producer = ConfluentProducer(ck, ProducerSettings(NOWHERE, "p"))
    real = producer._producer
    polls: list[float] = []

    class RaisesOnce:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def poll(self, timeout: float) -> int:
            polls.append(timeout)
            if len(polls) == 1:
                raise ck.KafkaException(ck.KafkaError(ck.KafkaError._FATAL, "Failed to end transaction"))
            return int(real.poll(timeout))

    producer._producer = RaisesOnce()  # type: ignore[assignment]
    wait_until(lambda: len(polls) >= 3, 10, "the delivery thread polls on after the fatal error")
    assert producer._poller.is_alive()
    producer._producer = real
    producer.close(0)
    assert not producer._poller.is_alive()


def test_sources_of_a_run_of_offsets_agree_with_one_lookup_each() -> None:
    """``sources_of`` (one walk per partition's records) gives what ``source_of`` gives for
    each offset: before any fetch, inside a fetch, at and across fetch boundaries, past the last."""
    sources = FetchSources()
    tp = TopicPartition("t", 0)
    offsets = [0, 1, 4, 5, 6, 9, 10, 11, 30, 31, 99]
    assert sources.sources_of(tp, offsets) == [None] * len(offsets)
    for fetch_offset, node in ((2, 1), (5, 2), (6, 3), (10, 1), (31, 2)):
        sources.note(tp, fetch_offset, node)
    expected = [sources.source_of(tp, o) for o in offsets]
    assert expected == [None, None, 1, 2, 3, 3, 1, 1, 1, 2, 2]
    assert sources.sources_of(tp, offsets) == expected
    assert sources.sources_of(tp, [7, 8]) == [3, 3]
    assert sources.sources_of(tp, []) == []
    # out of order (a seek back inside one batch): each offset still gets its own fetch's broker
    back = [11, 12, 3, 4, 0, 31, 5]
    assert sources.sources_of(tp, back) == [sources.source_of(tp, o) for o in back] == [1, 1, 1, 1, None, 2, 2]


class _Recording:
    """A real librdkafka consumer whose metadata and assign calls are noted, in order."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls: list[tuple[str, Any]] = []

    def list_topics(self, topic: str, timeout: float) -> Any:
        self.calls.append(("list_topics", topic))
        assert 0 < timeout <= 0.2, "metadata is fetched within the poll's own timeout"
        return self.real.list_topics(topic, timeout=timeout)

    def assign(self, partitions: list[Any]) -> None:
        self.calls.append(("assign", sorted((p.topic, p.partition, p.offset) for p in partitions)))
        self.real.assign(partitions)

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        return list(self.real.consume(num_messages=num_messages, timeout=timeout))


def test_an_assignment_starts_after_its_topics_metadata_even_when_none_comes() -> None:
    """``assign`` waits for the topics' leaders (else librdkafka looks the start offsets up only
    at its 500 ms retry timer), within the first poll's timeout; with no broker answering it
    starts anyway, with the offsets the seeks chose."""
    consumer = ConfluentConsumer(ck, ConsumerSettings(NOWHERE, "c"), Changes())
    recording = _Recording(consumer._consumer)
    consumer._consumer = recording
    try:
        consumer.assign([TopicPartition("b", 0), TopicPartition("a", 1), TopicPartition("a", 0)])
        consumer.seek(TopicPartition("a", 1), 42)
        assert consumer.poll(200) == []
        assert [c[0] for c in recording.calls] == ["list_topics", "list_topics", "assign"]
        assert [c[1] for c in recording.calls[:2]] == ["a", "b"]
        assert recording.calls[2][1] == [("a", 0, ck.OFFSET_STORED), ("a", 1, 42), ("b", 0, ck.OFFSET_STORED)]
        assert {(p.topic, p.partition) for p in recording.real.assignment()} == {("a", 0), ("a", 1), ("b", 0)}
        consumer.poll(10)
        assert len(recording.calls) == 3, "the metadata is fetched once, when the assignment starts"
    finally:
        consumer._consumer = recording.real
        consumer.close()


def test_stated_sends_give_each_record_one_plain_outcome() -> None:
    """The worker's path (``send_stated``): each record's outcome is one entry of the list given
    to ``state_outcomes``, ``(id, offset)`` when acknowledged, else ``[id, outcome, None,
    error]`` with the error as text; a record refused before queueing (too large) fails at
    once, one that raised otherwise (a value UTF-8 cannot carry) is ``info`` as the worker says
    it, the queued ones end at close (purged: ``info``, as ``send`` says them)."""
    producer = ConfluentProducer(ck, ProducerSettings(NOWHERE, "p"))
    stated: list[Any] = []
    served: list[int] = []
    producer.state_outcomes(stated, lambda: served.append(len(stated)))
    producer.send_stated([[1, "t", 0, "a"], [2, "t", 1, "x" * 2_000_000], [3, "t", 2, "b"], [4, "t", 0, "\udc80"]])
    assert stated == [[2, "fail", None, stated[0][3]], [4, "info", None, stated[1][3]]]
    assert "MSG_SIZE_TOO_LARGE" in stated[0][3] and stated[1][3].startswith("UnicodeEncodeError: ")
    producer.close(0)
    assert sorted(e[0] for e in stated) == [1, 2, 3, 4]  # one outcome each
    for entry in stated[2:]:
        assert isinstance(entry, list) and entry[1] == "info" and entry[2] is None
        assert entry[3].startswith("KafkaError: _PURGE_QUEUE")
    assert producer._idle.is_set()  # the delivery thread was let serve again


def test_stated_sends_reach_their_topic_and_partition_without_a_key() -> None:
    """``send_stated`` hands ``produce()`` its arguments by position: each record goes to its
    topic and partition, with its value and no key, and its report names its id."""
    producer = ConfluentProducer(ck, ProducerSettings(NOWHERE, "p"))
    producer.state_outcomes([], lambda: None)
    seen: list[tuple[Any, ...]] = []
    producer._report = lambda sid, err, msg: seen.append((sid, msg.topic(), msg.partition(), msg.value(), msg.key()))
    producer.send_stated([[1, "t", 2, "a"], [2, "u", 0, "b"], [3, "t", 1, "c"]])
    producer.close(0)  # purged: each report arrives
    assert sorted(seen) == [(1, "t", 2, b"a", None), (2, "u", 0, b"b", None), (3, "t", 1, b"c", None)]
