"""The transactional producer worker over a scripted driver: what each raise proves (begin:
fail; commit: info, then settled by an abort; abort: info), a new producer after a failure,
the seeded share of aborts, and a clear refusal for a client without transactions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from highwater.core.history import HistoryWriter, read_history
from highwater.harness.clients import ProducerSettings, SendOutcome
from highwater.harness.workload import ProducerConfig
from highwater.harness.workload.transactions import (
    TransactionalProducerWorker,
    TransactionConfig,
    TransactionsUnsupported,
)


class TxnProducer:
    """Acks every send; ``fail`` maps a call name to the exceptions its next calls raise."""

    def __init__(self, fail: dict[str, list[Exception]], log: list[str]) -> None:
        self.fail, self.log = fail, log
        self.offset = 0

    def _call(self, name: str) -> None:
        self.log.append(name)
        queue = self.fail.get(name) or []
        if queue:
            raise queue.pop(0)

    def init_transactions(self, timeout_s: float) -> None:
        self._call("init")

    def begin_transaction(self) -> None:
        self._call("begin")

    def commit_transaction(self, timeout_s: float) -> None:
        self._call("commit")

    def abort_transaction(self, timeout_s: float) -> None:
        self._call("abort")

    def send(self, topic: str, partition: int, value: str, on_outcome: Callable[[SendOutcome], None]) -> None:
        self.log.append("send")
        on_outcome(SendOutcome.ok(self.offset))
        self.offset += 1

    def flush(self, timeout_s: float) -> None:
        self.log.append("flush")

    def close(self, timeout_s: float) -> None:
        self.log.append("close")


class TxnDriver:
    name = "scripted-txn"
    version = "0.1"

    def __init__(self, fail: dict[str, list[Exception]] | None = None) -> None:
        self.fail = fail or {}
        self.log: list[str] = []
        self.settings: list[ProducerSettings] = []

    def producer(self, settings: ProducerSettings) -> Any:
        raise AssertionError("a transactional worker makes transactional producers only")

    def consumer(self, settings: Any, listener: Any) -> Any:
        raise AssertionError("not used")

    def transactional_producer(self, settings: ProducerSettings) -> TxnProducer:
        self.settings.append(settings)
        self.log.append("new")
        return TxnProducer(self.fail, self.log)


class PlainDriver(TxnDriver):
    transactional_producer = None  # type: ignore[assignment]


def run_transactions(tmp_path: Path, driver: Any, n: int, abort_share: float = 0.0) -> tuple[list[Any], Any]:
    with HistoryWriter(tmp_path / "h.jsonl") as history:
        worker = TransactionalProducerWorker(
            "producer-0",
            ["127.0.0.1:1"],
            history,
            ProducerConfig("t", partitions=2, rate=1e6),
            TransactionConfig("t-producer-0", records=2, abort_share=abort_share, seed=7),
            client=driver,
        )
        for i in range(n):
            if worker._txn_producer is None:
                assert worker._open()
            worker._transaction(f"producer-0#{i}", abort=worker._rng.random() < abort_share, first_value=2 * i)
        worker.close()
    events = [(e["type"], e["f"], e["value"]) for e in read_history(tmp_path / "h.jsonl")]
    return events, worker


def txn_events(events: list[Any]) -> list[tuple[str, str, str]]:
    return [(t, v["op"], v["txn"]) for t, f, v in events if f == "txn"]


def test_a_committed_transaction_and_its_sends(tmp_path: Path) -> None:
    driver = TxnDriver()
    events, worker = run_transactions(tmp_path, driver, 1)
    assert txn_events(events) == [
        ("invoke", "begin", "producer-0#0"),
        ("ok", "begin", "producer-0#0"),
        ("invoke", "commit", "producer-0#0"),
        ("ok", "commit", "producer-0#0"),
    ]
    sends = [(t, v["partition"], v["value"], v["txn"]) for t, f, v in events if f == "send"]
    assert sends == [
        ("invoke", 0, "producer-0-0", "producer-0#0"),
        ("ok", 0, "producer-0-0", "producer-0#0"),
        ("invoke", 1, "producer-0-1", "producer-0#0"),
        ("ok", 1, "producer-0-1", "producer-0#0"),
    ]
    # the records are written (flushed) before the commit; the settings ask for a transaction
    assert driver.log == ["new", "init", "begin", "send", "send", "flush", "commit", "close"]
    s = driver.settings[0]
    assert (s.transactional_id, s.idempotence) == ("t-producer-0", True)
    assert worker.stats()["committed"] == 1


def test_an_unknown_commit_is_settled_by_an_abort(tmp_path: Path) -> None:
    events, worker = run_transactions(tmp_path, TxnDriver({"commit": [TimeoutError("no answer")]}), 1)
    assert txn_events(events)[2:] == [
        ("invoke", "commit", "producer-0#0"),
        ("info", "commit", "producer-0#0"),
        ("invoke", "abort", "producer-0#0"),
        ("ok", "abort", "producer-0#0"),
    ]
    assert (worker.aborted, worker.unknown) == (1, 0)


def test_an_unsettled_transaction_stays_unknown_and_the_producer_is_made_anew(tmp_path: Path) -> None:
    driver = TxnDriver({"commit": [RuntimeError("fenced")], "abort": [RuntimeError("fenced")]})
    events, worker = run_transactions(tmp_path, driver, 2)
    assert [t for t, op, txn in txn_events(events) if txn == "producer-0#0" and op != "begin"] == [
        "invoke",
        "info",
        "invoke",
        "info",
    ]
    assert ("ok", "commit", "producer-0#1") in txn_events(events)
    assert driver.log.count("new") == 2 and driver.log.count("init") == 2
    assert (worker.committed, worker.unknown) == (1, 1)


def test_a_failed_begin_is_a_definite_failure(tmp_path: Path) -> None:
    events, worker = run_transactions(tmp_path, TxnDriver({"begin": [RuntimeError("bad state")]}), 2)
    assert txn_events(events)[:2] == [("invoke", "begin", "producer-0#0"), ("fail", "begin", "producer-0#0")]
    assert not any(v.get("txn") == "producer-0#0" for t, f, v in events if f == "send")
    assert worker.committed == 1


def test_the_share_of_aborts_is_seeded(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    runs = [txn_events(run_transactions(d, TxnDriver(), 40, abort_share=0.25)[0]) for d in dirs]
    assert runs[0] == runs[1]
    aborts = sum(1 for t, op, _ in runs[0] if (t, op) == ("ok", "abort"))
    assert 3 <= aborts <= 20  # about a quarter of 40


def test_a_client_without_transactions_is_refused_in_one_line(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h.jsonl") as history, pytest.raises(TransactionsUnsupported, match="scripted-txn"):
        TransactionalProducerWorker(
            "producer-0", ["127.0.0.1:1"], history, ProducerConfig("t"), TransactionConfig("x"), client=PlainDriver()
        )
